"""Curves behind claims C3 and C4: token entropy and path statistics of the training rollouts.

Each seed's curve is smoothed by a centred rolling mean over ``claims.smooth`` steps; the line is
the mean over seeds and the band ±1 standard deviation across seeds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pacs.config import ClaimsSpec

from .context import ReportContext
from .outputs import OutputLog
from .style import figure_style, new_figure, run_palette

PANELS = (
    ("entropy", "token entropy (nats / token)"),
    ("path_diversity", "path diversity of correct rollouts"),
    ("path_entropy", "path entropy of correct rollouts (nats)"),
)


def seed_band(df: pd.DataFrame, column: str, smooth: int) -> pd.DataFrame:
    """Per step: mean and std across seeds of each seed's rolling-mean-smoothed ``column``."""
    smoothed = []
    for _, one in df.sort_values("step").groupby("seed"):
        values = one.set_index("step")[column].rolling(smooth, center=True, min_periods=1).mean()
        smoothed.append(values)
    # sorted: a step one seed lacks (no two correct rollouts) would otherwise land after the last
    wide = pd.concat(smoothed, axis=1).sort_index()
    return pd.DataFrame(
        {
            "mean": wide.mean(axis=1),
            "std": wide.std(axis=1, ddof=1).fillna(0.0),
            "seeds": wide.notna().sum(axis=1),
        }
    )


def write_claim_curves(ctx: ReportContext, log: OutputLog, settings: ClaimsSpec) -> None:
    """``figures/claims_curves``: one panel per statistic, one line and band per run."""
    with figure_style():
        _draw_claim_curves(ctx, log, settings)


def _draw_claim_curves(ctx: ReportContext, log: OutputLog, settings: ClaimsSpec) -> None:
    runs = ctx.runs_in("main", "ref")
    metrics = ctx.results.metrics
    panels = [
        (col, label)
        for col, label in PANELS
        if col in metrics.columns and metrics[col].notna().any()
    ]
    if not panels or metrics.empty:
        log.skip("claims curves", "no entropy or path statistics in metrics.jsonl")
        return
    fig, axes = new_figure(ncols=len(panels), nrows=1)
    palette = run_palette(r.name for r in runs)  # the same colour per run as every other figure
    most = 0  # the most seeds any drawn run has: the title says what the band is
    for ax, (col, label) in zip(np.ravel(axes), panels):
        for run in runs:
            sub = metrics[(metrics["run"] == run.name) & metrics[col].notna()]
            if sub.empty:
                continue
            band = seed_band(sub, col, settings.smooth)
            seeds = int(band["seeds"].max())
            ax.plot(
                band.index,
                band["mean"],
                color=palette[run.name],
                lw=1.3,
                label=f"{run.label} ({seeds} seed{'s' if seeds > 1 else ''})",
            )
            if seeds > 1:
                ax.fill_between(
                    band.index,
                    band["mean"] - band["std"],
                    band["mean"] + band["std"],
                    color=palette[run.name],
                    alpha=0.18,
                    lw=0,
                )
            most = max(most, seeds)
        ax.set(xlabel="training step", ylabel=label)
    np.ravel(axes)[0].legend(title=None)
    spread = ("line: mean over seeds" if most > 1 else "line: one seed") + (
        f" of a {settings.smooth}-step rolling mean"
    )
    spread += "; band: ±1 std across seeds" if most > 1 else ", no band"
    fig.suptitle(f"Claims C3/C4 during training (training rollouts; {spread})")
    log.save_figure(fig, "claims_curves", "Claims C3/C4: entropy and path statistics versus step")
