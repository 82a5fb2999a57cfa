"""The ``pacs`` and ``real`` policy losses (worker side) and their config dataclasses.

Select it with (the launcher writes these overrides):
    actor_rollout_ref.actor.policy_loss._target_=pacs.verl_plugin.loss.PACSPolicyLossConfig
    actor_rollout_ref.actor.policy_loss.loss_mode=pacs
    +actor_rollout_ref.actor.policy_loss.{beta,score,use_weight}=...

verl calls ``fn(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config,
rollout_is_weights)`` once per micro-batch (``verl.workers.utils.losses.ppo_loss``) and SUMS the
micro-batch losses before the optimizer step. So this returns Σ_{i∈micro} w_i ℓ_i divided by the
global mini-batch size (and times dp_size, because FSDP averages gradients over ranks): summed over
micro-batches and averaged over ranks, that is mean_i w_i ℓ_i over the mini-batch, exactly
``pacs.core_algos.pacs_loss`` on the whole mini-batch.

The reference in r̂ is ``old_log_prob``: the policy at rollout time
(docs/design.md#the-reference-model ``ref: rollout``). For ``ref: periodic|fixed`` the
``label_sync`` trainer writes the reference model's log-probs into ``old_log_probs`` before the
update, so this function needs no second code path. ``loss_agg_mode`` is ignored: the PACS loss is
one BCE term per response."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from verl.trainer.ppo.core_algos import register_policy_loss
from verl.workers.config import PolicyLossConfig

from pacs.core_algos import balanced_weights, mixed_group_fraction, pacs_loss, real_loss
from pacs.methods import PacsSpec, RealSpec, methods_with
from pacs.metrics_log import PSI_STATS

LOSS_NAME = "pacs"
REAL_LOSS_NAME = "real"
LABEL_LOSSES: tuple[str, ...] = methods_with(objective="classification")
"""Our policy losses that read 0/1 labels from the ``pacs`` advantage estimator's signs: the
classification methods, each registered under its method name."""
_DEFAULTS = PacsSpec()  # the one place PACS's defaults are stated (pacs.methods)
METRIC_PREFIX = "actor/pacs_"
PER_UPDATE_STATS = PSI_STATS
"""``pacs_loss`` stats the worker also logs per update of a step, ``actor/pacs_<stat>/mb<i>``
(:func:`pacs.verl_plugin.worker.per_update_metrics`; the names: :mod:`pacs.metrics_log`)."""


@dataclass
class PACSPolicyLossConfig(PolicyLossConfig):
    """verl's ``PolicyLossConfig`` plus the loss's PACS knobs, defaults from
    :class:`pacs.methods.PacsSpec` and validated by it (:meth:`spec`).

    ``use_weight`` must agree with ``algorithm.label_loss.use_weight``, which decides what the
    driver packs into the advantages.
    """

    loss_mode: str = LOSS_NAME
    beta: float = _DEFAULTS.beta
    score: str = _DEFAULTS.score
    use_weight: bool = _DEFAULTS.use_weight

    def __post_init__(self):
        try:
            self.spec()
        except ValueError as err:  # pydantic's ValidationError is a ValueError
            raise ValueError(f"actor_rollout_ref.actor.policy_loss: {err}") from err

    def spec(self) -> PacsSpec:
        """The loss's knobs as the typed spec (an int β from Hydra becomes a float there)."""
        return PacsSpec(beta=self.beta, score=self.score, use_weight=self.use_weight)


def decode_signed_weights(
    advantages: torch.Tensor, mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """[B, T] advantages (signed weight broadcast over tokens) -> ([B] labels, [B] weights).

    Reads the value at each row's first valid token; label = [a > 0], weight = |a|.
    """
    if not mask.any(dim=-1).all():
        raise ValueError(
            "a response has no valid token (empty response_mask row); cannot read its label"
        )
    first_valid = mask.to(torch.int8).argmax(dim=-1, keepdim=True)
    signed = advantages.gather(-1, first_valid).squeeze(-1).float()
    return (signed > 0).float(), signed.abs()


def check_decoded_weights(
    labels: torch.Tensor, weights: torch.Tensor, group_size: int, use_weight: bool
) -> None:
    """Raise unless the [B] decoded weights are what the driver computed for these groups:
    ``balanced_weights`` of the labels in contiguous groups of ``group_size`` (1 without weights).

    A mismatch means the micro-batch does not hold the driver's groups (a verl change in batch
    geometry, or rows reordered), so the loss would score responses against the wrong group.
    The tolerance allows bf16 advantages; distinct class weights differ by far more.
    """
    if not use_weight:
        if not torch.allclose(weights, torch.ones_like(weights)):
            raise ValueError(
                "policy_loss.use_weight=False but the advantages carry class weights: set "
                "algorithm.label_loss.use_weight=False as well"
            )
        return
    expected = balanced_weights(labels, group_size)
    if not torch.allclose(weights, expected.to(weights.dtype), rtol=1e-2, atol=0.0):
        bad = (weights - expected).abs().argmax().item()
        raise ValueError(
            f"pacs loss: the class weights carried in the advantages do not match the labels "
            f"grouped by rollout.n={group_size} in this micro-batch (row {bad + 1}: carried "
            f"{weights[bad].item():.4f}, expected {expected[bad].item():.4f}); the micro-batch "
            "does not hold whole driver groups in order: is verl 0.9.1 with the label_sync "
            "trainer in use?"
        )


def loss_spec(config: Any) -> PacsSpec:
    """The PACS spec of the actor config's ``policy_loss`` (verl hands the dataclass)."""
    policy_loss = config.policy_loss
    if not isinstance(policy_loss, PACSPolicyLossConfig):
        raise TypeError(
            f"pacs loss needs actor.policy_loss of type {PACSPolicyLossConfig.__name__}, got "
            f"{type(policy_loss).__name__}: set actor_rollout_ref.actor.policy_loss._target_"
        )
    return policy_loss.spec()


def _whole_groups(loss: str, config: Any, rollout_is_weights: Any, batch: int) -> int:
    """The group size of a label loss's micro-batch of ``batch`` responses; raises unless the
    actor config is there, no rollout importance weights are, and the groups are whole."""
    if config is None:
        raise ValueError(
            f"{loss} loss needs the actor config (rollout_n, policy_loss, global_batch_info)"
        )
    if rollout_is_weights is not None:
        raise NotImplementedError(
            f"{loss} loss does not support rollout importance weights; disable rollout_correction"
        )
    group_size = int(config.rollout_n)
    if batch % group_size != 0:
        raise ValueError(
            f"{loss} loss got a micro-batch of {batch} responses, not a whole number of groups of "
            f"{group_size}: run with trainer.v1.trainer_mode=label_sync, which keeps groups "
            "together"
        )
    return group_size


def _global_normaliser(config: Any, local_batch: int) -> tuple[float, int]:
    """(global mini-batch size, dp_size) from ``config.global_batch_info`` (set by ppo_loss)."""
    info = getattr(config, "global_batch_info", None) or {}
    dp_size = int(info.get("dp_size", 1) or 1)
    global_batch = info.get("global_batch_size")
    if global_batch is None:
        if dp_size > 1:
            raise ValueError(
                "pacs loss: global_batch_info.global_batch_size is required when dp_size > 1"
            )
        global_batch = local_batch
    return float(global_batch), dp_size


@register_policy_loss(LOSS_NAME)
def compute_policy_loss_pacs(
    old_log_prob: torch.Tensor,
    log_prob: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    loss_agg_mode: str = "token-mean",
    config: Any = None,
    rollout_is_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """PACS loss of one micro-batch, normalised by the global mini-batch. Tensors are [B, T]."""
    batch = log_prob.shape[0]
    group_size = _whole_groups(LOSS_NAME, config, rollout_is_weights, batch)
    spec = loss_spec(config)
    mask = response_mask.bool()
    labels, weights = decode_signed_weights(advantages, mask)
    check_decoded_weights(labels, weights, group_size, spec.use_weight)
    loss_sum, stats = pacs_loss(
        log_prob,
        old_log_prob,
        mask,
        labels,
        group_size,
        beta=spec.beta,
        score=spec.score,
        use_weight=True,
        weights=weights,
        reduction="sum",
    )
    global_batch, dp_size = _global_normaliser(config, batch)
    loss = loss_sum / global_batch * dp_size
    metrics = {f"{METRIC_PREFIX}{k}": v for k, v in stats.items()}
    metrics[f"{METRIC_PREFIX}mixed_frac"] = mixed_group_fraction(labels, group_size)
    return loss, metrics


# ------------------------------------------------------------------------------ REAL

_REAL_DEFAULTS = RealSpec()


@dataclass
class REALPolicyLossConfig(PolicyLossConfig):
    """verl's ``PolicyLossConfig`` plus REAL's τ (default and validation: :class:`RealSpec`).

    REAL reads the same 0/1 labels as PACS, from the ``pacs`` advantage estimator run with
    ``algorithm.label_loss.use_weight=False`` (every carried weight 1)."""

    loss_mode: str = REAL_LOSS_NAME
    tau: float = _REAL_DEFAULTS.tau

    def __post_init__(self):
        try:
            self.spec()
        except ValueError as err:
            raise ValueError(f"actor_rollout_ref.actor.policy_loss: {err}") from err

    def spec(self) -> RealSpec:
        return RealSpec(tau=float(self.tau))


@register_policy_loss(REAL_LOSS_NAME)
def compute_policy_loss_real(
    old_log_prob: torch.Tensor,
    log_prob: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    loss_agg_mode: str = "token-mean",
    config: Any = None,
    rollout_is_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """REAL loss of one micro-batch of whole groups ([B, T] tensors): Σ_g L_g of
    :func:`pacs.core_algos.real_loss` over the global number of groups (× dp_size, as for
    PACS), so the micro-batches sum to the authors' Σ_g L_g / #groups of the mini-batch."""
    batch = log_prob.shape[0]
    group_size = _whole_groups(REAL_LOSS_NAME, config, rollout_is_weights, batch)
    policy_loss = config.policy_loss
    if not isinstance(policy_loss, REALPolicyLossConfig):
        raise TypeError(
            f"real loss needs actor.policy_loss of type {REALPolicyLossConfig.__name__}, got "
            f"{type(policy_loss).__name__}: set actor_rollout_ref.actor.policy_loss._target_"
        )
    labels, weights = decode_signed_weights(advantages, response_mask.bool())
    check_decoded_weights(labels, weights, group_size, use_weight=False)
    loss_sum, stats = real_loss(
        log_prob,
        old_log_prob,
        response_mask.bool(),
        labels,
        group_size,
        tau=policy_loss.spec().tau,
        reduction="sum",
    )
    global_batch, dp_size = _global_normaliser(config, batch)
    loss = loss_sum / (global_batch / group_size) * dp_size
    metrics = {f"actor/real_{k}": v for k, v in stats.items()}
    metrics["actor/pacs_mixed_frac"] = stats["mixed_frac"]
    return loss, metrics
