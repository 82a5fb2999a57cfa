"""The vLLM backend against a fake engine with vLLM 0.24.0's interface (issue 17, defect 13).

No GPU here, so ``vllm`` is a stand-in module whose ``LLM.generate`` has the exact signature of
vLLM 0.24.0's ``vllm/entrypoints/llm.py``::

    def generate(self, prompts, sampling_params=None, *, use_tqdm=True, lora_request=None,
                 priority=None, tokenization_kwargs=None, mm_processor_kwargs=None)
        -> list[RequestOutput]

``prompts`` may be strings (vLLM then tokenises them with ``add_special_tokens=True``) or
``TokensPrompt`` dicts ``{"prompt_token_ids": list[int]}``; each ``RequestOutput.outputs`` holds
``CompletionOutput(index, text, token_ids, cumulative_logprob, logprobs, finish_reason=...)``
with ``finish_reason`` one of "stop", "length", "abort", "error" (``FINISH_REASON_STRINGS``) or
None while unfinished.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field

import pytest

from pacs.evaluation import generate
from pacs.evaluation.generate import SamplingConfig, VLLMBackend, prompt_token_ids, render_prompt
from pacs.evaluation.io import FormatError
from pacs.io import write_jsonl


def read_jsonl(path) -> list[dict]:
    import json

    return [json.loads(line) for line in open(path, encoding="utf-8")]


@dataclass
class SamplingParams:  # the fields we set, as vLLM 0.24's SamplingParams names them
    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int | None = 16
    seed: int | None = None


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: float | None = None
    logprobs: None = None
    finish_reason: str | None = None
    stop_reason: int | str | None = None


@dataclass
class RequestOutput:
    request_id: str
    prompt: str | None
    prompt_token_ids: list[int] | None
    prompt_logprobs: None
    outputs: list[CompletionOutput] = field(default_factory=list)
    finished: bool = True


class FakeLLM:
    """Answers deterministically from (seed, sample index); ``fail`` scripts engine failures:
    a list, one entry per generate call, of {prompt position: finish_reason of its sample 0}."""

    instances: list[FakeLLM] = []
    fail: list[dict[int, str | None]] = []

    def __init__(self, model, **kwargs):
        self.kwargs, self.calls = kwargs, []
        FakeLLM.instances.append(self)

    def generate(self, prompts, sampling_params=None, *, use_tqdm=True, lora_request=None,
                 priority=None, tokenization_kwargs=None, mm_processor_kwargs=None):
        self.calls.append(prompts)
        failures = FakeLLM.fail.pop(0) if FakeLLM.fail else {}
        outs = []
        for k, (prompt, params) in enumerate(zip(prompts, sampling_params, strict=True)):
            assert isinstance(prompt, dict) and set(prompt) == {"prompt_token_ids"}, prompt
            ids = prompt["prompt_token_ids"]
            assert isinstance(ids, list) and all(isinstance(t, int) for t in ids)
            comps = []
            for j in reversed(range(params.n)):  # out of order on purpose: sorted by index
                reason = failures.get(k, "stop") if j == 0 else ("length" if j % 2 else "stop")
                text = f"seed {params.seed} sample {j} \\boxed{{{j}}}"
                comps.append(CompletionOutput(j, text, list(range(3 + j)), finish_reason=reason))
            outs.append(RequestOutput(str(k), None, ids, None, comps))
        return outs


@pytest.fixture()
def fake_vllm(monkeypatch):
    module = types.ModuleType("vllm")
    module.LLM, module.SamplingParams = FakeLLM, SamplingParams
    monkeypatch.setitem(sys.modules, "vllm", module)
    FakeLLM.instances, FakeLLM.fail = [], []
    return module


CFG = SamplingConfig(n=3, temperature=0.6, top_p=0.95, max_new_tokens=16, seed=0)


def test_prompts_go_in_as_the_templates_token_ids(fake_vllm, tiny_model_dir, bench_rows):
    from transformers import AutoTokenizer

    backend = VLLMBackend(str(tiny_model_dir), seed=0, batch_size=6, enable_thinking=False)
    samples = backend.generate(list(enumerate(bench_rows[:2])), CFG)
    (call,) = FakeLLM.instances[0].calls
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    for (_, row), prompt in zip(enumerate(bench_rows[:2]), call):
        text = render_prompt(tok, row["prompt"], False)
        assert prompt["prompt_token_ids"] == tok(text, add_special_tokens=False)["input_ids"]
        assert prompt["prompt_token_ids"] == prompt_token_ids(tok, row["prompt"], False)
    assert [[s["finish_reason"] for s in p] for p in samples] == [["stop", "length", "stop"]] * 2
    assert [s["n_tokens"] for s in samples[0]] == [3, 4, 5]


def test_engine_failure_is_generated_again_and_counted(fake_vllm, tiny_model_dir, bench_rows):
    FakeLLM.fail = [{1: "abort"}]  # problem 1's first sample aborts once, then succeeds
    backend = VLLMBackend(str(tiny_model_dir), seed=0)
    samples = backend.generate(list(enumerate(bench_rows[:3])), CFG)
    calls = FakeLLM.instances[0].calls
    assert [len(c) for c in calls] == [3, 1] and backend.retried == 1
    assert all(s["finish_reason"] in ("stop", "length") for p in samples for s in p)


@pytest.mark.parametrize("reason", ["error", "abort", None])
def test_a_persistent_engine_failure_never_becomes_an_answer(
    reason, fake_vllm, tiny_model_dir, bench_rows, tmp_path
):
    FakeLLM.fail = [{0: reason}] * 3  # the first try and both retries
    bench = write_jsonl(tmp_path / "bench.jsonl", bench_rows[:2])
    out = tmp_path / "samples.jsonl"
    argv = ["--model", str(tiny_model_dir), "--benchmark-file", str(bench), "--out", str(out),
            "--backend", "vllm", "--n", "3", "--max-new-tokens", "16", "--batch-size", "3"]
    with pytest.raises(RuntimeError, match=r"1 sample\(s\) still ended with an engine failure"):
        generate.main(argv)
    assert not out.exists()  # the failed chunk is not written; the second never started


def test_grade_refuses_samples_the_engine_failed_on(tmp_path, bench_rows):
    from pacs.evaluation import grade

    bench = write_jsonl(tmp_path / "bench.jsonl", bench_rows[:1])
    rows = [{"problem_id": "synthetic/0", "sample_idx": j, "response": "\\boxed{3}",
             "finish_reason": reason, "n_tokens": 4} for j, reason in enumerate(["length", "abort"])]
    samples = write_jsonl(tmp_path / "samples.jsonl", rows)
    with pytest.raises(FormatError, match=r"samples.jsonl:2: field 'finish_reason' is 'abort'"):
        grade.main(["--samples", str(samples), "--benchmark-file", str(bench),
                    "--out", str(tmp_path / "graded.jsonl"), "--workers", "1"])
    write_jsonl(samples, rows[:1])  # a length-truncated answer is an ordinary answer
    grade.main(["--samples", str(samples), "--benchmark-file", str(bench),
                "--out", str(tmp_path / "graded.jsonl"), "--workers", "1"])
    assert read_jsonl(tmp_path / "graded.jsonl")[0]["score"] == 1.0
