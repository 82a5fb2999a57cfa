"""The DAPO and REAL math of pacs.core_algos: hand-computed cases and an independent
re-derivation of REAL (plain Python floats, per group, as the formula reads)."""

from __future__ import annotations

import math
import random

import pytest
import torch

from pacs import core_algos as ca

# ------------------------------------------------------------------ REAL


def test_real_loss_hand_computed():
    """Two groups of 2: scores s = mean log-ratio / τ; group 1 mixed, group 2 all-correct."""
    logp = torch.tensor([[0.2, 0.4], [0.0, -0.6], [0.1, 0.0], [0.3, 0.3]])
    mask = torch.tensor([[1.0, 1.0], [1.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    labels = torch.tensor([1.0, 0.0, 1.0, 1.0])
    loss, stats = ca.real_loss(logp, torch.zeros(4, 2), mask, labels, 2, tau=0.5)
    # s = 0.6 (correct), −0.6 (wrong): log(1 + e^{−0.6}) + log(1 + e^{−0.6}) = 0.874976...,
    # over 2 groups (the homogeneous one counts, with loss 0): 0.437488...
    assert loss.item() == pytest.approx(math.log1p(math.exp(-0.6)), abs=1e-6)
    assert loss.item() == pytest.approx(0.4374879, abs=1e-6)
    assert stats["mixed_frac"] == 0.5
    # the masked position of row 3 does not enter its score: 0.1 / 1 / 0.5 = 0.2
    assert ca.length_normalised_log_ratio(logp, torch.zeros(4, 2), mask)[2].item() == (
        pytest.approx(0.1)
    )


def test_real_loss_at_the_reference_and_for_homogeneous_groups():
    """At s ≡ 0 a mixed group of p correct and q wrong costs log(1 + q) + log(1 + p)."""
    labels = torch.tensor([1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    zeros = torch.zeros(8, 3)
    loss, _ = ca.real_loss(zeros, zeros, torch.ones(8, 3), labels, 4)
    assert loss.item() == pytest.approx((math.log(2) + math.log(4)) / 2)  # group 2 all-wrong
    none, stats = ca.real_loss(zeros, zeros, torch.ones(8, 3), torch.zeros(8), 4)
    assert none.item() == 0.0 and stats["mixed_frac"] == 0.0
    summed, _ = ca.real_loss(zeros, zeros, torch.ones(8, 3), labels, 4, reduction="sum")
    assert summed.item() == pytest.approx(math.log(2) + math.log(4))


def rederived_real(logp, ref, mask, labels, n, tau):
    """REAL from the formula, one group at a time, in Python floats."""
    total, groups = 0.0, len(labels) // n
    for g in range(groups):
        rows = range(g * n, (g + 1) * n)
        s = {}
        for i in rows:
            toks = [j for j in range(len(mask[i])) if mask[i][j] > 0]
            s[i] = sum(logp[i][j] - ref[i][j] for j in toks) / max(len(toks), 1) / tau
        pos = [i for i in rows if labels[i] == 1]
        neg = [i for i in rows if labels[i] == 0]
        if pos and neg:
            total += math.log(1 + sum(math.exp(s[i]) for i in neg))
            total += math.log(1 + sum(math.exp(-s[i]) for i in pos))
    return total / groups


@pytest.mark.parametrize("seed", range(5))
def test_real_loss_matches_an_independent_rederivation(seed):
    rng = random.Random(seed)
    n, groups, t = 4, 3, 5
    b = n * groups
    logp = [[rng.uniform(-2, 0) for _ in range(t)] for _ in range(b)]
    ref = [[rng.uniform(-2, 0) for _ in range(t)] for _ in range(b)]
    mask = [[1.0] * rng.randint(1, t) for _ in range(b)]
    mask = [m + [0.0] * (t - len(m)) for m in mask]
    labels = [float(rng.random() < 0.5) for _ in range(b)]
    tau = rng.choice([0.25, 0.5, 1.0])
    loss, _ = ca.real_loss(
        torch.tensor(logp, dtype=torch.float64),
        torch.tensor(ref, dtype=torch.float64),
        torch.tensor(mask),
        torch.tensor(labels),
        n,
        tau=tau,
    )
    assert loss.item() == pytest.approx(rederived_real(logp, ref, mask, labels, n, tau), rel=1e-12)


def test_real_gradient_is_bounded_by_one_over_tau():
    """∂L_g/∂s_j = e^{s_j}/(1 + Σ_N e^{s}) (wrong) or −e^{−s_i}/(1 + Σ_P e^{−s}) (correct), each
    in (−1, 1), so ∂L_g/∂(mean log-ratio) is bounded by 1/τ (the paper's claim)."""
    mean_ratio = torch.tensor([3.0, -1.0, 0.5, 2.0], requires_grad=True)
    logp = mean_ratio[:, None].expand(4, 2)  # a constant row: its mean log-ratio is the entry
    labels = torch.tensor([1.0, 1.0, 0.0, 0.0])
    tau = 0.5
    loss, _ = ca.real_loss(logp, torch.zeros(4, 2), torch.ones(4, 2), labels, 4, tau=tau)
    loss.backward()
    s = mean_ratio.detach() / tau
    neg = torch.exp(s[2:]) / (1 + torch.exp(s[2:]).sum())
    pos = -torch.exp(-s[:2]) / (1 + torch.exp(-s[:2]).sum())
    assert torch.allclose(mean_ratio.grad, torch.cat([pos, neg]) / tau)
    assert (mean_ratio.grad.abs() < 1 / tau).all()


def test_real_loss_refuses_bad_input():
    z = torch.zeros(4, 2)
    with pytest.raises(ValueError, match="tau must be > 0"):
        ca.real_loss(z, z, torch.ones(4, 2), torch.ones(4), 2, tau=0.0)
    with pytest.raises(ValueError, match="not a whole number of groups of 3"):
        ca.real_loss(z, z, torch.ones(4, 2), torch.ones(4), 3)
    with pytest.raises(ValueError, match="labels has 3 rows"):
        ca.real_loss(z, z, torch.ones(4, 2), torch.ones(3), 2)


# ------------------------------------------------------------------ DAPO


def test_clip_higher_is_asymmetric():
    """A = +1, ρ = 1.5: clipped at 1 + ε_high; A = −1, ρ = 0.5: clipped at 1 − ε_low."""
    logp = torch.log(torch.tensor([[1.5, 0.5]]))
    old, adv, mask = torch.zeros(1, 2), torch.tensor([[1.0, -1.0]]), torch.ones(1, 2)
    loss, stats = ca.ppo_policy_loss(logp, old, adv, mask, clip_ratio_low=0.2, clip_ratio_high=0.28)
    assert loss.item() == pytest.approx((-1.28 + 0.8) / 2)
    assert stats["clipfrac"] == 1.0
    sym, _ = ca.ppo_policy_loss(logp, old, adv, mask, clip_ratio=0.2)
    assert sym.item() == pytest.approx((-1.2 + 0.8) / 2)


def test_overlong_penalty_hand_computed():
    """L = 10, buffer 4: none up to 6 tokens, linear to −factor at 10, −factor beyond."""
    lengths = torch.tensor([3, 6, 7, 8, 10, 12])
    got = ca.overlong_penalty(lengths, max_len=10, buffer_len=4, factor=1.0)
    assert got.tolist() == pytest.approx([0.0, 0.0, -0.25, -0.5, -1.0, -1.0])
    assert ca.overlong_penalty(lengths, 10, 4, factor=0.5)[3].item() == pytest.approx(-0.25)
    with pytest.raises(ValueError, match="buffer_len"):
        ca.overlong_penalty(lengths, 10, 11)


def test_mixed_groups_marks_groups_with_both_labels():
    labels = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.4, 0.6])
    assert ca.mixed_groups(labels, 2).tolist() == [True, False, False, True]
