"""The objective the paper's numbers come from, re-derived and checked against our verl launch.

The official code (ritzz-ai/PACS at bbe1dc6) trains with a vendored verl 0.3.1. Its formulas are
written out here, not imported: the clipped surrogate with the dual-clip cap, the aggregation
``seq-mean-token-sum-norm`` (the *sum* over a micro-batch's sequences over the padded length,
which its vLLM rollout pads to ``data.max_response_length``; core_algos.py 392-394), the gradient
accumulation (each micro-batch's loss / (mini-batch per GPU / micro-batch); dp_actor.py 414), the
FSDP mean over ranks, then the clip: ``clip_grad_norm_(1.0)`` for GRPO/PPO, none for PACS (the
official actor's ``_optimizer_step`` never clips) whose loss is the weighted BCE of
``compute_pacs_loss`` (a mean over each micro-batch's responses).

Ours: verl 0.9.1's policy losses with the actor config composed from the paper profile's launch
overrides, micro-batch by micro-batch on one or two emulated ranks (``global_batch_info``), then
the clip as verl's engine applies it (``clip_grad_norm_`` at ``optim.clip_grad``). The "parameters"
are the per-token log-probs, so the gradient is exact and the clip acts on its norm.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.utils.class_weight import compute_class_weight

from pacs.config import load_config, parse_profile
from pacs.verl_plugin.launch.overrides import ClusterShape, RunPaths, build_overrides

PAPER = Path(__file__).resolve().parents[2] / "configs" / "paper.yaml"
N = 8  # responses per prompt (App. C)
MINI = 4 * N  # responses of one (global) mini-batch: 4 prompts
T = 7  # the batch's longest response, far below the 8192-token budget


def _profile(**method_defaults):
    cfg = copy.deepcopy(load_config(PAPER))
    cfg["method_defaults"] = method_defaults
    return parse_profile(cfg, str(PAPER))


def _actor(profile, run: str, compose, tmp_path):
    from verl.utils.config import omega_conf_to_dataclass

    model = next(iter(profile.models))
    paths = RunPaths("/t", "/t", tmp_path)
    overrides = build_overrides(
        profile, profile.run(run), model, 0, paths, ClusterShape(1, 8), "/l"
    )
    return omega_conf_to_dataclass(compose(overrides).actor_rollout_ref.actor)


def _batch(adv_scale: float, seed: int = 0) -> dict:
    """Log-probs near their rollout values, ragged masks, labels mixed in every group."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, T + 1, (MINI,), generator=g)
    mask = (torch.arange(T)[None, :] < lengths[:, None]).float()
    old = -torch.rand(MINI, T, generator=g) * 3
    logp = (old + 0.4 * torch.randn(MINI, T, generator=g)) * mask + old * (1 - mask)
    labels = (torch.rand(MINI, generator=g) < 0.5).float()
    labels[::N], labels[1::N] = 1.0, 0.0  # every group holds both labels
    adv = adv_scale * torch.randn(MINI, 1, generator=g) * mask
    return {"logp": logp, "old": old, "mask": mask, "labels": labels, "adv": adv}


# ------------------------------------------------------------- verl 0.3.1, written out


def official_surrogate(logp, old, adv, eps=0.2, c=3.0):
    """verl 0.3.1 ``compute_policy_loss``: PPO-clip with the dual-clip cap for A < 0."""
    ratio = torch.exp(torch.clamp(logp - old, -20.0, 20.0))
    clipped = torch.maximum(-adv * ratio, -adv * torch.clamp(ratio, 1 - eps, 1 + eps))
    return torch.where(adv < 0, torch.minimum(-adv * c, clipped), clipped)


def official_sum_norm(loss_mat, mask, padded_length):
    """verl 0.3.1 ``agg_loss('seq-mean-token-sum-norm')``: Σ_i Σ_t / loss_mask.shape[-1]."""
    return (loss_mat * mask).sum(-1).sum() / padded_length


def official_pacs(logp, old, labels, n=N, beta=1.0):
    """``compute_pacs_loss`` (reward_method 1, rloo, weight_mode question) on whole groups."""
    reward = beta * (logp - old).sum(-1, keepdim=True)
    grouped = reward.reshape(-1, n, 1)
    loo_mean = (grouped.sum(1, keepdim=True) - grouped) / (n - 1)
    advantage = (grouped - loo_mean).reshape(-1, 1)
    weight = torch.ones(len(labels))
    for i in range(0, len(labels), n):
        chunk = labels[i : i + n].tolist()
        classes = np.unique(chunk)
        w = dict(zip(classes, compute_class_weight("balanced", classes=classes, y=chunk)))
        weight[i : i + n] = torch.tensor([w[y] for y in chunk], dtype=torch.float32)
    bce = torch.nn.BCEWithLogitsLoss(weight=weight.reshape(-1, 1))
    return bce(advantage, labels.reshape(-1, 1))


def official_gradient(method: str, b: dict, dp: int, clip: float | None) -> torch.Tensor:
    """Micro-batches of 8 responses per rank, each loss / the accumulation, ranks averaged."""
    leaf = b["logp"].clone().requires_grad_(True)
    per_rank, micro = MINI // dp, 8
    accumulation = per_rank // micro
    grads = []
    for rank in range(dp):
        leaf.grad = None
        for start in range(rank * per_rank, (rank + 1) * per_rank, micro):
            s = slice(start, start + micro)
            if method == "pacs":
                loss = official_pacs(leaf[s], b["old"][s], b["labels"][s])
            else:
                token = official_surrogate(leaf[s], b["old"][s], b["adv"][s])
                loss = official_sum_norm(token, b["mask"][s], padded_length=8192)
            (loss / accumulation).backward()
        grads.append(leaf.grad.clone())
    g = torch.stack(grads).sum(0) / dp  # FSDP: the mean of the ranks' gradients
    if clip is not None:  # torch's clip_grad_norm_: g * min(1, clip / (‖g‖ + 1e-6))
        g = g * min(1.0, clip / (float(g.norm()) + 1e-6))
    return g


# ------------------------------------------------------------- ours: verl 0.9.1, our overrides


def our_gradient(actor, method: str, b: dict, dp: int) -> tuple[torch.Tensor, float]:
    """(clipped gradient, pre-clip norm) through verl 0.9.1's loss with our actor config."""
    from verl.trainer.ppo.core_algos import get_policy_loss_fn

    from pacs.verl_plugin.advantage import signed_class_weights

    adv = b["adv"].expand(-1, T) * b["mask"]
    if method == "pacs":
        uids = [f"u{i // N}" for i in range(MINI)]
        adv = signed_class_weights(b["labels"], uids).unsqueeze(-1) * b["mask"]
    micro = actor.ppo_micro_batch_size_per_gpu * (N if method == "pacs" else 1)  # label_sync
    actor.global_batch_info.update(
        dp_size=dp,
        batch_num_tokens=int(b["mask"].sum()),
        global_batch_size=MINI,
        loss_scale_factor=actor.loss_scale_factor,
    )
    leaf, per_rank, grads = b["logp"].clone().requires_grad_(True), MINI // dp, []
    for rank in range(dp):
        leaf.grad = None
        for start in range(rank * per_rank, (rank + 1) * per_rank, micro):
            s = slice(start, start + micro)
            loss, _ = get_policy_loss_fn(actor.policy_loss.loss_mode)(
                old_log_prob=b["old"][s],
                log_prob=leaf[s],
                advantages=adv[s],
                response_mask=b["mask"][s].bool(),
                loss_agg_mode=actor.loss_agg_mode,
                config=actor,
            )
            loss.backward()
        grads.append(leaf.grad.clone())
    param = torch.nn.Parameter(b["logp"].clone())
    param.grad = torch.stack(grads).sum(0) / dp
    norm = torch.nn.utils.clip_grad_norm_([param], max_norm=actor.optim.clip_grad)
    return param.grad, float(norm)


@pytest.mark.parametrize("dp", [1, 2])
@pytest.mark.parametrize("method,clip", [("pacs", None), ("grpo", 1.0), ("ppo", 1.0)])
@pytest.mark.parametrize("adv_scale", [0.05, 5000.0])
def test_our_launch_follows_the_official_gradient(method, clip, adv_scale, dp, compose, tmp_path):
    """Same gradient as the official code's on one seeded mini-batch, small and large enough for
    GRPO/PPO's clip to bind; PACS's gradient is never scaled down."""
    import pacs.verl_plugin.loss  # noqa: F401  (registers the pacs loss with verl)

    b = _batch(adv_scale, seed=dp)
    actor = _actor(_profile(), method, compose, tmp_path)
    ours, norm = our_gradient(actor, method, b, dp)
    theirs = official_gradient(method, b, dp, clip)
    if method == "pacs":
        assert actor.optim.clip_grad == float("inf")  # clip_grad_norm_ then multiplies by 1
        # Our one deliberate deviation (docs/design.md#padding-is-masked): the official
        # Σ log(π/π_ref) also runs over padding, so its gradient reaches padded positions; ours
        # masks them.
        assert not ours[b["mask"] == 0].any() and theirs[b["mask"] == 0].any()
        theirs = theirs * b["mask"]
    torch.testing.assert_close(ours, theirs, rtol=2e-5, atol=1e-8)
    if method == "pacs":  # unclipped: the pre-clip gradient itself, whatever its norm
        assert float(ours.norm()) == pytest.approx(norm, rel=1e-6)
    elif adv_scale > 1:
        assert norm > 1.0 and float(ours.norm()) == pytest.approx(1.0, rel=1e-5)  # clip bound


def test_verl_0_9_1s_own_scale_is_the_official_over_the_micro_batch(compose, tmp_path):
    """The factor, pinned: ``loss_scale: sequence_mean`` (verl 0.9.1's mean over sequences)
    gives 1/8 of the official pre-clip gradient at App. C's micro-batch of 8; the default
    (``micro_batch_sum``) gives it whole."""
    b = _batch(0.05)
    official = official_gradient("grpo", b, 1, clip=None)
    default = _actor(_profile(), "grpo", compose, tmp_path)
    verl_mean = _actor(_profile(grpo={"loss_scale": "sequence_mean"}), "grpo", compose, tmp_path)
    assert (default.loss_scale_factor, verl_mean.loss_scale_factor) == (1024, 8192)
    _, norm_default = our_gradient(default, "grpo", b, 1)
    _, norm_mean = our_gradient(verl_mean, "grpo", b, 1)
    assert norm_default == pytest.approx(float(official.norm()), rel=1e-5)
    assert norm_mean * 8 == pytest.approx(norm_default, rel=1e-5)
