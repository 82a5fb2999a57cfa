"""The analysis behind ``notebooks/explore_results.ipynb``: one profile's results read as the paper
reads them.

- runs are grouped into method families (PACS vs GRPO vs PPO, and each ablation against PACS), one
  small panel per family, so a panel holds at most a handful of lines (:mod:`.profile`);
- training curves are smoothed (TensorBoard's debiased EMA) with the raw values faint behind and a
  band over seeds; the loss is drawn per objective (PACS's BCE apart from the clipped surrogates)
  (:mod:`.curves`);
- the paper's number stands beside ours where it has one (``pacs.report.paper``; :mod:`.passk`);
- two methods are compared problem by problem, with a sign test (:mod:`.compare`);
- :mod:`.browser` pages through the graded responses.

Every figure is per model; nothing is averaged across models. The metric names and labels are
those of :mod:`pacs.metrics_log`; the folders those of :mod:`pacs.layout`. The notebook reads
everything through this package (``from pacs import explore``).
"""

from pacs.explore.compare import Comparison, compare, problem_accuracy, wins_figure
from pacs.explore.curves import (
    SMOOTHING,
    TRAINING_PANELS,
    curve_figure,
    draw_runs,
    loss_figure,
    seed_curves,
    smooth,
    training_figure,
)
from pacs.explore.passk import paper_value, pass1_table, passk_figure, passk_percent
from pacs.explore.profile import (
    REPO,
    TEMPLATE_CONFIG,
    Profile,
    families,
    find_config,
    inferred_config,
    open_profile,
    overview,
)

__all__ = [
    "REPO",
    "SMOOTHING",
    "TEMPLATE_CONFIG",
    "TRAINING_PANELS",
    "Comparison",
    "Profile",
    "compare",
    "curve_figure",
    "draw_runs",
    "families",
    "find_config",
    "inferred_config",
    "loss_figure",
    "open_profile",
    "overview",
    "paper_value",
    "pass1_table",
    "passk_figure",
    "passk_percent",
    "problem_accuracy",
    "seed_curves",
    "smooth",
    "training_figure",
    "wins_figure",
]
