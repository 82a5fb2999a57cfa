"""maj@k's equivalence plan: which pairs of distinct vote keys the verifier is asked about.

Linear in the number of distinct keys (with a log factor): the pairs are chosen among a few
hundred of them, never built over all (one problem with 9,000 distinct answers built 40 million
pairs: 30 s of CPU and 3 GB). benchmarks/bench_majk_plan.py prints the figure.
"""

from __future__ import annotations

import heapq
import logging
from collections import Counter

log = logging.getLogger("pacs.evaluation.passk")


def most_voted_pairs(keys: list[str], votes: Counter, values: dict, max_pairs: int) -> list:
    """The ``max_pairs`` most voted pairs ``(a, b)`` of ``keys`` (first-seen order, a before b)
    where a or b is not a plain number (``values[key] is None``); ties in first-seen order.

    Without building every pair: each of them lies among the ``max_pairs + 1`` most voted keys
    and the ``max_pairs + 1`` most voted keys that are not plain numbers (for a pair outside,
    ``max_pairs`` pairs with one end swapped for a key ranked above it rank before it), so at
    most ``(2 * max_pairs + 2)**2 / 2`` pairs are ranked, whatever the number of keys.
    """
    position = {key: i for i, key in enumerate(keys)}
    rank = lambda key: (-votes[key], position[key])
    top = heapq.nsmallest(max_pairs + 1, keys, key=rank)
    top_words = heapq.nsmallest(max_pairs + 1, (k for k in keys if values[k] is None), key=rank)
    candidates = sorted(set(top) | set(top_words), key=position.__getitem__)
    pairs = [
        (a, b)
        for i, a in enumerate(candidates)
        for b in candidates[i + 1 :]
        if values[a] is None or values[b] is None
    ]
    pairs.sort(key=lambda ab: -(votes[ab[0]] + votes[ab[1]]))  # stable: first-seen among equals
    n_words = len([k for k in keys if values[k] is None])
    total = n_words * (n_words - 1) // 2 + n_words * (len(keys) - n_words)
    if total > max_pairs:
        log.warning(
            "maj@k: %d distinct-answer pairs in one problem, verifying the %d most voted",
            total,
            max_pairs,
        )
    return pairs[:max_pairs]
