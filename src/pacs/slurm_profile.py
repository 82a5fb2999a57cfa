"""What ``snakemake --profile slurm`` needs from the cluster beyond the SLURM executor plugins.

Two gaps of snakemake-executor-plugin-slurm 2.8 / -slurm-jobstep 0.6, both fixed here from the
workflow (the Snakefile calls these; no plugin is patched on disk):

- ``keep_slurm_config_in_jobsteps``: inside the job, the jobstep plugin starts the rule with
  ``srun`` in an environment stripped of every ``SLURM_*`` variable but the job's identity, so
  on clusters that find their configuration through ``SLURM_CONF`` (or ``SLURM_CONF_SERVER``)
  that srun fails: ``Could not establish a configuration source``. We put them back.
- ``check_status_command``: without accounting (no slurmdbd) ``sacct`` cannot report job states;
  the executor then drops finished jobs after its status attempts and Snakemake waits forever.
  Such a cluster needs the executor's ``squeue`` status command, and a ``MinJobAge`` long enough
  that squeue still lists a job when the executor next asks (its status checks can be 180 s
  apart). We switch to squeue when that holds and refuse to start, saying what to set, when not.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Mapping
from typing import Any

CONFIG_VARS = ("SLURM_CONF", "SLURM_CONF_SERVER")
NO_ACCOUNTING = "accounting_storage/none"
# The executor's longest pause between status checks is 180 s (max_sleep_time); a job must stay
# in squeue's answer at least that long after it ends, with room for slow queries.
MIN_JOB_AGE_FOR_SQUEUE = 300

Runner = Callable[..., subprocess.CompletedProcess]


class _KeepSlurmConfig:
    """Stands in for the ``subprocess`` module inside the jobstep plugin: the same module, but
    ``Popen`` puts this process's SLURM_CONF / SLURM_CONF_SERVER back into the child's env."""

    def __init__(self, module, environ: Mapping[str, str]):
        self._module, self._environ = module, environ

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)

    def Popen(self, *args, env=None, **kwargs):
        if env is not None:
            env = {**env, **{k: self._environ[k] for k in CONFIG_VARS if k in self._environ}}
        return self._module.Popen(*args, env=env, **kwargs)


def keep_slurm_config_in_jobsteps(plugin=None, environ: Mapping[str, str] | None = None) -> bool:
    """Make the jobstep plugin's srun keep SLURM_CONF; False where the plugin is not installed."""
    if plugin is None:
        try:
            import snakemake_executor_plugin_slurm_jobstep as plugin
        except ImportError:
            return False
    if not isinstance(plugin.subprocess, _KeepSlurmConfig):
        plugin.subprocess = _KeepSlurmConfig(
            plugin.subprocess, os.environ if environ is None else environ
        )
    return True


def slurm_config(run: Runner = subprocess.run) -> dict[str, str]:
    """``scontrol show config`` as a dict (empty when scontrol fails)."""
    result = run(["scontrol", "show", "config"], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        return {}
    pairs = (re.match(r"^(\S+)\s*=\s*(.*?)\s*$", line) for line in result.stdout.splitlines())
    return {m.group(1): m.group(2) for m in pairs if m}


def seconds(value: str) -> int | None:
    """A SLURM duration as scontrol prints it: "600 sec", "300", "1h" -> seconds."""
    match = re.match(r"^(\d+)\s*(h|hours?|m|min|s|sec|secs|seconds?)?$", value.strip())
    if not match:
        return None
    scale = {"h": 3600, "m": 60}.get((match.group(2) or "s")[0], 1)
    return int(match.group(1)) * scale


def status_command_for(config: Mapping[str, str], chosen: str) -> str:
    """The status command that works on this cluster, given the one the executor chose; raises
    (saying what to set) where none does."""
    if config.get("AccountingStorageType", "") != NO_ACCOUNTING:
        return chosen  # sacct answers from slurmdbd
    min_age = seconds(config.get("MinJobAge", "")) or 0
    if min_age >= MIN_JOB_AGE_FOR_SQUEUE:
        return "squeue"
    raise RuntimeError(
        f"this SLURM cluster keeps no accounting (AccountingStorageType={NO_ACCOUNTING}), so "
        "the executor cannot ask sacct whether a job ended, and squeue forgets a finished job "
        f"after MinJobAge={min_age} s. Set MinJobAge={MIN_JOB_AGE_FOR_SQUEUE} or more in "
        "slurm.conf (then `scontrol reconfigure`) and use `slurm-status-command: squeue` in the "
        "profile, or enable slurmdbd; otherwise Snakemake waits forever for finished jobs."
    )


def check_status_command(
    settings, log: Callable[[str], None] = print, run: Runner = subprocess.run
) -> None:
    """Set the SLURM executor's status command (``settings.status_command``) to one this cluster
    can answer; raise with what to set where there is none."""
    chosen = getattr(settings, "status_command", None) or "sacct"
    needed = status_command_for(slurm_config(run), chosen)
    if needed != chosen:
        log(f"SLURM accounting is off on this cluster: job states come from {needed}, not {chosen}")
        settings.status_command = needed


# The resources the preflight checks (pacs.preflight): the account and partition every job is
# submitted with, the per-node request of a training job and the network interface its Ray nodes,
# NCCL and Gloo use (pacs.verl_plugin.cluster.slurm), and the time limit of a generate job.
PREFLIGHT_RESOURCES = {
    "default-resources": ("slurm_partition", "slurm_account", "runtime"),
    "train_verl": ("gres", "cpus_per_task", "mem_mb", "runtime", "network_interface"),
    "generate": ("runtime",),
}


def resource_value(resource) -> Any:
    """A Snakemake resource's value as a job gets it: a profile's or --set-resources' string is a
    Python expression evaluated per job (a bare word such as a partition name stays a string)."""
    if not hasattr(resource, "is_evaluable"):
        return resource  # a plain value (Snakemake's API takes those too)
    if resource.is_evaluable():
        resource = resource.evaluate(
            wildcards={}, input=[], attempt=1, threads=1, rulename="preflight", async_run=None
        )
    value = resource.value
    return str(value) if isinstance(value, str) else value


def active_resources(resource_settings) -> dict:
    """What the running Snakemake will submit with, in a profile's shape (``default-resources``,
    ``set-resources``): the profile it was started with (``--profile``, ``--workflow-profile``)
    merged with the command line (``--default-resources``, ``--set-resources``), as Snakemake
    itself merged them into ``workflow.resource_settings``; only the keys the preflight reads."""
    defaults = resource_settings.default_resources or {}
    out: dict = {"default-resources": {}, "set-resources": {}}
    for name in PREFLIGHT_RESOURCES["default-resources"]:
        if name in defaults:
            out["default-resources"][name] = resource_value(defaults[name])
    for rule, names in PREFLIGHT_RESOURCES.items():
        given = (resource_settings.overwrite_resources or {}).get(rule)
        if rule == "default-resources" or not given:
            continue
        out["set-resources"][rule] = {n: resource_value(given[n]) for n in names if n in given}
    return out
