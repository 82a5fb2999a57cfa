"""The pacs policy loss, called the way verl calls it (verl.workers.utils.losses.ppo_loss).

verl sums the micro-batch losses of a mini-batch before the optimizer step and FSDP averages
gradients over ranks. Either way the result must equal pacs.core_algos.pacs_loss on the whole
mini-batch (loss and gradient), with the driver's signed weights as the carrier of labels.
"""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from pacs.core_algos import pacs_loss
from pacs.verl_plugin.advantage import signed_class_weights
from pacs.verl_plugin.loss import (
    PACSPolicyLossConfig,
    compute_policy_loss_pacs,
    decode_signed_weights,
)

N = 4  # responses per prompt (config.rollout_n)
GROUPS = 4  # prompts in the mini-batch
PROMPT, RESP = 3, 5


def _actor_config(beta=1.0, score="rloo", use_weight=True, rollout_n=N):
    from verl.workers.config import FSDPActorConfig

    return FSDPActorConfig(
        strategy="fsdp2",
        rollout_n=rollout_n,
        ppo_micro_batch_size_per_gpu=1,
        policy_loss=PACSPolicyLossConfig(
            loss_mode="pacs", beta=beta, score=score, use_weight=use_weight
        ),
    )


def _batch(seed: int = 0):
    """A mini-batch of GROUPS×N responses: per-token log-probs, masks, 0/1 rewards (mixed and
    single-label groups), and the driver's signed weights broadcast over the tokens."""
    g = torch.Generator().manual_seed(seed)
    b = GROUPS * N
    resp_len = torch.randint(1, RESP + 1, (b,), generator=g)
    resp_len[0] = RESP
    mask = torch.arange(RESP)[None, :] < resp_len[:, None]
    logp = -torch.rand(b, RESP, generator=g) * 3
    old = logp + 0.3 * torch.randn(b, RESP, generator=g)
    rewards = torch.tensor([1, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 1], dtype=torch.float32)
    uids = [f"u{i // N}" for i in range(b)]
    adv = signed_class_weights(rewards, uids).unsqueeze(-1) * mask
    return logp, old, mask, rewards, adv


def _td(rows, logp, old, mask, adv, dp_size=1, global_batch_size=None):
    """verl's micro-batch TensorDict in padded layout plus the model's flat log-prob output.

    no_padding_2_padding reads a response token's log-prob one position to the left (the logit
    that predicted it), so each flat sequence holds the log-probs at prompt_len-1+t.
    """
    from verl.utils import tensordict_utils as tu

    b = len(rows)
    prompt_mask = torch.ones(b, PROMPT, dtype=torch.long)
    attn = torch.cat([prompt_mask, mask[rows].long()], dim=1)
    leaf = logp[rows].clone().requires_grad_(True)
    chunks = []
    for i in range(b):
        n_resp = int(mask[rows[i]].sum())
        seq = torch.zeros(PROMPT + n_resp)
        seq = torch.cat([seq[: PROMPT - 1], leaf[i, :n_resp], seq[PROMPT - 1 + n_resp :]])
        chunks.append(seq)
    flat = torch.cat(chunks)
    td = TensorDict(
        {
            "prompts": torch.ones(b, PROMPT, dtype=torch.long),
            "responses": torch.ones(b, RESP, dtype=torch.long),
            "attention_mask": attn,
            "response_mask": mask[rows].long(),
            "old_log_probs": old[rows],
            "advantages": adv[rows],
        },
        batch_size=[b],
    )
    tu.assign_non_tensor(
        td, dp_size=dp_size, batch_num_tokens=int(mask.sum()), global_batch_size=global_batch_size
    )
    return {"log_probs": flat}, td, leaf


def _verl_loss(config, rows, batch, dp_size=1, global_batch_size=None):
    from verl.workers.utils.losses import ppo_loss

    logp, old, mask, _, adv = batch
    model_output, td, leaf = _td(rows, logp, old, mask, adv, dp_size, global_batch_size)
    loss, metrics = ppo_loss(config, model_output, td)
    loss.backward()
    return loss.detach(), leaf.grad, metrics


def _reference(batch, beta=1.0, score="rloo", use_weight=True):
    logp, old, mask, rewards, _ = batch
    leaf = logp.clone().requires_grad_(True)
    loss, _ = pacs_loss(leaf, old, mask, rewards, N, beta=beta, score=score, use_weight=use_weight)
    loss.backward()
    return loss.detach(), leaf.grad


@pytest.mark.parametrize(
    "beta,score,use_weight", [(1.0, "rloo", True), (2.0, "grpo", True), (0.5, "drgrpo", False)]
)
def test_two_micro_batches_through_ppo_loss_equal_pacs_loss(beta, score, use_weight):
    batch = _batch()
    logp, old, mask, rewards, _ = batch
    if not use_weight:  # the driver packs w ≡ 1
        batch = (
            logp,
            old,
            mask,
            rewards,
            signed_class_weights(
                rewards, [f"u{i // N}" for i in range(len(rewards))], False
            ).unsqueeze(-1)
            * mask,
        )
    config = _actor_config(beta, score, use_weight)
    half = GROUPS * N // 2
    l1, g1, m1 = _verl_loss(config, list(range(half)), batch, global_batch_size=GROUPS * N)
    l2, g2, _ = _verl_loss(config, list(range(half, 2 * half)), batch, global_batch_size=GROUPS * N)
    ref_loss, ref_grad = _reference(batch, beta, score, use_weight)
    assert float(l1 + l2) == pytest.approx(float(ref_loss), abs=1e-6)
    assert torch.allclose(torch.cat([g1, g2]), ref_grad, atol=1e-6)
    assert {"actor/pacs_psi_mean", "actor/pacs_weight_mean", "actor/pacs_mixed_frac"} <= set(m1)


def test_two_ranks_average_to_pacs_loss():
    """dp=2: each rank's loss is scaled by dp_size / global size; FSDP averages the gradients."""
    batch = _batch(seed=1)
    config = _actor_config()
    half = GROUPS * N // 2
    l0, g0, _ = _verl_loss(
        config, list(range(half)), batch, dp_size=2, global_batch_size=GROUPS * N
    )
    l1, g1, _ = _verl_loss(
        config, list(range(half, 2 * half)), batch, dp_size=2, global_batch_size=GROUPS * N
    )
    ref_loss, ref_grad = _reference(batch)
    assert float(l0 + l1) / 2 == pytest.approx(float(ref_loss), abs=1e-6)
    assert torch.allclose(torch.cat([g0, g1]) / 2, ref_grad, atol=1e-6)


def test_first_update_after_rollout_has_loss_mean_w_ln2_but_a_gradient():
    """ψ = 0 when log_prob == old_log_prob (docs/design.md#the-reference-model): loss = mean(w)·ln
    2, gradient ≠
    0."""
    logp, _, mask, _, adv = _batch()
    leaf = logp.clone().requires_grad_(True)
    config = _actor_config()
    loss, _ = compute_policy_loss_pacs(logp.clone(), leaf, adv, mask, config=config)
    loss.backward()
    _, weights = decode_signed_weights(adv, mask)
    assert float(loss) == pytest.approx(
        float(weights.mean()) * torch.log(torch.tensor(2.0)).item(), abs=1e-6
    )
    assert leaf.grad.abs().sum() > 0


def test_decode_reads_labels_and_weights():
    mask = torch.tensor([[0, 1, 1], [1, 1, 0]], dtype=torch.bool)
    adv = torch.tensor([[0.0, 2.0, 2.0], [-0.5, -0.5, 0.0]])
    labels, weights = decode_signed_weights(adv, mask)
    assert labels.tolist() == [1.0, 0.0] and weights.tolist() == [2.0, 0.5]


def test_split_group_is_refused():
    logp, old, mask, _, adv = _batch()
    with pytest.raises(ValueError, match="label_sync"):
        compute_policy_loss_pacs(old[:6], logp[:6], adv[:6], mask[:6], config=_actor_config())


def test_noweight_loss_refuses_weighted_advantages():
    logp, old, mask, _, adv = _batch()
    with pytest.raises(ValueError, match="use_weight"):
        compute_policy_loss_pacs(old, logp, adv, mask, config=_actor_config(use_weight=False))


def test_multi_rank_needs_the_global_batch_size():
    logp, old, mask, _, adv = _batch()
    config = _actor_config()
    config.global_batch_info.update(dp_size=2, global_batch_size=None)
    with pytest.raises(ValueError, match="global_batch_size"):
        compute_policy_loss_pacs(old, logp, adv, mask, config=config)


def test_config_rejects_unknown_score():
    with pytest.raises(ValueError, match="score"):
        PACSPolicyLossConfig(score="ppo")


def test_weights_that_do_not_match_the_groups_are_refused():
    """Rows swapped between two groups keep every row's own signed weight, so labels and weights
    decode fine row by row, but grouped by rollout.n they no longer match balanced_weights."""
    logp, old, mask, _, adv = _batch()
    # rows 1 (group 0, label 0, w = 4/6) and 4 (group 1, all-correct, w = 1) trade places
    order = list(range(GROUPS * N))
    order[1], order[4] = 4, 1
    with pytest.raises(ValueError, match=r"do not match the labels grouped by rollout.n=4"):
        compute_policy_loss_pacs(
            old[order], logp[order], adv[order], mask[order], config=_actor_config()
        )
    # the driver's own order passes, also with advantages stored in bf16
    compute_policy_loss_pacs(old, logp, adv.bfloat16().float(), mask, config=_actor_config())


# ------------------------------------------------------------------ REAL


def _real_config(tau=0.5):
    from verl.workers.config import FSDPActorConfig

    from pacs.verl_plugin.loss import REALPolicyLossConfig

    return FSDPActorConfig(
        strategy="fsdp2",
        rollout_n=N,
        ppo_micro_batch_size_per_gpu=1,
        policy_loss=REALPolicyLossConfig(loss_mode="real", tau=tau),
    )


def _unweighted(batch):
    logp, old, mask, rewards, _ = batch
    uids = [f"u{i // N}" for i in range(len(rewards))]
    return logp, old, mask, rewards, signed_class_weights(rewards, uids, False).unsqueeze(-1) * mask


@pytest.mark.parametrize("tau,dp_size", [(0.5, 1), (1.0, 2)])
def test_real_through_ppo_loss_equals_real_loss(tau, dp_size):
    """Two micro-batches (or two ranks) of whole groups: their summed (averaged) loss and
    gradients are core_algos.real_loss on the whole mini-batch, Σ_g L_g / #groups."""
    from pacs.core_algos import real_loss

    batch = _unweighted(_batch(seed=2))
    logp, old, mask, rewards, _ = batch
    config, half = _real_config(tau), GROUPS * N // 2
    parts = [
        _verl_loss(config, rows, batch, dp_size=dp_size, global_batch_size=GROUPS * N)
        for rows in (list(range(half)), list(range(half, 2 * half)))
    ]
    leaf = logp.clone().requires_grad_(True)
    ref_loss, _ = real_loss(leaf, old, mask, rewards, N, tau=tau)
    ref_loss.backward()
    total = float(parts[0][0] + parts[1][0]) / dp_size
    assert total == pytest.approx(float(ref_loss), abs=1e-6)
    assert torch.allclose(torch.cat([parts[0][1], parts[1][1]]) / dp_size, leaf.grad, atol=1e-6)
    assert {"actor/real_score_mean", "actor/pacs_mixed_frac"} <= set(parts[0][2])


def test_real_refuses_weighted_labels_and_split_groups():
    batch = _batch()  # class-balanced weights: PACS's advantages, not REAL's
    with pytest.raises(ValueError, match="carry class weights"):
        _verl_loss(_real_config(), list(range(N)), batch, global_batch_size=GROUPS * N)
    with pytest.raises(ValueError, match="not a whole number of groups"):
        _verl_loss(_real_config(), list(range(N + 1)), _unweighted(batch), global_batch_size=16)
    with pytest.raises(ValueError, match="tau"):
        _real_config(tau=-1.0)
