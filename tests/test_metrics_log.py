"""pacs.metrics_log: the metric names both engines log, and the backend choice."""

from __future__ import annotations

import pytest

from pacs.metrics_log import (
    BY_NAME,
    EVAL_METRICS,
    TRAIN_FIELDS,
    TRAIN_METRICS,
    MetricsLog,
    logging_backends,
    scalars,
)


def test_names_and_tags_are_unique_and_cover_metrics_jsonl():
    metrics = TRAIN_METRICS + EVAL_METRICS
    assert len({m.name for m in metrics}) == len({m.tag for m in metrics}) == len(metrics)
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
    assert all(m.verl_keys for m in TRAIN_METRICS) and BY_NAME["pass_at_1"].tag == "eval/pass_at_1"


def test_backends_default_to_tensorboard_and_are_checked():
    assert logging_backends({}) == ("tensorboard",)
    assert logging_backends({"logging": {"backends": ["tensorboard", "wandb"]}}) == (
        "tensorboard",
        "wandb",
    )
    with pytest.raises(ValueError, match="logging.backends"):
        logging_backends({"logging": {"backends": ["mlflow"]}})
    with pytest.raises(ValueError, match="logging.backends"):
        logging_backends({"logging": {"backends": "tensorboard"}})


def test_scalars_skip_nulls_and_unstated_fields():
    row = {"step": 3, "reward_mean": 0.5, "loss": None, "clipfrac": 0.1, "mixed_frac": True}
    assert scalars(row, TRAIN_METRICS) == {"train/reward_mean": 0.5}


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
