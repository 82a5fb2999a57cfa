"""Issue 47: a GPQA final answer naming two or more option letters, in any notation, scores 0;
a single letter in the shapes models write scores 1 (docs/grading_policy.md, GPQA).

Every hedge shape is tried with the gold as the first letter and as the second, on the answer
line and in a box; every single-letter shape on the answer line and in a box. Before the fix
41 of 74 hedges in the issue's new shapes scored 1 for their first letter.
"""

from __future__ import annotations

import pytest

from pacs.rewards import gpqa

# Between the chosen letter X and a second one Y.
JOINS = [
    " (Y)", " - Y", " → Y", " ∨ Y", "，Y", " unless Y", " or Y", "/Y", " & Y", " + Y", "; Y",
    " vs Y", " vs. Y", " versus Y", " > Y", " = Y", " ≈ Y", " (or Y)", " [Y]", " {Y}", " *Y*",
    " \\lor Y", " | Y", " then Y", ", maybe Y", " and Y", " but possibly Y", " (perhaps Y)",
    " ⇒ Y", "~Y", "...Y", " — Y", " (option Y)", " / Y", " ↔ Y", " <-> Y", " :: Y", " ~ Y",
    " or possibly Y", " (alternatively Y)", " with Y", ". Or Y", " or else Y", " (Y?)",
    " (not Y)", " if not Y", "，或 Y", " ＆ Y", " （Y）", " Ｙ",
]  # fmt: skip
SINGLE = [
    "ANSWER: X",
    "ANSWER: (X)",
    "ANSWER: **X**",
    "**ANSWER: X**",
    "ANSWER: $X$",
    "ANSWER: X.",
    "ANSWER: X) 4.2 eV",
    "ANSWER: X (Vitamin D deficiency)",
    "ANSWER: X, the 2D spectrum",
    "ANSWER: X, the D-isomer",
    "ANSWER: X\n\nOptions A, B and D fail the test.",
    "ANSWER: X. Option A fails.",
    "ANSWER: X - the tetrahedral complex",
    "Final answer: X",
    "The answer is \\boxed{X}.",
    "\\boxed{\\text{X}}",
    "\\boxed{(X)}",
    "\\boxed{\\textbf{X}}",
    "So \\boxed{X}. Options A and D are wrong.",
    "ANSWER: X ✓",
    "ANSWER: X (option X)",
    "ANSWER: X, i.e. X",
]


def _hedges(gold: str, other: str) -> list[str]:
    out = []
    for join in JOINS:
        for first, second in ((gold, other), (other, gold)):
            pair = first + join.replace("Y", second).replace("Ｙ", chr(ord(second) + 0xFEE0))
            out += [f"Reasoning.\nANSWER: {pair}", f"So the answer is \\boxed{{{pair}}}."]
    return out


HEDGES = _hedges("C", "D") + _hedges("A", "B")


@pytest.mark.parametrize("response", HEDGES)
def test_two_letters_score_zero(response):
    gold = "C" if "C" in response else "A"
    result = gpqa.grade(response, gold)
    assert result.score == 0.0, (response, result)


@pytest.mark.parametrize("shape", SINGLE)
@pytest.mark.parametrize("gold", ["A", "C"])
def test_one_letter_scores_one(shape, gold):
    response = "Reasoning first.\n" + shape.replace("X", gold)
    result = gpqa.grade(response, gold)
    assert (result.score, result.details.get("hedged")) == (1.0, None), (response, result)
    wrong = "B" if gold != "B" else "D"
    assert gpqa.grade(response, wrong).score == 0.0


def test_the_battery_is_large_enough():
    assert len(HEDGES) >= 74 * 2 and len(SINGLE) >= 20
