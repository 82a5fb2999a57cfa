"""The pure math of PACS and its baselines (GRPO, Dr.GRPO, PPO, DAPO, REAL).

Torch only: no I/O, no config reading, no verl. Both engines (the tiny CPU loop and the verl
plugin) call these functions, so the numbers they produce mean the same thing.

Conventions (docs/design.md#the-method-exactly):
- ``B`` is the number of responses, ``T`` the response length, ``V`` the vocabulary size.
- A batch holds whole groups: ``B = groups × group_size`` with each group contiguous.
- ``mask`` is 1 on response tokens and 0 on padding; padded positions never enter a sum.

PACS in one line: ψ_i = RLOO_group(β·Σ_t m_it (logp_it − ref_logp_it)) and
loss = mean_i w_i · BCEWithLogits(ψ_i, r_i), with class-balanced w_i per group.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from pacs.loss_modes import LOSS_AGG_MODES, SCORE_METHODS

GRPO_EPS = 1e-6  # the official code's epsilon in (x − mean) / (std + ε)


# --------------------------------------------------------------------------------------------
# Validation: every public function fails loudly with a ValueError that says what is wrong.
# --------------------------------------------------------------------------------------------


def _check_group_size(batch_size: int, group_size: int, method: str | None = None) -> int:
    """Return the number of groups; raise if ``batch_size`` is not a whole number of groups."""
    if not isinstance(group_size, int) or group_size < 1:
        raise ValueError(f"group_size must be a positive int, got {group_size!r}")
    if method in ("rloo", "grpo") and group_size < 2:
        raise ValueError(
            f"score {method!r} needs group_size >= 2 (leave-one-out or std over one response "
            f"is undefined), got {group_size}"
        )
    if batch_size % group_size != 0:
        raise ValueError(
            f"batch size {batch_size} is not a whole number of groups of {group_size}; "
            "each prompt's responses must stay together"
        )
    return batch_size // group_size


def _check_same_shape(**tensors: torch.Tensor) -> None:
    shapes = {name: tuple(t.shape) for name, t in tensors.items()}
    if len(set(shapes.values())) > 1:
        raise ValueError(f"shape mismatch: {shapes}")


def _check_no_nan(**tensors: torch.Tensor) -> None:
    for name, t in tensors.items():
        if t.is_floating_point() and torch.isnan(t).any():
            raise ValueError(f"{name} contains NaN")


def _at_least_fp32(t: torch.Tensor) -> torch.Tensor:
    """Upcast half precision to float32 (sums over long responses); keep float64 as it is."""
    return t.to(torch.promote_types(t.dtype, torch.float32))


def _check_1d(name: str, t: torch.Tensor) -> None:
    if t.dim() != 1:
        raise ValueError(f"{name} must be 1-D [B], got shape {tuple(t.shape)}")


def _check_labelled_batch(logp: torch.Tensor, ref_logp: torch.Tensor, labels: torch.Tensor) -> None:
    """``logp`` is [B, T], ``labels`` one per row, and nothing is NaN (the classification
    losses)."""
    if logp.dim() != 2:
        raise ValueError(f"logp must be [B, T], got shape {tuple(logp.shape)}")
    _check_1d("labels", labels)
    if labels.shape[0] != logp.shape[0]:
        raise ValueError(
            f"shape mismatch: labels has {labels.shape[0]} rows, logp has {logp.shape[0]}"
        )
    _check_no_nan(logp=logp, ref_logp=ref_logp, labels=labels)


# --------------------------------------------------------------------------------------------
# Masked reductions
# --------------------------------------------------------------------------------------------


def masked_sum(x: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Σ x over positions where ``mask`` is set. x, mask: same shape. Padded values never leak
    in, even if they are ±inf (``where`` instead of ``x * mask``)."""
    x = torch.where(mask.bool(), x, torch.zeros_like(x))
    return x.sum() if dim is None else x.sum(dim=dim)


def masked_mean(x: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Mean of x over masked positions. x, mask: same shape; returns a scalar or x reduced on
    ``dim``."""
    count = mask.to(x.dtype).sum() if dim is None else mask.to(x.dtype).sum(dim=dim)
    return masked_sum(x, mask, dim) / count.clamp(min=1)


def masked_whiten(x: torch.Tensor, mask: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """(x − mean) / sqrt(var + eps) over masked positions, unbiased var (as verl).
    x, mask: [B, T]."""
    mean = masked_mean(x, mask)
    centred = x - mean
    n = mask.to(x.dtype).sum()
    var = masked_sum(centred**2, mask) / (n - 1).clamp(min=1)
    return centred * torch.rsqrt(var + eps)


# --------------------------------------------------------------------------------------------
# PACS
# --------------------------------------------------------------------------------------------


def reward_proxy(
    logp: torch.Tensor, ref_logp: torch.Tensor, mask: torch.Tensor, beta: float = 1.0
) -> torch.Tensor:
    """Eq. 7: r̂_i = β · Σ_t m_it (logp_it − ref_logp_it).

    logp, ref_logp, mask: [B, T]. Returns [B] in at least float32 (bf16 inputs are upcast before
    the sum, so long responses do not lose the small per-token differences).
    """
    _check_same_shape(logp=logp, ref_logp=ref_logp, mask=mask)
    log_ratio = _at_least_fp32(logp) - _at_least_fp32(ref_logp)
    return beta * masked_sum(log_ratio, mask, dim=-1)


def _rloo_scores(g: torch.Tensor) -> torch.Tensor:
    """[G, n] -> [G, n]: x_i − mean_{j≠i} x_j = (x_i − mean) · n / (n − 1)."""
    n = g.shape[1]
    return (g - g.mean(dim=1, keepdim=True)) * (n / (n - 1))


def _grpo_scores(g: torch.Tensor) -> torch.Tensor:
    """[G, n] -> [G, n]: (x_i − mean) / (unbiased std + 1e-6)."""
    return (g - g.mean(dim=1, keepdim=True)) / (
        g.std(dim=1, keepdim=True, unbiased=True) + GRPO_EPS
    )


def _drgrpo_scores(g: torch.Tensor) -> torch.Tensor:
    """[G, n] -> [G, n]: x_i − mean."""
    return g - g.mean(dim=1, keepdim=True)


_SCORE_FUNCTIONS = {"rloo": _rloo_scores, "grpo": _grpo_scores, "drgrpo": _drgrpo_scores}


def group_scores(x: torch.Tensor, group_size: int, score: str = "rloo") -> torch.Tensor:
    """Score of each response within its group (eq. 6 and App. D.3).

    x: [B] with contiguous groups of ``group_size``. Returns [B]:
    - ``rloo``:   x_i − mean_{j≠i} x_j  (leave-one-out; equals verl's RLOO advantage);
    - ``grpo``:   (x_i − mean) / (std + 1e-6), unbiased std as in the official code;
    - ``drgrpo``: x_i − mean.
    """
    _check_1d("x", x)
    if score not in SCORE_METHODS:
        raise ValueError(f"unknown score method {score!r}; expected one of {SCORE_METHODS}")
    groups = _check_group_size(x.shape[0], group_size, score)
    return _SCORE_FUNCTIONS[score](x.reshape(groups, group_size)).reshape(-1)


def mixed_groups(labels: torch.Tensor, group_size: int) -> torch.Tensor:
    """[B] labels (binarised at 0.5), contiguous groups -> [G] bool: the group holds both labels.
    The one statement of a mixed group: PACS's class weights differ from 1 only there, DAPO's
    dynamic sampling keeps these, REAL drops the others."""
    _check_1d("labels", labels)
    groups = _check_group_size(labels.shape[0], group_size)
    n_pos = (labels >= 0.5).reshape(groups, group_size).sum(dim=1)
    return (n_pos > 0) & (n_pos < group_size)


def balanced_weights(labels: torch.Tensor, group_size: int) -> torch.Tensor:
    """Class-balanced weights per group (§3.5, official ``weight_mode=question``).

    labels: [B] in {0, 1} (soft labels are binarised at 0.5 for counting), contiguous groups.
    In a group with both labels, w_i = n / (2 · #responses sharing r_i's label) — sklearn's
    ``compute_class_weight("balanced")`` per group. In a single-label group, w = 1. Returns [B].
    """
    _check_1d("labels", labels)
    _check_no_nan(labels=labels)
    groups = _check_group_size(labels.shape[0], group_size)
    hard = (labels >= 0.5).reshape(groups, group_size)
    count_dtype = _at_least_fp32(labels).dtype if labels.is_floating_point() else torch.float32
    n_pos = hard.sum(dim=1, keepdim=True).to(count_dtype)
    n_neg = group_size - n_pos
    same_label_count = torch.where(hard, n_pos, n_neg)
    mixed = mixed_groups(labels, group_size).unsqueeze(1)  # [G, 1]
    weights = torch.where(
        mixed, group_size / (2.0 * same_label_count), torch.ones_like(same_label_count)
    )
    return weights.reshape(-1)


def mixed_group_fraction(labels: torch.Tensor, group_size: int) -> float:
    """Fraction of groups holding both labels, counted as :func:`balanced_weights` counts them
    (soft labels binarised at 0.5): the groups whose class weights differ from 1. Logged as
    ``mixed_frac`` by both engines. labels: [B], contiguous groups."""
    return mixed_groups(labels, group_size).float().mean().item()


def pacs_loss(
    logp: torch.Tensor,
    ref_logp: torch.Tensor,
    mask: torch.Tensor,
    labels: torch.Tensor,
    group_size: int,
    beta: float = 1.0,
    score: str = "rloo",
    use_weight: bool = True,
    weights: torch.Tensor | None = None,
    reduction: str = "mean",
) -> tuple[torch.Tensor, dict[str, float]]:
    """The PACS loss (eq. 8): weighted BCE-with-logits between ψ and the verifier's labels.

    logp, ref_logp, mask: [B, T]; labels: [B], hard {0,1} or soft in [0,1].
    ``weights`` ([B], optional) replaces the class-balanced weights (the verl plugin passes the
    weights it carried from the driver). ``use_weight=False`` means w ≡ 1.
    ``reduction``: "mean" → mean_i w_i ℓ_i (torch's weighted BCEWithLogitsLoss: it does NOT divide
    by Σw); "sum" → Σ_i w_i ℓ_i; "none" → [B].
    The gradient is mean_i w_i (σ(ψ_i) − r_i) ∇ψ_i (eq. 5).
    Returns (loss, stats) with stats psi_mean (0 by construction for rloo/grpo/drgrpo scores),
    psi_abs_mean, psi_std (how far ψ has moved: with a reference reset every step, ψ ≡ 0 on the
    step's first mini-batch), sigma_mean, sigma_std (σ(ψ)'s spread), score_acc (σ(ψ) > 0.5 vs
    r ≥ 0.5), weight_mean.
    """
    _check_same_shape(logp=logp, ref_logp=ref_logp, mask=mask)
    _check_labelled_batch(logp, ref_logp, labels)
    _check_group_size(logp.shape[0], group_size, score)
    if labels.is_floating_point() and ((labels < 0) | (labels > 1)).any():
        raise ValueError("labels must lie in [0, 1]")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"unknown reduction {reduction!r}")

    psi = group_scores(reward_proxy(logp, ref_logp, mask, beta), group_size, score)
    if weights is None:
        weights = balanced_weights(labels, group_size) if use_weight else torch.ones_like(psi)
        weights = weights.to(psi.dtype)
    else:
        _check_1d("weights", weights)
        weights = weights.detach().to(psi.dtype)
    labels = labels.to(psi.dtype)
    per_response = weights * F.binary_cross_entropy_with_logits(psi, labels, reduction="none")
    loss = {"mean": per_response.mean, "sum": per_response.sum, "none": lambda: per_response}[
        reduction
    ]()

    with torch.no_grad():
        sigma = torch.sigmoid(psi)
        stats = {
            "psi_mean": psi.mean().item(),
            "psi_abs_mean": psi.abs().mean().item(),
            "psi_std": _population_std(psi),
            "sigma_mean": sigma.mean().item(),
            "sigma_std": _population_std(sigma),
            "score_acc": ((sigma > 0.5) == (labels >= 0.5)).float().mean().item(),
            "weight_mean": weights.mean().item(),
        }
    return loss, stats


def _population_std(x: torch.Tensor) -> float:
    """Std over all elements of ``x`` (population, so one response gives 0, not NaN)."""
    return x.float().std(unbiased=False).item()


# --------------------------------------------------------------------------------------------
# GRPO / Dr.GRPO outcome advantages
# --------------------------------------------------------------------------------------------


def grpo_outcome_advantage(
    rewards: torch.Tensor, group_size: int, norm_by_std: bool = True, eps: float = GRPO_EPS
) -> torch.Tensor:
    """GRPO advantage (r − mean) / (std + ε) per group, or Dr.GRPO's r − mean when
    ``norm_by_std=False``. rewards: [B], contiguous groups. Returns [B] (broadcast it over the
    response tokens yourself)."""
    _check_1d("rewards", rewards)
    _check_no_nan(rewards=rewards)
    return group_scores(_at_least_fp32(rewards), group_size, "grpo" if norm_by_std else "drgrpo")


# --------------------------------------------------------------------------------------------
# Loss aggregation (verl semantics, one data-parallel rank)
# --------------------------------------------------------------------------------------------


def agg_loss(
    loss_mat: torch.Tensor, mask: torch.Tensor, loss_agg_mode: str, horizon: float | None = None
) -> torch.Tensor:
    """Reduce a per-token loss to a scalar, with the meanings of verl's ``agg_loss``.

    loss_mat, mask: [B, T].
    - ``token-mean``: Σ loss / Σ mask over the whole batch;
    - ``seq-mean-token-sum``: mean over sequences of each sequence's token sum;
    - ``seq-mean-token-mean``: mean over sequences of each sequence's token mean;
    - ``seq-mean-token-sum-norm``: seq-mean-token-sum / horizon (default T; Dr.GRPO's constant
      normaliser, as the official GRPO/PPO scripts used).
    Sequences with no valid token are excluded from the sequence means.
    """
    _check_same_shape(loss_mat=loss_mat, mask=mask)
    if loss_agg_mode not in LOSS_AGG_MODES:
        raise ValueError(
            f"unknown loss_agg_mode {loss_agg_mode!r}; expected one of {LOSS_AGG_MODES}"
        )
    if loss_agg_mode == "token-mean":
        return masked_mean(loss_mat, mask)
    token_count = mask.to(loss_mat.dtype).sum(dim=-1)
    seq_valid = token_count > 0
    seq_sum = masked_sum(loss_mat, mask, dim=-1)
    if loss_agg_mode == "seq-mean-token-mean":
        seq_loss = seq_sum / token_count.clamp(min=1)
    else:
        seq_loss = seq_sum
    loss = masked_mean(seq_loss, seq_valid)
    if loss_agg_mode == "seq-mean-token-sum-norm":
        loss = loss / (horizon if horizon is not None else loss_mat.shape[-1])
    return loss


# --------------------------------------------------------------------------------------------
# PPO pieces: the clipped surrogate, GAE and the clipped value loss
# --------------------------------------------------------------------------------------------


def ppo_policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_ratio: float = 0.2,
    clip_ratio_c: float | None = None,
    loss_agg_mode: str = "token-mean",
    clip_ratio_low: float | None = None,
    clip_ratio_high: float | None = None,
    horizon: int | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Clipped surrogate: max(−A·ρ, −A·clip(ρ, 1−ε_low, 1+ε_high)), optionally dual-clipped.

    logp, old_logp, advantages, mask: [B, T]. ε_low and ε_high default to ``clip_ratio`` (PPO's
    symmetric clip); DAPO's clip-higher sets ε_high > ε_low (verl's ``clip_ratio_low/high``).
    ``clip_ratio_c`` (> 1) enables dual-clip PPO: for A < 0 the loss is capped at −A·c (verl's
    ``compute_policy_loss_vanilla`` always caps, by default at 3); None: no cap. ``horizon`` is
    :func:`agg_loss`'s (verl's ``loss_scale_factor``). Returns (loss, stats: clipfrac, ppo_kl,
    clipfrac_lower: the share of tokens whose loss the cap lowered).
    """
    _check_same_shape(logp=logp, old_logp=old_logp, advantages=advantages, mask=mask)
    _check_no_nan(logp=logp, old_logp=old_logp, advantages=advantages)
    if clip_ratio_c is not None and clip_ratio_c <= 1.0:
        raise ValueError(f"clip_ratio_c must be > 1 for dual-clip PPO, got {clip_ratio_c}")
    low = clip_ratio if clip_ratio_low is None else clip_ratio_low
    high = clip_ratio if clip_ratio_high is None else clip_ratio_high
    log_ratio = (logp - old_logp).clamp(-20.0, 20.0)  # as verl: keeps exp() finite
    ratio = torch.exp(log_ratio)
    unclipped = -advantages * ratio
    clipped = -advantages * ratio.clamp(1 - low, 1 + high)
    clipped_once = torch.maximum(unclipped, clipped)
    losses = clipped_once
    if clip_ratio_c is not None:
        losses = torch.where(
            advantages < 0, torch.minimum(losses, -advantages * clip_ratio_c), losses
        )
    loss = agg_loss(losses, mask, loss_agg_mode, horizon)
    with torch.no_grad():
        stats = {
            "clipfrac": masked_mean((clipped > unclipped).float(), mask).item(),
            "ppo_kl": masked_mean(-log_ratio, mask).item(),
            "clipfrac_lower": masked_mean((losses < clipped_once).float(), mask).item(),
        }
    return loss, stats


def compute_gae(
    token_rewards: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    gamma: float = 1.0,
    lam: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation over the response tokens.

    token_rewards, values, mask: [B, T] (outcome rewards sit on the last valid token).
    Padded positions are skipped: they carry neither a value nor a TD error, as in verl.
    Returns (advantages, returns), each [B, T], not whitened (use ``masked_whiten`` for that).
    """
    _check_same_shape(token_rewards=token_rewards, values=values, mask=mask)
    _check_no_nan(token_rewards=token_rewards, values=values)
    with torch.no_grad():
        m = mask.to(values.dtype)
        next_value = torch.zeros_like(values[:, 0])
        last_gae = torch.zeros_like(values[:, 0])
        advantages = torch.zeros_like(values)
        for t in reversed(range(values.shape[1])):
            delta = token_rewards[:, t] + gamma * next_value - values[:, t]
            gae_t = delta + gamma * lam * last_gae
            next_value = values[:, t] * m[:, t] + (1 - m[:, t]) * next_value
            last_gae = gae_t * m[:, t] + (1 - m[:, t]) * last_gae
            advantages[:, t] = last_gae
        returns = advantages + values
    return advantages, returns


def value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    clip_range: float = 0.5,
    loss_agg_mode: str = "token-mean",
    horizon: float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Clipped value loss ½·max((V − R)², (clip(V, V_old ± c) − R)²), aggregated like verl.

    values, old_values, returns, mask: [B, T]. ``horizon``: ``seq-mean-token-sum-norm``'s
    divisor (verl's critic takes the actor's ``loss_scale_factor``; None: T). Returns (loss,
    stats: vf_clipfrac).
    """
    _check_same_shape(values=values, old_values=old_values, returns=returns, mask=mask)
    _check_no_nan(values=values, old_values=old_values, returns=returns)
    # clamp(V, V_old ± c) rather than V_old + clamp(V − V_old): the latter is not bit-equal to V
    # when nothing is clipped, which would miscount the clip fraction.
    clipped_values = torch.clamp(values, old_values - clip_range, old_values + clip_range)
    unclipped_err = (values - returns) ** 2
    clipped_err = (clipped_values - returns) ** 2
    loss = 0.5 * agg_loss(torch.maximum(unclipped_err, clipped_err), mask, loss_agg_mode, horizon)
    with torch.no_grad():
        stats = {"vf_clipfrac": masked_mean((clipped_err > unclipped_err).float(), mask).item()}
    return loss, stats


# --------------------------------------------------------------------------------------------
# DAPO pieces (Yu et al. 2025, arXiv 2503.14476): the overlong penalty (the group filter of
# dynamic sampling is :func:`mixed_groups`)
# --------------------------------------------------------------------------------------------


def overlong_penalty(lengths: torch.Tensor, max_len: int, buffer_len: int, factor: float = 1.0):
    """DAPO's soft overlong punishment (eq. 13), added to the verifier's reward.

    lengths: [B] response lengths in tokens. With L = ``max_len`` and the buffer ``buffer_len``:
    0 for |y| ≤ L − buffer, ((L − buffer) − |y|) / buffer · factor inside the buffer, −factor
    beyond L. Returns [B] float32.
    """
    _check_1d("lengths", lengths)
    if not 0 < buffer_len <= max_len:
        raise ValueError(f"need 0 < buffer_len <= max_len, got {buffer_len} and {max_len}")
    lengths = lengths.to(torch.float32)
    expected = max_len - buffer_len
    inside = (expected - lengths) / buffer_len * factor
    return torch.where(lengths <= expected, torch.zeros_like(lengths), inside.clamp(min=-factor))


# --------------------------------------------------------------------------------------------
# REAL (Zhai et al., arXiv 2602.05630): rewards as labels, anchored log-sum-exp per group
# --------------------------------------------------------------------------------------------


def length_normalised_log_ratio(
    logp: torch.Tensor, ref_logp: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """s_i = Σ_t m_it (logp_it − ref_logp_it) / Σ_t m_it (0 for an empty row).

    logp, ref_logp, mask: [B, T]. Returns [B] in at least float32, summed over the mask only (as
    :func:`reward_proxy`: padding never leaks in, bf16 is upcast before the sum).
    """
    _check_same_shape(logp=logp, ref_logp=ref_logp, mask=mask)
    log_ratio = _at_least_fp32(logp) - _at_least_fp32(ref_logp)
    return masked_mean(log_ratio, mask, dim=-1)


def real_loss(
    logp: torch.Tensor,
    ref_logp: torch.Tensor,
    mask: torch.Tensor,
    labels: torch.Tensor,
    group_size: int,
    tau: float = 0.5,
    reduction: str = "mean",
) -> tuple[torch.Tensor, dict[str, float]]:
    """The REAL loss: each group's anchored log-sum-exp over its responses' scores.

    logp, ref_logp, mask: [B, T]; labels: [B] in {0, 1}; contiguous groups of ``group_size``.
    s_i = length-normalised log-ratio (:func:`length_normalised_log_ratio`) / τ. A group holding
    both labels (P its correct, N its wrong responses) contributes

        L_g = log(1 + Σ_{j∈N} e^{s_j}) + log(1 + Σ_{i∈P} e^{−s_i})

    (the "1" is the anchor logit 0); an all-correct or all-wrong group contributes 0 but is still
    counted. ``reduction``: "mean" → Σ_g L_g / G over all G groups (the authors' code and
    ms-swift); "sum" → Σ_g L_g. Returns (loss, stats: score_mean, pos_score_mean,
    neg_score_mean, mixed_frac).
    """
    _check_labelled_batch(logp, ref_logp, labels)
    if tau <= 0:
        raise ValueError(f"tau must be > 0, got {tau}")
    if reduction not in ("mean", "sum"):
        raise ValueError(f"unknown reduction {reduction!r}")
    groups = _check_group_size(logp.shape[0], group_size)
    scores = length_normalised_log_ratio(logp, ref_logp, mask) / tau
    g = scores.reshape(groups, group_size)
    pos = (labels >= 0.5).reshape(groups, group_size)
    keep = mixed_groups(labels, group_size)
    anchor = torch.zeros(groups, 1, dtype=g.dtype, device=g.device)
    neg_term = torch.logsumexp(torch.cat([g.masked_fill(pos, -torch.inf), anchor], 1), dim=1)
    pos_term = torch.logsumexp(torch.cat([(-g).masked_fill(~pos, -torch.inf), anchor], 1), dim=1)
    per_group = torch.where(keep, neg_term + pos_term, torch.zeros_like(neg_term))
    loss = per_group.sum() / (groups if reduction == "mean" else 1)
    with torch.no_grad():
        flat_pos = pos.reshape(-1)
        stats = {
            "score_mean": scores.mean().item(),
            "pos_score_mean": scores[flat_pos].mean().item() if flat_pos.any() else 0.0,
            "neg_score_mean": scores[~flat_pos].mean().item() if (~flat_pos).any() else 0.0,
            "mixed_frac": keep.float().mean().item(),
        }
    return loss, stats


# --------------------------------------------------------------------------------------------
# Entropy
# --------------------------------------------------------------------------------------------


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Token entropy H = logsumexp(z) − Σ softmax(z)·z. logits: [..., V]; returns [...]
    (float32)."""
    logits = _at_least_fp32(logits)
    probs = torch.softmax(logits, dim=-1)
    return torch.logsumexp(logits, dim=-1) - (probs * logits).sum(dim=-1)
