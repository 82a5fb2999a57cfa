"""Every row of the grading-policy table (docs/grading_policy.md) is what the graders decide."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pacs.rewards import gpqa
from pacs.rewards import math as M

POLICY = Path(__file__).resolve().parents[2] / "docs" / "grading_policy.md"
COLUMNS = ["case", "grader", "response", "gold", "score", "status"]


def _cells(line: str) -> list[str]:
    """The cells of a markdown table line; ``\\|`` is a literal bar, code spans lose backticks."""
    cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    values = []
    for cell in cells:
        cell = cell.strip().replace("\\|", "|")
        if len(cell) >= 2 and cell[0] == cell[-1] == "`":
            cell = cell[1:-1]
        values.append(cell)
    return values


def policy_cases(text: str) -> list[dict[str, str]]:
    """The rows between the ``cases:start`` and ``cases:end`` markers."""
    block = text.split("<!-- cases:start -->", 1)[1].split("<!-- cases:end -->", 1)[0]
    lines = [line for line in block.strip().splitlines() if line.startswith("|")]
    header, rule, *rows = lines
    assert _cells(header) == COLUMNS and set(rule) <= set("|-")
    cases = [dict(zip(COLUMNS, _cells(line), strict=True)) for line in rows]
    names = [case["case"] for case in cases]
    assert len(set(names)) == len(names), "case names must be unique"
    return cases


CASES = policy_cases(POLICY.read_text(encoding="utf-8"))


def _grade(case: dict[str, str]):
    if case["grader"] == "gpqa":
        return gpqa.grade(case["response"], case["gold"])
    extraction = {"math": "strict", "math official": "official"}[case["grader"]]
    return M.grade(case["response"], case["gold"], extraction=extraction)


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_policy_case(case):
    result = _grade(case)
    assert (result.score, result.status) == (float(case["score"]), case["status"]), result


def test_the_table_covers_the_named_classes():
    # The list: first vs last box, no box, several boxes, equations and chains, hedges,
    # e-notation, unicode, units.
    names = " ".join(c["case"] for c in CASES)
    for topic in ("last box", "first box", "no box", "list", "equation", "chain", "hedge"):
        assert topic in names, topic
    for topic in ("e-notation", "unicode", "unit", "gpqa"):
        assert topic in names, topic


def test_the_parser_reads_bars_and_code_spans():
    text = (
        "<!-- cases:start -->\n| case | grader | response | gold | score | status |\n"
        "|---|---|---|---|---|---|\n| abs | math | `\\boxed{\\|x\\|}` | `2` | 0 | ok |\n"
        "<!-- cases:end -->"
    )
    [case] = policy_cases(text)
    assert case["response"] == "\\boxed{|x|}" and case["score"] == "0"
