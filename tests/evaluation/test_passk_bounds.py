"""Issue 35: passk's vote keys are bounded (docs/formats.md,
docs/design.md#one-response-never-stalls-its-batch).

A 400,000-digit key took 6.2 s of CPU in the rational conversion (quadratic), and one
999k-digit box kept a ``make eval`` in the passk stage for 285 s; maj@k's pair merge could spend
200 pairs x 2 s on one problem. Each case below failed before the fix.
"""

from __future__ import annotations

import logging
import time
from fractions import Fraction

from pacs.evaluation import passk
from pacs.evaluation.passk import Problem

DIGITS = 400_000


def test_a_long_plain_number_key_is_linear_and_exact():
    key = "7" * DIGITS
    cpu = time.process_time()
    same = [passk.number_key(k) for k in (key, "000" + key, key + ".000", "+" + key)]
    other = passk.number_key(key + "1")
    cpu = time.process_time() - cpu
    assert len(set(same)) == 1 and other != same[0]
    assert passk.number_key("-" + key) != same[0]
    assert cpu < 1.0  # before: 4.7-6.2 s for the first key alone
    # the rational conversion itself refuses a key beyond its cap, by name
    assert passk.rational_value(key) is None
    assert len(key) > passk.RATIONAL_DIGITS


def test_a_long_key_that_is_a_short_number_joins_the_short_spelling():
    padded = "0" * 2000 + "0.5" + "0" * 2000
    assert passk.number_key(padded) == passk.number_key("1/2") == Fraction(1, 2)


def test_a_key_over_the_verifier_cap_is_never_verified(caplog):
    asked = []

    def verifier(pairs):
        asked.extend(pairs)
        return [False] * len(pairs)

    long_key = "x" * (passk.VERIFIED_KEY_CHARS + 1)
    p = Problem("p", [0.0] * 3, [long_key, "y", "\\sqrt{2}"])
    with caplog.at_level(logging.WARNING, logger=passk.__name__):
        passk.merge_equal_answers([p], verifier)
    assert asked == [("y", "\\sqrt{2}")]
    assert "join only the same plain number" in caplog.text


def test_each_key_has_a_verifier_budget(monkeypatch, caplog):
    # A fake clock: each verifier call costs 0.6 s. Key "a" is in every pair; after two calls
    # (1.2 s >= KEY_BUDGET_S) its other pairs are skipped, the rest still verified.
    clock = [0.0]

    class FakeTime:
        @staticmethod
        def monotonic():
            return clock[0]

    asked = []

    def verifier(pairs):
        asked.extend(pairs)
        clock[0] += 0.6
        return [False] * len(pairs)

    monkeypatch.setattr(passk, "time", FakeTime)
    p = Problem("p", [0.0] * 8, ["a", "a", "a", "a", "b", "c", "d", "e"])
    with caplog.at_level(logging.WARNING, logger=passk.__name__):
        passk.merge_equal_answers([p], verifier)
    with_a = [pair for pair in asked if "a" in pair]
    assert len(with_a) == 2
    assert ("b", "c") in asked and ("d", "e") in asked
    assert "6 answer pairs not verified" in caplog.text  # (a,d) (a,e) (b,d) (b,e) (c,d) (c,e)


def test_a_joined_pair_is_not_asked_again():
    asked = []

    def verifier(pairs):
        asked.extend(pairs)
        return [True] * len(pairs)

    p = Problem("p", [1.0] * 3, ["x+1", "1+x", "x + 1 "])
    passk.merge_equal_answers([p], verifier)
    assert p.answers == ["x+1"] * 3
    assert len(asked) == 2  # the third pair's keys were already one class


def test_the_merge_of_huge_keys_is_bounded():
    # The benchmark's case (benchmarks/bench_degenerate.py): four keys of 400k digits and a root.
    key = "7" * DIGITS
    p = Problem("p", [0.0] * 4, [key, key + "1", "\\sqrt{2}", "1" + key])
    cpu = time.process_time()
    passk.merge_equal_answers([p], passk.math_verifier)
    assert time.process_time() - cpu < passk.EQUIV_TIMEOUT_S + 1.0
    assert len(set(p.answers)) == 4
