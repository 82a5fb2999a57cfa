"""What the claims table adds to each paired t (docs/science.md, the fourth design).

- **Families.** Each row names its family: the one ``claims.families`` declares for its claim,
  else the claim itself. Holm's correction adjusts across a family
  (:func:`pacs.report.claims_stats.with_holm_verdicts`).
- **A signed-rank test beside every paired t**: the two-sided Wilcoxon signed-rank p of the same
  per-seed differences (``scipy.stats.wilcoxon`` with its defaults: zero differences dropped, the
  exact null distribution for up to 50 seeds without ties, else the normal approximation; the
  differences rounded to 10 decimals first, so that two equal differences computed along
  different float paths tie). Reported, not used for the verdict.
- **Equivalence (TOST)** for the claims ``claims.tost_claims`` names, at ±``claims.tost_margin``
  points: two one-sided paired t-tests (n − 1 df) of A − B > −Δ and of A − B < +Δ; its p is the
  larger of the two, and ``equivalent`` means p < α (the 90 % t-interval lies inside ±Δ).
- **The clip-bound share of each arm**: of a run's optimiser updates, the share whose pre-clip
  gradient norm exceeded its ``grad_clip`` (``metrics.jsonl``'s ``clip_bound``; for runs logged
  before it existed, the per-update norms ``grad_norm/mb<i>`` against the run's clip, else only
  the step means, which say less and are labelled so).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pacs.config import ClaimsSpec

from .claims_stats import ALPHA, signed_rank_p  # noqa: F401  (re-exported)

CLIP_COLUMNS = ["run", "label", "grad_clip", "counted", "bound", "share", "median_norm", "source"]


def family_of(claim: str, settings: ClaimsSpec) -> str:
    """The declared family of ``claim`` (``claims.families``), else the claim itself."""
    for family, claims in settings.families.items():
        if claim in claims:
            return family
    return claim


def tost_margin_of(claim: str, settings: ClaimsSpec) -> float:
    """``claims.tost_margin`` for a claim of ``claims.tost_claims``, else NaN (no TOST line)."""
    if claim in settings.tost_claims and settings.tost_margin is not None:
        return float(settings.tost_margin)
    return float("nan")


def tost_p(diff: float, sd: float, n: int, margin: float) -> float:
    """p of the two one-sided paired t-tests that the mean difference lies within ±``margin``
    (the larger one-sided p); NaN for n < 2, no margin, or a zero SD with |diff| >= margin."""
    from scipy import stats

    if n < 2 or not (np.isfinite(margin) and np.isfinite(sd)):
        return float("nan")
    if sd == 0:
        return 0.0 if abs(diff) < margin else 1.0
    se = sd / np.sqrt(n)
    lower = stats.t.sf((diff + margin) / se, n - 1)  # H0: A − B <= −Δ
    upper = stats.t.cdf((diff - margin) / se, n - 1)  # H0: A − B >= +Δ
    return float(max(lower, upper))


def with_tost(table: pd.DataFrame) -> pd.DataFrame:
    """``tost_p`` and ``equivalent`` of every row with a ``tost_margin``."""
    table = table.astype({"tost_p": float, "equivalent": object})
    for i in table.index[table["tost_margin"].astype(float).notna()]:
        r = table.loc[i]
        p = tost_p(float(r["diff"]), float(r["sd"]), int(r["seeds"]), float(r["tost_margin"]))
        table.loc[i, "tost_p"] = p
        if np.isfinite(p):
            table.loc[i, "equivalent"] = "yes" if p < ALPHA else "no"
    return table


def tost_lines(table: pd.DataFrame) -> list[str]:
    """claims.md's equivalence section: one line per row with a TOST."""
    rows = table[table["tost_margin"].astype(float).notna() & table["tost_p"].notna()]
    if rows.empty:
        return []
    out = ["", "## Equivalence (TOST)", ""]
    for r in rows.itertuples():
        said = "equivalent" if r.equivalent == "yes" else "not shown equivalent"
        out.append(
            f"- {r.claim} ({r.run_a} − {r.run_b}): {r.diff:+.3f}, two one-sided paired t-tests "
            f"against ±{r.tost_margin:g} (n = {r.seeds}): p = {r.tost_p:.3g}, {said} within "
            f"±{r.tost_margin:g} at α = {ALPHA}."
        )
    return out


def _mini_batch_columns(metrics: pd.DataFrame, stem: str) -> list[str]:
    return sorted(c for c in metrics.columns if c.startswith(f"{stem}/mb"))


def clip_share(run_metrics: pd.DataFrame, clip: float | None) -> dict:
    """The clip-bound share of one run's updates (CLIP_COLUMNS' updates … source)."""
    norms_mb = _mini_batch_columns(run_metrics, "grad_norm")
    norms = run_metrics[norms_mb].to_numpy(dtype=np.float64).ravel() if norms_mb else None
    if norms is None and "grad_norm" in run_metrics:
        norms = run_metrics["grad_norm"].to_numpy(dtype=np.float64)
    median = (
        float(np.nanmedian(norms)) if norms is not None and np.isfinite(norms).any() else np.nan
    )
    if clip is None:  # nothing to bound; its norms still say what a clip would have done
        return {"counted": 0, "bound": 0, "share": 0.0, "median_norm": median, "source": "no clip"}
    bound_mb = _mini_batch_columns(run_metrics, "clip_bound")
    if bound_mb or norms_mb:
        cols = bound_mb or norms_mb
        values = run_metrics[cols].to_numpy(dtype=np.float64).ravel()
        values = values[np.isfinite(values)]
        hits = values > 0.5 if bound_mb else values > clip
        source = "clip_bound per update" if bound_mb else "pre-clip norm per update"
    elif "clip_bound" in run_metrics and run_metrics["clip_bound"].notna().any():
        values = run_metrics["clip_bound"].dropna().to_numpy(dtype=np.float64)
        hits, source = values, "clip_bound per step (share of its updates)"
    else:
        values = run_metrics.get("grad_norm", pd.Series(dtype=float)).dropna().to_numpy()
        hits, source = values > clip, "step-mean norm (not per update)"
    n = len(values)
    return {
        "counted": n,
        "bound": float(np.sum(hits)),
        "share": float(np.mean(hits)) if n else np.nan,
        "median_norm": median,
        "source": source,
    }


def clip_shares(metrics: pd.DataFrame, runs: dict[str, tuple[str, float | None]]) -> pd.DataFrame:
    """CLIP_COLUMNS, one row per run of ``runs`` (name -> (label, grad_clip)) with metrics."""
    rows = []
    for name, (label, clip) in runs.items():
        sub = metrics[metrics["run"] == name] if len(metrics) else metrics
        if sub.empty:
            continue
        sub = sub.dropna(axis=1, how="all")
        rows.append({"run": name, "label": label, "grad_clip": clip, **clip_share(sub, clip)})
    return pd.DataFrame(rows, columns=CLIP_COLUMNS)


def clip_lines(shares: pd.DataFrame) -> list[str]:
    """claims.md's section on the clip-bound share of each arm."""
    if shares.empty:
        return []
    out = [
        "",
        "## Clip-bound share of each arm",
        "",
        "| run | grad_clip | counted | share above the clip | median pre-clip norm | from |",
        "|:---|---:|---:|---:|---:|:---|",
    ]
    for r in shares.itertuples():
        clip = "none" if r.grad_clip is None or not np.isfinite(r.grad_clip) else f"{r.grad_clip:g}"
        share = "–" if not np.isfinite(r.share) else f"{100 * r.share:.1f} %"
        median = "–" if not np.isfinite(r.median_norm) else f"{r.median_norm:.3g}"
        out.append(f"| {r.label} | {clip} | {r.counted} | {share} | {median} | {r.source} |")
    return out
