"""verl's hybrid actor/rollout/ref worker plus one method: reset the reference to the actor.

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
returned to ``rank<R>-<call>.pt``, so a test can recompute the logged loss independently.
"""

from __future__ import annotations

import logging
import os

import torch
from verl.single_controller.base.decorator import Dispatch, register
from verl.utils.device import get_device_name
from verl.workers.engine_workers import ActorRolloutRefWorker
from verl.workers.utils.padding import no_padding_2_padding

from pacs.verl_plugin.reference import copy_parameters, reset_optimizer_state

logger = logging.getLogger(__name__)


LOSS_DUMP_ENV = "PACS_LOSS_DUMP_DIR"


def recording_loss(loss_fn, dump_dir: str, rank: int):
    """Wrap verl's actor loss ``loss_fn(model_output, data, dp_group)``: save its inputs and output
    for each call (see the module docstring)."""
    os.makedirs(dump_dir, exist_ok=True)
    calls = iter(range(10**9))

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


class PACSActorRolloutRefWorker(ActorRolloutRefWorker):
    """``ActorRolloutRefWorker`` with ``reset_reference`` for ``algorithm.pacs.ref=periodic``."""

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

    @register(dispatch_mode=Dispatch.ONE_TO_ALL)
    def reset_reference(self, reset_optimizer: bool = True) -> dict:
        """Hard-reset the reference weights to the actor's; optionally re-initialise the actor's
        optimizer state (the paper's reset). Returns counts for the driver's log."""
        if self.actor is None or self.ref is None:
            raise RuntimeError(
                f"reset_reference needs both actor and ref engines in this worker (role {self.role!r}); "
                "the pacs_sync trainer builds role actor_rollout_ref when algorithm.pacs.ref != rollout"
            )
        actor_engine, ref_engine = self.actor.engine, self.ref.engine
        n_params = copy_parameters(actor_engine.module, ref_engine.module)
        n_states = reset_optimizer_state(actor_engine.optimizer) if reset_optimizer else 0
        logger.info(
            "reference reset: %d parameters copied, %d optimizer states dropped", n_params, n_states
        )
        return {"params_copied": n_params, "optimizer_states_dropped": n_states}
