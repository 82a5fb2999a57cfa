"""pass@k, maj@k and mean@n with bootstrap confidence intervals over problems.

``python -m pacs.evaluation.passk --graded graded.jsonl --out-json passk.json --out-csv passk.csv
--benchmark aime24 --model qwen3_8b --run pacs --seed 0 [--bootstrap 1000] [--bootstrap-seed 0]``

Definitions (a sample is *correct* when its score is 1):

- **pass@k** is the unbiased estimator of Chen et al. (2021), averaged over problems.
- **maj@k**: for each problem take its samples in ``sample_idx`` order, keep the first k, and
  vote among their normalised extracted answers; samples without an answer (``extracted`` null
  or status ``no_answer``) cast no vote. Math answers that are mathematically equal vote
  together (``\\frac{1}{2}``, ``0.5`` and ``1/2`` are one vote key, see
  :func:`merge_equal_answers`).
  Ties between the top counts go to the answer seen first (lowest ``sample_idx``). The problem
  counts as solved when every one of the first k samples that carry the voted answer is
  correct; with no vote at all it is unsolved.
- **mean@n**: the mean score over all samples (all problems pooled).

k runs over 1, 2, 4, ... up to n_min (the smallest number of samples of any problem) and n_min
itself, so a k above any problem's n is never reported. Confidence intervals are percentile
bootstrap intervals (95 %) from resampling problems with replacement; all metrics share the
same resamples.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import numbers
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from pacs.evaluation._vote_pairs import most_voted_pairs
from pacs.evaluation.backends.common import GRADABLE_FINISH_REASONS, UNKNOWN_FINISH
from pacs.evaluation.io import FormatError, iter_jsonl, require
from pacs.io import write_csv, write_json
from pacs.rewards.result import is_correct

log = logging.getLogger(__name__)

TIE_RULE = "first-seen answer among tied counts"
STATUSES = ("ok", "no_answer", "timeout", "error")
CSV_HEADER = ("benchmark", "model", "run", "seed", "metric", "k", "value", "ci_low", "ci_high")
# maj@k equivalence: each verifier call is bounded, and so is their number per problem.
EQUIV_TIMEOUT_S = 2.0
MAX_EQUIV_PAIRS = 200
# A plain number with more digits than this joins its equals by its exact decimal text, not as
# a Fraction: Fraction(Decimal(s)) is quadratic (400,000 digits: 6 s of CPU before this cap).
RATIONAL_DIGITS = 1000
# A vote key longer than this never reaches the verifier (the grader's own answer cap): it
# joins only the keys that are the same plain number.
VERIFIED_KEY_CHARS = 10_000
# Verifier time one key may use in a problem before its other pairs are skipped: each key costs
# at most this plus one EQUIV_TIMEOUT_S (200 pairs of 2 s once took 400 s for one problem).
KEY_BUDGET_S = 1.0


# ----------------------------------------------------------------------------- estimators


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k = 1 - C(n-c, k) / C(n, k), in the numerically stable product form.

    ``1 - prod_{i=n-c+1}^{n} (1 - k/i)`` (HumanEval); 1.0 when ``n - c < k``.

    Args:
        n: samples drawn for the problem (>= 1).
        c: correct samples among them (0 <= c <= n).
        k: the k of pass@k (1 <= k <= n).
    """
    n, c, k = (_as_count(name, v) for name, v in (("n", n), ("c", c), ("k", k)))
    if n < 1:
        raise ValueError(f"pass_at_k: need n >= 1, got n={n}")
    if not 0 <= c <= n:
        raise ValueError(f"pass_at_k: need 0 <= c <= n, got c={c}, n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"pass_at_k: need 1 <= k <= n, got k={k}, n={n}")
    return _pass_at_k_cached(n, c, k)


def _as_count(name: str, v: object) -> int:
    """An int from an int, a numpy integer or an integral float; TypeError/ValueError otherwise."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"pass_at_k: {name} must be an integer, got {type(v).__name__} {v!r}")
    if v != int(v):
        raise ValueError(f"pass_at_k: {name} must be a whole number, got {v!r}")
    return int(v)


@lru_cache(maxsize=65536)
def _pass_at_k_cached(n: int, c: int, k: int) -> float:
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1, dtype=np.float64)))


def k_values(n_min: int) -> list[int]:
    """1, 2, 4, ... up to ``n_min``, plus ``n_min`` itself when it is not a power of two."""
    if n_min < 1:
        raise ValueError(f"k_values: need n_min >= 1, got {n_min}")
    ks = []
    k = 1
    while k <= n_min:
        ks.append(k)
        k *= 2
    if ks[-1] != n_min:
        ks.append(n_min)
    return ks


def majority_vote(answers: Sequence[str | None]) -> str | None:
    """The most frequent non-None answer; ties go to the one seen first; None if no votes."""
    counts = Counter(a for a in answers if a is not None)
    if not counts:
        return None
    top = max(counts.values())
    return next(a for a in answers if a is not None and counts[a] == top)


def maj_correct(answers: Sequence[str | None], correct: Sequence[bool], k: int) -> bool:
    """maj@k outcome of one problem from its per-sample answers (in sample order) and correctness.

    Votes among ``answers[:k]`` (None = no vote); solved when all of the first k samples that
    carry the voted answer are correct.
    """
    if len(answers) != len(correct):
        raise ValueError(
            f"maj_correct: {len(answers)} answers but {len(correct)} correctness flags"
        )
    if not 1 <= k <= len(answers):
        raise ValueError(f"maj_correct: need 1 <= k <= {len(answers)}, got k={k}")
    voted = majority_vote(answers[:k])
    if voted is None:
        return False
    return all(ok for a, ok in zip(answers[:k], correct[:k]) if a == voted)


# ----------------------------------------------------------------------------- per problem


@dataclass
class Problem:
    """The samples of one problem in ``sample_idx`` order."""

    problem_id: str
    scores: list[float]
    answers: list[str | None]  # normalised vote keys; None = no vote

    @property
    def n(self) -> int:
        return len(self.scores)

    @property
    def c(self) -> int:
        return sum(1 for s in self.scores if is_correct(s))


def pass_matrix(problems: Sequence[Problem], ks: Sequence[int]) -> np.ndarray:
    """Per-problem pass@k, shape [P, K]."""
    out = np.empty((len(problems), len(ks)), dtype=np.float64)
    for i, p in enumerate(problems):
        n, c = p.n, p.c
        for j, k in enumerate(ks):
            out[i, j] = _pass_at_k_cached(n, c, k)
    return out


def maj_matrix(problems: Sequence[Problem], ks: Sequence[int]) -> np.ndarray:
    """Per-problem maj@k outcomes (0/1), shape [P, K]."""
    out = np.empty((len(problems), len(ks)), dtype=np.float64)
    for i, p in enumerate(problems):
        flags = [is_correct(s) for s in p.scores]
        for j, k in enumerate(ks):
            out[i, j] = float(maj_correct(p.answers, flags, k))
    return out


# ----------------------------------------------------------------------------- bootstrap


def bootstrap_weights(n_problems: int, n_boot: int, seed: int) -> np.ndarray:
    """Resample counts, shape [B, P]: row b says how often each problem appears in resample b."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_problems, np.full(n_problems, 1.0 / n_problems), size=n_boot).astype(
        np.float64
    )


def ci_of_means(
    values: np.ndarray, weights: np.ndarray | None
) -> list[tuple[float | None, float | None]]:
    """95 % percentile CIs of the column means of ``values`` [P, K] under resample ``weights``."""
    if weights is None:
        return [(None, None)] * values.shape[1]
    means = weights @ values / values.shape[0]  # [B, K]
    lo, hi = np.percentile(means, [2.5, 97.5], axis=0)
    return [(float(a), float(b)) for a, b in zip(lo, hi)]


def ci_of_ratio(
    num: np.ndarray, den: np.ndarray, weights: np.ndarray | None
) -> tuple[float | None, float | None]:
    """95 % percentile CI of sum(num)/sum(den) under resample ``weights`` (pooled mean@n)."""
    if weights is None:
        return (None, None)
    ratios = (weights @ num) / (weights @ den)
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return float(lo), float(hi)


# ----------------------------------------------------------------------------- reading


def load_graded(path: str | Path) -> tuple[list[dict[str, Any]], list[int]]:
    """Read a graded file; check the fields passk needs. Returns (rows, line numbers)."""
    rows, lines = [], []
    for line, row in iter_jsonl(path):
        require(row, "problem_id", str, path, line)
        require(row, "sample_idx", int, path, line)
        score = require(row, "score", (int, float), path, line)
        if not 0.0 <= score <= 1.0:
            raise FormatError(f"{path}:{line}: field 'score' must lie in [0, 1], got {score}")
        status = require(row, "status", str, path, line)
        if status not in STATUSES:
            raise FormatError(
                f"{path}:{line}: field 'status' must be one of {STATUSES}, got {status!r}"
            )
        require(row, "extracted", (str, type(None)), path, line)
        require(row, "task", str, path, line)
        if row.get("finish_reason", "stop") not in GRADABLE_FINISH_REASONS:
            raise FormatError(
                f"{path}:{line}: field 'finish_reason' must be one of "
                f"{GRADABLE_FINISH_REASONS}, got {row['finish_reason']!r}"
            )
        rows.append(row)
        lines.append(line)
    if not rows:
        raise FormatError(f"{path}: graded file has no rows")
    return rows, lines


def vote_normalizer(task: str | None) -> Callable[[str], str]:
    """The answer normaliser used for maj@k votes: math answers via the math grader's rule."""
    if task == "gpqa":
        return lambda s: s.strip().upper()
    if task == "code":
        raise ValueError("maj@k is not defined for code tasks")
    from pacs.rewards.math import normalize_answer  # lazy: the rewards package is heavy

    return normalize_answer


# ----------------------------------------------------------------------------- equal answers

_RATIONAL = re.compile(r"([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:/(\d+(?:\.\d*)?|\.\d+))?")
_LATEX_FRAC = re.compile(r"([+-]?)\\frac\{([+-]?[\d.]+)\}\{([+-]?[\d.]+)\}")


def rational_value(key: str) -> Fraction | None:
    """The exact rational a plain numeric answer stands for, else None (the cheap normal form).

    Integers, decimals, ``a/b`` and ``\\frac{a}{b}`` (signs allowed): ``0.5``, ``1/2``,
    ``\\frac{1}{2}`` and ``.50`` all give ``Fraction(1, 2)``. A zero denominator gives None, and
    so does a key longer than RATIONAL_DIGITS (the conversion is quadratic; see number_key).
    """
    if len(key) > RATIONAL_DIGITS:
        return None
    m = _RATIONAL.fullmatch(key) or _LATEX_FRAC.fullmatch(key)
    if m is None:
        return None
    sign, num, den = m.group(1), m.group(2), m.group(3) or "1"
    try:
        value = Fraction(Decimal(num)) / Fraction(Decimal(den))
    except (InvalidOperation, ZeroDivisionError):
        return None
    return -value if sign == "-" else value


_PLAIN_DECIMAL = re.compile(r"([+-]?)(\d*)(?:\.(\d*))?")


def number_key(key: str) -> Fraction | tuple[bool, str, str] | None:
    """Equal for two keys exactly when they are the same plain number; None for anything else.

    :func:`rational_value`, or for a plain decimal too long for it, its exact normal text
    (sign, digits without leading zeros, decimals without trailing zeros): linear in the key.
    """
    if len(key) <= RATIONAL_DIGITS:
        return rational_value(key)
    m = _PLAIN_DECIMAL.fullmatch(key)
    if m is None or not (m.group(2) or m.group(3)):
        return None
    whole, decimals = m.group(2).lstrip("0"), (m.group(3) or "").rstrip("0")
    if len(whole) + len(decimals) < RATIONAL_DIGITS:
        return rational_value(f"{m.group(1)}{whole or '0'}.{decimals or '0'}")
    return (m.group(1) == "-", whole, decimals)


Verifier = Callable[[list[tuple[str, str]]], list[bool]]


def math_verifier(pairs: list[tuple[str, str]]) -> list[bool]:
    """Equal-or-not for each (a, b) by the math grader: b graded against gold a, each bounded.

    A vote key is a model's answer, not a checked gold: a key the grader refuses as a gold (for
    example unbalanced braces, ``+7=3}``) is equal to no other key."""
    from pacs.rewards.math import grade_many, load_math_verify, normalize_gold

    load_math_verify()  # lazy: heavy; loaded before any timing

    usable = [i for i, (a, _) in enumerate(pairs) if _usable_as_gold(a, normalize_gold)]
    equal = [False] * len(pairs)
    if not usable:
        return equal
    results = grade_many(
        ["\\boxed{" + pairs[i][1] + "}" for i in usable],
        [pairs[i][0] for i in usable],
        workers=0,
        timeout=EQUIV_TIMEOUT_S,
    )
    for i, r in zip(usable, results):
        equal[i] = r.score >= 1.0 and r.status == "ok"
    return equal


def _usable_as_gold(answer: str, normalize_gold: Callable[[str], str]) -> bool:
    try:
        normalize_gold(answer)
    except (TypeError, ValueError):
        return False
    return True


def merge_equal_answers(
    problems: Sequence[Problem], verifier: Verifier, max_pairs: int = MAX_EQUIV_PAIRS
) -> None:
    """Give mathematically equal vote keys of a problem one key: its first-seen member.

    First the cheap normal form (:func:`number_key`, linear) joins plain numbers exactly; then
    the verifier is asked only about pairs of the remaining distinct keys of at most
    VERIFIED_KEY_CHARS where at least one is not a plain number, most-voted pairs first, at most
    ``max_pairs`` per problem, a pair already joined not asked, and a key that has used
    KEY_BUDGET_S of verifier time asked no more (each call is time-bounded by the verifier, so
    a key costs at most KEY_BUDGET_S + EQUIV_TIMEOUT_S). Edits ``problems`` in place.
    """
    verifier([])  # warm up (math-verify's import) outside every key's budget
    for problem in problems:
        parent, pairs = _equivalence_plan(problem.answers, max_pairs)
        skipped = _verify_pairs(parent, pairs, verifier)
        if skipped:
            log.warning(
                "maj@k: problem %s: %d answer pairs not verified (a key used its %.1f s budget)",
                problem.problem_id,
                skipped,
                KEY_BUDGET_S,
            )
        problem.answers = [None if a is None else _find(parent, a) for a in problem.answers]


def _verify_pairs(parent: dict[str, str], pairs: list[tuple[str, str]], verifier) -> int:
    """Join the pairs the verifier finds equal, one call each, within each key's time budget;
    the number of pairs skipped (already joined pairs are not asked)."""
    spent: Counter = Counter()
    skipped = 0
    for a, b in pairs:
        if _find(parent, a) == _find(parent, b):
            continue
        if spent[a] >= KEY_BUDGET_S or spent[b] >= KEY_BUDGET_S:
            skipped += 1
            continue
        start = time.monotonic()
        equal = verifier([(a, b)])[0]
        cost = time.monotonic() - start
        spent[a] += cost
        spent[b] += cost
        if equal:
            _union(parent, a, b)
    return skipped


def _equivalence_plan(
    answers: Sequence[str | None], max_pairs: int
) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """Union-find over the distinct keys after the numeric merge, and the pairs left to verify."""
    counts = Counter(a for a in answers if a is not None)
    keys = list(counts)  # first-seen order
    parent = _Classes(keys)
    values = {key: number_key(key) for key in keys}  # once per key: linear, never quadratic
    by_value: dict = {}
    for key in keys:
        if values[key] is not None:
            _union(parent, by_value.setdefault(values[key], key), key)
    reps = [k for k in keys if parent[k] == k and k.strip()]
    votes = Counter({r: 0 for r in reps})
    for key in keys:
        votes[_find(parent, key)] += counts[key]
    long_keys = [k for k in reps if len(k) > VERIFIED_KEY_CHARS]
    if long_keys:
        log.warning(
            "maj@k: %d vote keys over %d characters join only the same plain number",
            len(long_keys),
            VERIFIED_KEY_CHARS,
        )
    short = [k for k in reps if len(k) <= VERIFIED_KEY_CHARS]
    return parent, most_voted_pairs(short, votes, values, max_pairs)


def _find(parent: dict[str, str], key: str) -> str:
    while parent[key] != key:
        parent[key] = parent[parent[key]]  # path halving: near-constant finds
        key = parent[key]
    return key


def _union(parent: dict[str, str], a: str, b: str) -> None:
    """Join the classes of a and b; the root is the member seen first (the tie rule's key)."""
    ra, rb = _find(parent, a), _find(parent, b)
    if ra == rb:
        return
    position = getattr(parent, "position", None)
    if position is None:  # a plain dict (tests): its order is the first-seen order
        position = {key: i for i, key in enumerate(parent)}
    first, second = (ra, rb) if position[ra] < position[rb] else (rb, ra)
    parent[second] = first


class _Classes(dict):
    """Union-find parents of vote keys in first-seen order, with each key's position (looked up
    by every union: ``list(parent).index`` there made the plan quadratic in distinct keys)."""

    def __init__(self, keys: list[str]) -> None:
        super().__init__((key, key) for key in keys)
        self.position = {key: i for i, key in enumerate(keys)}


def group_problems(
    rows: Sequence[dict],
    lines: Sequence[int],
    path: str | Path,
    normalize: Callable[[str], str] | None,
) -> list[Problem]:
    """Group rows by problem (first-seen order), sort by sample_idx, reject duplicate indices."""
    if normalize is not None:
        normalize = lru_cache(maxsize=None)(normalize)  # answers repeat a lot across samples
    by_pid: dict[str, list[tuple[int, int, dict]]] = {}
    for row, line in zip(rows, lines):
        by_pid.setdefault(row["problem_id"], []).append((row["sample_idx"], line, row))
    problems = []
    for pid, items in by_pid.items():
        items.sort(key=lambda t: t[0])
        for (a, la, _), (b, lb, _) in itertools.pairwise(items):
            if a == b:
                raise FormatError(
                    f"{path}:{lb}: field 'sample_idx' {b} of problem {pid!r} duplicates line {la}"
                )
        answers = [_vote_key(r, normalize) for _, _, r in items]
        problems.append(Problem(pid, [float(r["score"]) for _, _, r in items], answers))
    return problems


def _vote_key(row: dict, normalize: Callable[[str], str] | None) -> str | None:
    if normalize is None or row["extracted"] is None or row["status"] == "no_answer":
        return None
    return normalize(row["extracted"])


# ----------------------------------------------------------------------------- summary


def summarize(
    problems: Sequence[Problem],
    *,
    with_maj: bool,
    n_boot: int,
    boot_seed: int,
    status_counts: dict[str, int],
) -> tuple[dict[str, Any], tuple[float | None, float | None]]:
    """The metric part of passk.json (all but benchmark/model/run/seed) and mean@n's CI.

    mean@n's CI goes to the CSV only: passk.json keeps exactly the keys of docs/formats.md.
    """
    ns = np.array([p.n for p in problems], dtype=np.float64)
    n_min, n_max = int(ns.min()), int(ns.max())
    ks = k_values(n_min)
    weights = bootstrap_weights(len(problems), n_boot, boot_seed) if n_boot > 0 else None
    pm = pass_matrix(problems, ks)
    pass_rows = _metric_rows(ks, pm.mean(axis=0), ci_of_means(pm, weights))
    maj_rows: list[dict] = []
    if with_maj:
        mm = maj_matrix(problems, ks)
        maj_rows = _metric_rows(ks, mm.mean(axis=0), ci_of_means(mm, weights))
    sums = np.array([sum(p.scores) for p in problems], dtype=np.float64)
    mean_at_n = float(sums.sum() / ns.sum())
    mean_ci = ci_of_ratio(sums, ns, weights)
    doc = {
        "n_problems": len(problems),
        "n_min": n_min,
        "n_max": n_max,
        "mean_at_n": mean_at_n,
        "pass_at_k": pass_rows,
        "maj_at_k": maj_rows,
        "status_counts": {s: int(status_counts.get(s, 0)) for s in STATUSES},
        "tie_rule": TIE_RULE,
        "bootstrap": int(n_boot),
    }
    return doc, mean_ci


def _metric_rows(ks, values, cis) -> list[dict[str, Any]]:
    return [
        {"k": int(k), "value": float(v), "ci_low": lo, "ci_high": hi}
        for k, v, (lo, hi) in zip(ks, values, cis)
    ]


def csv_rows(
    doc: dict[str, Any], mean_ci: tuple[float | None, float | None] = (None, None)
) -> list[list[Any]]:
    """Long-format CSV rows of a passk.json document; mean@n is reported at k = n_min."""
    head = [doc["benchmark"], doc["model"], doc["run"], doc["seed"]]
    out = []
    for metric in ("pass_at_k", "maj_at_k"):
        for r in doc[metric]:
            out.append(head + [metric, r["k"], r["value"], r["ci_low"], r["ci_high"]])
    lo, hi = mean_ci
    out.append(head + ["mean_at_n", doc["n_min"], doc["mean_at_n"], lo, hi])
    return out


def compute(
    graded: str | Path,
    *,
    benchmark: str,
    model: str,
    run: str,
    seed: int,
    n_boot: int = 1000,
    boot_seed: int = 0,
) -> tuple[dict[str, Any], tuple]:
    """Read ``graded``; return the passk.json document and mean@n's CI (for the CSV)."""
    rows, lines = load_graded(graded)
    tasks = {r.get("task") for r in rows}
    if len(tasks) > 1:
        raise FormatError(
            f"{graded}: field 'task' takes several values {sorted(map(str, tasks))}; "
            "grade one benchmark per file"
        )
    task = tasks.pop()
    with_maj = task != "code"
    problems = group_problems(rows, lines, graded, vote_normalizer(task) if with_maj else None)
    if with_maj and task != "gpqa":  # GPQA votes are option letters: nothing to merge
        merge_equal_answers(problems, math_verifier)
    counts = Counter(r["status"] for r in rows)
    doc = {"benchmark": benchmark, "model": model, "run": run, "seed": seed}
    metrics, mean_ci = summarize(
        problems, with_maj=with_maj, n_boot=n_boot, boot_seed=boot_seed, status_counts=counts
    )
    doc.update(metrics, **truncation(rows))
    return doc, mean_ci


def truncation(rows: Sequence[dict]) -> dict[str, Any]:
    """How many responses the token budget cut (``finish_reason`` ``length``; a row without the
    field counts as ``stop``, as in docs/formats.md): a model whose answers need more tokens than
    the budget loses pass@k to the cut, and a reader must see how often. Where any row's reason
    is ``unknown`` (foreign generations that record none) the share is not known: no
    ``truncated_share``, and the report says "unknown"."""
    reasons = Counter(r.get("finish_reason", "stop") for r in rows)
    finish = {reason: int(reasons.get(reason, 0)) for reason in ("stop", "length")}
    if reasons.get(UNKNOWN_FINISH):
        return {"finish_counts": {**finish, UNKNOWN_FINISH: int(reasons[UNKNOWN_FINISH])}}
    return {"finish_counts": finish, "truncated_share": finish["length"] / len(rows)}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m pacs.evaluation.passk", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--graded", required=True, type=Path, help="graded.jsonl")
    p.add_argument("--out-json", required=True, type=Path)
    p.add_argument("--out-csv", required=True, type=Path)
    p.add_argument("--benchmark", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--run", required=True)
    p.add_argument("--seed", required=True, type=int)
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (0: no CIs)")
    p.add_argument("--bootstrap-seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.bootstrap < 0:
        p.error(f"--bootstrap must be >= 0, got {args.bootstrap}")
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    doc, mean_ci = compute(
        args.graded,
        benchmark=args.benchmark,
        model=args.model,
        run=args.run,
        seed=args.seed,
        n_boot=args.bootstrap,
        boot_seed=args.bootstrap_seed,
    )
    write_json(args.out_json, doc)
    write_csv(args.out_csv, CSV_HEADER, csv_rows(doc, mean_ci))
    p1 = doc["pass_at_k"][0]["value"]
    log.info(
        "%s: %d problems, n=%d..%d, pass@1=%.4f, mean@n=%.4f, statuses %s",
        args.graded,
        doc["n_problems"],
        doc["n_min"],
        doc["n_max"],
        p1,
        doc["mean_at_n"],
        doc["status_counts"],
    )
    return doc


if __name__ == "__main__":
    main()
