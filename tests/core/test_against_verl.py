"""core_algos against verl 0.9.1's own functions (verl is in the test extra; imported only here)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pacs import core_algos as ca


def verl_core():
    from verl.trainer.ppo import core_algos as verl_core_algos

    return verl_core_algos


def outcome_batch(groups=6, n=8, T=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    B = groups * n
    rewards = torch.randint(0, 2, (B,), generator=g).float()
    rewards[:n] = 1.0  # an all-correct group: std = 0
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    mask = (torch.arange(T)[None, :] < lengths[:, None]).float()
    token_rewards = torch.zeros(B, T)
    token_rewards[torch.arange(B), lengths - 1] = rewards  # outcome reward on the last token
    uids = np.repeat(np.arange(groups), n).astype(object)
    return rewards, token_rewards, mask, uids


@pytest.mark.parametrize("seed", range(3))
def test_rloo_equals_verl(seed):
    rewards, token_rewards, mask, uids = outcome_batch(seed=seed)
    adv, _ = verl_core().compute_rloo_outcome_advantage(token_rewards, mask, uids)
    ours = ca.group_scores(rewards, 8, "rloo")
    torch.testing.assert_close(adv, ours[:, None] * mask)


@pytest.mark.parametrize("seed", range(3))
def test_grpo_equals_verl(seed):
    rewards, token_rewards, mask, uids = outcome_batch(seed=seed)
    adv, _ = verl_core().compute_grpo_outcome_advantage(token_rewards, mask, uids)
    torch.testing.assert_close(adv, ca.group_scores(rewards, 8, "grpo")[:, None] * mask)
    torch.testing.assert_close(adv, ca.grpo_outcome_advantage(rewards, 8)[:, None] * mask)
    dr, _ = verl_core().compute_grpo_outcome_advantage(
        token_rewards, mask, uids, norm_adv_by_std_in_grpo=False
    )
    torch.testing.assert_close(
        dr, ca.grpo_outcome_advantage(rewards, 8, norm_by_std=False)[:, None] * mask
    )


@pytest.mark.parametrize("mode", ca.LOSS_AGG_MODES)
def test_agg_loss_equals_verl(mode):
    g = torch.Generator().manual_seed(1)
    loss = torch.randn(6, 9, generator=g)
    mask = (torch.rand(6, 9, generator=g) > 0.3).float()
    mask[2] = 0  # a fully masked sequence is excluded from the sequence means
    expected = verl_core().agg_loss(loss, mask, mode)
    torch.testing.assert_close(ca.agg_loss(loss, mask, mode), expected)


def test_gae_equals_verl_returns_and_whitened_advantages():
    g = torch.Generator().manual_seed(2)
    rewards = torch.randn(4, 7, generator=g)
    values = torch.randn(4, 7, generator=g)
    mask = (torch.rand(4, 7, generator=g) > 0.2).float()
    v_adv, v_ret = verl_core().compute_gae_advantage_return(rewards, values, mask, 0.99, 0.95)
    adv, ret = ca.compute_gae(rewards, values, mask, 0.99, 0.95)
    torch.testing.assert_close(ret, v_ret)
    torch.testing.assert_close(
        ca.masked_whiten(adv, mask) * mask, v_adv * mask, rtol=1e-5, atol=1e-5
    )


def test_value_loss_and_entropy_equal_verl():
    from verl.utils import torch_functional as verl_F

    g = torch.Generator().manual_seed(3)
    vpred, old, ret = (torch.randn(5, 6, generator=g) for _ in range(3))
    mask = (torch.rand(5, 6, generator=g) > 0.3).float()
    v_loss, v_clipfrac = verl_core().compute_value_loss(vpred, ret, old, mask, cliprange_value=0.2)
    ours, stats = ca.value_loss(vpred, old, ret, mask, clip_range=0.2)
    torch.testing.assert_close(ours, v_loss)
    assert stats["vf_clipfrac"] == pytest.approx(v_clipfrac.item())
    logits = torch.randn(3, 4, 11, generator=g)
    torch.testing.assert_close(ca.entropy_from_logits(logits), verl_F.entropy_from_logits(logits))
