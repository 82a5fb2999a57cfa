"""The ``pacs`` advantage estimator: carries each response's label and class weight to the loss.

verl's policy-loss functions only see ``(old_log_prob, log_prob, advantages, response_mask, ...)``,
never labels or uids (docs/design.md#the-verl-plugin). The driver therefore encodes, per response,

    a_i = (2 r_i − 1) · w_i        (r_i ∈ {0, 1}; w_i > 0)

broadcast over the response tokens. The loss decodes r_i = [a_i > 0] and w_i = |a_i|.
On the driver the batch is NOT ordered by group, so groups are formed from the uids.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from pacs.core_algos import balanced_weights
from pacs.methods import PacsSpec

ADV_ESTIMATOR_NAME = "pacs"  # verl's algorithm.adv_estimator for this estimator
# Rewards closer than this to 0 or 1 count as that label (rewards arrive as float32 sums).
LABEL_TOL = 1e-6


def binary_labels(rewards: torch.Tensor) -> torch.Tensor:
    """[B] outcome rewards -> [B] float labels in {0, 1}; raise for anything else.

    The sign encoding cannot carry soft labels (docs/design.md#soft-labels): the tiny engine
    supports them, the verl path does not, so a non-binary reward is an error here rather than a
    silent cast."""
    is_one = (rewards - 1.0).abs() <= LABEL_TOL
    is_zero = rewards.abs() <= LABEL_TOL
    bad = ~(is_one | is_zero)
    if bad.any():
        examples = rewards[bad][:5].tolist()
        raise ValueError(
            f"the pacs advantage estimator needs 0/1 outcome rewards; got {int(bad.sum())} other "
            f"values, e.g. {examples}. Soft labels are supported by the tiny engine only."
        )
    return is_one.float()


def group_indices(index: Any) -> list[np.ndarray]:
    """Positions of each uid's responses, uids in sorted order (deterministic)."""
    rows_by_uid: dict[Any, list[int]] = {}
    for row, uid in enumerate(np.asarray(index, dtype=object).tolist()):
        rows_by_uid.setdefault(uid, []).append(row)
    return [np.asarray(rows_by_uid[uid]) for uid in sorted(rows_by_uid, key=str)]


def signed_class_weights(
    rewards: torch.Tensor, index: Any, use_weight: bool = True
) -> torch.Tensor:
    """[B] rewards and [B] uids -> [B] signed weights (2r − 1)·w, groups formed by uid.

    w is ``pacs.core_algos.balanced_weights`` within each uid's group (any group size, any order
    of the rows); ``use_weight=False`` gives w ≡ 1.
    """
    if rewards.dim() != 1 or len(index) != rewards.shape[0]:
        raise ValueError(
            f"need [B] rewards and B uids, got {tuple(rewards.shape)} and {len(index)} uids"
        )
    labels = binary_labels(rewards.float())
    weights = torch.ones_like(labels)
    if use_weight:
        for rows in group_indices(index):
            rows_t = torch.as_tensor(rows, dtype=torch.long)
            weights[rows_t] = balanced_weights(labels[rows_t], group_size=len(rows))
    return (2.0 * labels - 1.0) * weights


def use_weight_from_config(config: Any) -> bool:
    """Read ``algorithm.label_loss.use_weight`` from verl's algorithm config (DictConfig, dataclass
    or dict); :class:`pacs.methods.PacsSpec`'s default (the paper's setting) when absent."""
    default = PacsSpec().use_weight
    if config is None:
        return default
    pacs_cfg = (
        config.get("label_loss", None)
        if hasattr(config, "get")
        else getattr(config, "label_loss", None)
    )
    if pacs_cfg is None:
        return default
    value = (
        pacs_cfg.get("use_weight", default)
        if hasattr(pacs_cfg, "get")
        else getattr(pacs_cfg, "use_weight", default)
    )
    if not isinstance(value, bool):
        raise TypeError(f"algorithm.label_loss.use_weight must be a bool, got {value!r}")
    return value


def compute_pacs_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: Any = None,
    config: Any = None,
    **_: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """verl advantage-estimator signature (``compute_advantage`` passes these keywords).

    token_level_rewards, response_mask: [B, T]; index: [B] uids (verl passes ``uid``);
    config: ``config.algorithm`` (``algorithm.label_loss.use_weight`` selects w ≡ 1).
    Returns (advantages, returns), both [B, T] = signed weight × response_mask.
    """
    if index is None:
        raise ValueError("the pacs advantage estimator needs the uids (verl passes index=uid)")
    with torch.no_grad():
        rewards = token_level_rewards.sum(dim=-1)
        signed = signed_class_weights(rewards, index, use_weight_from_config(config))
        advantages = signed.to(token_level_rewards.dtype).unsqueeze(-1) * response_mask
    return advantages, advantages
