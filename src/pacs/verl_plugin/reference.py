"""Reference-model modes of PACS on verl (docs/design.md#the-reference-model) and the pieces of a
reference reset.

- ``rollout`` (default, = official code): the reference is the policy at rollout time, i.e. verl's
  ``old_log_prob``; no reference model is built.
- ``periodic`` with ``ref_reset_every = K``: a reference model is built; at the start of steps
  1 + K, 1 + 2K, ... its weights are hard-reset to the actor's and the actor's optimizer state is
  re-initialised (the paper's text; :meth:`pacs.methods.RefSchedule.reset_due`, which the tiny
  engine uses too). K = 1 equals ``rollout`` plus a fresh optimizer every step.
- ``fixed``: the reference model stays the initial model.

verl has no reset hook (docs/design.md#the-verl-plugin), so ``pacs.verl_plugin.worker`` adds one;
this module holds the parts that do not need a GPU or a process group, so they can be tested on CPU.
"""

from __future__ import annotations

from typing import Any

import torch

from pacs.methods import PacsSpec, RefSchedule


def schedule_from_algorithm_config(algorithm: Any) -> RefSchedule:
    """The reference schedule of ``algorithm.label_loss`` ({ref, ref_reset_every}, written by the
    launcher from the run's :class:`pacs.methods.PacsSpec`), validated by that spec; its
    defaults where the keys are absent."""
    pacs = algorithm.get("label_loss", None) or {}
    knobs = {k: pacs.get(k) for k in ("ref", "ref_reset_every") if pacs.get(k) is not None}
    try:
        return PacsSpec(**knobs).reference
    except ValueError as err:
        raise ValueError(f"algorithm.label_loss: {err}") from err


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
            f"actor and reference parameters differ: only in actor {only_src}, only in ref "
            f"{only_dst}"
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
