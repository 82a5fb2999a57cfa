"""Math benchmarks -> prepared-benchmark rows (docs/formats.md), plus shared row helpers.

Schemas (docs/formats.md#benchmark-sources), with the ids we give:

- math500: problem, solution, answer, subject, level, unique_id
  -> ``math500/`` + unique_id without ``.json`` (``math500/test/algebra/1``);
- amc23: id, answer (float such as 27.0), url, question -> ``amc23/<id>``;
- aime24: ID, Problem, Solution, Answer (int) -> ``aime24/<ID>`` (``aime24/2024-II-4``);
- aime25: id, problem, answer (str), solution, url, year -> ``aime25/<id>``;
- beyondaime: problem, answer (int), rows sorted by answer, no id column
  -> ``beyondaime/<first 12 hex of sha256(problem)>``.

BeyondAIME has no id column and its rows are sorted by answer, so a row index would change with
any re-sort; its id is a hash of the problem text instead, stable under any reordering.

AIME answers are integers from 0 to 999 by the contest's rules; BeyondAIME's are integers too but
not bounded by 999 (the real test set reaches 33124147). A gold answer outside these rules is an
error naming file, row and field (zero-padded ``"025"`` is 25).

Each field accepts a few column spellings (``Problem``/``problem``, ...) so re-saved local copies
load too. A column none of whose spellings is in the first row means an unknown schema; a
missing value in a later row is an error naming that row.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pacs import PROMPT_SUFFIX
from pacs.data.errors import DataError
from pacs.data.normalize import integer_answer, normalize_answer

MATH_BENCHMARKS = ("math500", "amc23", "aime24", "aime25", "beyondaime")
ALL_BENCHMARKS = (*MATH_BENCHMARKS, "livecodebench", "gpqa")


@dataclass(frozen=True)
class MathSchema:
    problem: tuple[str, ...]
    answer: tuple[str, ...]
    id: tuple[str, ...] = ()  # empty: content hash of the problem
    solution: tuple[str, ...] = ()
    integer_range: tuple[int, int | None] | None = None  # answers must be integers in it


SCHEMAS: dict[str, MathSchema] = {
    "math500": MathSchema(("problem",), ("answer",), ("unique_id",), ("solution",)),
    "amc23": MathSchema(("question", "problem"), ("answer",), ("id",)),
    "aime24": MathSchema(
        ("Problem", "problem"),
        ("Answer", "answer"),
        ("ID", "id"),
        ("Solution", "solution"),
        integer_range=(0, 999),
    ),
    "aime25": MathSchema(("problem",), ("answer",), ("id",), integer_range=(0, 999)),
    "beyondaime": MathSchema(("problem",), ("answer",), integer_range=(0, None)),
}


def resolve_columns(
    file: Any, first: dict[str, Any], fields: dict[str, Sequence[str]]
) -> dict[str, str]:
    """Map each field to the first of its spellings present in ``first``; else unknown schema."""
    columns = {}
    for field, spellings in fields.items():
        found = next((c for c in spellings if c in first), None)
        if found is None:
            raise DataError(
                file,
                f"unknown schema: no column {' or '.join(map(repr, spellings))} "
                f"(columns present: {sorted(first)})",
                0,
                spellings[0],
            )
        columns[field] = found
    return columns


def require(file: Any, i: int, row: dict[str, Any], column: str) -> Any:
    """``row[column]``; a missing key, None or blank string is an error naming file, row, field."""
    value = row.get(column)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise DataError(file, "missing or empty value", i, column)
    return value


def require_str(file: Any, i: int, row: dict[str, Any], column: str) -> str:
    value = require(file, i, row, column)
    if not isinstance(value, str):
        raise DataError(file, f"expected a string, got {type(value).__name__}", i, column)
    return value


def text_id(text: str) -> str:
    """12 hex characters of the sha256 of ``text``: a stable content id."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def user_prompt(content: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": content}]


def with_system_prompt(messages: list[dict], system_prompt: str | None) -> list[dict]:
    """``messages`` with a system turn in front (config ``prompt.system_prompt`` for our runs, a
    released model's documented one for Table 1); unchanged when ``system_prompt`` is None. A
    prompt that has a system turn already is refused: two system turns would be a prompt no model
    was trained on."""
    if system_prompt is None:
        return messages
    if any(m.get("role") == "system" for m in messages):
        raise ValueError("the prompt has a system turn already; --system-prompt would add another")
    return [{"role": "system", "content": system_prompt}, *messages]


def math_row(
    benchmark: str, pid: str, problem: str, answer: str, solution: str | None = None
) -> dict[str, Any]:
    """A prepared math row: the user turn is the problem plus the paper's suffix (App. C)."""
    row = {
        "problem_id": f"{benchmark}/{pid}",
        "benchmark": benchmark,
        "task": "math",
        "prompt": user_prompt(problem + PROMPT_SUFFIX),
        "answer": answer,
        "problem": problem,
    }
    if solution is not None:
        row["solution"] = solution
    return row


def _row_name(where: int | tuple[str, int]) -> str:
    """ "row 3" for index 2; "b.jsonl row 3" for (file, index 2)."""
    if isinstance(where, tuple):
        return f"{Path(where[0]).name} row {where[1] + 1}"
    return f"row {where + 1}"


def check_unique_ids(
    file: Any, rows: Sequence[dict[str, Any]], source_rows: Sequence[Any] | None = None
) -> None:
    """Duplicate ``problem_id`` values are an error naming both rows.

    ``source_rows[k]`` is the input row that ``rows[k]`` came from: its 0-based index (default
    ``k``) or (file, index) when rows come from several files (the error then names that file).
    """
    index = list(source_rows) if source_rows is not None else list(range(len(rows)))
    first_seen: dict[str, Any] = {}
    for k, row in enumerate(rows):
        pid = row["problem_id"]
        if pid in first_seen:
            where = index[k]
            raise DataError(
                where[0] if isinstance(where, tuple) else file,
                f"duplicate problem id {pid!r} (first at {_row_name(first_seen[pid])})",
                where[1] if isinstance(where, tuple) else where,
                "problem_id",
            )
        first_seen[pid] = index[k]


def _math_id(benchmark: str, value: Any, file: Any, i: int, column: str) -> str:
    text = str(value).strip()
    if benchmark == "math500":
        text = text.removesuffix(".json")
    if not text:
        raise DataError(file, "empty id", i, column)
    return text


def gold_answer(
    schema: MathSchema, benchmark: str, value: Any, file: Any, i: int, column: str
) -> str:
    """The normalised gold answer; integer-answer benchmarks also check type and range."""
    if schema.integer_range is None:
        return normalize_answer(value, file=file, index=i, field=column)
    low, high = schema.integer_range
    return integer_answer(
        value, low, high, file=file, index=i, field=column, what=f"{benchmark} answers"
    )


def convert_math(
    benchmark: str, records: Sequence[dict[str, Any]], file: Any
) -> list[dict[str, Any]]:
    """Rows of a math benchmark in the prepared format; ids unique, answers normalised."""
    if not records:
        raise DataError(file, "no rows")
    schema = SCHEMAS[benchmark]
    fields = {"problem": schema.problem, "answer": schema.answer}
    if schema.id:
        fields["id"] = schema.id
    cols = resolve_columns(file, records[0], fields)
    sol_col = next((c for c in schema.solution if c in records[0]), None)
    rows = []
    for i, rec in enumerate(records):
        problem = require_str(file, i, rec, cols["problem"])
        answer = gold_answer(
            schema, benchmark, require(file, i, rec, cols["answer"]), file, i, cols["answer"]
        )
        if schema.id:
            pid = _math_id(benchmark, require(file, i, rec, cols["id"]), file, i, cols["id"])
        else:
            pid = text_id(problem)
        solution = rec.get(sol_col) if sol_col else None
        rows.append(
            math_row(
                benchmark, pid, problem, answer, solution if isinstance(solution, str) else None
            )
        )
    check_unique_ids(file, rows)
    return rows
