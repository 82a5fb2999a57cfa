"""The committed science reports' claims tables re-derived from their raw cells with scipy.stats
directly (docs/science_report, the third design's run; docs/science_report_v2, the second's).

Nothing here calls pacs' statistics (pacs.report.claims, claims_stats, claims_cells): the cells
are read with pandas, every row's paired t over seeds comes from ``scipy.stats.ttest_rel`` and
``scipy.stats.t``, its MDE from ``scipy.stats.nct`` and ``scipy.optimize``, Holm's correction is
written out below, and the crossed seed × problem bootstrap is re-implemented with index draws
(its numbers are Monte Carlo, so they are compared within a tolerance). The committed claims.csv
files were written by the report's own code (science_report_v2's rewritten from its cells,
docs/science.md), so this checks that code against an independent derivation on the real data
(issue 39).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats

DOCS = Path(__file__).resolve().parents[2] / "docs"
ROWS = {"science_report": 12, "science_report_v2": 12}  # claims.csv rows of each report
N_BOOT = 20_000  # configs/science.yaml claims.bootstrap


def _cells(tables: Path) -> pd.DataFrame:
    return pd.read_csv(
        tables / "claims_cells.csv", dtype={"problem": str}, keep_default_na=False,
        na_values={"seed": [""], "value_a": [""], "value_b": [""]},
    )  # fmt: skip


def _mde(sd: float, n: int) -> float:
    crit = stats.t.ppf(0.975, n - 1)

    def power(delta: float) -> float:
        ncp = delta * np.sqrt(n) / sd
        # the far tail is ~0 where scipy's nct.cdf returns NaN (large noncentrality, few df)
        lower = np.nan_to_num(stats.nct.cdf(-crit, n - 1, ncp), nan=0.0)
        return stats.nct.sf(crit, n - 1, ncp) + lower

    return optimize.brentq(lambda d: power(d) - 0.8, 1e-9 * sd, 10 * sd)


def _holm(p: np.ndarray) -> np.ndarray:
    m, order = len(p), np.argsort(p)
    adj = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adj
    return out


def _bootstrap(a: pd.DataFrame, b: pd.DataFrame, rng) -> tuple[float, float, float]:
    d = (a - b).to_numpy()
    present = np.isfinite(d)
    d0 = np.where(present, d, 0.0)
    s, q = d.shape
    cs = np.zeros((N_BOOT, s))
    cq = np.zeros((N_BOOT, q))
    np.add.at(cs, (np.arange(N_BOOT)[:, None], rng.integers(0, s, (N_BOOT, s))), 1)
    np.add.at(cq, (np.arange(N_BOOT)[:, None], rng.integers(0, q, (N_BOOT, q))), 1)
    means = ((cs @ d0) * cq).sum(1) / ((cs @ present) * cq).sum(1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    p = 2 * min((np.sum(means <= 0) + 1) / (N_BOOT + 1), (np.sum(means >= 0) + 1) / (N_BOOT + 1))
    return lo, hi, min(1.0, p)


def _derive(g: pd.DataFrame) -> dict:
    a = g.pivot(index="seed", columns="problem", values="value_a")
    b = g.pivot(index="seed", columns="problem", values="value_b")
    both = a.notna() & b.notna()
    ma, mb = a.where(both).mean(axis=1), b.where(both).mean(axis=1)  # per seed, then pair
    n = len(ma)
    test = stats.ttest_rel(ma, mb)
    d = ma - mb
    lo, hi = stats.t.interval(0.95, n - 1, loc=d.mean(), scale=stats.sem(d))
    out = {
        "seeds": n, "mean_a": ma.mean(), "mean_b": mb.mean(), "diff": d.mean(), "ci_low": lo,
        "ci_high": hi, "sd": d.std(ddof=1), "mde": _mde(d.std(ddof=1), n), "p": test.pvalue,
    }  # fmt: skip
    if (g["problem"] != "").any():
        out["problems"] = int(both.any(axis=0).sum())
        out["boot"] = _bootstrap(a, b, np.random.default_rng(12345))
    else:
        out["problems"] = 1
    return out


@pytest.fixture(scope="module", params=sorted(ROWS))
def derived(request) -> tuple[pd.DataFrame, list[dict]]:
    tables = DOCS / request.param / "tables"
    if not (tables / "claims_cells.csv").is_file():
        pytest.skip(f"{tables} holds no claims cells")
    table = pd.read_csv(tables / "claims.csv")
    assert len(table) == ROWS[request.param]
    rows = [_derive(g) for _, g in _cells(tables).groupby("row", sort=True)]
    return table, rows


def test_every_row_is_the_paired_t_over_seeds(derived):
    table, rows = derived
    assert len(rows) == len(table)
    for (_, r), got in zip(table.iterrows(), rows):
        for col in ("seeds", "problems"):
            assert r[col] == got[col], (r["claim"], col)
        for col in ("mean_a", "mean_b", "diff", "ci_low", "ci_high", "sd", "mde", "p"):
            assert r[col] == pytest.approx(got[col], rel=1e-7, abs=1e-12), (r["claim"], col)


def test_holm_and_verdicts_follow_from_the_t_p_values(derived):
    table, rows = derived
    p = np.array([g["p"] for g in rows])
    for claim, idx in table.groupby("claim", sort=False).groups.items():
        adj = _holm(p[list(idx)])
        assert table.loc[idx, "p_holm"].to_numpy() == pytest.approx(adj, rel=1e-7), claim
        for i, pa in zip(idx, adj):
            want = (
                "not separable" if pa >= 0.05 else ("holds" if rows[i]["diff"] > 0 else "reversed")
            )
            assert table.loc[i, "verdict"] == want, claim


def test_the_bootstrap_beside_it_agrees_within_monte_carlo_error(derived):
    """Independent draws of 20,000 resamples: the percentile bounds agree to 3 % of the
    interval's width, the p-values to 0.02; seed-level rows have no bootstrap."""
    table, rows = derived
    for (_, r), got in zip(table.iterrows(), rows):
        if "boot" not in got:
            assert np.isnan(r["boot_low"]) and np.isnan(r["boot_p"])
            continue
        lo, hi, p = got["boot"]
        tol = 0.03 * (hi - lo)
        assert abs(r["boot_low"] - lo) < tol and abs(r["boot_high"] - hi) < tol, r["claim"]
        assert abs(r["boot_p"] - p) < 0.02, r["claim"]  # MC SD of the gap ≈ 0.0045 at p 0.1


def test_the_numbers_quoted_in_issue_39():
    """C1's paired SD 7.33 points and t-MDE 8.5 at 8 seeds; C4's t p-values 0.108 and 0.106."""
    table = pd.read_csv(DOCS / "science_report_v2" / "tables" / "claims.csv")
    c1 = table[table["claim"] == "C1"].iloc[0]
    assert c1["sd"] == pytest.approx(7.33, abs=0.005) and c1["mde"] == pytest.approx(8.47, abs=0.01)
    assert table.loc[table["claim"] == "C4", "p"].round(3).tolist() == [0.108, 0.106]
