"""maj@k's equivalence plan chooses the same pairs as ranking every pair (issue 47), without
building them: the plan is linear in distinct answers (benchmarks/bench_majk_plan.py)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from pacs.evaluation import passk
from pacs.evaluation._vote_pairs import most_voted_pairs


def every_pair_ranked(keys, votes, values, max_pairs):
    """The plan before issue 47: all pairs, sorted by votes (stable), cut to max_pairs."""
    pairs = [
        (a, b)
        for i, a in enumerate(keys)
        for b in keys[i + 1 :]
        if values[a] is None or values[b] is None
    ]
    pairs.sort(key=lambda ab: -(votes[ab[0]] + votes[ab[1]]))
    return pairs[:max_pairs]


@pytest.mark.parametrize("seed", range(40))
def test_the_same_pairs_as_ranking_every_pair(seed):
    rng = random.Random(seed)
    n_keys, max_pairs = rng.randint(0, 70), rng.choice([1, 3, 10, 40])
    keys = [f"k{i}" for i in range(n_keys)]
    votes = Counter({k: rng.choice([1, 1, 2, 3, rng.randint(1, 9)]) for k in keys})
    numeric_share = rng.random()
    values = {k: (i if rng.random() < numeric_share else None) for i, k in enumerate(keys)}
    got = most_voted_pairs(keys, votes, values, max_pairs)
    assert got == every_pair_ranked(keys, votes, values, max_pairs)


def test_only_numbers_give_no_pair():
    keys = [str(i) for i in range(500)]
    values = {k: int(k) for k in keys}
    assert most_voted_pairs(keys, Counter(dict.fromkeys(keys, 1)), values, 200) == []


def test_many_distinct_answers_merge_like_before():
    """9,000 distinct answers; two spellings of one half (joined as numbers, 2 votes) rank every
    pair with it first, the other key first-seen among the ties."""
    answers = ["\\frac{1}{2}", "0.5"] + [f"x_{{{i}}}" for i in range(9000)] + ["y", "y"]
    problem = passk.Problem("p", [0.0] * len(answers), answers)
    calls = []

    def verifier(pairs):
        calls.extend(pairs)
        return [b == "y" for _, b in pairs]

    passk.merge_equal_answers([problem], verifier, max_pairs=5)
    half = "\\frac{1}{2}"
    assert calls == [(half, "y")] + [(half, f"x_{{{i}}}") for i in range(4)]
    assert problem.answers[:2] == [half, half] and problem.answers[-2:] == [half, half]
