"""Issue 47: no false statement or hedge scores 1 (docs/grading_policy.md, "Names, labels and
separators" and "Relations and candidate lists").

Built over real golds (every 10th one-value gold of the five math benchmarks, ../shared/data)
and a wrong value W for each right answer R, in the families issue 47 found credited: a letter
or a unit on the false side (``43 e^0 = 42``, ``43 cm = 42``), unicode relation signs the grader
did not map (``≐ ≒ ≟``), hedges without a hedge word (``42 \\text{ (43)}``), false chains
against a relation gold (``x = 6 = 5`` against ``x = 5``), and the new shapes of names, labels
and joined roots carrying a wrong or second value. Every response is labelled 0.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from pacs.rewards import math as M

_SPEC = importlib.util.spec_from_file_location(
    "real_gold_families", Path(__file__).with_name("test_real_gold_families.py")
)
families = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(families)

FALSE_SIDE = [
    "{W} e^0 = {R}",
    "{W} e^{0} = {R}",
    "{W} + 0i = {R}",
    "{W} + 0 i = {R}",
    "{W} + x - x = {R}",
    "{W} cm = {R}",
    "{W} \\mathsf{cm} = {R}",
    "{W}\\,\\mathrm{cm} = {R}",
    "{W} \\cdot 1^n = {R}",
    "{W} \\text{ cm}^2 = {R}",
    "x = {W} e^0 = {R}",
    "\\theta = {W} + 0i = {R}",
    "{P} e^0 = {R}",
    "{P} (1) = {R}",
    "{P}e^0",
    "{P} (1)",
    "{P}(1)",
]
SIGNS = "≐≒≟≑≓≗≜≝≙≚≛≞⩵⩶≍≃≅≊≈∼⟹⇒⟶→⟺↦←⊢∴∵≡≔≕＝≘≖"
SILENT = [
    "{R} \\text{ ({N})}",
    "{R} \\text{ [{N}]}",
    "{R}\\ \\text{({N})}",
    "{R} \\textbf{ ({N})}",
    "{R} \\mathrm{~({N})}",
    "{R} \\text{ vs. } {N}",
    "{R} \\text{ unless } {N}",
    "{R} \\text{ versus } {N}",
    "{R} \\mbox{ or {N}}",
    "{R} \\text{ / {N}}",
    "{R} \\text{, else {N}}",
    "{N} \\text{ ({R})}",
]
SHAPES = [
    "\\textbf{(C)}\\ {R} \\text{ or } \\textbf{(D)}\\ {W}",
    "(C)\\ {R}, (D)\\ {W}",
    "\\textbf{(C)}\\ {R} \\quad \\textbf{(D)}\\ {W}",
    "\\textbf{(C)}\\ {W}",
    "\\theta = {W}",
    "\\mathbf{v} = {W}",
    "\\theta = {W} = {R}",
    "\\angle ABC = {R} = {W}",
    "x = {R} \\text{ or } x = {W}",
    "x = {R} \\text{ and } x = {W}",
    "{R} \\quad {W}",
    "x = {R} \\quad x = {W}",
    "{R} \\pm {W}",
    "x_1 = {R}, x_2 = {W}",
]
CHAINS = ["{N0} = {W} = {R}", "{N0} = {R} = {W}", "{N0} = {W} = {W} = {R}", "{N0} := {W} = {R}"]


def _fill(form: str, values: dict[str, str]) -> str:
    """``form`` with ``{R}``, ``{W}``, ``{N}``, ``{N0}`` replaced (LaTeX braces stay)."""
    for key, value in values.items():
        form = form.replace("{" + key + "}", value)
    return form


def _wrong(gold: str) -> tuple[str, str]:
    """(W, N, P): a wrong value for the gold, a wrong plain number (for text wrappers), and a
    value one less (``41 e^0`` read as a mixed number is 42)."""
    plain = M.plain_integer(M.canonical(gold))
    if plain is not None:
        return str(int(plain) + 1), str(int(plain) + 1), str(int(plain) - 1)
    return f"\\left({gold}\\right) + 1", "2", f"\\left({gold}\\right) - 1"


def one_value_cases(golds: list[tuple[str, str]]) -> dict[str, list[tuple[str, str]]]:
    """family -> [(gold, response)] over every 10th one-value gold."""
    chosen = [gold for _, gold in golds if families.is_one_value(gold)][::10]
    out: dict[str, list[tuple[str, str]]] = {"false side": [], "unicode sign": [], "silent": []}
    out |= {"shapes": [], "unicode minus": []}
    for gold in chosen:
        wrong, number, before = _wrong(gold)
        fill = {"R": gold, "W": wrong, "N": number, "P": before}
        out["false side"] += [(gold, _fill(form, fill)) for form in FALSE_SIDE]
        out["unicode sign"] += [(gold, f"{wrong} {sign} {gold}") for sign in SIGNS]
        out["unicode sign"] += [(gold, f"x {sign} {wrong} {sign} {gold}") for sign in SIGNS[:8]]
        out["silent"] += [(gold, _fill(form, fill)) for form in SILENT]
        out["shapes"] += [(gold, _fill(form, fill)) for form in SHAPES]
        if M.plain_integer(gold) not in (None, "0") and not gold.startswith("-"):
            out["unicode minus"] += [(gold, f"{c}{gold}") for c in families.MINUS_LOOKALIKES]
    return out


def relation_cases(golds: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """False chains against relation golds: the real ones, and ``x = R`` over integer golds."""
    relation_golds = [gold for _, gold in golds if gold.replace(" ", "") in ("x=5", "y=2x+3")]
    integers = [gold for _, gold in golds if M.plain_integer(gold) is not None][::7]
    relation_golds += [f"x = {gold}" for gold in integers]
    cases = []
    for gold in relation_golds:
        name, _, right = (part.strip() for part in gold.partition("="))
        for wrong in (f"{right} + 1", f"2 \\cdot ({right})", "0"):
            cases += [(gold, _fill(form, {"N0": name, "W": wrong, "R": right})) for form in CHAINS]
    return cases


def battery(root: Path) -> dict[str, list[tuple[str, str]]]:
    golds = families.load_golds(root)
    out = one_value_cases(golds)
    out["false chain, relation gold"] = relation_cases(golds)
    return out


def credited(items: list[tuple[str, str]]) -> list[str]:
    responses = [f"The answer is $\\boxed{{{response}}}$." for _, response in items]
    results = M.grade_many(responses, [gold for gold, _ in items], workers=2)
    return [
        f"gold {gold!r}: {response!r} -> {res.score} {res.details}"
        for (gold, response), res in zip(items, results)
        if res.score != 0.0
    ]


@pytest.fixture(scope="module")
def cases(shared_data):
    return battery(shared_data)


def test_the_battery_is_large_enough(cases):
    sizes = {family: len(items) for family, items in cases.items()}
    assert sum(sizes.values()) >= 2000 and min(sizes.values()) >= 50, sizes


@pytest.mark.slow
@pytest.mark.parametrize(
    "family",
    ["false side", "unicode sign", "silent", "shapes", "unicode minus"]
    + ["false chain, relation gold"],
)
def test_no_false_statement_or_hedge_scores_one(cases, family):
    failures = credited(cases[family])
    assert not failures, f"{len(failures)}/{len(cases[family])}:\n" + "\n".join(failures[:40])
