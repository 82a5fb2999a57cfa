"""Device switch of the launcher: what a verl run needs beyond the profile config on CPU or CUDA.

Pure Python (no verl import). ``--device cpu`` runs verl 0.9.1's own trainer on a CPU-only
machine through the plugin's ``cpu`` platform (``pacs.verl_plugin.cpu_platform``, selected by
``VERL_PLATFORM=cpu`` in the driver and every Ray worker) with gloo collectives; ``--device cuda``
adds nothing (verl's defaults). ``auto`` picks cuda when torch sees a GPU.
"""

from __future__ import annotations

import os

DEVICES = ("auto", "cuda", "cpu")
PLATFORM_ENV = "VERL_PLATFORM"
# Logical Ray CPUs for a CPU run: verl reserves 3 per training rank in its placement group and
# starts ~8 small actors (task runner, agent-loop and reward workers, TransferQueue, router,
# rollout server). They are scheduling slots; the processes mostly wait on one another.
CPU_RAY_SLOTS_BASE = 12
FP32 = "{param_dtype:fp32,reduce_dtype:fp32,buffer_dtype:fp32}"


# Where SLURM says which GPUs it granted a job (or its step); "NoDevFiles" and "" grant none.
GPU_GRANT_VARS = (
    "SLURM_JOB_GPUS",
    "SLURM_STEP_GPUS",
    "SLURM_GPUS_ON_NODE",
    "SLURM_GPUS",
    "SLURM_GPUS_PER_NODE",
    "CUDA_VISIBLE_DEVICES",
)


def granted_gpus(env) -> dict[str, str]:
    """The GPU grants SLURM left in a job's environment (``GPU_GRANT_VARS`` that are set)."""
    return {k: env[k] for k in GPU_GRANT_VARS if env.get(k) not in (None, "", "NoDevFiles")}


def no_gpu_diagnosis(env, torch_cuda: str | None) -> tuple[str, str]:
    """(what, fix) when torch sees no GPU inside a SLURM job: SLURM granted none, or it granted
    some that torch cannot see (``torch_cuda``: ``torch.version.cuda``, None for a CPU build)."""
    grants = granted_gpus(env)
    if not grants:
        fix = (
            "the job's request gave it none: check that the profile's "
            "set-resources.train_verl gres asks for GPUs and that the partition's nodes offer "
            "them as GRES (sinfo -o '%P %N %G'); resizing the request does not help"
        )
        return f"SLURM granted this job no GPU (none of {', '.join(GPU_GRANT_VARS)} is set)", fix
    shown = ", ".join(f"{k}={v}" for k, v in grants.items())
    build = f"torch built for CUDA {torch_cuda}" if torch_cuda else "a CPU-only torch build"
    fix = (
        "the GPUs are there but unusable from this env: a CPU-only torch or a driver older than "
        "its CUDA (nvidia-smi on the node; python -c 'import torch; print(torch.version.cuda, "
        "torch.cuda.is_available())'); install the env from the lock (make gpu-env)"
    )
    return f"SLURM granted GPUs ({shown}) but torch sees none ({build})", fix


def resolve_device(device: str, env=None) -> str:
    """``device``, with ``auto``: cuda where torch sees a GPU, else cpu, except inside a SLURM job
    that was granted GPUs torch cannot see (a GPU job would silently train on the CPU): refused,
    saying why (``no_gpu_diagnosis``)."""
    if device not in DEVICES:
        raise ValueError(f"--device must be one of {DEVICES}, got {device!r}")
    if device != "auto":
        return device
    import torch

    if torch.cuda.is_available():
        return "cuda"
    env = os.environ if env is None else env
    if env.get("SLURM_JOB_ID") and granted_gpus(env):
        what, fix = no_gpu_diagnosis(env, torch.version.cuda)
        raise ValueError(f"--device auto: {what}. Fix: {fix}; or --device cpu to train on the CPU")
    return "cpu"


# A CPU run's local Ray (verl's ray.init in the driver; its raylet reads RAY_<key> from the
# environment it inherits) starts no workers ahead of demand: Ray otherwise prestarts Python
# workers when the driver connects (one per core) and for a backlog, and verl's actors start
# their own. With the dashboard off (device_overrides), a 2-step verl launch on 2 cores took
# 87 CPU-s instead of 107 (docs/testing.md).
LOCAL_RAY_ENV = {"RAY_prestart_worker_first_driver": "0", "RAY_enable_worker_prestart": "0"}


def device_env(device: str) -> dict[str, str]:
    """Environment for the verl driver (the Ray workers get it through ``device_overrides``)."""
    return {PLATFORM_ENV: "cpu", **LOCAL_RAY_ENV} if device == "cpu" else {}


# verl's sync trainer with the plugin's worker (pacs.verl_plugin.trainer.PluginTrainerSync): GRPO,
# PPO and DAPO run under it on every device (the launcher's overrides name it).
PLUGIN_SYNC_MODE = "plugin_sync"


def device_overrides(
    device: str, n_ranks: int, ray_address: str | None = None, rollout: str = "hf"
) -> list[str]:
    """Hydra overrides for ``verl.trainer.main_ppo`` on ``device`` with ``n_ranks`` training ranks.

    With ``ray_address`` (a running cluster) Ray's resources are the nodes' own (``ray start
    --num-cpus/--num-gpus``): ray.init refuses num_cpus/num_gpus when it connects. With verl's
    ``vllm`` rollout on CPU (the engine env), vLLM's sleep mode is off: vLLM supports it on CUDA
    only ("Sleep mode is not supported on current platform")."""
    if device == "cuda":
        return []
    if device != "cpu":
        raise ValueError(f"device must be cuda or cpu here, got {device!r}")
    local_ray = {
        "ray_kwargs.ray_init.num_cpus": CPU_RAY_SLOTS_BASE + 3 * n_ranks,
        # verl's pool check counts Ray GPUs only: one logical slot per rank (no device behind it)
        "+ray_kwargs.ray_init.num_gpus": n_ranks,
        # nothing reads Ray's dashboard (ten processes, about 4 CPU-s a start on 2 cores)
        "+ray_kwargs.ray_init.include_dashboard": "false",
    }
    items = {
        "trainer.device": "cpu",
        f"+ray_kwargs.ray_init.runtime_env.env_vars.{PLATFORM_ENV}": "cpu",
        **({} if ray_address else local_ray),
        # no flash-attention and no torch.compile on CPU
        "++actor_rollout_ref.model.override_config.attn_implementation": "sdpa",
        "actor_rollout_ref.model.use_remove_padding": "false",
        "actor_rollout_ref.actor.fsdp_config.use_torch_compile": "false",
        "actor_rollout_ref.ref.fsdp_config.use_torch_compile": "false",
        # fp32 compute (verl's FSDP default is bf16 mixed precision)
        "++actor_rollout_ref.actor.fsdp_config.mixed_precision": FP32,
        "++actor_rollout_ref.ref.fsdp_config.mixed_precision": FP32,
        "actor_rollout_ref.rollout.free_cache_engine": "false",
    }
    if rollout == "vllm":
        items["+actor_rollout_ref.rollout.enable_sleep_mode"] = "false"
    return [f"{key}={value}" for key, value in items.items()]
