"""GPQA-Diamond from a hand-written CSV in the original schema (the real file is not shipped)."""

from __future__ import annotations

import csv
import json

import pytest

from pacs.data import DataError
from pacs.data.gpqa import convert_gpqa
from pacs.data.prepare import prepare_eval
from pacs.rewards.gpqa import build_prompt, shuffle_seed

COLUMNS = [
    "Pre-Revision Question",
    "Question",
    "Correct Answer",
    "Incorrect Answer 1",
    "Incorrect Answer 2",
    "Incorrect Answer 3",
    "Record ID",
    "High-level domain",
]
ROWS = [
    ["old", "What is 2+2?\nAnswer with a number.", "4", "3", "5", "22", "rec001", "Math"],
    [
        "old",
        "Which gas do plants absorb?",
        "Carbon dioxide",
        "Oxygen",
        "Nitrogen",
        "Helium",
        "rec002",
        "Biology",
    ],
    [
        "old",
        'Line one,\nline two, "quoted".',
        "Right\nanswer",
        "Wrong 1",
        "Wrong 2",
        "Wrong 3",
        "rec003",
        "Physics",
    ],
    [
        "old",
        "Speed of light (approx.)?",
        "3e8 m/s",
        "3e6 m/s",
        "3e5 m/s",
        "340 m/s",
        "rec004",
        "Physics",
    ],
    ["old", "H2O is?", "Water", "Salt", "Sugar", "Sand", "rec005", "Chemistry"],
]


def _write_csv(path, rows, columns=COLUMNS):
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        writer.writerows(rows)
    return path


def test_loads_and_shuffles_deterministically(tmp_path):
    path = _write_csv(tmp_path / "gpqa_diamond.csv", ROWS)
    assert len(path.read_text().splitlines()) > len(ROWS) + 1  # newlines inside quoted fields
    rows = convert_gpqa(path)
    assert rows == convert_gpqa(path)
    assert [r["problem_id"] for r in rows] == [f"gpqa/rec00{i}" for i in range(1, 6)]
    for row, src in zip(rows, ROWS):
        question, correct, wrong = src[1], src[2], src[3:6]
        assert row["benchmark"] == "gpqa" and row["task"] == "gpqa"
        assert row["problem"] == question
        assert sorted(row["options"]) == sorted([correct, *wrong])
        assert row["options"]["ABCD".index(row["answer"])] == correct
        assert row["seed"] == shuffle_seed(src[6])
        assert row["prompt"] == [
            {"role": "user", "content": build_prompt(question, row["options"])}
        ]
        assert "\\boxed" not in row["prompt"][0]["content"]
    assert rows[2]["problem"] == 'Line one,\nline two, "quoted".'
    assert rows[2]["answer"] and "Right\nanswer" in rows[2]["options"]
    # the gold is not always at "A": the shuffle moves it
    assert len({r["answer"] for r in rows}) > 1


def test_order_of_rows_does_not_change_a_question(tmp_path):
    forward = convert_gpqa(_write_csv(tmp_path / "a.csv", ROWS))
    backward = convert_gpqa(_write_csv(tmp_path / "b.csv", ROWS[::-1]))
    assert sorted(forward, key=lambda r: r["problem_id"]) == sorted(
        backward, key=lambda r: r["problem_id"]
    )


def test_prepare_eval_local(tmp_path):
    path = _write_csv(tmp_path / "gpqa_diamond.csv", ROWS)
    out = prepare_eval("gpqa", "local", tmp_path / "out" / "gpqa.jsonl", path=path)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows == convert_gpqa(path)
    manifest = json.loads((tmp_path / "out" / "gpqa.manifest.json").read_text())
    assert manifest["rows"] == 5 and manifest["benchmark"] == "gpqa"


def test_bad_gpqa_files(tmp_path):
    dup = _write_csv(tmp_path / "dup.csv", [*ROWS, ROWS[0]])
    with pytest.raises(
        DataError, match=r"dup\.csv, row 6, field 'problem_id': duplicate problem id 'gpqa/rec001'"
    ):
        convert_gpqa(dup)
    no_col = _write_csv(tmp_path / "nocol.csv", [r[:6] for r in ROWS], COLUMNS[:6])
    with pytest.raises(DataError, match=r"nocol\.csv: .*Record ID"):
        convert_gpqa(no_col)
    empty_field = _write_csv(
        tmp_path / "emptyfield.csv", [ROWS[0], [*ROWS[1][:2], "", *ROWS[1][3:]]]
    )
    with pytest.raises(DataError, match=r"emptyfield\.csv, row 2, field 'Correct Answer'"):
        convert_gpqa(empty_field)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    out = tmp_path / "gpqa.jsonl"
    with pytest.raises(DataError, match=r"empty\.csv: file is empty"):
        prepare_eval("gpqa", "local", out, path=empty)
    assert not out.exists()
