"""GPQA-Diamond -> prepared rows with ``task="gpqa"``.

The CSV (original schema: "Question", "Correct Answer", "Incorrect Answer 1..3", "Record ID",
plus metadata; fields contain newlines) is read by :func:`pacs.data.readers.read_records`. Copies
with pre-formatted options always put the gold answer at "A", so the four options are shuffled
by :func:`pacs.rewards.gpqa.shuffle_options` with a seed derived from the Record ID, and the
prompt is :func:`pacs.rewards.gpqa.build_prompt` (multiple choice, no ``\\boxed{}`` suffix).

Rows: ``problem_id = "gpqa/<Record ID>"``, ``answer`` = gold letter, ``options`` (A..D order),
``seed``, ``problem`` = the question.

Row numbers in errors count records after the header from 1, like every error of :mod:`pacs.data`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pacs.data.benchmarks import check_unique_ids, require, user_prompt
from pacs.data.errors import DataError
from pacs.data.readers import read_records

QUESTION_KEYS = ("Question", "question")
ID_KEYS = ("Record ID", "record_id", "id")


def _get(file: Any, i: int, row: dict[str, Any], keys: tuple[str, ...]) -> str:
    for key in keys:
        value = row.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip() if key in ID_KEYS else value
    raise DataError(file, "missing or empty value", i, keys[0])


def convert_gpqa(path: str | Path) -> list[dict[str, Any]]:
    """Prepared rows for every question of a GPQA CSV file."""
    from pacs.rewards.gpqa import REQUIRED_COLUMNS, build_prompt, shuffle_options

    path = Path(path)
    records = read_records(path)
    missing = [c for c in REQUIRED_COLUMNS if c not in records[0]]
    if missing:
        raise DataError(path, f"the header lacks column(s) {missing}; found {sorted(records[0])}")
    rows = []
    for i, rec in enumerate(records):
        for column in REQUIRED_COLUMNS:
            require(path, i, rec, column)
        question = _get(path, i, rec, QUESTION_KEYS)
        options, gold, seed = shuffle_options(rec)
        rows.append(
            {
                "problem_id": f"gpqa/{_get(path, i, rec, ID_KEYS)}",
                "benchmark": "gpqa",
                "task": "gpqa",
                "prompt": user_prompt(build_prompt(question, options)),
                "answer": gold,
                "problem": question,
                "options": list(options),
                "seed": int(seed),
            }
        )
    check_unique_ids(path, rows)
    return rows
