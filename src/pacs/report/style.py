"""The one shared look of every report figure and the display names of every table.

Colours are fixed per run so that a method keeps its colour in every figure: PACS blue and
GRPO red, as in the paper's Fig. 5b. Runs without a fixed colour get one from ``EXTRA_COLORS``
in config order, so the assignment is deterministic for a given config.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import matplotlib

matplotlib.use("Agg")  # the report never opens a window (CI, SLURM, headless machines)

import matplotlib.pyplot as plt
import seaborn as sns

PACS_BLUE = "#1f5fbf"
GRPO_RED = "#d62728"
RUN_COLORS = {
    "pacs": PACS_BLUE,
    "grpo": GRPO_RED,
    "ppo": "#2ca02c",
    "dapo": "#e377c2",
    "real": "#17becf",
    "base": "#7f7f7f",
    "pacs_noweight": "#9467bd",
    "pacs_score_grpo": "#ff7f0e",
    "pacs_score_drgrpo": "#8c564b",
}
EXTRA_COLORS = ("#bcbd22", "#393b81", "#637939", "#843c39", "#7b4173", "#5254a3", "#8ca252")
PAPER_COLOR = "#4d4d4d"

BENCHMARK_LABELS = {
    "math500": "MATH500",
    "amc23": "AMC23",
    "aime24": "AIME24",
    "aime25": "AIME25",
    "beyondaime": "BeyondAIME",
    "livecodebench": "LiveCodeBench",
    "gpqa": "GPQA",
    "synthetic": "Synthetic",
    "avg": "Avg.",
    "held-out": "held-out set (eval_curve.jsonl)",
}
OOD_BENCHMARKS = ("livecodebench", "gpqa")

DPI = 200
FONT_SIZES = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "figure.titlesize": 11,
}
PANEL_SIZE = (4.2, 3.2)  # inches per facet
MIN_WIDTH = 6.0  # so that a one-panel figure still fits its two-line title
BENCHMARK_PALETTE = "colorblind"  # hue by benchmark (never the run colours, which mean methods)
INFERRED_MARK = "†"  # the paper's k label is inferred (paper_numbers.md)


def benchmark_label(name: str) -> str:
    """Display name of a benchmark key (``aime24`` -> ``AIME24``); unknown keys pass through."""
    return BENCHMARK_LABELS.get(name, name)


def run_palette(run_names: Iterable[str]) -> dict[str, str]:
    """Colour per run name: fixed for known runs, ``EXTRA_COLORS`` in the given order otherwise."""
    palette: dict[str, str] = {}
    extra = iter(EXTRA_COLORS * 4)
    for name in run_names:
        if name in palette:
            continue
        palette[name] = RUN_COLORS.get(name) or next(extra)
    return palette


@contextmanager
def figure_style() -> Iterator[None]:
    """Apply the report's seaborn theme and font sizes for the figures drawn inside the block."""
    rc = {
        **FONT_SIZES,
        "savefig.dpi": DPI,
        "figure.dpi": 100,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "legend.frameon": False,
        "pdf.fonttype": 42,
    }
    with sns.axes_style("whitegrid"), plt.rc_context(rc):
        yield


def new_figure(
    ncols: int = 1,
    nrows: int = 1,
    *,
    sharey: bool = False,
    width: float | None = None,
    height: float | None = None,
):
    """A figure with ``nrows x ncols`` panels of the standard size; axes always a 2-D array."""
    w = width if width is not None else max(MIN_WIDTH, PANEL_SIZE[0] * ncols)
    h = height if height is not None else PANEL_SIZE[1] * nrows
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(w, h), squeeze=False, sharey=sharey, layout="constrained"
    )
    return fig, axes
