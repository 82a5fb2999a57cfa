"""pacs.metrics_log: the metric names both engines log, and the backend choice."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from pacs.config import ConfigError, load_config, parse_profile
from pacs.metrics_log import (
    BY_NAME,
    DEFAULT_BACKENDS,
    EVAL_METRICS,
    TRAIN_FIELDS,
    TRAIN_METRICS,
    MetricsLog,
    scalars,
    tags,
)

SMOKE = Path(__file__).resolve().parents[1] / "configs" / "smoke.yaml"  # sets no logging section


def test_names_and_tags_are_unique_and_cover_metrics_jsonl():
    metrics = TRAIN_METRICS + EVAL_METRICS
    assert len({m.name for m in metrics}) == len({m.tag for m in metrics}) == len(metrics)
    assert len(tags(metrics)) == len(metrics) + sum(1 for m in metrics if m.log10_tag)
    # docs/formats.md's metrics.jsonl fields, in file order.
    assert TRAIN_FIELDS[:11] == (
        "reward_mean",
        "mixed_frac",
        "loss",
        "entropy",
        "grad_norm",
        "response_len",
        "time_generate",
        "time_reward",
        "time_reference",
        "time_update",
        "time_total",
    )
    # Every metric but the paths task's (a tiny-engine task) and the tiny engine's dynamic
    # sampling counts (verl logs its own) is read from verl too.
    tiny_only = {m.name for m in TRAIN_METRICS if not m.verl_keys}
    assert tiny_only == {
        "path_diversity",
        "path_entropy",
        "ds_rounds",
        "ds_cap_hit",
        "ds_reward_all",
    }
    assert BY_NAME["pass_at_1"].tag == "eval/pass_at_1"


def _backends(value=None) -> tuple[str, ...]:
    raw = copy.deepcopy(load_config(SMOKE))
    assert "logging" not in raw
    if value is not None:
        raw["logging"] = {"backends": value}
    return parse_profile(raw, "configs/x.yaml").logging.backends


def test_backends_default_to_tensorboard_and_are_checked():
    assert _backends() == DEFAULT_BACKENDS == ("tensorboard",)
    assert _backends(["tensorboard", "wandb"]) == ("tensorboard", "wandb")
    assert _backends([]) == ()  # metrics.jsonl only
    for bad, message in (
        (["mlflow"], "logging.backends.0: Input should be 'tensorboard' or 'wandb'"),
        ("tensorboard", "logging.backends: Input should be a valid tuple"),
        (["wandb", "wandb"], "each writer once"),
    ):
        with pytest.raises(ConfigError, match="configs/x.yaml: logging") as err:
            _backends(bad)
        assert message in str(err.value)


def test_scalars_skip_nulls_and_unstated_fields():
    row = {"step": 3, "reward_mean": 0.5, "loss": None, "clipfrac": 0.1, "mixed_frac": True}
    assert scalars(row, TRAIN_METRICS) == {"train/reward_mean": 0.5}


def test_grad_norm_is_also_logged_as_log10_so_one_explosion_does_not_flatten_the_chart():
    row = {"step": 1, "grad_norm": 5.9e6}
    assert scalars(row, TRAIN_METRICS) == {
        "train/grad_norm": 5.9e6,
        "train/grad_norm_log10": pytest.approx(6.770852),
    }
    assert scalars({"step": 2, "grad_norm": 0.01}, TRAIN_METRICS)["train/grad_norm_log10"] == -2.0
    # log10 of 0 does not exist: the raw norm is logged alone
    assert scalars({"step": 3, "grad_norm": 0.0}, TRAIN_METRICS) == {"train/grad_norm": 0.0}


def test_wandb_backend_logs_the_same_tags_offline(tmp_path, monkeypatch):
    wandb = pytest.importorskip("wandb", reason="wandb is not installed")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    with MetricsLog(tmp_path, ["wandb"], project="pacs-test", run_name="tiny-pacs-seed0") as log:
        log.log({"step": 1, "reward_mean": 0.25, "loss": 0.69})
        summary = dict(log.wandb.summary)
    assert summary["train/reward_mean"] == 0.25 and summary["train/loss"] == 0.69
    assert list((tmp_path / "wandb").glob("offline-run-*")), "no local W&B run folder"
    assert not (tmp_path / "tensorboard").exists()
    del wandb
