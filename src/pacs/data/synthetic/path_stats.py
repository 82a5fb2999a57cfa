"""Solution-path statistics of the paths task (:mod:`pacs.data.synthetic.paths`): the pure math
the evaluation stage (:mod:`pacs.evaluation.paths`, whose docstring defines each statistic) and
the tiny loop's training-rollout metrics (:mod:`pacs.tiny.record`) share.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence

from pacs.data.synthetic.paths import parse_path
from pacs.rewards.result import is_correct

DEFAULT_SUBSAMPLE = 4


def plugin_entropy(counts: Sequence[int]) -> float:
    """Plug-in entropy (nats) of the empirical distribution ``counts / sum(counts)``."""
    total = sum(counts)
    if total <= 0:
        raise ValueError("plugin_entropy: need at least one observation")
    return float(-sum(c / total * math.log(c / total) for c in counts if c > 0))


def pairwise_disagreement(counts: Sequence[int]) -> float:
    """Fraction of the m(m-1)/2 unordered pairs whose paths differ (m >= 2): unbiased
    Gini-Simpson."""
    m = sum(counts)
    if m < 2:
        raise ValueError(f"pairwise_disagreement: need m >= 2 observations, got {m}")
    return float(1.0 - sum(c * (c - 1) for c in counts) / (m * (m - 1)))


def expected_plugin_entropy(probs: Sequence[float], m: int) -> float:
    """E[plug-in entropy of m draws from ``probs``], exactly, by summing over all count vectors.

    The bias of :func:`plugin_entropy` at sample size m is this minus the true entropy. The cost
    grows like C(m + K - 1, K - 1): fine for K = 6 paths and m up to ~32.
    """
    k = len(probs)
    total = 0.0
    for bars in itertools.combinations(range(m + k - 1), k - 1):
        counts = [b - a - 1 for a, b in zip((-1, *bars), (*bars, m + k - 1))]
        if any(c and p == 0 for c, p in zip(counts, probs)):
            continue  # impossible count vector
        log_p = math.lgamma(m + 1) + sum(
            c * math.log(p) - math.lgamma(c + 1) if c else 0.0 for c, p in zip(counts, probs)
        )
        total += math.exp(log_p) * plugin_entropy(counts)
    return total


def problem_stats(paths: Sequence[tuple[int, ...]], subsample: int) -> dict[str, float | None]:
    """Path statistics of one problem's parsed correct paths, in sample order."""
    counts = list(Counter(paths).values())
    sub = list(Counter(paths[:subsample]).values()) if len(paths) >= subsample else None
    return {
        "path_diversity": pairwise_disagreement(counts) if len(paths) >= 2 else None,
        "path_entropy": plugin_entropy(counts) if len(paths) >= 2 else None,
        "path_entropy_sub": plugin_entropy(sub) if sub else None,
    }


def mean_of(values: Sequence[float | None]) -> tuple[float | None, int]:
    """Mean of the non-None values and how many there were (None when there is none)."""
    kept = [v for v in values if v is not None]
    return (float(sum(kept) / len(kept)) if kept else None), len(kept)


def rollout_path_stats(
    texts: Sequence[str], scores: Sequence[float], quantities: Sequence[list[int]], group_size: int
) -> dict[str, float | None]:
    """Training-rollout path statistics: group-wise, then the mean over groups (None if none).

    Groups are contiguous blocks of ``group_size`` responses to one prompt.
    """
    per_group = []
    for start in range(0, len(texts), group_size):
        block = range(start, start + group_size)
        paths = [parse_path(texts[i], quantities[i]) for i in block if is_correct(scores[i])]
        per_group.append(problem_stats([p for p in paths if p is not None], DEFAULT_SUBSAMPLE))
    diversity, _ = mean_of([g["path_diversity"] for g in per_group])
    entropy, _ = mean_of([g["path_entropy"] for g in per_group])
    return {"path_diversity": diversity, "path_entropy": entropy}
