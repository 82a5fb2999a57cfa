"""The runs table (pacs.report.runs): every base model and training run with its steps, the step
the tables report, wall time, GPU-hours, commit and fingerprint, from the run folders' files."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from pacs.fingerprint import job_times
from pacs.report import build_report


def _summary(folder, **extra) -> None:
    (folder / "summary.json").write_text(json.dumps({"steps": 10, **extra}))


def test_every_run_has_a_row_with_its_steps_time_and_provenance(
    tiny_config, fake_results, tmp_path
):
    pacs0 = fake_results / "train" / "tiny" / "pacs" / "seed0"
    _summary(pacs0, fingerprint="f" * 64, commit="c0ffee" + "0" * 34)
    grpo1 = fake_results / "train" / "tiny" / "grpo" / "seed1"
    _summary(
        grpo1,
        command="python3 -m verl.trainer.main_ppo trainer.nnodes=2 trainer.n_gpus_per_node=8",
        resumed_from_step=None,
        **job_times(1767225600.0, 1767225600.0 + 5400),
    )
    out = tmp_path / "report"
    build_report(tiny_config, fake_results, out, figures=False)
    table = pd.read_csv(out / "tables" / "table_runs.csv")
    assert len(table) == 1 + 9  # the base model, then 3 main runs x 2 seeds + 3 ablations x 1
    base = table[table.run == "base"].iloc[0]
    assert base.table_step == 0 and base.finished
    row = table[(table.run == "pacs") & (table.seed == 0)].iloc[0]
    assert (row.steps_done, row.steps_planned, row.table_step) == (10, 10, 10)
    assert row.fingerprint == "f" * 64 and row.commit.startswith("c0ffee") and row.finished
    rows = (pacs0 / "metrics.jsonl").read_text().splitlines()
    expected_h = sum(json.loads(r)["time_total"] for r in rows) / 3600
    assert row.wall_time_h == row.steps_time_h == pytest.approx(expected_h)
    assert row.wall_time_source == "steps only"  # no job times in its summary
    assert pd.isna(row.gpu_hours)  # the tiny engine: no GPUs
    gpu = table[(table.run == "grpo") & (table.seed == 1)].iloc[0]
    assert gpu.wall_time_h == 1.5 and gpu.wall_time_source == "job"  # its job's own start/end
    assert gpu.job_started_at == "2026-01-01T00:00:00+00:00" and not gpu.resumed
    assert gpu.gpus == 16 and gpu.gpu_hours == pytest.approx(16 * 1.5)
    unfinished = table[(table.run == "ppo") & (table.seed == 0)].iloc[0]
    assert not unfinished.finished and pd.isna(unfinished.table_step)
    md = (out / "tables" / "table_runs.md").read_text()
    assert "not evaluated (unfinished)" in md and "not recorded" in md
    assert "final policy" in md and "90.0 min |" in md and "(steps only)" in md


def test_the_full_commit_and_its_edits_flag_show_in_every_format(
    tiny_config, fake_results, tmp_path
):
    commit = "c0ffee" + "0" * 34 + "+edits"
    pacs0 = fake_results / "train" / "tiny" / "pacs" / "seed0"
    _summary(pacs0, commit=commit, resumed=True, **job_times(0.0, 42.0))
    out = tmp_path / "report"
    build_report(tiny_config, fake_results, out, figures=False)
    for ext in ("csv", "md", "tex"):
        text = (out / "tables" / f"table_runs.{ext}").read_text()
        assert commit in text.replace("\\+", "+"), ext
    md = (out / "tables" / "table_runs.md").read_text()
    assert "42 s (last launch)" in md  # a resumed run's job time is its last launch's


def test_a_broken_summary_is_named(tiny_config, fake_results, tmp_path):
    (fake_results / "train" / "tiny" / "pacs" / "seed0" / "summary.json").write_text("{oops")
    with pytest.raises(ValueError, match=r"pacs/seed0/summary.json: not valid JSON"):
        build_report(tiny_config, fake_results, tmp_path / "report", figures=False)


def test_the_tiny_base_row_reads_its_sft_summary_and_a_hub_base_says_not_trained_here(
    tiny_config, fake_results, tmp_path
):
    base_dir = fake_results / "models" / "tiny" / "base"
    base_dir.mkdir(parents=True, exist_ok=True)
    (base_dir / "sft_summary.json").write_text(
        json.dumps({"steps": 300, "train_seconds": 720.0, "commit": "abc123" + "0" * 34})
    )
    build_report(tiny_config, fake_results, tmp_path / "with_sft", figures=False)
    base = pd.read_csv(tmp_path / "with_sft" / "tables" / "table_runs.csv").query("run == 'base'")
    assert base.iloc[0].commit.startswith("abc123")
    assert base.iloc[0].wall_time_h == pytest.approx(0.2)  # 720 s
    assert base.iloc[0].wall_time_source == "SFT loop only"  # no job times recorded
    (base_dir / "sft_summary.json").unlink()
    build_report(tiny_config, fake_results, tmp_path / "hub", figures=False)
    md = (tmp_path / "hub" / "tables" / "table_runs.md").read_text()
    base_line = next(line for line in md.splitlines() if line.startswith("| Base"))
    assert "not recorded" not in base_line and base_line.rstrip().endswith("| – | – |")


def _add_clip_bound(folder, values) -> None:
    rows = [json.loads(r) for r in (folder / "metrics.jsonl").read_text().splitlines()]
    for row, value in zip(rows, values):
        row["clip_bound"] = value
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_each_run_names_what_it_optimised_and_how_often_its_clip_bound(
    tiny_config, fake_results, tmp_path
):
    """summary.json's objective, per run; the clip-bound share from metrics.jsonl; a run that
    recorded no objective says so rather than showing a default."""
    grpo0 = fake_results / "train" / "tiny" / "grpo" / "seed0"
    grpo_objective = {
        "loss_agg_mode": "seq-mean-token-sum-norm",
        "loss_scale": 8,
        "sum_norm_divisor": 6.0,
        "clip_norm": 1.0,
        "dual_clip_c": 3.0,
    }
    _summary(grpo0, objective=grpo_objective)
    steps = len((grpo0 / "metrics.jsonl").read_text().splitlines())
    _add_clip_bound(grpo0, [1.0, 0.5] + [0.0] * (steps - 2))
    pacs0 = fake_results / "train" / "tiny" / "pacs" / "seed0"
    pacs_objective = {**grpo_objective, "loss_agg_mode": None, "loss_scale": 1}
    _summary(pacs0, objective={**pacs_objective, "clip_norm": None, "dual_clip_c": None})
    _add_clip_bound(pacs0, [0.0] * steps)
    out = tmp_path / "report"
    build_report(tiny_config, fake_results, out, figures=False)
    table = pd.read_csv(out / "tables" / "table_runs.csv")
    grpo = table[(table.run == "grpo") & (table.seed == 0)].iloc[0]
    assert (grpo.loss_agg_mode, grpo.loss_scale, grpo.clip_norm) == (
        grpo_objective["loss_agg_mode"],
        8,
        1.0,
    )
    assert grpo.clip_bound_share == pytest.approx(1.5 / steps)
    md = (out / "tables" / "table_runs.md").read_text()
    section = md[md.index("What each run optimised") :]
    pacs_line = next(line for line in section.splitlines() if line.startswith("| PACS (pacs)"))
    assert "one term per response" in pacs_line and "| none |" in pacs_line
    assert "| 0.0 % |" in pacs_line
    grpo_line = next(line for line in section.splitlines() if line.startswith("| GRPO (grpo)"))
    assert "×8" in grpo_line and f"{100 * 1.5 / steps:.1f} %" in grpo_line
    ppo_line = next(line for line in section.splitlines() if line.startswith("| PPO (ppo)"))
    assert ppo_line.count("not recorded") == 4  # aggregation, scale, clip norm, dual-clip c
