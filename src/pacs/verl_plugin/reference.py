"""Reference-model modes of PACS on verl (docs/design.md §2.5) and the pieces of a reference reset.

- ``rollout`` (default, = official code): the reference is the policy at rollout time, i.e. verl's
  ``old_log_prob``; no reference model is built.
- ``periodic`` with ``ref_reset_every = K``: a reference model is built; at the start of steps
  1 + K, 1 + 2K, ... its weights are hard-reset to the actor's and the actor's optimizer state is
  re-initialised (the paper's text). K = 1 equals ``rollout`` plus a fresh optimizer every step.
- ``fixed``: the reference model stays the initial model.

verl has no reset hook (docs/design.md §5), so ``pacs.verl_plugin.worker`` adds one; this module holds the
parts that do not need a GPU or a process group, so they can be tested on CPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

REF_MODES = ("rollout", "periodic", "fixed")


@dataclass(frozen=True)
class ReferenceSettings:
    mode: str = "rollout"
    reset_every: int = 1

    def __post_init__(self):
        if self.mode not in REF_MODES:
            raise ValueError(f"algorithm.pacs.ref must be one of {REF_MODES}, got {self.mode!r}")
        if not isinstance(self.reset_every, int) or self.reset_every < 1:
            raise ValueError(
                f"algorithm.pacs.ref_reset_every must be an int >= 1, got {self.reset_every!r}"
            )

    @property
    def needs_ref_model(self) -> bool:
        """``rollout`` reuses old_log_prob; the other modes need a separate reference model."""
        return self.mode != "rollout"

    @classmethod
    def from_algorithm_config(cls, algorithm: Any) -> ReferenceSettings:
        pacs = algorithm.get("pacs", None) or {}
        return cls(
            mode=str(pacs.get("ref", "rollout")), reset_every=int(pacs.get("ref_reset_every", 1))
        )


def reset_due(settings: ReferenceSettings, step: int) -> bool:
    """Whether the reference is reset at the start of global step ``step`` (steps count from 1).

    Step 1 never resets: the reference model was just built from the same weights as the actor.
    """
    if settings.mode != "periodic" or step <= 1:
        return False
    return (step - 1) % settings.reset_every == 0


def _local(tensor: torch.Tensor) -> torch.Tensor:
    """This rank's shard of a DTensor (FSDP2 parameter), or the tensor itself."""
    return getattr(tensor, "_local_tensor", tensor)


def copy_parameters(src: torch.nn.Module, dst: torch.nn.Module) -> int:
    """Copy every parameter of ``src`` into ``dst`` in place, shard by shard; return the count.

    Both modules must have the same parameter names and the same local shard shapes (actor and
    reference engines are built with the same FSDP mesh and wrap policy). Devices and dtypes may
    differ (the reference is CPU-offloaded, the actor keeps fp32 master weights): ``copy_`` casts.
    Buffers are not copied: they are constants of the architecture (e.g. rotary frequencies).
    """
    src_params = dict(src.named_parameters())
    dst_params = dict(dst.named_parameters())
    if src_params.keys() != dst_params.keys():
        only_src = sorted(src_params.keys() - dst_params.keys())[:5]
        only_dst = sorted(dst_params.keys() - src_params.keys())[:5]
        raise RuntimeError(
            f"actor and reference parameters differ: only in actor {only_src}, only in ref {only_dst}"
        )
    with torch.no_grad():
        for name, dst_param in dst_params.items():
            src_local, dst_local = _local(src_params[name].detach()), _local(dst_param.detach())
            if src_local.shape != dst_local.shape:
                raise RuntimeError(
                    f"parameter {name}: actor shard {tuple(src_local.shape)} vs reference shard "
                    f"{tuple(dst_local.shape)}; actor and ref must use the same FSDP sharding"
                )
            dst_local.copy_(src_local)
    return len(dst_params)


def reset_optimizer_state(optimizer: torch.optim.Optimizer) -> int:
    """Drop all per-parameter state (Adam moments, step counts); return how many entries were
    dropped. torch optimizers re-create the state lazily at the next ``step()``, exactly as for
    a freshly built optimizer; the LR schedule is left alone."""
    dropped = len(optimizer.state)
    optimizer.state.clear()
    return dropped
