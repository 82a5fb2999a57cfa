"""The science profile (configs/science.yaml, `make science`): its DAG, and a shrunken copy end to
end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from pacs.config import load_profile
from pacs.report.science_data import export

from ..report.science_cells import RawData, check_cells, read_cells

REPO = Path(__file__).resolve().parents[2]
SCIENCE = REPO / "configs" / "science.yaml"
ENV = {
    **os.environ,
    "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
    "HF_HUB_OFFLINE": "1",
}


def snakemake(*args: str, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *args],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_science_config_is_the_designed_matrix():
    """docs/design.md#the-study-design: PACS (reset every step) and GRPO on 24 paired seeds, PACS
    with a fixed reference on 4 of them, 128 steps, checkpoints every 16 steps; the primary endpoint
    is the in-loop pass@1 on 200 problems × 16 samples averaged over the last 3 checkpoints; 32
    samples per problem on the hard split."""
    spec = load_profile(SCIENCE)
    runs = spec.runs
    assert len(runs) == 4 and len(spec.matrix.train_jobs) == 3 * 24 + 4
    assert runs["pacs_official"].method.grad_clip is None  # the fourth design's arm
    assert runs["pacs"].method.grad_clip == runs["grpo"].method.grad_clip == 1.0  # the third's
    seeds = {name: spec.seeds_of(run) for name, run in runs.items()}
    assert seeds["pacs"] == seeds["grpo"] == tuple(range(24))  # paired, >= 24 seeds
    assert set(seeds["pacs_ref_fixed"]) <= set(seeds["pacs"]) and len(seeds["pacs_ref_fixed"]) == 4
    assert runs["pacs"].method.ref == "rollout" and runs["pacs_ref_fixed"].method.ref == "fixed"
    assert runs["grpo"].method.name == "grpo" and runs["pacs"].ablation == runs["grpo"].ablation
    assert spec.train.steps == 128 and spec.train.save_every == spec.train.eval_every == 16
    assert (spec.train.eval_problems, spec.train.eval_samples) == (200, 16)
    assert spec.data.synthetic.n_test >= spec.train.eval_problems
    assert spec.claims is not None and spec.claims.heldout_checkpoints == 3  # steps 96-128
    assert spec.claims.bootstrap >= 20_000
    assert spec.eval.n_samples == 32 and spec.data.benchmarks == ("synthetic_hard",)
    assert spec.study is not None and spec.study.hard.benchmark == "synthetic_hard"
    assert spec.data.synthetic.task == "paths"
    assert spec.data.synthetic.cli_args().split()[:2] == ["--task", "paths"]


def test_science_dry_run_trains_evaluates_and_measures_paths_for_every_run(workflow_copy):
    config = workflow_copy / "configs" / "science.yaml"
    result = snakemake("-n", "-p", "--cores", "2", "--configfile", str(config), cwd=workflow_copy)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    counts = {}
    for line in result.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            counts[parts[0]] = int(parts[1])
    assert counts["train_tiny"] == 76  # 3 runs x 24 seeds + the fixed reference x 4
    assert counts["generate"] == counts["paths"] == 77  # every run and seed, plus the base model
    assert counts["path_exact"] == 77  # 76 runs x seeds + the base, each job both splits
    assert counts["prepare_hard_split"] == 1 and counts["report"] == 1
    assert "prepare-synthetic" in result.stdout and "--task paths" in result.stdout


def _shrunken(work: Path) -> Path:
    cfg = yaml.safe_load(SCIENCE.read_text())
    cfg["profile"] = "science_mini"
    cfg["models"]["tiny"]["sft"].update({"steps": 60, "batch_size": 32})
    cfg["data"]["synthetic"].update({"n_sft": 400, "n_train": 64, "n_test": 12})
    cfg["train"].update(
        {
            "steps": 4,
            "prompts_per_step": 4,
            "group_size": 4,
            "mini_batches": 2,
            "eval_problems": 4,
            "eval_samples": 2,
            "eval_every": 2,
            "save_every": 2,
        }
    )
    cfg["study"]["hard"]["n"] = 6
    cfg["seeds"] = {"main": [0, 1], "ablation": [0, 1]}
    cfg["eval"].update({"n_samples": 4, "bootstrap": 50})
    cfg["claims"].update({"bootstrap": 100, "smooth": 2, "large_k": [2]})
    path = work / "configs" / "science_mini.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


@pytest.mark.slow
def test_shrunken_science_profile_end_to_end(workflow_copy, heavy_slot):
    config = _shrunken(workflow_copy)
    with heavy_slot("dag"):
        result = snakemake(
            "--cores", "2", "--configfile", str(config), cwd=workflow_copy, timeout=1800
        )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = workflow_copy / "paper_figures" / "science_mini"
    table = pd.read_csv(out / "tables" / "claims.csv")
    computed = table[
        table["verdict"] != "no data"
    ]  # sampled paths: the 60-step base may solve nothing
    assert set(computed["claim"]) >= {"C1", "C2", "C3", "C3-ref", "C4"}  # C4: exact, always defined
    assert (computed["seeds"] == 2).all()
    assert set(computed["verdict"]) <= {"holds", "reversed", "not separable"}
    # The fixed reference's pass@k is a table, and its pass@1 is the one C3-ref-cost compares.
    ref = pd.read_csv(out / "tables" / "table_ref_ablation.csv")
    assert set(ref["run"]) == {"pacs", "pacs_official", "pacs_ref_fixed"}  # every PACS arm
    cost = table[table["claim"] == "C3-ref-cost"].iloc[0]
    at_k1 = ref[ref["k"] == 1].set_index("run")["mean_pct"]
    assert at_k1["pacs"] == pytest.approx(cost["mean_a"], abs=1e-9)
    assert at_k1["pacs_ref_fixed"] == pytest.approx(cost["mean_b"], abs=1e-9)
    study = pd.read_csv(out / "tables" / "study_checkpoints.csv")
    assert len(study) == 4 * 2 * 3  # 4 runs x 2 seeds x checkpoints 0, 2, 4
    # the fourth design: the unclipped arm's rows in their declared families, its clip share
    fam = table.set_index("claim")["family"]
    assert fam["C1-n@pacs_official"] == fam["arm-n@pacs_official"] == "primary"
    assert table.loc[table["claim"] == "C1-n@pacs_official", "tost_margin"].item() == 1.4
    clip = pd.read_csv(out / "tables" / "claims_clip.csv").set_index("run")
    assert clip.loc["pacs_official", "source"] == "no clip"
    assert clip.loc["pacs", "source"].startswith("clip_bound per step")
    assert study["entropy_synthetic_hard"].notna().all()
    for figure in ("study_curves", "study_scatter", "claims_curves", "psi_minibatch_tiny"):
        assert (out / "figures" / f"{figure}.png").stat().st_size > 0
    readme = (out / "README.md").read_text()
    assert "tables/claims.md" in readme and "figures/study_curves.png" in readme
    metrics = pd.read_json(
        workflow_copy / "results/science_mini/train/tiny/pacs/seed0/metrics.jsonl", lines=True
    )
    assert {"path_diversity", "path_entropy", "psi_abs_mean/mb1"} <= set(metrics.columns)
    # the report's raw data (committed with docs/science_report) give its claims cells
    assert "data/path_logp.csv.gz" in readme and "data/metrics.csv.gz" in readme
    again = export(workflow_copy / "results" / "science_mini", workflow_copy / "data")
    for name, rows in again.items():  # the CLI's export of the same tree: the same bytes
        assert (
            rows > 0
            and (workflow_copy / "data" / name).read_bytes() == (out / "data" / name).read_bytes()
        )
    claims = yaml.safe_load(config.read_text())["claims"]
    raw = RawData(out / "data", claims["late_fraction"], claims["heldout_checkpoints"])
    checked = check_cells(read_cells(out / "tables" / "claims_cells.csv"), raw, "synthetic_hard")
    assert {"C1", "C1-n", "C2", "C3", "C3-ref", "C4", "C4-s"} <= set(checked)
