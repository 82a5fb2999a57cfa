"""Per-update PACS metrics (``actor/pacs_psi_abs_mean/mb<i>``, ``actor/grad_norm/mb<i>``).

verl 0.9.1 averages every metric of a step over its updates. The plugin's worker splits the
per-update lists verl builds before that average (pacs.verl_plugin.worker.per_update_metrics).
Here the pacs loss's stats of two hand-made mini-batches go through verl's own aggregation
functions, in the order its engine and ``TrainingWorker`` apply them, then through the split and
verl's trainer-side ``rename_dict`` + ``reduce_metrics``; the values are computed by hand.
"""

from __future__ import annotations

import math

import pytest
import torch
import verl  # noqa: F401  (loads the plugin first: the plugin's modules import one another)
from tensordict import TensorDict

from pacs.verl_plugin.advantage import signed_class_weights
from pacs.verl_plugin.loss import PACSPolicyLossConfig, compute_policy_loss_pacs
from pacs.verl_plugin.worker import (
    PACSActorRolloutRefWorker,
    per_update_metrics,
    planned_updates,
    with_clip_bound,
)

N = 2  # responses per group


def _config():
    from verl.workers.config import FSDPActorConfig

    return FSDPActorConfig(
        strategy="fsdp2",
        rollout_n=N,
        ppo_micro_batch_size_per_gpu=1,
        policy_loss=PACSPolicyLossConfig(loss_mode="pacs", beta=1.0, score="rloo"),
    )


def _micro_batch(log_ratio_sums: list[float], labels: list[float]) -> dict[str, float]:
    """The pacs loss's metrics on one micro-batch whose responses' Σ_t log(π/π_ref) over their
    valid tokens are ``log_ratio_sums`` (β = 1). Each response has 2 valid tokens carrying the
    sum as 1/3 and 2/3 of it and a third, masked token with a large ratio that must not count."""
    sums = torch.tensor(log_ratio_sums)
    ratio = torch.stack([sums / 3, 2 * sums / 3, torch.full_like(sums, 9.0)], dim=1)
    mask = torch.tensor([[1, 1, 0]] * len(log_ratio_sums))
    log_prob = -torch.rand(len(log_ratio_sums), 3, generator=torch.Generator().manual_seed(0))
    rewards = torch.tensor(labels)
    uids = [f"g{i // N}" for i in range(len(labels))]
    advantages = signed_class_weights(rewards, uids).unsqueeze(-1) * mask
    _, metrics = compute_policy_loss_pacs(
        log_prob - ratio, log_prob, advantages, mask, config=_config()
    )
    return metrics


def _verl_update_metrics(micro_metrics: list[dict], grad_norm: float) -> dict:
    """One update's metrics as ``TrainingWorker.train_batch`` returns them (dp = 1): verl's
    ``ppo_loss`` wraps each stat in a mean ``Metric``, the engine's ``postprocess_batch_func``
    appends the micro-batches', ``train_batch`` adds the pre-clip norm, ``_postprocess_output``
    all-gathers over dp (one rank: a list of one) and ``train_mini_batch`` reduces over dp."""
    from verl.utils.metric import AggregationType, Metric
    from verl.utils.py_functional import append_to_dict

    engine: dict = {}
    for metrics in micro_metrics:
        append_to_dict(engine, Metric.from_dict(metrics, aggregation=AggregationType.MEAN))
    gathered = {key: [metric] for key, metric in engine.items()}
    update = {key: Metric.aggregate_dp(metrics) for key, metrics in gathered.items()}
    update["grad_norm"] = grad_norm
    return update


def _verl_step(updates: list[dict]) -> dict:
    """What ``train_mini_batch`` returns: each key's values of the step's updates, in order."""
    from verl.utils.py_functional import append_to_dict

    step: dict = {}
    for update in updates:
        append_to_dict(step, update)
    return step


def _logged(step_metrics: dict) -> dict:
    """The driver side: verl's v1 trainer ``_update_actor`` (rename_dict, reduce_metrics)."""
    from verl.utils.metric import reduce_metrics
    from verl.utils.py_functional import rename_dict

    return reduce_metrics(rename_dict(step_metrics, "actor/"))


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _two_updates() -> dict:
    # update 0 (the step's first: policy = rollout policy = reference): every log-ratio is 0.
    first = [_micro_batch([0.0, 0.0], [1.0, 0.0]), _micro_batch([0.0, 0.0], [0.0, 0.0])]
    # update 1: RLOO with n = 2 gives ψ = (s1 − s2, s2 − s1): (0.4, −0.4) and (−0.2, 0.2).
    second = [_micro_batch([0.3, -0.1], [1.0, 0.0]), _micro_batch([0.0, 0.2], [1.0, 1.0])]
    return _verl_step([_verl_update_metrics(first, 1.5), _verl_update_metrics(second, 2.5)])


def test_psi_stats_and_grad_norm_per_update_hand_computed():
    logged = _logged(per_update_metrics(with_clip_bound(_two_updates(), 2.0), updates=2))
    for stat in ("psi_abs_mean", "psi_std", "sigma_std"):
        assert logged[f"actor/pacs_{stat}/mb0"] == 0.0
    # each update's value is verl's mean over its micro-batches: |ψ| means 0.4 and 0.2; the
    # population stds of (0.4, −0.4) and (−0.2, 0.2) are 0.4 and 0.2 (the whole update's ψ
    # would have std sqrt(0.1) = 0.316: verl averages micro-batch stats, it does not pool them)
    assert logged["actor/pacs_psi_abs_mean/mb1"] == pytest.approx(0.3, abs=1e-6)
    assert logged["actor/pacs_psi_std/mb1"] == pytest.approx(0.3, abs=1e-6)
    sigma_std = ((_sigmoid(0.4) - 0.5) + (_sigmoid(0.2) - 0.5)) / 2
    assert logged["actor/pacs_sigma_std/mb1"] == pytest.approx(sigma_std, abs=1e-6)
    assert (logged["actor/grad_norm/mb0"], logged["actor/grad_norm/mb1"]) == (1.5, 2.5)
    # verl's own step means are still there, unchanged: the mean of the two updates
    assert logged["actor/pacs_psi_abs_mean"] == pytest.approx(0.15, abs=1e-6)
    assert logged["actor/grad_norm"] == 2.0
    # clip 2.0: the first update's norm 1.5 passes, the second's 2.5 is scaled down
    assert (logged["actor/clip_bound/mb0"], logged["actor/clip_bound/mb1"]) == (0.0, 1.0)
    assert logged["actor/clip_bound"] == 0.5  # the step's share
    assert not any(key.endswith("/mb2") for key in logged)


def test_no_clip_never_binds_and_a_method_without_psi_keeps_its_step_share():
    """An infinite clip norm (PACS, as the official actor) never binds; GRPO's metrics (no PACS
    keys) get the step's share only, from verl's per-update norms."""
    unclipped = _logged(per_update_metrics(with_clip_bound(_two_updates(), math.inf), updates=2))
    assert unclipped["actor/clip_bound"] == 0.0
    grpo = {"grad_norm": [0.5, 3.0, 4.0, 0.2], "pg_loss": [0.1, 0.2, 0.3, 0.4]}
    logged = _logged(per_update_metrics(with_clip_bound(grpo, 1.0), updates=4))
    assert logged["actor/clip_bound"] == 0.5
    assert not any("/mb" in key for key in logged)


def test_a_count_that_does_not_match_the_updates_raises():
    step = _two_updates()
    with pytest.raises(ValueError, match="expected 3 values of 'actor/pacs_psi_abs_mean'"):
        per_update_metrics(step, updates=3)
    step["actor/pacs_psi_std"] = step["actor/pacs_psi_std"][:1]  # a key some update did not log
    with pytest.raises(ValueError, match="'actor/pacs_psi_std'"):
        per_update_metrics(step, updates=2)
    no_norm = {key: values for key, values in _two_updates().items() if key != "grad_norm"}
    with pytest.raises(ValueError, match="'grad_norm'"):
        per_update_metrics(no_norm, updates=2)


def test_a_value_that_is_not_one_number_raises():
    from verl.utils.metric import Metric

    unreduced = Metric("mean")  # an update's micro-batch values, not reduced to one number
    unreduced.extend([0.1, 0.2])
    step = _two_updates()
    step["actor/pacs_sigma_std"][1] = unreduced
    with pytest.raises(TypeError, match=r"actor/pacs_sigma_std\[1\] is Metric"):
        per_update_metrics(step, updates=2)


def test_other_losses_metrics_are_left_alone():
    grpo = {"actor/pg_loss": [0.1, 0.2], "grad_norm": [1.0, 2.0]}
    assert per_update_metrics(grpo, updates=5) is grpo


@pytest.mark.parametrize(
    "fields,dp_size,per_rank",
    [
        ({"mini_batch_size": 16, "epochs": 1}, 2, 8),  # the v1 trainer's fields
        ({"mini_batch_size": 8, "epochs": 2}, 2, 4),
        ({"num_mini_batch": 4}, 1, 4),
    ],
)
def test_planned_updates_counts_verls_own_iterator(fields, dp_size, per_rank):
    """planned_updates equals the number of mini-batches verl's ``tu.make_iterator`` yields
    (what ``train_mini_batch`` loops over) for this rank's shard of 16 rows."""
    from verl.utils import tensordict_utils as tu

    data = TensorDict({"x": torch.arange(16)}, batch_size=[16])
    tu.assign_non_tensor(data, **fields)
    yielded = tu.make_iterator(data, mini_batch_size=per_rank, epochs=fields.get("epochs", 1))
    assert planned_updates(data, dp_size) == len(list(yielded))


def test_update_actor_keeps_verls_dispatch():
    """The override is registered like verl's own (the driver splits the batch over dp the same
    way); the end-to-end run is the engine chain (tests/engine/test_verl_vllm_rollout.py)."""
    from verl.single_controller.base.decorator import MAGIC_ATTR
    from verl.workers.engine_workers import ActorRolloutRefWorker

    ours = getattr(PACSActorRolloutRefWorker.update_actor, MAGIC_ATTR)
    verls = getattr(ActorRolloutRefWorker.update_actor, MAGIC_ATTR)
    assert PACSActorRolloutRefWorker.update_actor is not ActorRolloutRefWorker.update_actor
    assert (ours["execute_mode"], ours["blocking"]) == (verls["execute_mode"], verls["blocking"])
    for part in ("dispatch_fn", "collect_fn"):
        mine, theirs = ours["dispatch_mode"][part], verls["dispatch_mode"][part]
        assert (mine.func, mine.args) == (theirs.func, theirs.args)
