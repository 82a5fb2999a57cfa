"""Sharded generation (issue 17, defect 12): sizing, and gathered shards = the unsharded run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pacs.evaluation import generate, shards
from pacs.evaluation.io import FormatError
from pacs.io import write_jsonl


def test_paper_shard_size_by_hand():
    # 720 min × (1 − 0.25) = 540 min = 32,400 s; one MATH500 problem at n = 256, worst case
    # 8192 tokens each, at 6000 tokens/s: 256 × 8192 / 6000 = 349.5 s -> 92 problems per shard
    assert shards.plan_shard_size(256, 8192, 6000, 720, 0.25) == 92
    assert shards.shard_minutes(92, 256, 8192, 6000) == pytest.approx(535.9, abs=0.1)
    assert shards.shard_count(500, 92) == 6  # MATH500: 5 × 92 + 40
    assert shards.plan_shard_size(256, 8192, 6000, 720, 0.25, align=64) == 64
    assert shards.shard_count(30, 92) == 1  # AIME: one job


def test_a_shard_that_cannot_fit_is_refused():
    with pytest.raises(ValueError, match="more than the 54 min a shard may use"):
        shards.plan_shard_size(256, 8192, 100, 60, 0.1)


def test_shard_ranges_tile_the_benchmark():
    parts = [shards.shard_range(k, 2, 5) for k in range(3)]
    assert [list(p) for p in parts] == [[0, 1], [2, 3], [4]]
    assert list(shards.shard_range(3, 2, 5)) == [] and list(shards.shard_range(0, None, 5)) == [
        0,
        1,
        2,
        3,
        4,
    ]


def _argv(model: Path, bench: Path, out: Path, *extra: str) -> list[str]:
    return [
        "--model",
        str(model),
        "--benchmark-file",
        str(bench),
        "--out",
        str(out),
        "--backend",
        "hf",
        "--n",
        "2",
        "--temperature",
        "1.0",
        "--top-p",
        "0.95",
        "--max-new-tokens",
        "8",
        "--seed",
        "3",
        "--batch-size",
        "4",
        "--device",
        "cpu",
        *extra,
    ]


def test_gathered_shards_equal_the_unsharded_run(tiny_model_dir, bench_rows, tmp_path):
    bench = write_jsonl(tmp_path / "bench.jsonl", bench_rows)  # 5 problems; hf chunk = 4 // 2 = 2
    whole = generate.main(_argv(tiny_model_dir, bench, tmp_path / "whole.jsonl"))
    parts = [
        generate.main(
            _argv(
                tiny_model_dir,
                bench,
                tmp_path / f"shard{k}.jsonl",
                "--shard-size",
                "2",
                "--shard-index",
                str(k),
            )
        )
        for k in range(3)
    ]
    merged = shards.main(
        [
            "gather",
            *map(str, parts),
            "--benchmark-file",
            str(bench),
            "--n",
            "2",
            "--shard-size",
            "2",
            "--out",
            str(tmp_path / "samples.jsonl"),
        ]
    )
    assert merged.read_bytes() == whole.read_bytes()
    assert len(whole.read_text().splitlines()) == 10
    responses = {json.loads(line)["response"] for line in whole.read_text().splitlines()}
    assert len(responses) > 1  # sampled, not a constant


def test_hf_shard_must_start_at_a_chunk_boundary(tiny_model_dir, bench_rows, tmp_path):
    bench = write_jsonl(tmp_path / "bench.jsonl", bench_rows)
    with pytest.raises(SystemExit):
        generate.parse_args(_argv(tiny_model_dir, bench, tmp_path / "s.jsonl", "--shard-size", "3"))


def test_a_shard_past_the_end_is_empty_and_loads_no_model(bench_rows, tmp_path):
    bench = write_jsonl(tmp_path / "bench.jsonl", bench_rows)
    out = generate.main(
        _argv(
            tmp_path / "no-model",
            bench,
            tmp_path / "s.jsonl",
            "--shard-size",
            "6",
            "--shard-index",
            "1",
        )
    )
    assert out.read_text() == ""


def test_gather_refuses_a_shard_missing_a_problem_and_a_wrong_count(bench_rows, tmp_path):
    bench = write_jsonl(tmp_path / "bench.jsonl", bench_rows[:3])
    row = {"response": "x", "finish_reason": "stop", "n_tokens": 1}
    first = write_jsonl(
        tmp_path / "0.jsonl",
        [{"problem_id": f"synthetic/{i}", "sample_idx": j, **row} for i in (0, 1) for j in (0, 1)],
    )
    second = write_jsonl(tmp_path / "1.jsonl", [])
    args = [
        "--benchmark-file",
        str(bench),
        "--n",
        "2",
        "--shard-size",
        "2",
        "--out",
        str(tmp_path / "samples.jsonl"),
    ]
    with pytest.raises(FormatError, match=r"1.jsonl:1: .*expected \('synthetic/2', 0\)"):
        shards.main(["gather", str(first), str(second), *args])
    with pytest.raises(ValueError, match="make 2 shard"):
        shards.main(["gather", str(first), *args])
    assert not (tmp_path / "samples.jsonl").exists()


# ------------------------------------------------------------------ eval.shard / curve_n_samples


def _paper_raw() -> dict:
    from pacs.config import load_config

    return load_config(Path(__file__).resolve().parents[2] / "configs" / "paper.yaml")


def test_shard_spec_needs_throughput_and_limit_and_defaults_its_margin():
    from pacs.config import ConfigError, parse_profile

    raw = _paper_raw()
    assert parse_profile(raw).eval.shard.job_minutes == 720
    del raw["eval"]["shard"]["margin"]
    assert parse_profile(raw).eval.shard.margin == 0.25
    del raw["eval"]["shard"]["tokens_per_s"]
    with pytest.raises(ConfigError, match=r"p.yaml: eval.shard.tokens_per_s: Field required"):
        parse_profile(raw, source="p.yaml")
    raw["eval"]["shard"] = None  # absent or null: one generate job per evaluation
    assert parse_profile(raw).eval.shard is None
    raw["eval"]["shard"] = {"tokens_per_s": 6000, "job_minutes": 720, "margin": 1.0}
    with pytest.raises(ConfigError, match=r"eval.shard.margin"):
        parse_profile(raw)


def test_curve_n_samples_defaults_to_n_samples():
    from pacs.config import parse_profile

    raw = _paper_raw()
    assert parse_profile(raw).eval.curve_samples == 32
    del raw["eval"]["curve_n_samples"]
    spec = parse_profile(raw)
    assert (
        spec.eval.curve_n_samples is None and spec.eval.curve_samples == spec.eval.n_samples == 256
    )
