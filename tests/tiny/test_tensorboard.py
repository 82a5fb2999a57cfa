"""The tiny engine logs every step to TensorBoard under the names stated in pacs.metrics_log."""

from __future__ import annotations

import json
import math

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from pacs.metrics_log import EVAL_METRICS, TENSORBOARD_DIR, TRAIN_METRICS, tags
from pacs.tiny.train import main


def _scalars(run_dir) -> dict[str, list[tuple[int, float]]]:
    acc = EventAccumulator(str(run_dir / TENSORBOARD_DIR))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def _rows(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_event_files_carry_the_stated_names_and_values(config_file, train_args, tmp_path):
    out = tmp_path / "train" / "tiny" / "pacs" / "seed0"
    main(train_args(config_file(steps=3, eval_every=2), out, "pacs"))
    logged = _scalars(out)
    # A PACS run on the arithmetic task has every stated training metric (its own stats included)
    # but the paths task's, and the held-out curve.
    arithmetic = [m for m in TRAIN_METRICS if not m.tag.startswith(("paths/", "dapo/"))]
    assert set(logged) == tags(arithmetic + list(EVAL_METRICS))
    rows = _rows(out / "metrics.jsonl")
    for m in arithmetic:  # TensorBoard stores float32
        assert [s for s, _ in logged[m.tag]] == [r["step"] for r in rows], m.tag
        assert [v for _, v in logged[m.tag]] == pytest.approx([r[m.name] for r in rows], rel=1e-6)
    log_norm = [math.log10(r["grad_norm"]) for r in rows]
    assert [v for _, v in logged["train/grad_norm_log10"]] == pytest.approx(log_norm, rel=1e-6)
    curve = _rows(out / "eval_curve.jsonl")
    assert [s for s, _ in logged["eval/pass_at_1"]] == [0, 2, 3] == [r["step"] for r in curve]


def _crash_at_3_then_resume(config_file, train_args, tmp_path) -> dict:
    """A 4-step GRPO run stopped after step 3 (checkpoint at 2), then resumed; its scalars, after
    checking that the loss shows each step once, with the values of metrics.jsonl."""
    out = tmp_path / "run"
    config = config_file(steps=4, save_every=2, eval_every=0)
    main(train_args(config, out, "grpo", 0, "--stop-after", 3))
    main(train_args(config, out, "grpo"))
    logged = _scalars(out)
    rows = _rows(out / "metrics.jsonl")
    assert [s for s, _ in logged["train/loss"]] == [1, 2, 3, 4]
    assert [v for _, v in logged["train/loss"]] == pytest.approx(
        [r["loss"] for r in rows], rel=1e-6
    )
    return logged


def test_a_resumed_run_shows_each_step_once(config_file, train_args, tmp_path):
    """Crash after step 3 with the last checkpoint at step 2: step 3 is redone, and TensorBoard
    shows the redone value only (the folder is written again from the checkpoint's rows)."""
    logged = _crash_at_3_then_resume(config_file, train_args, tmp_path)
    assert "pacs/psi_mean" not in logged  # GRPO has no PACS statistics


def test_a_resume_within_the_same_second_still_shows_each_step_once(
    config_file, train_args, tmp_path, monkeypatch
):
    """TensorBoard reads a folder's event files in name order; two attempts in the same second of
    one process differ only by an unpadded counter (9 then 10 sorts 10 first). The resumed run's
    folder must not depend on that order."""
    from tensorboard.summary.writer import event_file_writer

    monkeypatch.setattr(event_file_writer, "_global_uid", event_file_writer.AtomicCounter(9))
    monkeypatch.setattr(event_file_writer.time, "time", lambda: 1_700_000_000.0)
    logged = _crash_at_3_then_resume(config_file, train_args, tmp_path)
    assert [s for s, _ in logged["eval/pass_at_1"]] == [0, 4]
