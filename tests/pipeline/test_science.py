"""The science profile (configs/science.yaml, `make science`): its DAG, and a shrunken copy end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from pacs.config import load_profile

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
    spec = load_profile(SCIENCE)
    runs = spec.runs
    assert len(runs) == 10 and len(spec.matrix.train_jobs) == 50
    seeds = {name: spec.seeds_of(run) for name, run in runs.items()}
    assert all(s == seeds["pacs"] and len(s) >= 5 for s in seeds.values())  # paired, >= 5 seeds
    refs = {
        (r.method.ref, r.method.ref_reset_every) for r in runs.values() if r.method.name == "pacs"
    }
    assert ("rollout", None) in refs and ("fixed", None) in refs
    assert any(mode == "periodic" and k > 1 for mode, k in refs)
    assert {r.method.name for r in runs.values()} == {"pacs", "grpo", "ppo"}
    assert spec.data.synthetic.task == "paths" and spec.claims is not None
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
    assert counts["train_tiny"] == 50
    assert counts["generate"] == counts["paths"] == 51  # every run and seed, plus the base model
    assert counts["report"] == 1
    assert "prepare-synthetic" in result.stdout and "--task paths" in result.stdout


def _shrunken(work: Path) -> Path:
    cfg = yaml.safe_load(SCIENCE.read_text())
    cfg["profile"] = "science_mini"
    cfg["models"]["tiny"]["sft"]["steps"] = 60
    cfg["data"]["synthetic"].update({"n_sft": 400, "n_train": 64, "n_test": 12})
    cfg["train"].update(
        {
            "steps": 4,
            "prompts_per_step": 4,
            "group_size": 4,
            "mini_batches": 2,
            "eval_problems": 4,
            "eval_samples": 2,
            "save_every": 4,
        }
    )
    keep = ["pacs", "grpo", "pacs_ref_fixed", "pacs_beta2"]
    cfg["runs"] = {k: v for k, v in cfg["runs"].items() if k in keep}
    cfg["seeds"] = {"main": [0, 1], "ablation": [0, 1]}
    cfg["eval"].update({"n_samples": 4, "bootstrap": 50})
    cfg["diversity"]["pca_problems"] = None
    cfg["claims"].update({"bootstrap": 100, "smooth": 2})
    path = work / "configs" / "science_mini.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


@pytest.mark.slow
def test_shrunken_science_profile_end_to_end(workflow_copy):
    config = _shrunken(workflow_copy)
    result = snakemake("--cores", "2", "--configfile", str(config), cwd=workflow_copy, timeout=1800)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = workflow_copy / "paper_figures" / "science_mini"
    table = pd.read_csv(out / "tables" / "claims.csv")
    computed = table[table["verdict"] != "no data"]  # C4: the 60-step base may solve nothing
    assert set(computed["claim"]) >= {"C1", "C2", "C3", "C3-ref", "C7"}
    assert (computed["seeds"] == 2).all()
    assert set(computed["verdict"]) <= {"holds", "reversed", "not separable"}
    assert (out / "figures" / "claims_curves.png").stat().st_size > 0
    readme = (out / "README.md").read_text()
    assert "tables/claims.md" in readme and "figures/claims_curves.png" in readme
    metrics = pd.read_json(
        workflow_copy / "results/science_mini/train/tiny/pacs/seed0/metrics.jsonl", lines=True
    )
    assert {"path_diversity", "path_entropy"} <= set(metrics.columns)
