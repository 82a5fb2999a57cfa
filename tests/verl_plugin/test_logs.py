"""verl file-logger JSONL -> metrics.jsonl (docs/formats.md)."""

from __future__ import annotations

import json

import pytest

from pacs.verl_plugin.launch.logs import ROW_ORDER, convert, main, next_attempt_path


def _line(step, **data):
    return json.dumps({"step": step, "data": data}) + "\n"


STEP = {  # the keys verl 0.9.1 logs for a PACS step (metric_utils + v1 trainer + our loss)
    "critic/rewards/mean": 0.25,
    "critic/score/mean": 0.25,
    "actor/pg_loss": 0.69,
    "actor/entropy": 1.5,
    "actor/grad_norm": 0.1,
    "response_length/mean": 812.0,
    "timing_s/gen": 30.0,
    "timing_s/old_log_prob": 4.0,
    "timing_s/adv": 0.1,
    "timing_s/update_actor": 20.0,
    "timing_s/step": 60.0,
    "actor/pacs_psi_mean": 0.0,
    "actor/pacs_sigma_mean": 0.5,
    "actor/pacs_score_acc": 0.4,
    "actor/pacs_weight_mean": 1.1,
    "actor/pacs_mixed_frac": 0.3,
}


def test_convert_maps_fields_and_merges_attempts(tmp_path):
    logs = tmp_path / "verl_logs"
    logs.mkdir()
    # attempt 1: the validation row at step 0, steps 1-2, then a torn line (killed mid-write)
    (logs / "attempt-001.jsonl").write_text(
        _line(0, **{"val-core/aime/acc/mean@1": 0.3})
        + _line(1, **STEP)
        + _line(2, **{**STEP, "actor/pg_loss": 0.5})
        + '{"step": 3, "da'
    )
    # attempt 2 resumed from the step-1 checkpoint: it redoes step 2, then step 3 (GRPO-like: no
    # pacs keys)
    grpo_step = {k: v for k, v in STEP.items() if not k.startswith("actor/pacs")}
    (logs / "attempt-002.jsonl").write_text(
        _line(2, **{**STEP, "actor/pg_loss": 0.4}) + _line(3, **grpo_step, **{"timing_s/ref": 2.0})
    )
    out = tmp_path / "metrics.jsonl"
    assert convert(logs, out) == 3
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert all(list(r) == list(ROW_ORDER) for r in rows)
    first = rows[0]
    assert (first["reward_mean"], first["loss"], first["entropy"], first["response_len"]) == (
        0.25,
        0.69,
        1.5,
        812.0,
    )
    assert (
        first["time_generate"],
        first["time_reference"],
        first["time_update"],
        first["time_total"],
    ) == (30.0, 4.0, 20.0, 60.0)
    assert first["time_reward"] is None  # v1 scores rewards inside generation: no separate timer
    assert (
        first["psi_mean"],
        first["sigma_mean"],
        first["score_acc"],
        first["weight_mean"],
        first["mixed_frac"],
    ) == (0.0, 0.5, 0.4, 1.1, 0.3)
    assert rows[1]["loss"] == 0.4  # the resumed attempt's row wins
    assert rows[2]["time_reference"] == 6.0 and rows[2]["psi_mean"] is None


def test_corrupt_line_in_the_middle_is_an_error(tmp_path):
    (tmp_path / "attempt-001.jsonl").write_text("not json\n" + _line(1, **STEP))
    with pytest.raises(ValueError, match="attempt-001.jsonl:1"):
        convert(tmp_path, tmp_path / "m.jsonl")


def test_missing_logs_are_an_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        convert(tmp_path, tmp_path / "m.jsonl")


def test_attempt_numbering(tmp_path):
    assert next_attempt_path(tmp_path).name == "attempt-001.jsonl"
    (tmp_path / "attempt-009.jsonl").write_text("")
    assert next_attempt_path(tmp_path).name == "attempt-010.jsonl"


def test_cli(tmp_path, capsys):
    (tmp_path / "attempt-001.jsonl").write_text(_line(1, **STEP))
    assert main(["--log-dir", str(tmp_path), "--out", str(tmp_path / "m.jsonl")]) == 0
    assert "wrote 1 steps" in capsys.readouterr().out


def test_per_update_keys_become_the_tiny_engines_columns(tmp_path):
    """The worker's actor/pacs_<stat>/mb<i> and actor/grad_norm/mb<i> follow the stated fields
    as <stat>/mb<i>, ordered by stat as logged, then by update (as the tiny engine writes them)."""
    per_update = {
        "actor/pacs_psi_abs_mean/mb1": 0.02,
        "actor/pacs_psi_abs_mean/mb0": 0.0,
        "actor/pacs_psi_std/mb0": 0.0,
        "actor/pacs_psi_std/mb1": 0.03,
        "actor/grad_norm/mb0": 1.5,
        "actor/grad_norm/mb1": 2.5,
    }
    (tmp_path / "attempt-001.jsonl").write_text(_line(1, **STEP, **per_update))
    assert convert(tmp_path, tmp_path / "m.jsonl") == 1
    (row,) = [json.loads(line) for line in (tmp_path / "m.jsonl").read_text().splitlines()]
    assert list(row)[: len(ROW_ORDER)] == list(ROW_ORDER)
    extra = list(row)[len(ROW_ORDER) :]
    assert extra == [
        "psi_abs_mean/mb0",
        "psi_abs_mean/mb1",
        "psi_std/mb0",
        "psi_std/mb1",
        "grad_norm/mb0",
        "grad_norm/mb1",
    ]
    assert [row[k] for k in extra] == [0.0, 0.02, 0.0, 0.03, 1.5, 2.5]
