"""verl platform ``cpu``: run verl 0.9.1's trainer on CPU-only machines (gloo, no accelerator).

verl 0.9.1 registers platforms for CUDA, ROCm and NPU only (``verl.plugin.platform``); external
plugins may add their own with ``PlatformRegistry.register``. This one is chosen explicitly with
``VERL_PLATFORM=cpu`` (it is never auto-detected). verl's resource-pool check counts only Ray
``GPU``/``NPU`` resources, so on CPU the launcher declares one logical Ray ``GPU`` per training
rank: a scheduling slot, no device.

verl resolves its platform once per process, the first time any module asks for it, and some
modules ask while they are imported; ``pacs.verl_plugin.register`` therefore registers this
platform before it imports anything else from verl. This module imports only
``verl.plugin.platform``.
"""

from __future__ import annotations

from contextlib import contextmanager
from types import SimpleNamespace

import torch
from verl.plugin.platform.platform_base import PlatformBase
from verl.plugin.platform.platform_manager import PlatformRegistry

PLATFORM_NAME = "cpu"


def _zero(*_args, **_kwargs) -> int:
    return 0


def _noop(*_args, **_kwargs) -> None:
    return None


def _mem_get_info(*_args, **_kwargs) -> tuple[int, int]:
    import psutil

    mem = psutil.virtual_memory()
    return mem.available, mem.total


# verl calls the accelerator's torch module (torch.cuda on CUDA) for memory bookkeeping, seeding
# and synchronisation; torch.cpu lacks the memory functions, which are meaningless here.
CPU_DEVICE_MODULE = SimpleNamespace(
    is_available=lambda: True,
    current_device=lambda: "cpu",
    device_count=lambda: 1,
    set_device=_noop,
    synchronize=_noop,
    manual_seed=torch.manual_seed,
    manual_seed_all=torch.manual_seed,
    empty_cache=_noop,
    memory_allocated=_zero,
    memory_reserved=_zero,
    max_memory_allocated=_zero,
    max_memory_reserved=_zero,
    reset_peak_memory_stats=_noop,
    mem_get_info=_mem_get_info,
    get_device_name=lambda *_: "cpu",
    is_initialized=lambda: True,
    Stream=torch.cpu.Stream,
    Event=torch.cpu.Event,
    current_stream=torch.cpu.current_stream,
    stream=torch.cpu.stream,
    get_rng_state=torch.get_rng_state,
    set_rng_state=torch.set_rng_state,
)


class PlatformCPU(PlatformBase):
    """verl platform for CPU-only processes (gloo collectives, no accelerator)."""

    @property
    def device_name(self) -> str:
        return "cpu"

    @property
    def vendor_name(self) -> str:
        return "cpu"

    @property
    def device_module(self):
        return CPU_DEVICE_MODULE

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check: bool = False) -> bool:
        return False  # never auto-detected: chosen explicitly with VERL_PLATFORM=cpu

    def current_device(self) -> str:
        # verl passes this to .to()/torch.device(); an int would mean an accelerator index
        return "cpu"

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        return None

    def synchronize(self, device_index: int | None = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0):
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        return "CUDA_VISIBLE_DEVICES"

    def ray_resource_name(self) -> str:
        return "GPU"  # a logical slot per rank: verl's pool check counts GPU/NPU only

    def ray_noset_envvars(self) -> list[str]:
        return []

    def is_ipc_supported(self) -> bool:
        return False

    @contextmanager
    def nvtx_range(self, msg: str):
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def cudart(self):
        return None


def register() -> None:
    """Add platform ``cpu`` to verl's platform registry (idempotent)."""
    if PlatformRegistry.get(PLATFORM_NAME) is not PlatformCPU:
        PlatformRegistry.register(PLATFORM_NAME)(PlatformCPU)
