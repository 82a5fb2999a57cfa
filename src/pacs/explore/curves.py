"""Training curves as TensorBoard draws them: smoothed mean bold, raw values faint, a band over
seeds; the training metrics, the loss per objective, and pass@1 during training (Fig. 3)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from pacs.explore.panels import (
    BAND_ALPHA,
    RAW_ALPHA,
    family_grid,
    figure_legend,
    panels_width,
    step_axis,
    wide_scale,
)
from pacs.explore.profile import Profile, config_order, families
from pacs.methods import METHOD_NAMES, traits
from pacs.metrics_log import BY_NAME
from pacs.report.style import benchmark_label, new_figure

SMOOTHING = 0.8  # TensorBoard's slider: weight of the running average (0 = raw values)
TRAINING_PANELS = ("reward_mean", "entropy", "response_len", "grad_norm")


def smooth(values: np.ndarray, weight: float = SMOOTHING) -> np.ndarray:
    """TensorBoard's scalar smoothing: an EMA debiased for its start; NaNs stay NaN."""
    out, last, n = np.full(len(values), np.nan), 0.0, 0
    for i, v in enumerate(np.asarray(values, dtype=float)):
        if math.isnan(v):
            continue
        last, n = last * weight + (1 - weight) * v, n + 1
        out[i] = last / (1 - weight**n) if weight > 0 else v
    return out


def seed_curves(frame: pd.DataFrame, y: str, weight: float = SMOOTHING) -> pd.DataFrame:
    """Per (run, step): the mean over seeds of each seed's smoothed ``y`` and its min and max.
    ``frame``: one model's rows with columns run, seed, step and ``y``."""
    parts = []
    for (run, seed), g in frame.dropna(subset=[y]).sort_values("step").groupby(["run", "seed"]):
        parts.append(
            pd.DataFrame(
                {
                    "run": run,
                    "seed": seed,
                    "step": g["step"].to_numpy(),
                    "smooth": smooth(g[y].to_numpy(), weight),
                }
            )
        )
    if not parts:
        return pd.DataFrame(columns=["run", "step", "mean", "low", "high", "seeds"])
    s = pd.concat(parts).groupby(["run", "step"])["smooth"]
    return s.agg(mean="mean", low="min", high="max", seeds="count").reset_index()


def draw_runs(
    ax,
    frame: pd.DataFrame,
    y: str,
    runs: list[str],
    profile: Profile,
    weight: float = SMOOTHING,
    marker: str | None = None,
) -> None:
    """Raw per-seed values faint, the smoothed mean bold, a band over seeds (min-max of the smoothed
    seeds). ``frame``: one model's rows. The bold line's gid is the run name (tests read it)."""
    pal = profile.palette()
    curves = seed_curves(frame[frame.run.isin(runs)], y, weight)
    for run in runs:
        raw, c = frame[frame.run == run].sort_values("step"), curves[curves.run == run]
        if c.empty:
            continue
        for _, seed_rows in raw.groupby("seed"):
            ax.plot(seed_rows.step, seed_rows[y], color=pal[run], alpha=RAW_ALPHA, lw=0.7)
        (line,) = ax.plot(
            c.step, c["mean"], color=pal[run], lw=1.8, label=profile.label(run), marker=marker, ms=3
        )
        line.set_gid(run)
        if c.seeds.max() > 1:
            ax.fill_between(c.step, c.low, c.high, color=pal[run], alpha=BAND_ALPHA, lw=0)


def training_figure(
    profile: Profile, model: str, columns=TRAINING_PANELS, weight: float = SMOOTHING
):
    """Rows: training metrics; columns: method families. None when the model has no logs."""
    m = profile.results.metrics[profile.results.metrics.model == model]
    fams = families(profile, set(m.run))
    if m.empty or not fams:
        return None
    fig, axes = new_figure(
        ncols=len(fams),
        nrows=len(columns),
        width=panels_width(len(fams)),
        height=2.3 * len(columns) + 0.8,
    )
    for j, (title, runs) in enumerate(fams):
        for i, column in enumerate(columns):
            ax = axes[i, j]
            draw_runs(ax, m, column, runs, profile, weight)
            if column == "grad_norm":
                wide_scale(ax, m[m.run.isin(runs)][column])
            ax.set(
                title=title if i == 0 else "",
                xlabel="training step" if i == len(columns) - 1 else "",
                ylabel=BY_NAME[column].tag if j == 0 else "",
            )
            step_axis(ax)
    figure_legend(fig, axes)
    fig.suptitle(
        f"{model}: training curves (TensorBoard tags)\nbold: smoothed mean over seeds "
        f"(EMA {weight}); faint: raw, per seed; band: seed min-max",
        fontsize=10,
    )
    return fig


def loss_panels(
    profile: Profile, runs: list[str], columns: set[str]
) -> list[tuple[str, str, list[str], float | None]]:
    """(title, metric, runs, reference level) per panel: one per ``MethodTraits.loss_title``
    for the ``loss`` column (PACS's BCE, REAL's anchored log-sum-exp, the clipped surrogates:
    unrelated scales), then one per further ``loss_panel_metrics`` column among ``columns``."""
    panels: dict[tuple[str, str], tuple[list[str], float | None]] = {}
    for name in METHOD_NAMES:
        t = traits(name)
        chosen = [r for r in runs if profile.ctx.runs[r].method == name]
        metrics = [c for c in t.loss_panel_metrics if c in columns] if chosen else []
        for metric in metrics:
            title = t.loss_title if metric == "loss" else f"{t.label}: {metric}"
            level = t.loss_reference if metric == "loss" else None
            panels.setdefault((title, metric), ([], level))[0].extend(chosen)
    return [(t, c, config_order(profile, rs), lv) for (t, c), (rs, lv) in panels.items()]


def loss_figure(profile: Profile, model: str, weight: float = SMOOTHING):
    """The training losses, one panel per objective (:func:`loss_panels`); a method's
    ``loss_reference`` (PACS: ln 2 at ψ = 0) is marked."""
    m = profile.results.metrics[profile.results.metrics.model == model]
    runs = [r for r in sorted(set(m.run)) if r in profile.ctx.runs]
    panels = loss_panels(profile, runs, set(m.columns))
    if not panels:
        return None
    fig, axes = new_figure(ncols=len(panels), width=max(6.5, 4.6 * len(panels) + 0.6), height=3.6)
    for ax, (title, metric, runs, level) in zip(axes[0], panels):
        draw_runs(ax, m, metric, runs, profile, weight)
        if level is not None:
            ax.axhline(level, color="grey", ls=":", lw=1)
            ax.annotate(
                f"{level:.3g}",
                (1.0, level),
                xycoords=("axes fraction", "data"),
                ha="right",
                va="bottom",
                fontsize=7,
                color="grey",
            )
        ax.set(title=title, xlabel="training step", ylabel=f"train/{metric}")
        step_axis(ax)
    figure_legend(fig, axes)
    fig.suptitle(f"{model}: training loss, one panel per objective", fontsize=10)
    return fig


def curve_figure(profile: Profile, model: str):
    """pass@1 during training (the paper's Fig. 3): rows benchmarks, columns method families."""
    c = profile.results.curves
    c = c[c.model == model].assign(pass_at_1=lambda f: f.pass_at_1 * 100)
    fams = families(profile, set(c.run))
    if c.empty or not fams:
        return None
    benches = sorted(c.benchmark.unique())
    fig, axes = family_grid(fams, benches)
    for i, bench in enumerate(benches):
        for j, (title, runs) in enumerate(fams):
            ax = axes[i, j]
            draw_runs(ax, c[c.benchmark == bench], "pass_at_1", runs, profile, 0.0, marker="o")
            ax.set_title(
                f"{title}\n{benchmark_label(bench)}" if i == 0 else benchmark_label(bench),
                fontsize=9,
            )
            ax.set(xlabel="training step", ylabel="pass@1 (%)" if j == 0 else "")
            step_axis(ax)
    figure_legend(fig, axes)
    fig.suptitle(
        f"{model}: held-out pass@1 during training (the paper's Fig. 3)\n"
        "mean over seeds; faint: per seed; band: seed min-max",
        fontsize=10,
    )
    return fig
