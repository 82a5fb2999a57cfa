"""The names of the loss code's modes, stated once: :mod:`pacs.core_algos` dispatches on them and
:mod:`pacs.methods` offers them as the spec's choices.

Plain Python in a module of its own: :mod:`pacs.methods` (and with it the Snakefile) imports these
without importing torch, which :mod:`pacs.core_algos` needs.
"""

from __future__ import annotations

# How a group's scores are centred (:func:`pacs.core_algos.group_scores`).
SCORE_METHODS = ("rloo", "grpo", "drgrpo")
# How token losses are aggregated over a batch (:func:`pacs.core_algos.agg_loss`, verl's names).
LOSS_AGG_MODES = (
    "token-mean",
    "seq-mean-token-sum",
    "seq-mean-token-mean",
    "seq-mean-token-sum-norm",
)
