"""Issue 35: no false relation, hedge or candidate list earns credit (docs/grading_policy.md).

A battery of responses mutated from right answers over golds of every kind (integers,
fractions, roots, pi, negatives, tuples, sets, intervals, expressions). Each mutation is
labelled by the policy's "Relations and candidate lists" section: an equivalent form 1, a
wrong, hedged, listed or false form 0. The whole battery is graded in one batch and must have
0 false positives and 0 false negatives. Before the fix 338 of 2,827 such responses scored 1.
"""

from __future__ import annotations

import itertools

import pytest

from pacs.rewards import gpqa
from pacs.rewards import math as M

# gold -> (equivalent forms, wrong values). Every kind of gold the issue names.
ONE_VALUE = {
    "42": (["42", "42.0", "\\frac{84}{2}"], ["43", "41"]),
    "7": (["7", "\\frac{14}{2}"], ["8", "-7"]),
    "1000": (["1000", "1{,}000"], ["100", "1001"]),
    "\\frac{3}{4}": (["\\frac{3}{4}", "0.75", "\\dfrac{3}{4}"], ["\\frac{4}{3}", "0.7"]),
    "\\frac{7}{2}": (["\\frac{7}{2}", "3.5"], ["\\frac{2}{7}", "3"]),
    "\\sqrt{2}": (["\\sqrt{2}", "\\sqrt2", "2^{1/2}"], ["2", "\\sqrt{3}"]),
    "3\\sqrt{5}": (["3\\sqrt{5}", "\\sqrt{45}"], ["5\\sqrt{3}", "\\sqrt{15}"]),
    "\\frac{\\sqrt{3}}{2}": (["\\frac{\\sqrt{3}}{2}", "\\frac{\\sqrt3}{2}"], ["\\frac{1}{2}"]),
    "2\\pi": (["2\\pi", "\\pi \\cdot 2"], ["\\pi", "4\\pi"]),
    "\\frac{\\pi}{4}": (["\\frac{\\pi}{4}", "\\pi/4"], ["\\frac{\\pi}{3}", "4\\pi"]),
    "-5": (["-5", "-5.0", "-\\frac{10}{2}"], ["5", "-6"]),
    "-\\frac{1}{2}": (["-\\frac{1}{2}", "-0.5", "\\frac{-1}{2}"], ["\\frac{1}{2}", "-2"]),
    "-12": (["-12", "-12.00"], ["12", "-13"]),
    "2x+1": (["2x+1", "1+2x", "2 x + 1"], ["2x-1", "x+1"]),
    "x^2-1": (["x^2-1", "(x-1)(x+1)"], ["x^2+1", "x^2"]),
}
SEVERAL = {
    "(1, 2)": (["(1, 2)", "(1,2)", "\\left(1, 2\\right)"], ["(2, 1)", "(1, 3)"]),
    "(3, -4)": (["(3, -4)", "(3,-4)"], ["(3, 4)", "(-4, 3)"]),
    "\\{1, 2\\}": (["\\{1, 2\\}", "\\{2, 1\\}"], ["\\{1, 3\\}", "\\{1\\}"]),
    "\\{2, 5, 7\\}": (["\\{2, 5, 7\\}", "\\{7, 2, 5\\}"], ["\\{2, 5\\}", "\\{2, 5, 8\\}"]),
    "[1, 3)": (["[1, 3)", "[1,3)", "\\left[1, 3\\right)"], ["[1, 3]", "(1, 3)"]),
    "(-\\infty, 2]": (["(-\\infty, 2]", "(-\\infty,2]"], ["(-\\infty, 2)", "[2, \\infty)"]),
}

# Equivalent forms of the right answer R: the policy's names, spelling, spacing and wrappers.
RIGHT = [
    "{R}",
    "x = {R}",
    "{R} = x",
    "x := {R}",
    "x \\coloneqq {R}",
    "x \\equiv {R}",
    "x == {R}",
    "x \\!= {R}",
    "x \\, = \\, {R}",
    "x \\;=\\; {R}",
    "x \\: = \\: {R}",
    "x ~=~ {R}",
    "{x = {R}}",
    "\\left(x = {R}\\right)",
    "x = {R}.",
    "x = {R};",
    "\\text{answer} = {R}",
    "a + b = {R}",
    "x = {R} = {R2}",
    "{R2} = {R}",
    "x \\to {R}",
    "x → {R}",
    "x ≡ {R}",
    "x ≔ {R}",
    "x^2 = 9 \\implies x = {R}",
]
# Forms of a right answer R and a wrong value W that must score 0.
FALSE = [
    "{W}",
    "x = {W}",
    "{W} = {R}",
    "{R} = {W}",
    "{W} \\, = \\, {R}",
    "{W} \\; = \\; {R}",
    "{W} \\: = \\: {R}",
    "{W}\\quad=\\quad{R}",
    "{{W} = {R}}",
    "({W} = {R})",
    "\\left({W} = {R}\\right)",
    "({{W} = {R}})",
    "{W} == {R}",
    "{W} \\!= {R}",
    "{W} \\equiv {R}",
    "{W} := {R}",
    "{W} =: {R}",
    "{W} ≡ {R}",
    "{W}\\text{ cm} = {R}",
    "{W} \\text{ apples} = {R}",
    "{W} \\mathrm{m} = {R}",
    "{W} = {R};",
    "{W} = {R}.",
    "x = {W} = {R}",
    "x = {R} = {W}",
    "{W} \\approx {R}",
    "{R} \\approx {W}",
    "{W} ≈ {R}",
    "{W} \\to {R}",
    "{R} \\to {W}",
    "{W} \\Rightarrow {R}",
    "{W} → {R}",
    "{W} \\implies x = {R}",
    "1 = 2 \\implies x = {R}",
    "{R} \\text{ or } {W}",
    "{W} \\text{ or } {R}",
    "{R} \\text{ (or } {W}\\text{)}",
    "{R} \\text{ or }",
    "\\text{either } {R} \\text{ or } {W}",
    "{R} \\lor {W}",
    "{R} \\vee {W}",
    "{R} \\text{ (maybe } {W}\\text{)}",
    "{R} \\text{, possibly } {W}",
    "{R}\\text{ otherwise }{W}",
    "{R} \\text{ OR } {W}",
    "x \\le {R}",
    "x \\leq {R}",
    "x \\ge {R}",
    "x < {R}",
    "{R} > x",
    "x \\ne {R}",
    "x \\neq {R}",
    "x ≤ {R}",
    "{R} \\in \\mathbb{R}",
    "x \\notin {R}",
]
# Candidate lists: 0 against a gold of one value.
LISTS = ["{R}, {W}", "{W}, {R}", "{R}; {W}", "{R} \\quad {W}", "{R} \\text{ and } {W}", "{R}, {R}"]
MEMBER = ["x \\in {R}", "x ∈ {R}"]  # a set or an interval: the membership names it


def fill(template: str, **values: str) -> str:
    """``template`` with ``{R}``, ``{R2}``, ``{W}`` replaced (LaTeX braces stay as written)."""
    for key, value in values.items():
        template = template.replace("{" + key + "}", value)
    return template


def battery() -> list[tuple[str, str, int]]:
    """(response, gold, label) for every gold, form and template."""
    cases = []
    for gold, (rights, wrongs) in {**ONE_VALUE, **SEVERAL}.items():
        several = gold in SEVERAL
        for r, r2 in itertools.product(rights, repeat=2):
            cases += [(fill(t, R=r, R2=r2), gold, 1) for t in RIGHT if r2 == r or "{R2}" in t]
            if several and gold[0] != "(" or gold.startswith("(-"):
                cases += [(fill(t, R=r), gold, 1) for t in MEMBER if r2 == r]
        for r, w in itertools.product(rights, wrongs):
            cases += [(fill(t, R=r, W=w), gold, 0) for t in FALSE]
            cases += [] if several else [(fill(t, R=r, W=w), gold, 0) for t in LISTS]
    # deduplicated; a template that names a variable is not an answer to an expression gold
    unique = dict.fromkeys((f"\\boxed{{{resp}}}", gold, label) for resp, gold, label in cases)
    return [case for case in unique if not _names_clash(case)]


def _names_clash(case: tuple[str, str, int]) -> bool:
    # "x \to 2x+1" or "x^2 = 9 => x = x^2-1" say nothing about an expression in x.
    response, gold, label = case
    clash = ("\\to", "→", "9", "a + b")
    return "x" in gold and label == 1 and any(c in response for c in clash)


CASES = battery()


def test_the_battery_is_large_and_covers_every_kind():
    assert len(CASES) >= 2000
    assert sum(label for _, _, label in CASES) >= 500  # both labels well represented
    assert len({gold for _, gold, _ in CASES}) == len(ONE_VALUE) + len(SEVERAL)


def test_the_battery_has_no_false_positive_or_negative():
    results = M.grade_many([r for r, _, _ in CASES], [g for _, g, _ in CASES], workers=0)
    wrong = [
        (response, gold, label, result.score, result.details)
        for (response, gold, label), result in zip(CASES, results)
        if result.score != label
    ]
    false_pos = [w for w in wrong if w[2] == 0]
    false_neg = [w for w in wrong if w[2] == 1]
    assert (len(false_pos), len(false_neg)) == (0, 0), wrong[:20]


# The issue's reproducers, each scored 1 before the fix.
ISSUE_CASES = [
    ("\\boxed{43 \\, = \\, 42}", "42"),
    ("\\boxed{42 \\text{ (or } 43\\text{)}}", "42"),
    ("\\boxed{{43 = 42}}", "42"),
    ("\\boxed{(43 = 42)}", "42"),
    ("\\boxed{43 == 42}", "42"),
    ("\\boxed{43 \\!= 42}", "42"),
    ("\\boxed{43 \\equiv 42}", "42"),
    ("\\boxed{43 := 42}", "42"),
    ("\\boxed{43\\text{ cm} = 42}", "42"),
    ("\\boxed{43 = 42;}", "42"),
    ("\\boxed{42, 42}", "42"),
]


@pytest.mark.parametrize(("response", "gold"), ISSUE_CASES)
def test_the_issue_reproducers_score_0(response, gold):
    assert M.grade(response, gold).score == 0.0


def test_a_structural_verdict_is_named():
    hedge = M.grade("\\boxed{42 \\text{ or } 43}", "42")
    listed = M.grade("\\boxed{42, 43}", "42")
    order = M.grade("\\boxed{x \\le 42}", "42")
    assert (hedge.details["method"], listed.details["method"]) == ("hedge", "list")
    assert order.details == {"method": "relation", "reason": "an inequality is not a value"}


def test_a_gold_with_the_same_hedge_or_relation_is_compared_whole():
    assert M.grade("\\boxed{\\pm 2}", "\\pm 2").score == 1.0
    assert M.grade("\\boxed{y = 2x + 1}", "y = 2x+1").score == 1.0


# GPQA: the chosen letter followed by another option through a connective is a hedge.
GPQA_HEDGES = [
    "{a} (or {b})",
    "{a}, or {b}",
    "{a} | {b}",
    "{a} or\n{b}",
    "${a}$ (or {b})",
    "{a} or {b}",
    "{a}/{b}",
    "{a} / {b}",
    "{a}, {b}",
    "{a}; {b}",
    "{a} and {b}",
    "{a} and/or {b}",
    "{a} & {b}",
    "{a} + {b}",
    "**{a}** or **{b}**",
    "({a}) or ({b})",
    "{a} [or {b}]",
    "{a}, maybe {b}",
    "{a} or possibly {b}",
    "{a} vs {b}",
    "{a} \\lor {b}",
    "{a} OR {b}",
    "{a} nor {b}",
]
GPQA_FIRM = ["{a}", "({a})", "${a}$", "**{a}**", "{a}. Option {b} fails.", "{a}\n\n{b} is wrong"]


def gpqa_battery() -> list[tuple[str, str, int]]:
    cases = []
    for a, b in itertools.permutations("ABCD", 2):
        for form in GPQA_HEDGES:
            text = form.format(a=a, b=b)
            cases += [(f"ANSWER: {text}", a, 0), (f"ANSWER: {text}", b, 0)]
            cases += [(f"\\boxed{{{text}}}", a, 0)] if "\n" not in text else []
        for form in GPQA_FIRM:
            cases += [(f"ANSWER: {form.format(a=a, b=b)}", a, 1)]
    return cases


def test_gpqa_hedges_score_0_and_firm_answers_1():
    cases = gpqa_battery()
    wrong = [(r, g, label) for r, g, label in cases if gpqa.grade(r, g).score != label]
    assert len(cases) >= 500 and wrong == []
