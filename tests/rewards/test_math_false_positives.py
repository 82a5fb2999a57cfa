"""Issue 18: no wrong math answer scores 1 (the worst error for RL rewards and pass@k).

A table of the real cases found, then a generated test over many (gold, wrong answer) pairs of the
same kinds: numbers written with thousands separators, lists against concatenations, close decimals,
percentages, repeating decimals, digits set apart by spacing. Every deliberate difference from the
official PACS scorer is listed in docs/design.md#the-math-grader."""

from __future__ import annotations

import ast
import random
from fractions import Fraction
from pathlib import Path

import pytest

from pacs.rewards import math as M

# (response, gold, strict score): each was scored the other way before.
REAL_CASES = [
    # math-verify reads "1\,000" as 1*0*0 = 0; the same for \; ~ and a thin space
    ("\\boxed{1\\,000}", "0", 0.0),
    ("\\boxed{1\\;000}", "0", 0.0),
    ("\\boxed{1~000}", "0", 0.0),
    ("\\boxed{1\u2009000}", "0", 0.0),
    ("\\boxed{1\\,000\\,000}", "1000000", 1.0),
    ("\\boxed{1\\;000}", "1000", 1.0),
    ("\\boxed{1~000}", "1000", 1.0),
    ("\\boxed{1\u2009000}", "1000", 1.0),
    ("\\boxed{12\\,345.5}", "12345.5", 1.0),
    # a list gold is not a number with a thousands comma
    ("\\boxed{3100}", "3, 100", 0.0),
    ("\\boxed{3, 100}", "3, 100", 1.0),
    # 6-place float rounding (the official reward's): 0.0000002 equalled 0.0000001, and 0
    ("\\boxed{0.0000002}", "0.0000001", 0.0),
    ("\\boxed{0.0000001}", "0", 0.0),
    ("\\boxed{0.0000001}", "0.0000001", 1.0),
    ("\\boxed{0.333333}", "\\frac{1}{3}", 1.0),  # the official rounding's purpose stays
    # percentages compare as their number (DeepScaleR's training golds hold "25\%")
    ("\\boxed{25}", "25\\%", 1.0),
    ("\\boxed{50\\%}", "50", 1.0),
    ("\\boxed{25\\%}", "25\\%", 1.0),
    ("\\boxed{26}", "25\\%", 0.0),
    # repeating decimals
    ("\\boxed{0.\\overline{3}}", "\\frac{1}{3}", 1.0),
    ("\\boxed{0.1\\overline{6}}", "\\frac{1}{6}", 1.0),
    ("\\boxed{0.\\overline{3}}", "\\frac{1}{6}", 0.0),
    ("\\boxed{1.\\overline{9}}", "2", 1.0),
]


@pytest.mark.parametrize(("response", "gold", "score"), REAL_CASES)
def test_real_cases(response, gold, score):
    assert M.grade(response, gold).score == score


def test_the_official_mode_keeps_the_official_scorer():
    # extraction="official" reproduces the paper's reward, known faults included.
    assert M.grade("\\boxed{0.0000002}", "0.0000001", extraction="official").score == 1.0


SEPARATORS = [",", "\\,", "\\;", "~", "{,}", "\u2009", "\u202f", " "]


def grouped(n: int, sep: str) -> str:
    return f"{n:,}".replace(",", sep)


def spaced(n: int, rng: random.Random) -> str:
    """n's digits split into groups that are not thousands, joined by spacing."""
    digits = str(n)
    cut = rng.randrange(1, len(digits))
    return digits[:cut] + rng.choice(["\\,", "\\;", "~", " ", "\\ "]) + digits[cut:]


def decimal_text(value: Fraction, places: int) -> str:
    return f"{float(value):.{places}f}"


def wrong_pairs(seed: int = 18, n: int = 150) -> list[tuple[str, str]]:
    """(gold, wrong answer) pairs; the answer is never equal to the gold."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        g, w = rng.randrange(0, 10**7), rng.randrange(1000, 10**7)
        if g == w:
            continue
        pairs.append((str(g), grouped(w, rng.choice(SEPARATORS))))  # separators of a wrong number
        pairs.append((str(g), spaced(w, rng)))  # digits set apart, a product to math-verify
        a, b = rng.randrange(1, 1000), rng.randrange(1, 1000)
        pairs.append((f"{a}, {b}", f"{a}{b}"))  # a list against the concatenation
        places = rng.randrange(1, 10)
        x = Fraction(rng.randrange(0, 10**places), 10**places)
        step = Fraction(rng.choice([-1, 1]), 10**places)
        if x + step >= 0:
            pairs.append((decimal_text(x, places), decimal_text(x + step, places)))
        p = rng.randrange(1, 100)
        pairs.append((f"{p}\\%", str(p + rng.randrange(1, 5))))  # percentages
        pairs.append((str(p), f"{p + rng.randrange(1, 5)}\\%"))
        q = rng.randrange(2, 30)
        pairs.append((f"\\frac{{1}}{{{q}}}", f"0.\\overline{{{rng.randrange(1, 10)}}}"))
    return [(gold, wrong) for gold, wrong in pairs if _surely_different(gold, wrong)]


def _surely_different(gold: str, wrong: str) -> bool:
    # The repeating-decimal pairs can hit the right value (1/9 = 0.(1)): drop those.
    if wrong.startswith("0.\\overline{") and gold.startswith("\\frac{1}{"):
        q, d = int(gold[9:-1]), int(wrong[12:-1])
        return Fraction(1, q) != Fraction(d, 9)
    return True


def test_no_generated_wrong_answer_scores_one():
    pairs = wrong_pairs()
    assert len(pairs) > 900
    results = M.grade_many([f"\\boxed{{{w}}}" for _, w in pairs], [g for g, _ in pairs], workers=0)
    credited = [(g, w) for (g, w), r in zip(pairs, results) if r.score != 0.0]
    assert credited == []


def test_generated_right_answers_still_score_one():
    # The same notations written for the gold's own value are credited (the fixes do not
    # simply refuse whole notations).
    rng = random.Random(7)
    pairs = []
    for _ in range(60):
        n = rng.randrange(1000, 10**7)
        pairs.append((str(n), grouped(n, rng.choice(SEPARATORS))))
        p = rng.randrange(1, 100)
        pairs += [(f"{p}\\%", str(p)), (str(p), f"{p}\\%")]
    results = M.grade_many([f"\\boxed{{{a}}}" for _, a in pairs], [g for g, _ in pairs], workers=0)
    assert [(g, a) for (g, a), r in zip(pairs, results) if r.score != 1.0] == []


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    return {a.name for n in top if isinstance(n, ast.Import) for a in n.names} | {
        n.module for n in top if isinstance(n, ast.ImportFrom) and n.module
    }


def test_math_and_mathverify_do_not_import_each_other():
    folder = Path(M.__file__).parent
    assert "pacs.rewards.math" not in _imports(folder / "_mathverify.py")
    assert "pacs.rewards._mathverify" not in _imports(folder / "math.py")
