"""The statistics of the claims table (docs/design.md#statistics): the seed is the unit.

Every comparison is a paired difference A − B between two runs that share a seed (the same base,
data order and evaluation samples). Its inference unit is the **seed**:

- a metric with one value per seed (token entropy, the in-loop held-out pass@1) gives one paired
  difference per seed directly;
- a per-problem metric (pass@k, path statistics) is first averaged per seed over the problems
  both runs have a value for, then paired.

On those per-seed differences d_1..d_n: the mean, the 95 % **paired t-interval** (n − 1 df), the
two-sided t-test p-value, and the **minimum detectable effect**: the true mean difference that a
two-sided α = 0.05 paired t-test detects with 80 % power, from the noncentral t distribution
(``scipy.stats.nct``) with the observed SD of the d_s. For per-problem metrics the crossed
**percentile bootstrap** over seeds × problems (:func:`paired_bootstrap`) is reported beside it
(its interval and p), not used for the verdict: seeds carry most of the variance, and a
percentile bootstrap over 8 seeds covers less than 95 % (docs/science.md).

The verdict is Holm's step-down correction of the t p-values within each claim family.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd

ALPHA = 0.05
POWER = 0.8
NO_DATA = "no data"  # a comparison whose runs have no common seed with a defined value
SEED_T = "paired t over seeds"  # one value per seed
SEED_MEANS_T = "paired t over seeds (problems averaged per seed)"  # per-problem metrics
BOOTSTRAP = "paired bootstrap over seeds × problems"  # beside SEED_MEANS_T, not the verdict


@dataclass(frozen=True)
class Comparison:
    diff: float
    ci_low: float
    ci_high: float
    se: float
    mde: float
    seeds: int
    problems: int
    p: float = float("nan")
    method: str = BOOTSTRAP
    sd: float = float("nan")  # SD of the per-seed differences (t methods)


# ----------------------------------------------------------------------------- seed level


@functools.lru_cache(maxsize=256)
def t_mde_ncp(n: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """The noncentrality δ√n/σ at which a two-sided level-``alpha`` one-sample t-test on ``n``
    values has power ``power`` (exact, noncentral t); NaN for n < 2."""
    from scipy import optimize
    from scipy import stats as st

    if n < 2:
        return float("nan")
    df = n - 1
    crit = st.t.ppf(1 - alpha / 2, df)

    def gap(ncp: float) -> float:
        upper = st.nct.sf(crit, df, ncp)
        if not np.isfinite(upper):  # scipy's nct is NaN at a few points: the other tail
            upper = 1.0 - st.nct.cdf(crit, df, ncp)
        return upper + np.nan_to_num(st.nct.cdf(-crit, df, ncp)) - power

    hi = crit + 1.0  # power > 1/2 there; widen until it passes ``power``
    while gap(hi) < 0:
        hi *= 1.5
    return float(optimize.brentq(gap, 0.0, hi, xtol=1e-10))


def t_mde(sd: float, n: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """Minimum detectable mean difference of a paired t-test on ``n`` pairs whose differences
    have standard deviation ``sd`` (two-sided ``alpha``, power ``power``)."""
    if n < 2 or not np.isfinite(sd):
        return float("nan")
    return t_mde_ncp(n, alpha, power) * sd / np.sqrt(n)


def t_pairs_for(effect: float, sd: float, alpha: float = ALPHA, power: float = POWER) -> int:
    """The fewest pairs whose paired t-test detects ``effect`` with ``power`` (SD ``sd``)."""
    n = 2
    while t_mde(sd, n, alpha, power) > effect:
        n += 1
    return n


def seed_t_interval(diff: np.ndarray, method: str = SEED_T, problems: int = 1) -> Comparison:
    """Mean of one paired difference per seed, its 95 % t-interval (n − 1 df), the two-sided
    t-test p-value and the noncentral-t MDE; NaN seeds are left out. Fewer than 2 seeds: no
    interval (NaN bounds, p = NaN)."""
    from scipy import stats as st

    d = np.asarray(diff, dtype=np.float64).ravel()
    d = d[np.isfinite(d)]
    if d.size == 0:
        raise ValueError("seed_t_interval: no seed with a value")
    mean, n = float(d.mean()), int(d.size)
    if n < 2:
        nan = float("nan")
        return Comparison(mean, nan, nan, nan, nan, n, problems, nan, method)
    sd = float(d.std(ddof=1))
    se = sd / np.sqrt(n)
    t975 = st.t.ppf(0.975, n - 1)
    if se == 0:
        p = 1.0 if mean == 0 else 0.0
    else:
        p = float(2 * st.t.sf(abs(mean / se), n - 1))
    return Comparison(
        mean, mean - t975 * se, mean + t975 * se, se, t_mde(sd, n), n, problems, p, method, sd
    )


def seed_means(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per seed (row), the means of A and of B over the problems (columns) where both have a
    value; NaN for a seed without such a problem."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    both = np.isfinite(a) & np.isfinite(b)
    count = both.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ma = np.where(both, a, 0.0).sum(axis=1) / count
        mb = np.where(both, b, 0.0).sum(axis=1) / count
    return np.where(count > 0, ma, np.nan), np.where(count > 0, mb, np.nan)


TIE_DECIMALS = 10  # per-seed differences are rounded to this many decimals before ranking


def signed_rank_p(diff: np.ndarray) -> float:
    """Beside every paired t: the two-sided Wilcoxon signed-rank p of paired differences (NaN
    dropped; ``scipy.stats.wilcoxon``'s defaults); NaN when no non-zero difference is left."""
    from scipy import stats

    d = np.asarray(diff, dtype=np.float64)
    d = np.round(d[np.isfinite(d)], TIE_DECIMALS)  # equal differences tie despite float noise
    if np.count_nonzero(d) < 1:
        return float("nan")
    return float(stats.wilcoxon(d).pvalue)


# ----------------------------------------------------------------------------- the bootstrap


def paired_bootstrap(diff: np.ndarray, n_boot: int, seed: int) -> Comparison:
    """Mean of a [seeds, problems] matrix of paired differences (NaN = missing cell) and its
    95 % percentile interval, resampling seeds and problems independently with replacement.
    Its MDE is the normal approximation 2.80 × SE (reported nowhere since the t-MDE)."""
    diff = np.asarray(diff, dtype=np.float64)
    if diff.ndim != 2 or not np.isfinite(diff).any():
        raise ValueError(
            f"paired_bootstrap: need a [seeds, problems] matrix with a value, got {diff.shape}"
        )
    if n_boot < 2:
        raise ValueError(f"paired_bootstrap: n_boot must be >= 2, got {n_boot}")
    rng = np.random.default_rng(seed)
    s, q = diff.shape
    filled = np.where(np.isfinite(diff), diff, 0.0)
    present = np.isfinite(diff).astype(np.float64)
    # Resampling = multinomial counts per seed and per problem; a resample's mean is the
    # count-weighted mean of the present cells.
    ws = rng.multinomial(s, np.full(s, 1.0 / s), size=n_boot).astype(np.float64)  # [B, S]
    wq = rng.multinomial(q, np.full(q, 1.0 / q), size=n_boot).astype(np.float64)  # [B, Q]
    num = np.einsum("bs,sq,bq->b", ws, filled * present, wq)
    den = np.einsum("bs,sq,bq->b", ws, present, wq)
    stats = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    stats = stats[np.isfinite(stats)]
    se = float(np.std(stats, ddof=1))
    lo, hi = np.percentile(stats, [2.5, 97.5])
    return Comparison(
        float(np.nanmean(diff)),
        float(lo),
        float(hi),
        se,
        (1.959964 + 0.841621) * se,
        int(np.isfinite(diff).any(axis=1).sum()),
        int(np.isfinite(diff).any(axis=0).sum()),
        bootstrap_p(stats),
    )


def bootstrap_p(stats: np.ndarray) -> float:
    """Two-sided p-value of "mean = 0" from bootstrap resamples: twice the smaller share on
    either side of 0, each share counted as (k + 1) / (B + 1) so it is never 0."""
    n = len(stats)
    below = (np.sum(stats <= 0) + 1) / (n + 1)
    above = (np.sum(stats >= 0) + 1) / (n + 1)
    return float(min(1.0, 2 * min(below, above)))


# ----------------------------------------------------------------------------- one row


def matrix_stats(a: np.ndarray, b: np.ndarray, settings, seed_level: bool) -> dict | None:
    """The numbers of one claims row (seeds … boot_p, verdict 'pending') from [seeds, problems]
    arrays of A and B: the paired t over seeds (per-problem metrics averaged per seed first),
    and for a per-problem metric the crossed bootstrap (``settings.bootstrap`` resamples,
    ``settings.seed``) beside it. None when no cell has both values."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.size == 0 or not np.isfinite(a - b).any():
        return None
    ma, mb = seed_means(a, b)
    ok = np.isfinite(ma)
    problems = 1 if seed_level else int(np.isfinite(a - b).any(axis=0).sum())
    res = seed_t_interval(ma[ok] - mb[ok], SEED_T if seed_level else SEED_MEANS_T, problems)

    nan = float("nan")
    boot_low = boot_high = boot_p = nan
    if not seed_level:
        boot = paired_bootstrap(a - b, settings.bootstrap, settings.seed)
        boot_low, boot_high, boot_p = boot.ci_low, boot.ci_high, boot.p
    return {
        "seeds": res.seeds,
        "problems": res.problems,
        "mean_a": float(ma[ok].mean()),
        "mean_b": float(mb[ok].mean()),
        "diff": res.diff,
        "ci_low": res.ci_low,
        "ci_high": res.ci_high,
        "mde": res.mde,
        "sd": res.sd,
        "interval": res.method,
        "p": res.p,
        "wilcoxon_p": signed_rank_p(ma[ok] - mb[ok]),
        "verdict": "pending",  # with_holm_verdicts decides it within the claim family
        "boot_low": boot_low,
        "boot_high": boot_high,
        "boot_p": boot_p,
    }


# ----------------------------------------------------------------------------- verdicts


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (NaN stays NaN and is not counted)."""
    order = sorted((p, i) for i, p in enumerate(p_values) if np.isfinite(p))
    m, running, out = len(order), 0.0, [float("nan")] * len(p_values)
    for rank, (p, i) in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def verdict(ci_low: float, ci_high: float) -> str:
    """For a claim that A − B > 0: holds, reversed, or not separable (the CI contains 0)."""
    if ci_low > 0:
        return "holds"
    if ci_high < 0:
        return "reversed"
    return "not separable"


def holm_verdict(diff: float, p_holm: float) -> str:
    """The verdict after Holm's correction: the sign of A − B where its adjusted p < α."""
    if not np.isfinite(p_holm) or p_holm >= ALPHA:
        return "not separable"
    return "holds" if diff > 0 else "reversed"


def fmt(v: float) -> str:
    return f"{v:+.3f}" if abs(v) < 10 else f"{v:+.2f}"


def rules_out(ci_low: float, ci_high: float) -> str:
    """What a 'not separable' row still says: the differences its 95 % CI excludes."""
    if not (np.isfinite(ci_low) and np.isfinite(ci_high)):
        return "nothing (too few seeds for an interval)"
    return f"A − B < {fmt(ci_low)} or > {fmt(ci_high)}"


def with_holm_verdicts(table: pd.DataFrame) -> pd.DataFrame:
    """Holm-adjusted p within each family (the ``family`` column where it names one, else the
    claim), the verdict from it, and for every row that is not separable the differences its (t)
    CI excludes. Rows without data keep NO_DATA."""
    table = table.astype({"rules_out": object, "p_holm": float})
    has = table["verdict"] != NO_DATA
    family = table["claim"]
    if "family" in table:
        family = table["family"].where(table["family"].notna() & (table["family"] != ""), family)
    for idx in table[has].groupby(family[has], sort=False).groups.values():
        table.loc[idx, "p_holm"] = holm(table.loc[idx, "p"].astype(float).tolist())
    for i in table.index[has]:
        r = table.loc[i]
        table.loc[i, "verdict"] = holm_verdict(float(r["diff"]), float(r["p_holm"]))
        if table.loc[i, "verdict"] == "not separable":
            table.loc[i, "rules_out"] = rules_out(float(r["ci_low"]), float(r["ci_high"]))
    return table
