"""Tests of the pure PACS / GRPO / PPO math against hand-computed cases and independent
re-derivations."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from sklearn.utils.class_weight import compute_class_weight

from pacs import core_algos as ca

LN2 = math.log(2.0)


def random_batch(groups=3, group_size=4, T=7, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    B = groups * group_size
    logp = -torch.rand(B, T, generator=g, dtype=dtype) * 3
    ref_logp = -torch.rand(B, T, generator=g, dtype=dtype) * 3
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    mask = (torch.arange(T)[None, :] < lengths[:, None]).to(dtype)
    labels = torch.randint(0, 2, (B,), generator=g).to(dtype)
    return logp, ref_logp, mask, labels


# ---------------------------------------------------------------- independent re-derivations


def loop_scores(r_hat: list[float], n: int, method: str) -> list[float]:
    """ψ by explicit per-group loops, written from docs/design.md#the-method-exactly without looking
    at core_algos."""
    out = []
    for start in range(0, len(r_hat), n):
        grp = r_hat[start : start + n]
        mean = sum(grp) / n
        std = math.sqrt(sum((x - mean) ** 2 for x in grp) / (n - 1))
        for i, x in enumerate(grp):
            if method == "rloo":
                out.append(x - (sum(grp) - x) / (n - 1))
            elif method == "grpo":
                out.append((x - mean) / (std + 1e-6))
            else:
                out.append(x - mean)
    return out


def loop_weights(labels: list[int], n: int) -> list[float]:
    out = []
    for start in range(0, len(labels), n):
        grp = labels[start : start + n]
        pos = sum(grp)
        for y in grp:
            if pos in (0, n):
                out.append(1.0)
            else:
                out.append(n / (2 * (pos if y == 1 else n - pos)))
    return out


def psi_fn(logp, ref_logp, mask, n, beta, method):
    """ψ as a differentiable function of logp, built with plain tensor ops per group."""
    r_hat = beta * ((logp - ref_logp) * mask).sum(-1)
    rows = []
    for start in range(0, r_hat.shape[0], n):
        grp = r_hat[start : start + n]
        if method == "rloo":
            rows.append(torch.stack([grp[i] - (grp.sum() - grp[i]) / (n - 1) for i in range(n)]))
        elif method == "grpo":
            rows.append((grp - grp.mean()) / (grp.std() + 1e-6))
        else:
            rows.append(grp - grp.mean())
    return torch.cat(rows)


# ---------------------------------------------------------------- eq. 5: the gradient


@pytest.mark.parametrize("method", ["rloo", "grpo", "drgrpo"])
@pytest.mark.parametrize("soft", [False, True])
def test_gradient_matches_eq5(method, soft):
    logp, ref_logp, mask, labels = random_batch(groups=3, group_size=4, seed=1)
    if soft:
        labels = torch.rand(
            labels.shape, generator=torch.Generator().manual_seed(5), dtype=labels.dtype
        )
    n, beta = 4, 1.7
    logp = logp.clone().requires_grad_(True)
    loss, _ = ca.pacs_loss(logp, ref_logp, mask, labels, n, beta=beta, score=method)
    (grad,) = torch.autograd.grad(loss, logp)

    # Independent: mean_i w_i (σ(ψ_i) − r_i) ∇ψ_i with ∇ψ from the Jacobian of a separate ψ.
    x = logp.detach()
    psi = psi_fn(x, ref_logp, mask, n, beta, method)
    jac = torch.autograd.functional.jacobian(
        lambda lp: psi_fn(lp, ref_logp, mask, n, beta, method), x
    )
    w = torch.tensor(loop_weights([int(v >= 0.5) for v in labels.tolist()], n), dtype=x.dtype)
    coeff = w * (torch.sigmoid(psi) - labels)
    expected = torch.einsum("i,ibt->bt", coeff, jac) / labels.shape[0]
    torch.testing.assert_close(grad, expected, rtol=1e-9, atol=1e-12)


def test_reference_state_loss_is_mean_weight_ln2_and_gradient_nonzero():
    logp, _, mask, _ = random_batch(groups=2, group_size=4, seed=2)
    labels = torch.tensor([1, 0, 0, 0, 1, 1, 0, 1], dtype=logp.dtype)
    logp = logp.clone().requires_grad_(True)
    loss, stats = ca.pacs_loss(logp, logp.detach().clone(), mask, labels, 4)
    w = ca.balanced_weights(labels, 4)
    assert loss.item() == pytest.approx(w.mean().item() * LN2, rel=1e-12)
    assert stats["psi_mean"] == 0.0 and stats["sigma_mean"] == 0.5
    assert stats["psi_abs_mean"] == 0.0 and stats["psi_std"] == 0.0 and stats["sigma_std"] == 0.0
    (grad,) = torch.autograd.grad(loss, logp)
    # ψ = 0 yet the policy still moves (docs/design.md#the-reference-model)
    assert grad.abs().sum() > 0


def test_matches_official_formulation_rederived():
    """Official: β·Σ_t (logp − old_logp) WITHOUT mask → RLOO → BCEWithLogitsLoss(weight=w)."""
    logp, ref_logp, mask, labels = random_batch(groups=4, group_size=8, T=9, seed=3)
    ref_logp = torch.where(mask.bool(), ref_logp, logp)  # zero log-ratio on padding
    beta = 0.5
    r_hat = beta * (logp - ref_logp).sum(-1)  # unmasked sum, as the official code
    psi = torch.tensor(loop_scores(r_hat.tolist(), 8, "rloo"), dtype=logp.dtype)
    w = torch.tensor(loop_weights([int(v) for v in labels.tolist()], 8), dtype=logp.dtype)
    official = torch.nn.BCEWithLogitsLoss(weight=w)(psi, labels)
    ours, _ = ca.pacs_loss(logp, ref_logp, mask, labels, 8, beta=beta)
    assert ours.item() == pytest.approx(official.item(), rel=1e-12)


def test_padding_is_masked_unlike_official_code():
    """Our deliberate deviation (docs/design.md#padding-is-masked): padded log-ratios do
    not count."""
    logp, ref_logp, mask, labels = random_batch(groups=2, group_size=4, seed=4)
    noisy_ref = torch.where(mask.bool(), ref_logp, ref_logp - 5.0)
    a, _ = ca.pacs_loss(logp, ref_logp, mask, labels, 4)
    b, _ = ca.pacs_loss(logp, noisy_ref, mask, labels, 4)
    assert a.item() == b.item()


# ---------------------------------------------------------------- weights


def test_hand_computed_weights():
    w = ca.balanced_weights(torch.tensor([1, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0]), 4)
    torch.testing.assert_close(w, torch.tensor([2, 2 / 3, 2 / 3, 2 / 3, 1, 1, 1, 1, 1, 1, 1, 1.0]))


def test_mixed_group_fraction_counts_the_groups_with_both_labels():
    hard = torch.tensor([1.0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0])
    assert ca.mixed_group_fraction(hard, 4) == pytest.approx(1 / 3)
    assert ca.mixed_group_fraction(hard, 2) == pytest.approx(1 / 6)  # only (1, 0) is mixed
    # soft labels count as balanced_weights counts them: binarised at 0.5
    soft = torch.tensor([0.3, 0.7, 0.2, 0.1, 0.9, 0.6, 0.8, 0.7, 0.4, 0.1, 0.2, 0.3])
    assert ca.mixed_group_fraction(soft, 4) == pytest.approx(1 / 3)
    weighted = ca.balanced_weights(soft, 4).reshape(3, 4)
    assert (weighted != 1).any(dim=1).float().mean().item() == pytest.approx(1 / 3)
    with pytest.raises(ValueError):
        ca.mixed_group_fraction(hard, 5)


@pytest.mark.parametrize("seed", range(5))
def test_weights_equal_sklearn_per_group(seed):
    rng = np.random.default_rng(seed)
    n, groups = 8, 20
    labels = rng.integers(0, 2, size=n * groups)
    labels[:n] = 1  # one all-correct group
    labels[n : 2 * n] = 0  # one all-wrong group
    ours = ca.balanced_weights(torch.tensor(labels), n).numpy()
    for g in range(groups):
        y = labels[g * n : (g + 1) * n]
        classes = np.unique(y)
        cw = compute_class_weight("balanced", classes=classes, y=y)
        expected = np.array([cw[np.searchsorted(classes, v)] for v in y])
        np.testing.assert_allclose(ours[g * n : (g + 1) * n], expected, rtol=1e-6)


def test_use_weight_false_and_explicit_weights():
    logp, ref_logp, mask, labels = random_batch(seed=6)
    unweighted, stats = ca.pacs_loss(logp, ref_logp, mask, labels, 4, use_weight=False)
    ones, _ = ca.pacs_loss(
        logp, ref_logp, mask, labels, 4, weights=torch.ones(12, dtype=logp.dtype)
    )
    assert stats["weight_mean"] == 1.0
    assert unweighted.item() == pytest.approx(ones.item(), rel=1e-12)
    total, _ = ca.pacs_loss(logp, ref_logp, mask, labels, 4, reduction="sum")
    mean, _ = ca.pacs_loss(logp, ref_logp, mask, labels, 4)
    assert total.item() == pytest.approx(mean.item() * 12, rel=1e-12)


def test_stats_hand_computed():
    # One group of 2: r̂ = [1, -1] → ψ_rloo = [2, -2]; labels [1, 0] → both classified right.
    logp = torch.tensor([[1.0, 0.0], [-1.0, 0.0]])
    _, stats = ca.pacs_loss(logp, torch.zeros(2, 2), torch.ones(2, 2), torch.tensor([1.0, 0.0]), 2)
    assert stats["psi_mean"] == pytest.approx(0.0)
    assert stats["psi_abs_mean"] == pytest.approx(2.0)
    assert stats["psi_std"] == pytest.approx(2.0)  # population std of [2, -2]
    s = torch.sigmoid(torch.tensor(2.0)).item()
    assert stats["sigma_std"] == pytest.approx(s - 0.5)  # σ(±2) = 0.5 ± (s − 0.5)
    assert stats["score_acc"] == 1.0
    assert stats["weight_mean"] == 1.0


# ---------------------------------------------------------------- scores and advantages


@pytest.mark.parametrize("method", ["rloo", "grpo", "drgrpo"])
def test_group_scores_hand_loops(method):
    x = torch.tensor([0.3, -1.2, 2.5, 0.0, 4.0, 4.0, 1.0, -3.0], dtype=torch.float64)
    expected = torch.tensor(loop_scores(x.tolist(), 4, method), dtype=torch.float64)
    torch.testing.assert_close(ca.group_scores(x, 4, method), expected)


def test_rloo_hand_value():
    # group [1, 0, 0, 0]: ψ_0 = 1 − 0 = 1; ψ_1 = 0 − 1/3.
    torch.testing.assert_close(
        ca.group_scores(torch.tensor([1.0, 0, 0, 0]), 4, "rloo"),
        torch.tensor([1.0, -1 / 3, -1 / 3, -1 / 3]),
    )


def test_grpo_and_drgrpo_outcome_advantage():
    r = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    std = math.sqrt(1 / 3)  # unbiased std of [1, 0, 0, 1]
    torch.testing.assert_close(
        ca.grpo_outcome_advantage(r[:4], 4), torch.tensor([0.5, -0.5, -0.5, 0.5]) / (std + 1e-6)
    )
    torch.testing.assert_close(
        ca.grpo_outcome_advantage(r, 3, norm_by_std=False),
        torch.tensor([2 / 3, -1 / 3, -1 / 3, 0, 0, 0]),
    )


# ---------------------------------------------------------------- aggregation, PPO, GAE


def test_agg_modes_hand_computed():
    loss = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    assert ca.agg_loss(loss, mask, "token-mean").item() == pytest.approx(10 / 4)
    assert ca.agg_loss(loss, mask, "seq-mean-token-sum").item() == pytest.approx((6 + 4) / 2)
    assert ca.agg_loss(loss, mask, "seq-mean-token-mean").item() == pytest.approx((2 + 4) / 2)
    assert ca.agg_loss(loss, mask, "seq-mean-token-sum-norm").item() == pytest.approx(5 / 3)
    assert ca.agg_loss(loss, mask, "seq-mean-token-sum-norm", horizon=10).item() == pytest.approx(
        0.5
    )


def test_ppo_policy_loss_hand_computed():
    logp = torch.log(torch.tensor([[1.5, 0.5]]))  # ratios 1.5 and 0.5 against old_logp = 0
    old = torch.zeros(1, 2)
    mask = torch.ones(1, 2)
    # A = +1: tokens give max(−1.5, −1.2) = −1.2 and max(−0.5, −0.8) = −0.5 → mean −0.85.
    loss, stats = ca.ppo_policy_loss(logp, old, torch.ones(1, 2), mask, clip_ratio=0.2)
    assert loss.item() == pytest.approx(-0.85)
    assert stats["clipfrac"] == pytest.approx(0.5)
    # A = −1 with ratio 5: unclipped 5, clipped 1.2 → 5; dual-clip with c = 3 caps it at 3.
    big = torch.log(torch.tensor([[5.0]]))
    plain, free = ca.ppo_policy_loss(big, torch.zeros(1, 1), -torch.ones(1, 1), torch.ones(1, 1))
    dual, capped = ca.ppo_policy_loss(
        big, torch.zeros(1, 1), -torch.ones(1, 1), torch.ones(1, 1), clip_ratio_c=3.0
    )
    assert plain.item() == pytest.approx(5.0) and dual.item() == pytest.approx(3.0)
    assert (free["clipfrac_lower"], capped["clipfrac_lower"]) == (0.0, 1.0)
    # Dr. GRPO's horizon: two sequences' token sums (−1.7 and −0.5) averaged, over a budget of 10.
    two = torch.log(torch.tensor([[1.5, 0.5], [0.5, 1.0]]))
    mask2 = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    normed, _ = ca.ppo_policy_loss(
        two,
        torch.zeros(2, 2),
        torch.ones(2, 2),
        mask2,
        loss_agg_mode="seq-mean-token-sum-norm",
        horizon=10,
    )
    assert normed.item() == pytest.approx((-1.7 - 0.5) / 2 / 10)


def gae_reference(rewards, values, mask, gamma, lam):
    """Textbook GAE on each sequence's valid tokens only, in plain Python."""
    B, T = rewards.shape
    adv = torch.zeros(B, T, dtype=torch.float64)
    for b in range(B):
        idx = [t for t in range(T) if mask[b, t] > 0]
        last, next_v = 0.0, 0.0
        for t in reversed(idx):
            delta = rewards[b, t].item() + gamma * next_v - values[b, t].item()
            last = delta + gamma * lam * last
            adv[b, t] = last
            next_v = values[b, t].item()
    return adv


@pytest.mark.parametrize("gamma,lam", [(1.0, 1.0), (0.99, 0.95), (0.9, 0.0)])
def test_gae_equals_reference_loop(gamma, lam):
    g = torch.Generator().manual_seed(7)
    B, T = 5, 8
    rewards = torch.randn(B, T, generator=g, dtype=torch.float64)
    values = torch.randn(B, T, generator=g, dtype=torch.float64)
    mask = (torch.rand(B, T, generator=g) > 0.25).double()  # holes inside, as with tool tokens
    adv, ret = ca.compute_gae(rewards, values, mask, gamma, lam)
    expected = gae_reference(rewards, values, mask, gamma, lam)
    torch.testing.assert_close(adv * mask, expected)
    torch.testing.assert_close(ret * mask, (expected + values) * mask)


def test_value_loss_clipping_hand_computed():
    v = torch.tensor([[2.0]])
    old = torch.tensor([[0.0]])
    ret = torch.tensor([[0.0]])
    # unclipped err 4, clipped (0.5)^2 = 0.25 → max is 4, loss = 2
    loss, stats = ca.value_loss(v, old, ret, torch.ones(1, 1), clip_range=0.5)
    assert loss.item() == pytest.approx(2.0) and stats["vf_clipfrac"] == 0.0
    ret = torch.tensor([[3.0]])  # unclipped err 1, clipped (0.5−3)^2 = 6.25 → 3.125
    loss, stats = ca.value_loss(v, old, ret, torch.ones(1, 1), clip_range=0.5)
    assert loss.item() == pytest.approx(3.125) and stats["vf_clipfrac"] == 1.0


def test_entropy_uniform_and_peaked():
    uniform = torch.zeros(2, 3, 10)
    torch.testing.assert_close(ca.entropy_from_logits(uniform), torch.full((2, 3), math.log(10)))
    peaked = torch.tensor([[[1e4, 0.0, 0.0]]])
    assert ca.entropy_from_logits(peaked).item() == pytest.approx(0.0, abs=1e-6)


# ---------------------------------------------------------------- stability and dtypes


def test_extreme_log_ratios_stay_finite():
    logp, ref_logp, mask, labels = random_batch(groups=2, group_size=4, seed=8, dtype=torch.float32)
    sign = torch.where(torch.arange(8) % 2 == 0, 1.0, -1.0)[:, None]
    logp = (ref_logp + sign * 1e4).requires_grad_(True)
    for method in ("rloo", "grpo", "drgrpo"):
        loss, _ = ca.pacs_loss(logp, ref_logp, mask, labels, 4, score=method)
        (grad,) = torch.autograd.grad(loss, logp)
        assert torch.isfinite(loss) and torch.isfinite(grad).all()


def test_bf16_inputs_work_and_match_fp32():
    logp, ref_logp, mask, labels = random_batch(groups=2, group_size=4, seed=9, dtype=torch.float32)
    lp16 = logp.bfloat16().requires_grad_(True)
    loss16, _ = ca.pacs_loss(lp16, ref_logp.bfloat16(), mask.bfloat16(), labels.bfloat16(), 4)
    loss32, _ = ca.pacs_loss(lp16.detach().float(), ref_logp.bfloat16().float(), mask, labels, 4)
    (grad,) = torch.autograd.grad(loss16, lp16)
    assert grad.dtype == torch.bfloat16 and torch.isfinite(grad.float()).all()
    assert loss16.item() == pytest.approx(loss32.item(), rel=1e-6)


# ---------------------------------------------------------------- validation


def test_validation_errors():
    logp, ref_logp, mask, labels = random_batch(groups=2, group_size=4)
    with pytest.raises(ValueError, match="whole number of groups"):
        ca.pacs_loss(logp, ref_logp, mask, labels, 3)
    with pytest.raises(ValueError, match="group_size >= 2"):
        ca.pacs_loss(logp, ref_logp, mask, labels, 1)
    with pytest.raises(ValueError, match="shape mismatch"):
        ca.pacs_loss(logp, ref_logp[:, :-1], mask, labels, 4)
    with pytest.raises(ValueError, match="shape mismatch"):
        ca.pacs_loss(logp, ref_logp, mask, labels[:-1], 4)
    bad = logp.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match="logp contains NaN"):
        ca.pacs_loss(bad, ref_logp, mask, labels, 4)
    with pytest.raises(ValueError, match="labels contains NaN"):
        ca.pacs_loss(logp, ref_logp, mask, torch.full_like(labels, float("nan")), 4)
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 1\]"):
        ca.pacs_loss(logp, ref_logp, mask, labels * 2, 4)
    with pytest.raises(ValueError, match="unknown score"):
        ca.group_scores(labels, 4, "ppo")
    with pytest.raises(ValueError, match="unknown loss_agg_mode"):
        ca.agg_loss(logp, mask, "token-sum-ish")
