"""Figures of the checkpoint study (docs/design.md#the-study-design), from
``tables/study_checkpoints.csv``.

- ``study_curves``: per statistic, one line per run against the training step: the mean over
  seeds at each checkpoint (markers: the real points, no smoothing) and its 95 % t-interval over
  seeds as a band;
- ``study_scatter``: entropy (token entropy of the rollouts; exact path entropy) against held-out
  pass@1, one point per run × seed × checkpoint, coloured by run, so that a run that keeps
  diversity can be told from one that learned less.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pacs.layout import SYNTHETIC

from .context import ReportContext
from .outputs import OutputLog
from .study import exact_column, hard_benchmark
from .style import benchmark_label, figure_style, new_figure, run_palette


def curve_panels(ctx: ReportContext) -> list[tuple[str, str]]:
    """(column of the checkpoint table, axis label) of each curve panel."""
    hard = hard_benchmark(ctx)
    return [
        ("pass_at_1", f"held-out pass@1 ({benchmark_label(SYNTHETIC)}, in-loop)"),
        ("token_entropy", "token entropy of the rollouts (nats / token)"),
        (exact_column("entropy", hard), f"exact path entropy, {hard} (nats)"),
        (exact_column("entropy", SYNTHETIC), f"exact path entropy, {SYNTHETIC} (nats)"),
        (exact_column("mass", hard), f"mass on the 6 canonical solutions, {hard}"),
    ]


def seed_interval(values: pd.Series) -> tuple[float, float, float, int]:
    """Mean, 95 % t-interval over seeds (NaN bounds for one seed), and the number of seeds."""
    from scipy import stats

    v = values.dropna().to_numpy(dtype=float)
    n = len(v)
    if n == 0:
        return np.nan, np.nan, np.nan, 0
    mean = float(v.mean())
    if n < 2:
        return mean, np.nan, np.nan, 1
    half = float(stats.t.ppf(0.975, n - 1) * v.std(ddof=1) / np.sqrt(n))
    return mean, mean - half, mean + half, n


def curve_points(table: pd.DataFrame, column: str) -> pd.DataFrame:
    """Per (run, step): mean, ci_low, ci_high, seeds of ``column``."""
    rows = []
    for (run, step), g in table.groupby(["run", "step"]):
        mean, lo, hi, n = seed_interval(g[column])
        if n:
            rows.append({"run": run, "step": step, "mean": mean, "lo": lo, "hi": hi, "seeds": n})
    return pd.DataFrame(rows, columns=["run", "step", "mean", "lo", "hi", "seeds"])


def write_study_figures(ctx: ReportContext, log: OutputLog, table: pd.DataFrame) -> None:
    with figure_style():
        write_study_curves(ctx, log, table)
        write_study_scatter(ctx, log, table)


def write_study_curves(ctx: ReportContext, log: OutputLog, table: pd.DataFrame) -> None:
    panels = [(c, label) for c, label in curve_panels(ctx) if c in table and table[c].notna().any()]
    if not panels:
        log.skip("study curves", "no checkpoint statistics")
        return
    runs = list(ctx.spec.runs)
    palette = run_palette(runs)
    ncols = min(3, len(panels))
    fig, axes = new_figure(ncols=ncols, nrows=-(-len(panels) // ncols))
    for ax in np.ravel(axes)[len(panels) :]:
        ax.set_visible(False)
    seeds = set()
    for ax, (column, label) in zip(np.ravel(axes), panels):
        points = curve_points(table, column)
        for run in runs:
            p = points[points["run"] == run]
            if p.empty:
                continue
            seeds.update(p["seeds"].tolist())
            color = palette[run]
            ax.plot(
                p["step"], p["mean"], marker="o", ms=3, lw=1.2, color=color, label=ctx.label(run)
            )
            ax.fill_between(p["step"], p["lo"], p["hi"], color=color, alpha=0.18, lw=0)
        ax.set(xlabel="training step", ylabel=label)
    np.ravel(axes)[0].legend(title=None)
    fig.suptitle(
        f"Checkpoint study: mean over {_seeds_text(seeds)} seeds at each checkpoint (markers),\n"
        "band: 95 % t-interval over seeds; step 0 is the shared base model"
    )
    log.save_figure(fig, "study_curves", "Checkpoint study: pass@1, entropies and mass vs step")


def write_study_scatter(ctx: ReportContext, log: OutputLog, table: pd.DataFrame) -> None:
    ys = [
        ("token_entropy", "token entropy of the rollouts (nats / token)"),
        (exact_column("entropy", SYNTHETIC), f"exact path entropy, {SYNTHETIC} (nats)"),
    ]
    ys = [(c, label) for c, label in ys if c in table and table[c].notna().any()]
    if "pass_at_1" not in table or not ys:
        log.skip("study scatter", "no pass@1 or entropy at the checkpoints")
        return
    runs = list(ctx.spec.runs)
    palette = run_palette(runs)
    fig, axes = new_figure(ncols=len(ys))
    last = max(int(table["step"].max()), 1)
    for ax, (column, label) in zip(np.ravel(axes), ys):
        points = table[table["pass_at_1"].notna() & table[column].notna()]
        base = points[points["step"] == 0].head(1)  # the same model in every run and seed
        if not base.empty:
            ax.scatter(base["pass_at_1"], base[column], s=40, marker="*", color="#7f7f7f",
                       label="base (step 0)")  # fmt: skip
        for run in runs:
            p = points[(points["run"] == run) & (points["step"] > 0)]
            if p.empty:
                continue
            ax.scatter(
                p["pass_at_1"], p[column], s=8 + 22 * p["step"] / last, color=palette[run],
                alpha=0.6, lw=0, label=f"{ctx.label(run)} ({p['seed'].nunique()} seeds)",
            )  # fmt: skip
        ax.set(xlabel=f"held-out pass@1 ({benchmark_label(SYNTHETIC)}, in-loop)", ylabel=label)
    np.ravel(axes)[0].legend(title=None)
    fig.suptitle(
        "Entropy against pass@1: one point per run × seed × checkpoint (larger = later step)"
    )
    log.save_figure(fig, "study_scatter", "Checkpoint study: entropy against pass@1")


def _seeds_text(counts: set[int]) -> str:
    if not counts:
        return "0"
    lo, hi = min(counts), max(counts)
    return str(lo) if lo == hi else f"{lo}–{hi}"
