"""Sampling: helpers, the HF backend on a tiny random model, resuming, the vLLM backend (GPU)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pacs.evaluation import generate
from pacs.evaluation.backends import SamplingConfig, problem_seed, render_prompt
from pacs.evaluation.backends.hf import HFBackend, split_generated
from pacs.evaluation.generate import chunk_plan
from pacs.evaluation.io import FormatError

CFG = SamplingConfig(n=3, temperature=1.0, top_p=0.95, max_new_tokens=10, seed=7)
BATCH = 6  # sequences per chunk -> 2 problems per chunk at n = 3


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class Crash(RuntimeError):
    pass


# ----------------------------------------------------------------------------- helpers


def test_split_generated():
    eos = {9, 11}
    assert split_generated([5, 6, 9, 0, 0], eos) == ([5, 6], "stop", 3)
    assert split_generated([11], eos) == ([], "stop", 1)
    assert split_generated([5, 6, 7], eos) == ([5, 6, 7], "length", 3)


def test_problem_seed_is_stable_and_distinct():
    assert problem_seed(0, 5) == problem_seed(0, 5)
    seeds = {problem_seed(s, i) for s in range(3) for i in range(100)}
    assert len(seeds) == 300 and all(0 <= x < 2**32 for x in seeds)


def test_chunk_plan_uses_fixed_positions():
    assert chunk_plan(range(5), 2) == [[0, 1], [2, 3], [4]]
    assert chunk_plan([1, 2, 3], 2) == [[1], [2, 3]]


# ----------------------------------------------------------------------------- HF backend


@pytest.fixture(scope="module")
def backend(tiny_model_dir):
    import torch

    torch.set_num_threads(1)
    return HFBackend(str(tiny_model_dir), batch_size=BATCH, device="cpu")


def run(backend, rows, out, **kw):
    return generate.run_generation(
        backend,
        rows,
        out,
        CFG,
        chunk_size=backend.chunk_size(CFG.n),
        meta={"model": "tiny"},
        progress=False,
        **kw,
    )


@pytest.fixture(scope="module")
def reference(backend, tmp_path_factory):
    """An uninterrupted run over the five fixture problems."""
    rows = [
        {
            "problem_id": f"synthetic/{i}",
            "task": "math",
            "prompt": [{"role": "user", "content": f"What is {i} plus {i + 3}?"}],
        }
        for i in range(5)
    ]
    out = tmp_path_factory.mktemp("ref") / "samples.jsonl"
    run(backend, rows, out)
    return rows, read_jsonl(out)


def test_hf_rows_follow_the_format(reference):
    rows, samples = reference
    assert [(s["problem_id"], s["sample_idx"]) for s in samples] == [
        (r["problem_id"], j) for r in rows for j in range(CFG.n)
    ]
    for s in samples:
        assert list(s) == ["problem_id", "sample_idx", "response", "finish_reason", "n_tokens"]
        assert isinstance(s["response"], str)
        assert 1 <= s["n_tokens"] <= CFG.max_new_tokens
        assert s["finish_reason"] in ("stop", "length")
        if s["finish_reason"] == "length":
            assert s["n_tokens"] == CFG.max_new_tokens
    reasons = {s["finish_reason"] for s in samples}
    assert reasons == {"stop", "length"}, "the fixture model should produce both finish reasons"
    assert len({s["response"] for s in samples}) > len(samples) // 2  # sampling, not greedy


def test_hf_same_seed_same_rows_other_seed_differs(backend, reference, tmp_path):
    rows, samples = reference
    other = SamplingConfig(**{**CFG.__dict__, "seed": 8})
    generate.run_generation(
        backend, rows, tmp_path / "s8.jsonl", other, chunk_size=2, meta={}, progress=False
    )
    assert read_jsonl(tmp_path / "s8.jsonl") != samples


def test_resume_after_crash_gives_the_uninterrupted_rows(backend, reference, tmp_path):
    rows, expected = reference
    out = tmp_path / "samples.jsonl"
    partial = tmp_path / "samples.jsonl.partial"
    seen: list[list[str]] = []

    def crash_after_first_chunk(pids):
        seen.append(pids)
        raise Crash("simulated kill")

    with pytest.raises(Crash):
        run(backend, rows, out, on_chunk_done=crash_after_first_chunk)
    assert not out.exists(), "the final file must not exist before every problem is done"
    assert [r["problem_id"] for r in read_jsonl(partial)] == ["synthetic/0"] * 3 + [
        "synthetic/1"
    ] * 3

    resumed: list[list[str]] = []
    run(backend, rows, out, on_chunk_done=resumed.append)
    assert resumed == [
        ["synthetic/2", "synthetic/3"],
        ["synthetic/4"],
    ]  # the first chunk was skipped
    assert read_jsonl(out) == expected
    assert not partial.exists() and not (tmp_path / "samples.jsonl.partial.meta.json").exists()


def test_resume_from_a_cut_partial_file(backend, reference, tmp_path):
    rows, expected = reference
    out = tmp_path / "samples.jsonl"
    partial = tmp_path / "samples.jsonl.partial"
    calls = []

    def crash_after_two_chunks(pids):
        calls.append(pids)
        if len(calls) == 2:
            raise Crash

    with pytest.raises(Crash):
        run(backend, rows, out, on_chunk_done=crash_after_two_chunks)
    data = partial.read_bytes()
    partial.write_bytes(data[: len(data) - 25])  # a write cut in the middle of the last line
    resumed: list[list[str]] = []
    run(backend, rows, out, on_chunk_done=resumed.append)
    assert resumed == [
        ["synthetic/2", "synthetic/3"],
        ["synthetic/4"],
    ]  # the cut chunk is redone whole
    assert read_jsonl(out) == expected


def test_limit_then_full_run_resumes_without_duplicates(backend, reference, tmp_path):
    rows, expected = reference
    out = tmp_path / "samples.jsonl"
    run(backend, rows[:3], out)  # as with --limit 3: chunks [0, 1], [2]
    assert {r["problem_id"] for r in read_jsonl(out)} == {f"synthetic/{i}" for i in range(3)}
    resumed: list[list[str]] = []
    run(backend, rows, out, on_chunk_done=resumed.append)
    # chunk [2, 3] was incomplete (only 2 was there) and is redone whole, with its fixed seed
    assert resumed == [["synthetic/2", "synthetic/3"], ["synthetic/4"]]
    got = read_jsonl(out)
    assert len({(r["problem_id"], r["sample_idx"]) for r in got}) == len(got) == 15
    assert got == expected
    again: list[list[str]] = []
    run(backend, rows, out, on_chunk_done=again.append)  # complete: nothing to do
    assert again == [] and read_jsonl(out) == expected


def test_resume_refuses_other_settings(backend, reference, tmp_path):
    rows, _ = reference
    out = tmp_path / "samples.jsonl"
    with pytest.raises(Crash):
        run(backend, rows, out, on_chunk_done=lambda pids: (_ for _ in ()).throw(Crash()))
    other = SamplingConfig(**{**CFG.__dict__, "temperature": 0.5})
    with pytest.raises(FormatError, match=r"samples\.jsonl\.partial\.meta\.json.*temperature"):
        generate.run_generation(
            backend, rows, out, other, chunk_size=2, meta={"model": "tiny"}, progress=False
        )


def test_cli_hf_with_limit(tiny_model_dir, bench_rows, tmp_path):
    bench = write_jsonl(tmp_path / "bench.jsonl", bench_rows)
    out = tmp_path / "eval" / "samples.jsonl"
    argv = [
        "--model",
        str(tiny_model_dir),
        "--benchmark-file",
        str(bench),
        "--out",
        str(out),
        "--backend",
        "hf",
        "--n",
        "2",
        "--temperature",
        "0.6",
        "--top-p",
        "0.95",
        "--max-new-tokens",
        "6",
        "--seed",
        "0",
        "--batch-size",
        "4",
        "--limit",
        "3",
        "--threads",
        "1",
        "--device",
        "cpu",
    ]
    generate.main(argv)
    got = read_jsonl(out)
    assert [(r["problem_id"], r["sample_idx"]) for r in got] == [
        (f"synthetic/{i}", j) for i in range(3) for j in range(2)
    ]
    assert sorted(p.name for p in out.parent.iterdir()) == ["samples.jsonl"]


def test_cli_rejects_bad_benchmark_row(tiny_model_dir, bench_rows, tmp_path):
    del bench_rows[1]["prompt"]
    bench = write_jsonl(tmp_path / "bench.jsonl", bench_rows)
    with pytest.raises(FormatError, match=r"bench\.jsonl:2: missing field 'prompt'"):
        generate.main(
            [
                "--model",
                str(tiny_model_dir),
                "--benchmark-file",
                str(bench),
                "--out",
                str(tmp_path / "s.jsonl"),
                "--n",
                "1",
                "--max-new-tokens",
                "2",
            ]
        )


# ----------------------------------------------------------------------------- vLLM backend


@pytest.mark.gpu
def test_vllm_backend_generates_and_resumes(tiny_model_dir, bench_rows, tmp_path):
    pytest.importorskip("vllm")
    import torch

    if not torch.cuda.is_available():
        pytest.skip("vLLM backend needs a CUDA GPU")
    bench = write_jsonl(tmp_path / "bench.jsonl", bench_rows)
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
        "4",
        "--temperature",
        "0.6",
        "--top-p",
        "0.95",
        "--max-new-tokens",
        "16",
        "--seed",
        "0",
        "--batch-size",
        "8",
        "--gpu-memory-utilization",
        "0.3",
    ]
    generate.main(argv + ["--limit", "3"])
    first = read_jsonl(out)
    generate.main(argv)
    got = read_jsonl(out)
    assert [(r["problem_id"], r["sample_idx"]) for r in got] == [
        (f"synthetic/{i}", j) for i in range(5) for j in range(4)
    ]
    assert got[:4] == first[:4]  # chunk [0, 1] kept as is
    assert all(r["finish_reason"] in ("stop", "length") and 1 <= r["n_tokens"] <= 16 for r in got)


def test_render_prompt_passes_enable_thinking_to_the_template():
    from pacs.tiny.build import build_tokenizer

    tok = build_tokenizer(["what is 1 + 1"] * 4)
    tok.chat_template = (
        "{%- for m in messages -%}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + "
        "'<|im_end|>\\n' }}{%- endfor -%}{{ '<|im_start|>assistant\\n' }}"
        "{%- if enable_thinking is defined and enable_thinking is false -%}"
        "{{ '<think>\\n\\n</think>\\n\\n' }}{%- endif -%}"
    )
    msgs = [{"role": "user", "content": "1 + 1?"}]
    base = "<|im_start|>user\n1 + 1?<|im_end|>\n<|im_start|>assistant\n"
    assert render_prompt(tok, msgs) == base
    assert render_prompt(tok, msgs, enable_thinking=True) == base
    assert render_prompt(tok, msgs, True) != render_prompt(tok, msgs, False)
    assert render_prompt(tok, msgs, False) == base + "<think>\n\n</think>\n\n"


def test_cli_takes_the_thinking_switch():
    common = ["--model", "m", "--benchmark-file", "b", "--out", "o", "--n", "2"]
    assert generate.parse_args(common).enable_thinking is None
    assert generate.parse_args([*common, "--enable-thinking"]).enable_thinking is True
    assert generate.parse_args([*common, "--no-enable-thinking"]).enable_thinking is False


# ----------------------------------------------------------------------------- prompt format


def test_a_system_prompt_goes_first_and_only_once():
    from pacs.evaluation.backends import with_system_prompt

    user = [{"role": "user", "content": "2+2?"}]
    assert with_system_prompt(user, None) is user
    assert with_system_prompt(user, "Think.") == [{"role": "system", "content": "Think."}, *user]
    with pytest.raises(ValueError, match="has a system turn already"):
        with_system_prompt(with_system_prompt(user, "a"), "b")


def test_a_chat_template_file_replaces_the_tokenizers_and_none_is_refused(tiny_model_dir):
    from transformers import AutoTokenizer

    from pacs.evaluation.backends import use_chat_template

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    use_chat_template(
        tok, "m", "{% for m in messages %}[{{ m['role'] }}]{{ m['content'] }}{% endfor %}"
    )
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}]
    assert render_prompt(tok, msgs) == "[system]S[user]Q"
    tok.chat_template = None
    with pytest.raises(ValueError, match="m: its tokenizer has no chat template"):
        use_chat_template(tok, "m", None)
