"""Issue 47: every real gold restated as a correct model writes it scores 1 (docs/grading_policy.md,
"Names, labels and separators").

The 700 golds of MATH500, AIME24, AIME25, AMC23 and BeyondAIME (../shared/data) are restated in
each family the issue found graded wrong: a LaTeX command or a bold vector as the name, thousands
separators after a name, roots joined by words or ``\\quad``, complex numbers with thin spaces, a
``\\pm`` gold as its two values, an AMC choice label before the value, unicode minus look-alikes.
Each family applies to the golds it can restate (a list gold has no ``\\theta = ...`` form); every
restatement must score 1. Before the fix 62 of 6,830 such restatements (issue 47) scored 0.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pacs.data.readers import read_records
from pacs.rewards import math as M

FILES = {
    "math500": "math500/math500_test.jsonl",
    "aime24": "aime24/aime_2024_problems.parquet",
    "aime25": "aime25/train-00000-of-00001-243207c6c994e1bd.parquet",
    "amc23": "amc23/test-00000-of-00001.parquet",
    "beyondaime": "beyondaime/test.parquet",
}
MINUS_LOOKALIKES = "\u2010\u2011\u2012\u2013\u2014\u2212\ufe63\uff0d"
_RELATION = re.compile(r"=|\\le|\\ge|<|>|\\in\b")


def load_golds(root: Path) -> list[tuple[str, str]]:
    """(benchmark/row, gold text) for every row of the five math benchmarks."""
    golds = []
    for name, file in FILES.items():
        rows = read_records(root / file)
        column = next(c for c in ("answer", "Answer") if c in rows[0])
        golds += [(f"{name}/{i}", M.normalize_gold(row[column])) for i, row in enumerate(rows)]
    return golds


def top_items(gold: str) -> list[str]:
    """The gold's top-level comma items (one item: a one-value gold)."""
    items, depth, start = [], 0, 0
    for i, char in enumerate(gold):
        depth += char in "([{" and 1 or (char in ")]}" and -1) or 0
        if char == "," and depth == 0 and not gold.startswith("\\!", i + 1):
            items.append(gold[start:i].strip())
            start = i + 1
    return [*items, gold[start:].strip()]


def is_one_value(gold: str) -> bool:
    gold = M.canonical(gold)  # "58,500" is one number
    return len(top_items(gold)) == 1 and not _RELATION.search(gold) and "\\cup" not in gold


def is_plain_list(gold: str) -> bool:
    """Roots as a bare list (``1,-2``), no brackets around the whole."""
    gold = M.canonical(gold)
    return len(top_items(gold)) > 1 and gold[0] not in "([\\" and not _RELATION.search(gold)


def _names(gold: str) -> list[str]:
    return [
        f"\\theta = {gold}",
        f"\\alpha = {gold}",
        f"\\angle ABC = {gold}",
        f"\\mathbf{{v}} = {gold}",
        f"\\vec{{v}} = {gold}",
        f"\\mathbf{{M}} = {gold}",
        f"\\boldsymbol{{u}} = {gold}",
        f"f(3) = {gold}",
        f"x_1 = {gold}",
    ]


def _thousands(gold: str) -> list[str]:
    plain = M.plain_integer(gold.replace(",\\!", "").replace(",", "").replace(" ", ""))
    if plain is None or len(plain.lstrip("-")) < 4:
        return []
    digits = plain.lstrip("-")
    head = len(digits) % 3 or 3
    groups = [digits[:head]] + [digits[i : i + 3] for i in range(head, len(digits), 3)]
    sign = "-" if plain.startswith("-") else ""
    forms = [sign + sep.join(groups) for sep in (",\\!", ",", "{,}", "\\,", ",\\! ")]
    return [f"{name} = {form}" for form in forms for name in ("x", "n", "N")] + forms


def _word_roots(gold: str) -> list[str]:
    items = top_items(gold)
    forms = []
    for word in ("\\text{ or }", "\\text{ and }", "\\text{or}", " \\text{ or } "):
        forms.append(word.join(f"x = {item}" for item in items))
        forms.append(word.join(items))
    forms.append(", ".join(f"x = {item}" for item in items))
    return forms


def _quad_roots(gold: str) -> list[str]:
    items = top_items(gold)
    return [
        " \\quad ".join(items),
        "\\qquad ".join(items),
        ", \\quad ".join(items),
        " \\quad ".join(f"x = {item}" for item in items),
        ",\\quad ".join(f"x_{i} = {item}" for i, item in enumerate(items, 1)),
    ]


_COMPLEX = re.compile(r"^(-?\s*\d+)\s*([+-])\s*(\d*)\s*i$")


def _complex(gold: str) -> list[str]:
    match = _COMPLEX.match(gold)
    if not match:
        return []
    real, sign, imag = match.groups()
    return [
        f"{real} \\, {sign} \\, {imag}\\,i",
        f"{real}\\,{sign}\\,{imag}\\,i",
        f"{real} {sign} {imag} \\, i",
        f"z = {real} \\, {sign} \\, {imag}\\,i",
        f"{real} \\; {sign} \\; {imag}i",
    ]


def _pm(gold: str) -> list[str]:
    items = top_items(gold.strip("\\{}") if gold.startswith("\\{") else gold)
    index = next((i for i, item in enumerate(items) if "\\pm" in item), None)
    if index is None:
        return []
    head, _, tail = items[index].partition("\\pm")
    plus, minus = f"{head} + {tail}", f"{head} - {tail}"
    rest = items[:index] + items[index + 1 :]
    forms = []
    for pair in ([plus, minus], [minus, plus]):
        values = pair + rest
        forms += [", ".join(values), "\\text{ or }".join(f"x = {v}" for v in values)]
        forms.append(" \\quad ".join(values))
    return forms


def _labels(gold: str) -> list[str]:
    return [
        f"\\textbf{{(C)}}\\ {gold}",
        f"\\textbf{{(C) }}{gold}",
        f"\\text{{(C) }} {gold}",
        f"(C)\\ {gold}",
        f"(C) {gold}",
        f"\\mathrm{{(C)}}~{gold}",
        f"\\textbf{{(C)}}~{gold}",
    ]


def _minus(gold: str) -> list[str]:
    if "-" not in gold:
        return []
    return [gold.replace("-", char) for char in MINUS_LOOKALIKES]


FAMILIES = {
    "command or vector name": (is_one_value, _names),
    "thousands after a name": (lambda gold: True, _thousands),
    "roots joined by words": (is_plain_list, _word_roots),
    "roots joined by quad": (is_plain_list, _quad_roots),
    "complex with thin spaces": (lambda gold: True, _complex),
    "pm as two values": (lambda gold: True, _pm),
    "choice label": (lambda gold: is_one_value(gold) and "\\text" not in gold, _labels),
    "unicode minus": (lambda gold: True, _minus),
}


def restatements(golds: list[tuple[str, str]]) -> dict[str, list[tuple[str, str, str]]]:
    """family -> [(row, gold, response)] for every gold the family can restate."""
    out: dict[str, list[tuple[str, str, str]]] = {}
    for family, (applies, forms) in FAMILIES.items():
        out[family] = [
            (row, gold, f"So the answer is $\\boxed{{{form}}}$.")
            for row, gold in golds
            if applies(gold)
            for form in forms(gold)
        ]
    return out


def misjudged(items: list[tuple[str, str, str]], want: float) -> list[str]:
    results = M.grade_many([r for _, _, r in items], [g for _, g, _ in items], workers=2)
    return [
        f"{row}: gold {gold!r}: {M.extract_boxed(response)!r} -> {res.score} {res.details}"
        for (row, gold, response), res in zip(items, results)
        if res.score != want
    ]


@pytest.fixture(scope="module")
def families(shared_data):
    golds = load_golds(shared_data)
    assert len(golds) == 700, f"expected the 700 real golds, found {len(golds)}"
    return restatements(golds)


@pytest.mark.slow
@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_restated_gold_scores_one(families, family):
    items = families[family]
    assert items, f"no gold restated in family {family!r}"
    failures = misjudged(items, 1.0)
    assert not failures, f"{len(failures)}/{len(items)}:\n" + "\n".join(failures[:40])
