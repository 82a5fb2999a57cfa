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
"""

from __future__ import annotations

import logging
import os

import torch
from verl.single_controller.base.decorator import Dispatch, register
from verl.utils.device import get_device_name
from verl.workers.engine_workers import ActorRolloutRefWorker

from pacs.verl_plugin.reference import copy_parameters, reset_optimizer_state

logger = logging.getLogger(__name__)


class PACSActorRolloutRefWorker(ActorRolloutRefWorker):
    """``ActorRolloutRefWorker`` with ``reset_reference`` for ``algorithm.pacs.ref=periodic``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if get_device_name() == "cpu" and not torch.distributed.is_initialized():
            torch.distributed.init_process_group(
                backend="gloo",
                rank=int(os.environ.get("RANK", 0)),
                world_size=int(os.environ.get("WORLD_SIZE", 1)),
            )

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
