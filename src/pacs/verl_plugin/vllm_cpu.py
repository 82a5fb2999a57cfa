"""vLLM plugin for CPU runs: vLLM's linear layers keep their weights, so verl can reload them.

vLLM loads every entry point of group ``vllm.general_plugins`` (pyproject.toml:
``pacs_cpu_weights = "pacs.verl_plugin.vllm_cpu:register"``) in each of its processes, before a
model is built. On a CPU platform, vLLM 0.24.0 packs each linear layer's weight into a oneDNN
handle after loading and replaces ``layer.weight`` by an empty tensor
(``UnquantizedLinearMethod.process_weights_after_loading`` ->
``dispatch_cpu_unquantized_gemm(layer, remove_weight=True)``). verl's weight sync then fails
("Attempted to load weight (torch.Size([128, 128])) into parameter (torch.Size([0]))"), and even
where a weight is kept (the LM head) the packed copy would never see an update. On CPU this plugin
swaps that dispatcher for one that keeps the weight and multiplies with it directly
(``torch.nn.functional.linear``), giving up oneDNN's packed GEMM. On any other platform it does
nothing: GPUs never take this path.

No file of vLLM is edited: the dispatcher is a module attribute that vLLM looks up when it is
called (``from vllm.model_executor.layers.utils import dispatch_cpu_unquantized_gemm`` inside the
calling functions).
"""

from __future__ import annotations

import logging

import torch

logger = logging.getLogger(__name__)

LAYER_UTILS = "vllm.model_executor.layers.utils"
DISPATCHER = "dispatch_cpu_unquantized_gemm"


def torch_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """``layer.cpu_linear``: the layer's current weight, so a reloaded weight takes effect."""
    return torch.nn.functional.linear(x, weight, bias)


def keep_weight_dispatch(original):
    """A ``dispatch_cpu_unquantized_gemm`` that keeps 2-D weights in place (any ``remove_weight``);
    other layers (meta weights, conv weights) go to vLLM's own ``original``."""

    def dispatch(layer: torch.nn.Module, remove_weight: bool) -> None:
        weight = layer.weight
        if weight.is_meta or weight.ndim != 2:
            original(layer, remove_weight)
            return
        layer.cpu_linear = torch_linear

    dispatch.pacs_keeps_weights = True
    return dispatch


def register() -> None:
    """The entry point: patch vLLM's CPU GEMM dispatcher, on a CPU platform only (idempotent)."""
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        return
    import importlib

    utils = importlib.import_module(LAYER_UTILS)
    current = getattr(utils, DISPATCHER)
    if getattr(current, "pacs_keeps_weights", False):
        return
    setattr(utils, DISPATCHER, keep_weight_dispatch(current))
    logger.info(
        "pacs: vLLM CPU linear layers keep their weights (reloadable by verl's weight sync)"
    )
