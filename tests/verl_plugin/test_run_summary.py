"""A verl run's summary.json names the command (nodes x GPUs: the runs table's GPU-hours) and the
code's commit (the runs table's commit column)."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

from pacs.config import load_profile
from pacs.fingerprint import code_commit
from pacs.report.runs import _gpus
from pacs.verl_plugin.launch.train import run_summary

REPO = Path(__file__).resolve().parents[2]


def test_the_summary_records_the_command_and_the_commit():
    command = [
        "python3",
        "-m",
        "verl.trainer.main_ppo",
        "trainer.nnodes=2",
        "trainer.n_gpus_per_node=8",
    ]
    profile = load_profile(REPO / "configs" / "paper.yaml")
    launch = SimpleNamespace(
        profile=profile, model="qwen3_8b", seed=0, command=command, run=profile.run("grpo")
    )
    args = SimpleNamespace(run="grpo", loss_agg_mode=None)
    summary = run_summary(launch, None, time.time() - 5, args)
    assert summary["commit"] == code_commit() and summary["steps"] == 320
    assert _gpus(summary) == 16  # what the runs table multiplies the wall time by
    # what the report's runs table names: the official scale (x8 of App. C's micro-batch), clip 1
    objective = summary["objective"]
    assert (objective["loss_scale"], objective["sum_norm_divisor"]) == (8, 1024.0)
    assert (objective["clip_norm"], objective["dual_clip_c"]) == (1.0, 3.0)
    args = SimpleNamespace(run="grpo", loss_agg_mode="token-mean")  # --loss-agg-mode
    objective = run_summary(launch, None, time.time(), args)["objective"]
    assert (objective["loss_agg_mode"], objective["loss_scale"]) == ("token-mean", 1)
