"""Figure pieces shared by the notebook's panels: widths, the step axis, one legend per figure,
the family x benchmark grid and the wide-range y scale."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pacs.report.style import new_figure

RAW_ALPHA, BAND_ALPHA = 0.25, 0.12  # faint per-seed lines; the band over seeds


def wide_scale(ax, values: pd.Series) -> None:
    """A symlog y axis when the largest value is over 1000 times the median (the GRPO score's 1/ε
    gradient norms, docs/design.md#gradient-clipping), so the other runs do not sit flat at 0."""
    positive = values[values > 0]
    if len(positive) and positive.max() / positive.median() > 1e3:
        ax.set_yscale("symlog", linthresh=float(positive.median()))


def panels_width(columns: int) -> float:
    """Figure width for ``columns`` panels; never too narrow for the two-line title."""
    return max(6.5, 3.6 * columns + 0.6)


def step_axis(ax) -> None:
    """Whole training steps on the x axis (a 3-step smoke run would show 0.5 steps otherwise)."""
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def figure_legend(fig, axes) -> None:
    """One legend for the whole figure, outside the panels (runs keep one colour everywhere)."""
    seen: dict[str, Any] = {}
    for ax in np.ravel(axes):
        for handle, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(label, handle)
    if seen:
        fig.legend(
            list(seen.values()),
            list(seen),
            loc="outside lower center",
            frameon=False,
            ncols=min(4, len(seen)),
        )


def family_grid(fams: list, benches: list):
    """One panel per method family (columns) and benchmark (rows), rows sharing their y axis."""
    return new_figure(
        ncols=len(fams),
        nrows=len(benches),
        width=panels_width(len(fams)),
        height=2.6 * len(benches) + 0.8,
        sharey="row",
    )
