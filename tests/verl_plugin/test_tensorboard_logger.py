"""verl logs to TensorBoard beside metrics.jsonl, through its own trainer.logger
(pacs.metrics_log)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from pacs.config import Profile, load_config, load_profile, parse_profile
from pacs.metrics_log import TENSORBOARD_DIR, TRAIN_METRICS, tags
from pacs.verl_plugin.launch.overrides import ClusterShape, RunPaths, build_overrides
from pacs.verl_plugin.launch.train import finalize

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "configs" / "paper.yaml"


def _compose_run(compose, profile: Profile, run_dir: Path):
    paths = RunPaths(train_file="/d/train.parquet", val_file="/d/train.parquet", out_dir=run_dir)
    overrides = build_overrides(
        profile,
        profile.run("grpo"),
        "qwen3_4b",
        0,
        paths,
        ClusterShape(1, 8),
        str(run_dir / "verl_logs" / "attempt-001.jsonl"),
    )
    return compose(overrides)


def test_verl_requests_tensorboard_beside_metrics_jsonl(compose, tmp_path):
    run_dir = tmp_path / "train" / "qwen3_4b" / "grpo" / "seed0"
    c = _compose_run(compose, load_profile(PAPER), run_dir)
    assert list(c.trainer.logger) == ["console", "file", "tensorboard"]
    env = c.ray_kwargs.ray_init.runtime_env.env_vars
    # verl's _TensorboardAdapter reads TENSORBOARD_DIR in the trainer process (a Ray actor).
    assert Path(env.TENSORBOARD_DIR) == run_dir / TENSORBOARD_DIR
    assert Path(env.TENSORBOARD_DIR).parent == run_dir  # the folder that holds metrics.jsonl
    # Ray wants string env values: "1", not the integer Hydra would make of an unquoted 1.
    assert env.HF_HUB_DISABLE_PROGRESS_BARS == "1"


def test_wandb_is_added_when_the_config_asks(compose, tmp_path):
    cfg = copy.deepcopy(load_config(PAPER))
    cfg["logging"] = {"backends": ["tensorboard", "wandb"]}
    c = _compose_run(compose, parse_profile(cfg, str(PAPER)), tmp_path / "run")
    assert list(c.trainer.logger) == ["console", "file", "tensorboard", "wandb"]


def test_finalize_adds_the_stated_tags_to_verls_tensorboard_folder(tmp_path):
    """A finished verl run's TensorBoard folder gains the stated tags, read from verl's own keys;
    finalising again (a resumed, extended run) replaces that file instead of adding a second."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir = tmp_path / "run"
    (run_dir / "verl_logs").mkdir(parents=True)
    (run_dir / TENSORBOARD_DIR).mkdir()  # verl's tensorboard logger made it
    data = {key: 1.0 + i for i, m in enumerate(TRAIN_METRICS) for key in m.verl_keys[:1]}
    data["timing_s/step"] = 9.0
    lines = [
        json.dumps({"step": s, "data": {**data, "critic/rewards/mean": 0.1 * s}}) for s in (1, 2)
    ]
    (run_dir / "verl_logs" / "attempt-001.jsonl").write_text("\n".join(lines) + "\n")
    paths = RunPaths("t", "v", run_dir)
    for _ in range(2):
        finalize(run_dir, paths, {}, merge=False)
    files = sorted((run_dir / TENSORBOARD_DIR).glob("events.out.tfevents.*"))
    assert len(files) == 1
    acc = EventAccumulator(str(run_dir / TENSORBOARD_DIR))
    acc.Reload()
    assert set(acc.Tags()["scalars"]) == tags(m for m in TRAIN_METRICS if m.verl_keys)
    reward = acc.Scalars("train/reward_mean")
    assert [(e.step, round(e.value, 6)) for e in reward] == [(1, 0.1), (2, 0.2)]
    assert [e.value for e in acc.Scalars("time/step")] == [9.0, 9.0]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1, "1"),
        ("1", "'1'"),
        ("1e-6", "'1e-6'"),
        ("true", "'true'"),
        (True, "true"),
        ("vllm", "vllm"),
    ],
)
def test_numeric_looking_strings_stay_strings(value, text):
    from pacs.verl_plugin.launch.overrides import _fmt

    assert _fmt(value) == text
