"""ψ per mini-batch index: how far PACS's score moves within a step's updates.

A step's ``psi_abs_mean`` is a mean over its mini-batches; with ``ref: rollout`` the first
mini-batch always has ψ ≡ 0, and the mean hides how far ψ gets by the last one. Both engines also
log four stats per mini-batch index i as ``<stat>/mb<i>`` in ``metrics.jsonl`` (the tiny
engine's, named by ``pacs.metrics_log.mini_batch_column``; verl's ``actor/pacs_<stat>/mb<i>``):
mean |ψ|, std ψ, std σ(ψ), and the pre-clip gradient norm of that update. This figure draws them
against the training step, one line per mini-batch index (the mean over seeds), one row of
panels per PACS run that logged them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from pacs.evaluation.io import FormatError, iter_jsonl
from pacs.metrics_log import MINI_BATCH_COLUMN

from .context import ReportContext
from .outputs import OutputLog
from .style import new_figure

STATS = (  # (column stem, axis label, log axis)
    ("psi_abs_mean", "mean |ψ|", False),
    ("psi_std", "std ψ", False),
    ("sigma_std", "std σ(ψ)", False),
    ("grad_norm", "pre-clip grad norm", True),
)
COLUMNS = ["model", "run", "seed", "step", "stat", "mb", "value"]


def load_minibatch_stats(paths: list[Path], root: Path) -> pd.DataFrame:
    """Every ``<stat>/mb<i>`` value of :data:`STATS` in the ``metrics.jsonl`` files, long form
    (``COLUMNS``); a value that is not a number (or null) is a :class:`FormatError`."""
    wanted = {stat for stat, _, _ in STATS}
    rows = []
    for path in paths:
        _, model, run, seed_dir = path.relative_to(root).parts[:4]  # train/<model>/<run>/seed<k>
        seed = int(seed_dir.removeprefix("seed"))
        for line, row in iter_jsonl(path, allow_truncated_tail=True):
            for key, value in row.items():
                hit = MINI_BATCH_COLUMN.match(key)
                if not hit or hit["stat"] not in wanted:
                    continue
                if value is not None and (
                    isinstance(value, bool) or not isinstance(value, (int, float))
                ):
                    raise FormatError(f"{path}:{line}: field {key!r} must be a number or null")
                value = np.nan if value is None else float(value)
                rows.append(
                    (model, run, seed, int(row["step"]), hit["stat"], int(hit["index"]), value)
                )
    return pd.DataFrame(rows, columns=COLUMNS)


def seed_means(df: pd.DataFrame) -> pd.DataFrame:
    """Per model, run, stat, mini-batch index and step: the mean over seeds and the seed count."""
    keys = ["model", "run", "stat", "mb", "step"]
    return df.groupby(keys, as_index=False).agg(value=("value", "mean"), seeds=("seed", "nunique"))


def psi_minibatch(ctx: ReportContext, log: OutputLog) -> str | None:
    """``figures/psi_minibatch_<model>``; the reason when no PACS run logged the columns."""
    pacs_runs = [r.name for r in ctx.runs.values() if ctx.is_subject(r)]
    df = load_minibatch_stats(ctx.results.files.get("metrics", []), ctx.results.root)
    df = df[df["run"].isin(pacs_runs)]
    if df.empty:
        return "no <stat>/mb<i> columns in metrics.jsonl of the PACS runs"
    means = seed_means(df)
    for model in [m for m in ctx.models if m in set(means["model"])]:
        sub = means[means["model"] == model]
        runs = [r for r in pacs_runs if r in set(sub["run"])]
        fig, seeds = _draw(ctx, sub, runs)
        what = ", ".join(f"{ctx.label(r)} ({n} seed{'s' if n > 1 else ''})" for r, n in seeds)
        fig.suptitle(
            f"ψ per mini-batch index, {ctx.model_label(model)}: one line per mini-batch "
            "(update) of a step, mean over seeds\n" + what
        )
        log.save_figure(
            fig,
            f"psi_minibatch_{model}",
            f"ψ per mini-batch index, {model}: mean |ψ|, std ψ, std σ(ψ) and the pre-clip "
            f"gradient norm (log axis) of each mini-batch against the training step, mean over "
            f"seeds; runs: {what}",
        )
    return None


def _draw(ctx: ReportContext, means: pd.DataFrame, runs: list[str]):
    """One row of panels per run, one panel per stat; returns the figure and (run, seeds)."""
    mbs = sorted(means["mb"].unique())
    colors = dict(zip(mbs, _mini_batch_colors(len(mbs))))
    fig, axes = new_figure(ncols=len(STATS), nrows=len(runs), width=13.0, height=2.6 * len(runs))
    seeds = []
    for row, run in zip(axes, runs):
        sub = means[means["run"] == run]
        seeds.append((run, int(sub["seeds"].max())))
        for ax, (stat, label, log_axis) in zip(row, STATS):
            for mb in mbs:
                line = sub[(sub["stat"] == stat) & (sub["mb"] == mb)].sort_values("step")
                if not line.empty:
                    ax.plot(line["step"], line["value"], color=colors[mb], lw=1.2, label=f"mb {mb}")
            if log_axis:
                ax.set_yscale("log", nonpositive="mask")  # a zero norm (no mixed group) is left out
            ax.set(xlabel="training step", ylabel=label, title=ctx.label(run))
        row[0].legend(title="mini-batch", ncols=2)
    return fig, seeds


def _mini_batch_colors(n: int) -> list:
    import matplotlib

    cmap = matplotlib.colormaps["viridis"]
    return [cmap(i / max(n - 1, 1) * 0.9) for i in range(n)]
