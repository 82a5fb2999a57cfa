"""verl's hybrid actor/rollout/ref worker plus a reference reset and per-update PACS metrics.

``ActorRolloutRefWorker`` (verl.workers.engine_workers) holds, in one process per GPU, the actor
``TrainingWorker`` (``self.actor``) and, for role ``actor_rollout_ref``, the reference
``TrainingWorker`` (``self.ref``). Their ``.engine`` is an ``FSDPEngine`` whose ``.module`` is the
FSDP-wrapped model and whose ``.optimizer`` is the torch optimizer. Both engines shard over the same
mesh, so each rank copies its own shards; no communication is needed.

On the plugin's ``cpu`` platform (``pacs.verl_plugin.cpu_platform``) the worker also opens the
default process group itself, with gloo only: verl would ask for ``"cpu:gloo,<device>:<backend>"``,
which torch refuses when the device is ``cpu`` as well (duplicate device type). verl then finds
the group initialised and reuses it.

``PACS_LOSS_DUMP_DIR`` (set in the Ray runtime env) makes every actor update micro-batch write the
exact tensors the policy loss saw (log-probs, old log-probs, advantages, mask) and the loss it
returned to ``rank<R>-<call>.pt``, so a test can recompute the logged loss independently. A
resumed launch numbers its calls on from the dumps already there, so it overwrites none.

``update_actor`` adds per-update metrics for the pacs loss (:func:`per_update_metrics`): verl
reduces every metric of a step to one mean over its updates, which hides how far ψ moves within
the step.
"""

from __future__ import annotations

import glob
import itertools
import logging
import numbers
import os

import torch
from verl.single_controller.base.decorator import (
    Dispatch,
    make_nd_compute_dataproto_dispatch_fn,
    register,
)
from verl.utils import tensordict_utils as tu
from verl.utils.device import get_device_name
from verl.workers.engine_workers import ActorRolloutRefWorker
from verl.workers.utils.padding import no_padding_2_padding

from pacs.metrics_log import mini_batch_column
from pacs.verl_plugin.loss import METRIC_PREFIX, PER_UPDATE_STATS
from pacs.verl_plugin.reference import copy_parameters, reset_optimizer_state

logger = logging.getLogger(__name__)


LOSS_DUMP_ENV = "PACS_LOSS_DUMP_DIR"


def recording_loss(loss_fn, dump_dir: str, rank: int):
    """Wrap verl's actor loss ``loss_fn(model_output, data, dp_group)``: save its inputs and output
    for each call (see the module docstring)."""
    os.makedirs(dump_dir, exist_ok=True)
    calls = itertools.count(first_dump_index(dump_dir, rank))

    def wrapped(model_output, data, dp_group=None):
        loss, metrics = loss_fn(model_output=model_output, data=data, dp_group=dp_group)
        padded = data.select("response_mask", "old_log_probs", "advantages").to_padded_tensor()
        record = {
            "log_prob": no_padding_2_padding(model_output["log_probs"], data).detach().cpu(),
            "old_log_prob": padded["old_log_probs"].detach().cpu(),
            "advantages": padded["advantages"].detach().cpu(),
            "response_mask": padded["response_mask"].detach().cpu(),
            "loss": loss.detach().cpu(),
            "global_batch_size": data["global_batch_size"],
            "dp_size": data["dp_size"],
        }
        torch.save(record, os.path.join(dump_dir, f"rank{rank}-{next(calls):05d}.pt"))
        return loss, metrics

    return wrapped


def first_dump_index(dump_dir: str, rank: int) -> int:
    """The call number a launch's first dump of ``rank`` takes: after those of earlier launches
    into the same folder (a resumed run), so that ``rank<R>-*.pt`` in name order is call order."""
    return len(glob.glob(os.path.join(glob.escape(dump_dir), f"rank{rank}-*.pt")))


GRAD_NORM_KEY = "grad_norm"  # an update's pre-clip norm, as the worker returns it ("actor/" later)
CLIP_BOUND_KEY = "clip_bound"  # 1 where the update's pre-clip norm exceeded the clip norm, else 0
LOSS_PER_UPDATE_KEYS = tuple(f"{METRIC_PREFIX}{stat}" for stat in PER_UPDATE_STATS)
PER_UPDATE_KEYS: tuple[str, ...] = (*LOSS_PER_UPDATE_KEYS, GRAD_NORM_KEY, CLIP_BOUND_KEY)


def with_clip_bound(metrics: dict, clip_norm: float) -> dict:
    """``metrics`` plus ``clip_bound``: per update, 1.0 where its pre-clip ``grad_norm`` exceeded
    ``clip_norm`` (``clip_grad_norm_`` then scaled the gradient down), else 0.0; verl's trainer
    averages it into the step's share. An infinite ``clip_norm`` (no clipping) never binds."""
    norms = metrics.get(GRAD_NORM_KEY)
    if norms is None:
        return metrics
    values = norms if isinstance(norms, list) else [norms]
    bound = [float(_number(GRAD_NORM_KEY, i, g) > clip_norm) for i, g in enumerate(values)]
    return {**metrics, CLIP_BOUND_KEY: bound if isinstance(norms, list) else bound[0]}


def per_update_key(key: str, index: int) -> str:
    """``actor/pacs_psi_abs_mean`` -> ``actor/pacs_psi_abs_mean/mb<index>`` (the tiny engine's
    ``psi_abs_mean/mb<index>``); the driver prefixes ``grad_norm/mb<index>`` with ``actor/``."""
    return mini_batch_column(key, index)


def planned_updates(data, dp_size: int) -> int:
    """Optimizer updates ``TrainingWorker.train_mini_batch`` makes on this rank's shard ``data``,
    by its own arithmetic on the fields it pops (``mini_batch_size`` or ``num_mini_batch``,
    ``epochs``). Read before the call: the call pops them."""
    rows = data.shape[0]
    mini_batch_size = tu.get(data, "mini_batch_size")
    if mini_batch_size is None:
        per_rank = rows // int(tu.get(data, "num_mini_batch"))
    else:
        per_rank = int(mini_batch_size) // dp_size
    return rows // per_rank * int(tu.get(data, "epochs", 1))


def _number(key: str, index: int, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"per-update metrics: {key}[{index}] is {type(value).__name__}, not one number per "
            "update (verl 0.9.1's TrainingWorker.train_mini_batch layout)"
        )
    return float(value)


def per_update_metrics(metrics: dict, updates: int) -> dict:
    """``metrics`` plus ``<key>/mb<i>`` = ``[value of update i]`` for each of ``PER_UPDATE_KEYS``,
    when the metrics are the pacs loss's (else unchanged).

    ``metrics`` is what ``TrainingWorker.train_mini_batch`` returns: per key, one value per update
    appended in its loop's order (a loss stat averaged over the update's micro-batches and dp
    ranks; ``grad_norm`` the update's pre-clip norm), which verl's trainer then averages. Element
    i is update i only if every key got one value per update, so each list must hold exactly
    ``updates`` numbers, or this raises rather than label a value with the wrong update. ``i`` is
    the mini-batch index with ``ppo_epochs=1`` (epoch-major otherwise, as verl loops).
    """
    if not any(key in metrics for key in LOSS_PER_UPDATE_KEYS):
        return metrics
    out = dict(metrics)
    for key in PER_UPDATE_KEYS:
        values = metrics.get(key)
        if not isinstance(values, list) or len(values) != updates:
            raise ValueError(
                f"per-update metrics: expected {updates} values of {key!r} (one per update of "
                f"the step), got {values!r}: verl's metric layout is not the one this relies on"
            )
        for index, value in enumerate(values):
            out[per_update_key(key, index)] = [_number(key, index, value)]
    return out


class PACSActorRolloutRefWorker(ActorRolloutRefWorker):
    """``ActorRolloutRefWorker`` with ``reset_reference`` for ``algorithm.label_loss.ref=periodic``
    and per-update PACS metrics from ``update_actor``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if get_device_name() == "cpu" and not torch.distributed.is_initialized():
            torch.distributed.init_process_group(
                backend="gloo",
                rank=int(os.environ.get("RANK", "0")),
                world_size=int(os.environ.get("WORLD_SIZE", "1")),
            )

    @register(dispatch_mode=Dispatch.ONE_TO_ALL)
    def init_model(self):
        super().init_model()
        dump_dir = os.environ.get(LOSS_DUMP_ENV)
        if dump_dir and self.actor is not None:
            self.actor.set_loss_fn(recording_loss(self.loss_fn, dump_dir, self.rank))

    @register(dispatch_mode=make_nd_compute_dataproto_dispatch_fn(mesh_name="actor"))
    def update_actor(self, data):
        """verl's ``update_actor`` (same dispatch), its metrics with :func:`per_update_metrics`."""
        updates = planned_updates(data, self.actor.engine.get_data_parallel_size())
        output = super().update_actor(data)
        if output is not None:
            clip = float(self.actor.engine.optimizer_config.clip_grad)
            metrics = with_clip_bound(tu.get(output, "metrics"), clip)
            metrics = per_update_metrics(metrics, updates)
            tu.assign_non_tensor(output, metrics=metrics)
        return output

    @register(dispatch_mode=Dispatch.ONE_TO_ALL)
    def reset_reference(self, reset_optimizer: bool = True) -> dict:
        """Hard-reset the reference weights to the actor's; optionally re-initialise the actor's
        optimizer state (the paper's reset). Returns counts for the driver's log."""
        if self.actor is None or self.ref is None:
            raise RuntimeError(
                "reset_reference needs both actor and ref engines in this worker (role "
                f"{self.role!r}); "
                "the label_sync trainer builds role actor_rollout_ref when "
                "algorithm.label_loss.ref != "
                "rollout"
            )
        actor_engine, ref_engine = self.actor.engine, self.ref.engine
        n_params = copy_parameters(actor_engine.module, ref_engine.module)
        n_states = reset_optimizer_state(actor_engine.optimizer) if reset_optimizer else 0
        logger.info(
            "reference reset: %d parameters copied, %d optimizer states dropped", n_params, n_states
        )
        return {"params_copied": n_params, "optimizer_states_dropped": n_states}
