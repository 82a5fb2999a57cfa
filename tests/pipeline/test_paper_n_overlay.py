"""configs/overlays/paper_n128.yaml: the paper's v2 n = 128 (§4.1) in place of the official
script's 256. `snakemake -n` for one evaluation (Qwen3-4B PACS on MATH500) shows what it changes:
the samples each generate job draws and so the number of shards (74 problems a shard at n = 256,
148 at 128, from eval.shard's budget)."""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from pacs.config import load_config

VENV_BIN = str(Path(sys.executable).parent)
TARGET = "results/paper/eval/qwen3_4b/pacs/seed0/math500/passk.json"
OVERLAY = "configs/overlays/paper_n128.yaml"


def dry_run(paper_dry_run, workflow: Path, *configfiles: str) -> tuple[Counter, list[str]]:
    """Job counts per rule and the generate commands of a dry run of TARGET."""
    stdout = paper_dry_run(workflow, [TARGET], {"math500": 500}, *configfiles)
    counts = Counter(re.findall(r"^rule (\S+):$", stdout, re.MULTILINE))
    commands = re.findall(r"^Shell command: (python -m pacs\.evaluation\.generate .*)$",
                          stdout, re.MULTILINE)  # fmt: skip
    return counts, commands


@pytest.mark.parametrize(
    "configfiles,n,shards",
    [((), 256, 7), (("configs/paper.yaml", OVERLAY), 128, 4)],
    ids=["official-256", "v2-128"],
)
def test_the_overlay_halves_the_samples_and_the_shards(
    paper_dry_run, workflow_copy, configfiles, n, shards
):
    counts, commands = dry_run(paper_dry_run, workflow_copy, *configfiles)
    assert counts["generate"] == len(commands) == shards
    assert all(f" --n {n} " in c for c in commands)
    assert counts["train_verl"] == counts["gather_samples"] == counts["passk"] == 1


def test_the_overlay_changes_only_the_sample_count():
    root = Path(__file__).resolve().parents[2]
    assert load_config(root / OVERLAY) == {"eval": {"n_samples": 128}}
    assert load_config(root / "configs" / "paper.yaml")["eval"]["n_samples"] == 256
