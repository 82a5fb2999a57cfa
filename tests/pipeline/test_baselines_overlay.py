"""`make baselines`: configs/overlays/baselines.yaml deep-merged into the tiny profile builds the
tiny DAG with two more training runs (DAPO, REAL) in the same results/tiny."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from pacs.config import load_profile


def dry_run(cwd: Path, *configfiles: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile", *configfiles],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def train_jobs(output: str) -> int:
    table = output.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    return int(re.search(r"^train_tiny\s+(\d+)$", table, re.MULTILINE)[1])


def test_the_overlay_adds_two_training_runs_to_the_tiny_dag(workflow_copy):
    default = dry_run(workflow_copy, "configs/default.yaml")
    merged = dry_run(workflow_copy, "configs/default.yaml", "configs/overlays/baselines.yaml")
    assert merged.returncode == 0, merged.stdout[-2000:] + merged.stderr[-2000:]
    n = len(load_profile(workflow_copy / "configs" / "default.yaml").matrix.train_jobs)
    assert train_jobs(default.stdout) == n and train_jobs(merged.stdout) == n + 2
    assert "results/tiny/train/tiny/dapo/seed0" in merged.stdout
    assert "results/tiny/train/tiny/real/seed0" in merged.stdout
