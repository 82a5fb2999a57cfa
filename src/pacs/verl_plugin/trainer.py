"""The ``label_sync`` trainer: verl's synchronous v1 trainer, with groups kept whole.

Select it with ``trainer.v1.trainer_mode=label_sync`` (``TaskRunnerV1`` looks the mode up in
verl's trainer registry). Differences from ``PPOTrainerSync`` (docs/design.md#the-verl-plugin):

0. a failed rollout costs only what failed: every failed prompt group short of n trajectories
   is evicted and regenerated from a fresh prompt before the batch is sampled
   (``GroupRefillReplayBuffer``; verl itself refills only groups with no trajectory at all), so
   a step keeps all ``data.train_batch_size`` groups and its 4 updates; regenerated groups are
   counted in ``pacs/groups/refilled``, and the step fails when more than
   (1 − ``algorithm.label_loss.min_group_fraction``) of a step's groups needed regenerating;
1. ``_balance_batch`` balances whole prompt groups (sorted by uid) over the dp ranks instead of
   single responses; should a short group or verl's padding rows still arrive, they are dropped
   (counted in ``pacs/groups/*``, groups without any row included), then surplus whole groups so
   the rest fills whole mini-batches;
2. ``_update_actor`` sends ``force_group_size = rollout.n`` so the engine's micro-batching keeps
   groups whole (verl then counts ``ppo_micro_batch_size_per_gpu`` in groups);
3. with ``algorithm.label_loss.ref = periodic | fixed`` it builds a reference model, writes its
   log-probs into ``old_log_probs`` (the loss's reference), and for ``periodic`` resets it to the
   actor every K steps through ``PACSActorRolloutRefWorker.reset_reference``.

Everything else (rollout, rewards, checkpoints, resume, logging) is verl's own code.
"""

from __future__ import annotations

import logging
import math
import os
from typing import Any

import ray
import torch
import transfer_queue as tq
from omegaconf import open_dict
from verl.trainer.ppo.utils import Role
from verl.trainer.ppo.v1 import PPOTrainerSync, register_trainer
from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer

from pacs.verl_plugin.advantage import ADV_ESTIMATOR_NAME
from pacs.verl_plugin.balance import (
    DEFAULT_MIN_GROUP_FRACTION,
    balance_stats,
    group_balanced_order,
    select_complete_groups,
    short_failed_groups,
)
from pacs.verl_plugin.launch.devices import PLUGIN_SYNC_MODE
from pacs.verl_plugin.loss import LABEL_LOSSES, LOSS_NAME, REAL_LOSS_NAME
from pacs.verl_plugin.reference import schedule_from_algorithm_config
from pacs.verl_plugin.worker import PACSActorRolloutRefWorker

logger = logging.getLogger(__name__)

TRAINER_MODE = "label_sync"
# Tests: every step's rollout (tokens, the rollout engine's own log-probs, the actor's) is saved
# to <dir>/step<k>.pt, to check that weight sync reaches the rollout engine (tests/engine).
ROLLOUT_DUMP_ENV = "PACS_ROLLOUT_DUMP_DIR"
ROLLOUT_DUMP_FIELDS = (
    "prompts",
    "responses",
    "response_mask",
    "rollout_log_probs",
    "old_log_probs",
)


def dump_rollout(batch, step: int, dump_dir: str) -> None:
    """Save the step's rollout fields (each a list of per-response 1-D tensors) after the actor
    has recomputed ``old_log_probs``; needs ``rollout.calculate_log_probs`` for the engine's own."""
    data = tq.kv_batch_get(
        keys=batch.keys, partition_id=batch.partition_id, select_fields=list(ROLLOUT_DUMP_FIELDS)
    )
    record = {
        name: [row.detach().cpu() for row in data[name].unbind(0)] for name in ROLLOUT_DUMP_FIELDS
    }
    os.makedirs(dump_dir, exist_ok=True)
    torch.save(record, os.path.join(dump_dir, f"step{step}.pt"))


def check_batch_geometry(
    train_batch_size: int,
    mini_batch_size: int,
    micro_batch_groups: int | None,
    dp_size: int,
    use_dynamic_bsz: bool,
    shuffle: bool,
) -> None:
    """Raise unless every dp rank's mini-batches and micro-batches hold whole groups.

    Sizes in prompts (= groups): verl multiplies ppo_mini_batch_size by rollout.n, splits each
    rank's contiguous shard into mini-batches of mini_batch_size·n/dp_size responses, and (with
    force_group_size = n) micro-batches of ppo_micro_batch_size_per_gpu groups.
    """
    problems = []
    if train_batch_size % mini_batch_size:
        problems.append(
            f"data.train_batch_size={train_batch_size} % "
            f"actor.ppo_mini_batch_size={mini_batch_size} != 0"
        )
    if mini_batch_size % dp_size:
        problems.append(
            f"actor.ppo_mini_batch_size={mini_batch_size} % dp_size={dp_size} != 0 (a rank would "
            "split a group)"
        )
    elif not use_dynamic_bsz:
        if not micro_batch_groups:
            problems.append(
                "actor.ppo_micro_batch_size_per_gpu must be set (in groups under label_sync)"
            )
        elif (mini_batch_size // dp_size) % micro_batch_groups:
            problems.append(
                f"per-rank mini-batch of {mini_batch_size // dp_size} groups is not a multiple of "
                f"ppo_micro_batch_size_per_gpu={micro_batch_groups} groups"
            )
    if shuffle:
        problems.append("actor.shuffle=True would scatter a group's responses over mini-batches")
    if problems:
        raise ValueError("label_sync batch geometry: " + "; ".join(problems))


def check_pacs_config(config: Any) -> None:
    """Raise when the driver-side and worker-side settings of a label loss disagree: the
    label-carrying advantage estimator goes with exactly the losses that read it."""
    policy_loss = config.actor_rollout_ref.actor.policy_loss
    uses_label_adv = config.algorithm.adv_estimator == ADV_ESTIMATOR_NAME
    uses_label_loss = policy_loss.get("loss_mode") in LABEL_LOSSES
    if uses_label_adv != uses_label_loss:
        raise ValueError(
            f"algorithm.adv_estimator={ADV_ESTIMATOR_NAME} goes with actor.policy_loss.loss_mode "
            f"in {list(LABEL_LOSSES)} (got {config.algorithm.adv_estimator!r} and "
            f"{policy_loss.get('loss_mode')!r})"
        )
    uses_pacs_loss = policy_loss.get("loss_mode") == LOSS_NAME
    driver_weights = (config.algorithm.get("label_loss", None) or {}).get("use_weight", True)
    if policy_loss.get("loss_mode") == REAL_LOSS_NAME and driver_weights:
        raise ValueError(
            "the real loss reads labels with weight 1: set algorithm.label_loss.use_weight=False"
        )
    if uses_pacs_loss:
        driver = (config.algorithm.get("label_loss", None) or {}).get("use_weight", True)
        worker = policy_loss.get("use_weight", True)
        if bool(driver) != bool(worker):
            raise ValueError(
                f"algorithm.label_loss.use_weight={driver} but "
                f"actor.policy_loss.use_weight={worker}"
            )
    if config.actor_rollout_ref.actor.use_kl_loss and uses_label_loss:
        raise ValueError(
            "PACS and REAL run without a KL loss (App. C); set actor.use_kl_loss=False"
        )


def min_group_fraction(algorithm: Any) -> float:
    """``algorithm.label_loss.min_group_fraction`` (default 0.5): the smallest share of a step's
    prompt groups whose first rollout must succeed (the rest may be regenerated) and that must
    remain should incomplete groups ever be dropped."""
    pacs = algorithm.get("label_loss", None) or {}
    value = float(pacs.get("min_group_fraction", DEFAULT_MIN_GROUP_FRACTION))
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"algorithm.label_loss.min_group_fraction must be in [0, 1], got {value}")
    return value


class GroupRefillReplayBuffer(ReplayBuffer):
    """verl's sync replay buffer, refilling every failed group that is short of n trajectories.

    verl's ``sync_refill_failed_groups`` evicts and replaces (with fresh prompts, through the
    trainer's ``refill_fn``) only failed groups with no trajectory; partly failed groups stay
    sampleable and would be dropped by PACS. This buffer evicts those too, so the sampled batch
    is whole. At most ``max_refills`` groups are regenerated per sampled batch: beyond that the
    rollout engine is failing, and the step raises instead of looping.
    """

    group_size: int = 0
    max_refills: int = 0
    refilled: int = 0

    @classmethod
    def adopt(cls, buffer: ReplayBuffer, group_size: int, max_refills: int):
        """Turn verl's own sync buffer (built with all of verl's settings) into this class."""
        if type(buffer) is not ReplayBuffer:
            raise TypeError(
                f"label_sync needs verl's sync ReplayBuffer, got {type(buffer).__name__} "
                "(trainer.v1.sampler.custom_sampler is not supported with PACS)"
            )
        buffer.__class__ = cls
        buffer.group_size, buffer.max_refills = group_size, max_refills
        buffer._fresh_prompts, buffer.refill_fn = buffer.refill_fn, buffer._bounded_refill
        return buffer

    def _terminal_eviction_reasons(self, global_steps: int, partition_id: str):
        stale, dapo, failed, dapo_counts = super()._terminal_eviction_reasons(
            global_steps, partition_id
        )
        if partition_id != "val":
            failed = failed | short_failed_groups(
                self.failure_keys[partition_id], self.partitions[partition_id], self.group_size
            )
        return stale, dapo, failed, dapo_counts

    def _bounded_refill(self, count: int):
        self.refilled += count
        if self.refilled > self.max_refills:
            raise RuntimeError(
                f"{self.refilled} prompt groups had failed rollouts this step, more than the "
                f"{self.max_refills} allowed by algorithm.label_loss.min_group_fraction: the "
                "rollout engine is failing (see the rollout workers' logs)"
            )
        return self._fresh_prompts(count)

    def sample(self, global_steps: int, partition_id: str, batch_size: int):
        self.refilled = 0
        batch, metrics = super().sample(global_steps, partition_id, batch_size)
        if partition_id != "val":
            metrics["pacs/groups/refilled"] = self.refilled
        return batch, metrics


def max_refills(train_batch_size: int, min_fraction: float) -> int:
    """Groups a step may regenerate: all but ``min_fraction`` of its prompts."""
    return math.floor((1.0 - min_fraction) * train_batch_size + 1e-9)


PLUGIN_WORKER_ROLES = (Role.ActorRollout, Role.ActorRolloutRef, Role.Actor, Role.RefPolicy)


def use_plugin_worker(role_worker_mapping: dict) -> None:
    """Run every actor/rollout/ref role on :class:`PACSActorRolloutRefWorker` (verl's worker plus
    the reference reset, and a process group that opens on the ``cpu`` platform)."""
    worker_cls = ray.remote(PACSActorRolloutRefWorker)
    for role in PLUGIN_WORKER_ROLES:
        if role in role_worker_mapping:
            role_worker_mapping[role] = worker_cls


@register_trainer(PLUGIN_SYNC_MODE)
class PluginTrainerSync(PPOTrainerSync):
    """verl's ``PPOTrainerSync`` unchanged but for the worker (:func:`use_plugin_worker`): verl's
    own asks torch for the process group ``cpu:gloo,cpu:gloo`` on the ``cpu`` platform, which torch
    refuses, and reduces each step's gradient norms to one mean, where ours also keeps each
    update's and whether the clip bound. The launcher selects it on every device for the methods
    that run verl's sync trainer (GRPO, PPO, DAPO; ``pacs.verl_plugin.launch.overrides``)."""

    def __init__(self, config):
        super().__init__(config)
        # verl keys its sync replay buffer, dataloader and checkpoints on the string "sync".
        self.trainer_mode = "sync"

    def _init_resource_pool_mgr(self):
        super()._init_resource_pool_mgr()
        use_plugin_worker(self.role_worker_mapping)


@register_trainer(TRAINER_MODE)
class PACSTrainerSync(PPOTrainerSync):
    """``PPOTrainerSync`` that keeps each prompt's responses together (see module docstring)."""

    def __init__(self, config):
        check_pacs_config(config)
        with open_dict(config):
            # verl then fetches prompts one at a time, so a refill asks for exactly what failed.
            config.trainer.v1.sampler.sync_refill_failed_groups = True
        self.min_group_fraction = min_group_fraction(config.algorithm)
        super().__init__(config)
        self.group_size = int(config.actor_rollout_ref.rollout.n)
        self.ref_settings = schedule_from_algorithm_config(config.algorithm)
        if self.ref_settings.needs_model:
            self.use_reference_policy = True
        self._steps_in_this_process = 0

    # verl keys the sync replay buffer, dataloader and checkpoint behaviour on the mode string
    # "sync"; this trainer is sync, so it presents itself as such after the registry lookup.
    def _build_replay_buffer(self):
        self.trainer_mode = "sync"
        return GroupRefillReplayBuffer.adopt(
            super()._build_replay_buffer(),
            group_size=int(self.config.actor_rollout_ref.rollout.n),
            max_refills=max_refills(
                int(self.config.data.train_batch_size), self.min_group_fraction
            ),
        )

    def _init_resource_pool_mgr(self):
        super()._init_resource_pool_mgr()
        if self.ref_settings.needs_model and Role.ActorRollout in self.role_worker_mapping:
            # verl builds the ref only for a KL term; PACS periodic/fixed needs it without one.
            self.mapping[Role.ActorRolloutRef] = self.mapping.pop(Role.ActorRollout)
            self.role_worker_mapping[Role.ActorRolloutRef] = self.role_worker_mapping.pop(
                Role.ActorRollout
            )
        use_plugin_worker(self.role_worker_mapping)

    def _actor_dp_size(self) -> int:
        wg = self.actor_rollout_wg
        if "actor" not in wg._dispatch_info:
            wg._dispatch_info["actor"] = wg._query_dispatch_info("actor")
        return max(wg._dispatch_info["actor"]) + 1

    def _balance_batch(self, batch, metrics, logging_prefix="global_seqlen", keep_minibatch=False):
        dp_size = self._actor_dp_size()
        actor = self.config.actor_rollout_ref.actor
        check_batch_geometry(
            train_batch_size=self.config.data.train_batch_size,
            mini_batch_size=actor.ppo_mini_batch_size,
            micro_batch_groups=actor.ppo_micro_batch_size_per_gpu,
            dp_size=dp_size,
            use_dynamic_bsz=actor.use_dynamic_bsz,
            shuffle=actor.shuffle,
        )
        batch = self._drop_incomplete_groups(batch, metrics)
        seq_lens = [int(tag["seq_len"]) for tag in batch.tags]
        order, row_parts = group_balanced_order(batch.keys, seq_lens, self.group_size, dp_size)
        batch.reorder(order)
        metrics.update(balance_stats(seq_lens, row_parts, prefix=logging_prefix))
        return batch

    def _drop_incomplete_groups(self, batch, metrics):
        """Drop short groups (failed rollouts) and verl's padding rows, keep whole mini-batches,
        and remove the dropped rows from TransferQueue (the trainer clears only the kept keys)."""
        selection = select_complete_groups(
            batch.keys,
            [bool(tag.get("is_padding", False)) for tag in batch.tags],
            group_size=self.group_size,
            group_multiple=int(self.config.actor_rollout_ref.actor.ppo_mini_batch_size),
            expected_groups=int(self.config.data.train_batch_size),
            min_group_fraction=self.min_group_fraction,
        )
        metrics.update(selection.metrics())
        if len(selection.keep) == len(batch):
            return batch
        kept = set(selection.keep)
        dropped = [key for pos, key in enumerate(batch.keys) if pos not in kept]
        logger.warning(
            "step %d: dropped %d incomplete and %d surplus prompt group(s) (%d padding rows); "
            "%d groups remain",
            self.global_steps,
            selection.short_groups,
            selection.trimmed_groups,
            selection.padding_rows,
            selection.kept_groups,
        )
        tq.kv_clear(keys=dropped, partition_id=batch.partition_id)
        return batch.select_keys([batch.keys[pos] for pos in selection.keep])

    def _update_actor(self, batch, metrics):
        batch.extra_info["force_group_size"] = self.group_size
        try:
            return super()._update_actor(batch, metrics)
        finally:
            # Only the update micro-batches are grouped; log-prob passes keep their own sizes.
            batch.extra_info.pop("force_group_size", None)

    def _compute_old_log_prob(self, batch, metrics):
        batch = super()._compute_old_log_prob(batch, metrics)
        dump_dir = os.environ.get(ROLLOUT_DUMP_ENV)
        if dump_dir:
            dump_rollout(batch, self.global_steps, dump_dir)
        return batch

    def _compute_ref_log_prob(self, batch, metrics):
        batch = super()._compute_ref_log_prob(batch, metrics)
        if self.ref_settings.needs_model:
            # The pacs loss reads its reference from old_log_probs (verl passes it no ref_log_prob).
            data = tq.kv_batch_get(
                keys=batch.keys, partition_id=batch.partition_id, select_fields=["ref_log_prob"]
            )
            data["old_log_probs"] = data.pop("ref_log_prob")
            tq.kv_batch_put(
                keys=batch.keys,
                partition_id=batch.partition_id,
                fields=data.select("old_log_probs"),
            )
        return batch

    def on_step_begin(self):
        super().on_step_begin()
        resumed_start = self._steps_in_this_process == 0 and self.global_steps > 1
        self._steps_in_this_process += 1
        if self.ref_settings.mode != "periodic":
            return
        if self.ref_settings.reset_due(self.global_steps):
            self._reset_reference(reset_optimizer=True)
        elif resumed_start:
            # The reference weights are not checkpointed; after a resume the closest available
            # reference is the resumed actor. The restored optimizer state is kept.
            logger.warning(
                "resumed at step %d inside a reference period (K=%d): reference set to the resumed "
                "actor",
                self.global_steps,
                self.ref_settings.every,
            )
            self._reset_reference(reset_optimizer=False)

    def _reset_reference(self, reset_optimizer: bool) -> None:
        results = self.actor_rollout_wg.reset_reference(reset_optimizer=reset_optimizer)
        logger.info(
            "step %d: reference reset to the actor (%s)",
            self.global_steps,
            results[0] if results else results,
        )
