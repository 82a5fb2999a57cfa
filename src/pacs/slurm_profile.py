"""What ``snakemake --profile slurm`` needs from the cluster beyond the SLURM executor plugins.

Three gaps of snakemake-executor-plugin-slurm 2.8 / -slurm-jobstep 0.6, fixed here from the
workflow (the Snakefile calls these; no plugin is patched on disk; 2.8.0 is the newest release):

- ``keep_slurm_config_in_jobsteps``: inside the job, the jobstep plugin starts the rule with
  ``srun`` in an environment stripped of every ``SLURM_*`` variable but the job's identity, so
  on clusters that find their configuration through ``SLURM_CONF`` (or ``SLURM_CONF_SERVER``)
  that srun fails: ``Could not establish a configuration source``. We put them back.
- ``check_status_command``: without accounting (no slurmdbd) ``sacct`` cannot report job states;
  the executor then drops finished jobs after its status attempts and Snakemake waits forever.
  Such a cluster needs the executor's ``squeue`` status command, and a ``MinJobAge`` long enough
  that squeue still lists a job when the executor next asks (its status checks can be 180 s
  apart). We switch to squeue when that holds and refuse to start, saying what to set, when not.
- ``read_ended_states``: with accounting, sacct reports a cancelled job as ``CANCELLED by <uid>``
  and a preempted one as ``PREEMPTED``; the executor matches neither (it compares the whole
  string against its failure states, and waits on a preemption for SLURM to resume it), so the
  job counts as running forever: no retry, and Snakemake never ends. We give it the bare state.

And two things the workflow asks of the profile: ``active_resources`` (what the DAG's preflight
checks: the resources this Snakemake submits with) and ``PendingWatch`` (a job that cannot start,
e.g. on a dead node, is named in Snakemake's log with the scheduler's pending reason).
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
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


# ------------------------------------------------------------------ what sacct says a job is

# sacct's states that end a job without completing it and that the executor 2.8.0 counts as
# failed when spelled bare; PREEMPTED is not among them (it waits for SLURM to resume the job,
# which sacct would then report as REQUEUED or PENDING, not PREEMPTED).
FAILED_AS = {"PREEMPTED": "CANCELLED"}


def ended_state(state: str, requeue: bool = False) -> str:
    """The state the executor understands for one sacct state: "CANCELLED by 0" -> "CANCELLED"
    (the "by <uid>" names who cancelled it); "PREEMPTED" -> "CANCELLED" so the rule fails and
    Snakemake's retries resubmit it, unless the executor's ``requeue`` leaves that to SLURM."""
    match = re.match(r"[A-Z_]+", state.strip())
    bare = match.group(0) if match else state.strip()
    return bare if requeue else FAILED_AS.get(bare, bare)


class _EndedStates:
    """Stands in for the executor's ``query_job_status``: the same query, each state passed
    through ``ended_state``; a state it changed is logged once per job, as sacct gave it."""

    def __init__(self, query, requeue: bool):
        self.query, self.requeue, self.told = query, requeue, set()

    async def __call__(self, command: str, logger):
        states, seconds = await self.query(command, logger)
        if states is None:
            return states, seconds
        out = {job: ended_state(state, self.requeue) for job, state in states.items()}
        for job in sorted(j for j in out if out[j] != states[j] and j not in self.told):
            self.told.add(job)
            logger.warning(f"SLURM job {job} ended as {states[job]!r}: counted as {out[job]}")
        return out, seconds


def read_ended_states(settings, plugin=None) -> bool:
    """Make the SLURM executor see a cancelled or preempted job as failed (``ended_state``);
    False where the plugin is not installed. Raises where the plugin no longer has the function
    it calls for job states (a release other than the locked 2.8.0): say so, not hang."""
    if plugin is None:
        try:
            import snakemake_executor_plugin_slurm as plugin
        except ImportError:
            return False
    query = getattr(plugin, "query_job_status", None)
    if query is None:
        raise RuntimeError(
            "snakemake-executor-plugin-slurm has no query_job_status: pacs.slurm_profile."
            "read_ended_states is written for 2.8.0 (envs/gpu/requirements.lock); install that"
        )
    if not isinstance(query, _EndedStates):
        plugin.query_job_status = _EndedStates(query, bool(getattr(settings, "requeue", False)))
    return True


# The resources the preflight checks (pacs.preflight): the account and partition every job is
# submitted with, the per-node request of a training job, the network interface its Ray nodes,
# NCCL and Gloo use (pacs.verl_plugin.cluster.slurm) and its Ray start-up wait, the time limit of a
# generate job, and the GPU request of every GPU rule.
PREFLIGHT_RESOURCES = {
    "default-resources": ("slurm_partition", "slurm_account", "runtime"),
    "train_verl": (
        "gres",
        "cpus_per_task",
        "mem_mb",
        "runtime",
        "network_interface",
        "verl_device",
        "ray_start_wait_s",
    ),
    "generate": ("runtime", "gpu", "gpus", "gres"),
    "diversity": ("gpu", "gpus", "gres"),
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


# ------------------------------------------------------------------ why a job still waits

# Pending reasons that need nobody's action: the job's turn, free resources, its start time or a
# dependency. Any other (a down or drained node, a partition or account limit) is shown.
ROUTINE_PENDING = frozenset(
    {"None", "Priority", "Resources", "BeginTime", "Dependency", "JobArrayTaskLimit"}
)
PENDING_POLL_S = 60.0


def pending_jobs(workdir: str, run: Runner = subprocess.run) -> dict[str, tuple[str, str]]:
    """job id -> (comment, reason) of this user's pending jobs submitted from ``workdir``, as
    ``squeue`` gives them (%k: the SLURM executor puts the rule there; %r: why it waits)."""
    result = run(
        ["squeue", "--me", "-h", "-t", "PENDING", "-o", "%i|%k|%r|%Z"],
        capture_output=True,
        text=True,
        check=False,
    )
    here = os.path.realpath(workdir)
    jobs = {}
    for line in result.stdout.splitlines():
        parts = line.split("|")
        if len(parts) == 4 and os.path.realpath(parts[3]) == here:
            jobs[parts[0]] = (parts[1], parts[2])
    return jobs


def pending_hint(job: str, reason: str) -> str:
    if "ReqNodeNotAvail" in reason or "NodeDown" in reason:
        return (
            "a node it needs is down or drained: `sinfo -R` says why, "
            f"`scontrol show job {job}` which"
        )
    return f"`scontrol show job {job}` says more"


class PendingWatch:
    """While Snakemake waits for its SLURM jobs it says nothing about one that cannot start: this
    logs, once per job and reason, why a job of this workflow is still pending when the reason
    is not routine (``ROUTINE_PENDING``), every ``poll_s`` seconds in a daemon thread."""

    def __init__(
        self, workdir: str, log: Callable[[str], None], run: Runner = subprocess.run
    ) -> None:
        self.workdir, self.log, self.run = workdir, log, run
        self.seen: dict[str, str] = {}
        self.stopped = threading.Event()

    def check(self) -> list[str]:
        """Log (and return) what changed since the last check."""
        lines = []
        for job, (comment, reason) in pending_jobs(self.workdir, self.run).items():
            if self.seen.get(job) == reason:
                continue
            self.seen[job] = reason
            if reason.split(",")[0] not in ROUTINE_PENDING:
                lines.append(
                    f"SLURM job {job} ({comment}) is pending: {reason} "
                    f"(squeue -j {job} -o %r); {pending_hint(job, reason)}"
                )
        for line in lines:
            self.log(line)
        return lines

    def start(self, poll_s: float = PENDING_POLL_S) -> threading.Thread:
        def loop() -> None:
            while not self.stopped.wait(poll_s):
                try:
                    self.check()
                except (OSError, subprocess.SubprocessError) as err:  # squeue gone: keep quiet
                    self.log(f"pending-reason watch: squeue failed ({err}); stopped")
                    return

        thread = threading.Thread(target=loop, name="pacs-pending-watch", daemon=True)
        thread.start()
        return thread
