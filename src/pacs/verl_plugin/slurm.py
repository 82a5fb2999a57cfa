"""Multi-node runs inside a SLURM allocation: read the allocation, run a Ray cluster across it.

Inside ``sbatch``/``salloc`` with N nodes, the launcher (running on the first node) starts the Ray
head there and one Ray worker per other node with ``srun``, points verl at the head
(``ray_kwargs.ray_init.address``), sets ``trainer.nnodes`` / ``trainer.n_gpus_per_node`` from the
allocation, and stops every process it started when training ends, fails, or the job is signalled.
No verl import here.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

logger = logging.getLogger(__name__)

RAY_PORT = 6379
NODE_WAIT_S = 300.0
# SLURM variables a nested srun may inherit: the job's identity only (the same set the
# snakemake-executor-plugin-slurm-jobstep keeps for its own srun).
KEEP_SLURM_VARS = frozenset(
    {
        "SLURM_JOB_ID",
        "SLURM_JOBID",
        "SLURM_ARRAY_JOB_ID",
        "SLURM_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_MIN",
        "SLURM_ARRAY_TASK_MAX",
        "SLURM_ARRAY_TASK_STEP",
        "SLURM_CLUSTER_NAME",
        "SLURM_SUBMIT_DIR",
        "SLURM_SUBMIT_HOST",
    }
)


@dataclass(frozen=True)
class SlurmAllocation:
    job_id: str
    hostnames: tuple[str, ...]
    gpus_per_node: int
    cpus_per_node: int | None = None  # CPUs of the launcher's step (SLURM_CPUS_ON_NODE)

    @property
    def nnodes(self) -> int:
        return len(self.hostnames)

    @property
    def head(self) -> str:
        return self.hostnames[0]

    @property
    def workers(self) -> tuple[str, ...]:
        return self.hostnames[1:]


def parse_gpu_count(value: str) -> int:
    """GPUs per node from SLURM's spellings: "4", "h100:4", "gpu:h100:4", "gpu:4(IDX:0-3)"."""
    match = re.search(r"(\d+)(?:\(.*\))?\s*$", value.strip())
    if not match:
        raise ValueError(f"cannot read a GPU count from {value!r}")
    return int(match.group(1))


def expand_hostnames(
    nodelist: str, run: Callable[..., subprocess.CompletedProcess] = subprocess.run
) -> list[str]:
    """``scontrol show hostnames NODELIST`` (expands "gpu[01-03,07]" etc.)."""
    result = run(
        ["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True, check=True
    )
    hosts = [line.strip() for line in result.stdout.splitlines() if line.strip()]
    if not hosts:
        raise RuntimeError(f"scontrol returned no hostnames for {nodelist!r}")
    return hosts


def _gpus_per_node(env: Mapping[str, str]) -> int:
    for key in ("SLURM_GPUS_ON_NODE", "SLURM_GPUS_PER_NODE"):
        if env.get(key):
            return parse_gpu_count(env[key])
    if env.get("SLURM_JOB_GPUS"):  # comma-separated GPU indices on this node
        return len([g for g in env["SLURM_JOB_GPUS"].split(",") if g.strip()])
    raise RuntimeError(
        "the SLURM allocation does not say how many GPUs each node has (SLURM_GPUS_ON_NODE, "
        "SLURM_GPUS_PER_NODE); request GPUs with --gpus-per-node or pass --gpus-per-node"
    )


def read_allocation(
    env: Mapping[str, str] | None = None,
    run: Callable[..., subprocess.CompletedProcess] = subprocess.run,
) -> SlurmAllocation | None:
    """The current allocation, or None outside SLURM. Raises when the variables disagree."""
    env = os.environ if env is None else env
    job_id = env.get("SLURM_JOB_ID")
    if not job_id:
        return None
    nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
    if not nodelist:
        raise RuntimeError("SLURM_JOB_ID is set but SLURM_JOB_NODELIST is not")
    hosts = expand_hostnames(nodelist, run=run)
    declared = env.get("SLURM_JOB_NUM_NODES") or env.get("SLURM_NNODES")
    if declared and int(declared) != len(hosts):
        raise RuntimeError(
            f"SLURM_JOB_NUM_NODES={declared} but the nodelist expands to {len(hosts)} hosts: {hosts}"
        )
    cpus = env.get("SLURM_CPUS_ON_NODE")
    return SlurmAllocation(
        job_id=job_id,
        hostnames=tuple(hosts),
        gpus_per_node=_gpus_per_node(env),
        cpus_per_node=int(cpus) if cpus and cpus.isdigit() else None,
    )


def ray_step_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for the Ray srun steps: ours minus the step settings we inherited.

    The launcher runs inside the jobstep's ``srun -n1 --nodes=...`` step, whose SLURM_NTASKS,
    SLURM_NNODES, SLURM_CPUS_PER_TASK, SLURM_GPUS... srun would read as defaults for our steps
    (one node, one task) and override what we ask for. Only the job's identity is kept.
    """
    env = os.environ if env is None else env
    return {
        key: value
        for key, value in env.items()
        if not (
            (key.startswith("SLURM_") and key not in KEEP_SLURM_VARS)
            or key.startswith(("SRUN_", "SBATCH_"))
        )
    }


def _step_resources(alloc: SlurmAllocation) -> list[str]:
    """The whole node for a Ray step: its GPUs and (when known) its CPUs; without
    --cpus-per-task srun gives the step one CPU, and every Ray worker would share it."""
    cpus = [f"--cpus-per-task={alloc.cpus_per_node}"] if alloc.cpus_per_node else []
    return [*cpus, f"--gres=gpu:{alloc.gpus_per_node}"]


def ray_head_command(alloc: SlurmAllocation, head_ip: str, port: int = RAY_PORT) -> list[str]:
    """srun step that runs the Ray head on the first node, in the foreground (``--block``)."""
    return [
        "srun",
        "--nodes=1",
        "--ntasks=1",
        f"--nodelist={alloc.head}",
        "--overlap",
        *_step_resources(alloc),
        "ray",
        "start",
        "--head",
        f"--node-ip-address={head_ip}",
        f"--port={port}",
        f"--num-gpus={alloc.gpus_per_node}",
        "--block",
    ]


def ray_worker_command(
    alloc: SlurmAllocation, head_ip: str, port: int = RAY_PORT
) -> list[str] | None:
    """srun step that runs one Ray worker on each other node; None for a single node."""
    if not alloc.workers:
        return None
    count = len(alloc.workers)
    return [
        "srun",
        f"--nodes={count}",
        f"--ntasks={count}",
        "--ntasks-per-node=1",
        f"--nodelist={','.join(alloc.workers)}",
        "--overlap",
        *_step_resources(alloc),
        "ray",
        "start",
        f"--address={head_ip}:{port}",
        f"--num-gpus={alloc.gpus_per_node}",
        "--block",
    ]


def count_alive_nodes(address: str) -> int:
    """Alive nodes of the Ray cluster at ``address``, asked from a separate interpreter so the
    launcher itself never joins the cluster."""
    code = "import ray; ray.init(address=%r, logging_level='ERROR'); print(sum(n['Alive'] for n in ray.nodes()))"
    result = subprocess.run(
        [sys.executable, "-c", code % address],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if result.returncode != 0:
        return 0
    try:
        return int(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return 0


class RayCluster:
    """Context manager: start the Ray head and workers with srun, wait for all nodes, stop them
    on exit (normal end, exception, or a signal turned into an exception by the launcher)."""

    def __init__(
        self,
        alloc: SlurmAllocation,
        port: int = RAY_PORT,
        resolve: Callable[[str], str] | None = None,
        popen: Callable[..., subprocess.Popen] = subprocess.Popen,
        count_nodes: Callable[[str], int] = count_alive_nodes,
        wait_s: float = NODE_WAIT_S,
        poll_s: float = 5.0,
        env: Mapping[str, str] | None = None,
    ):
        self.alloc, self.port = alloc, port
        self.head_ip = (resolve or socket.gethostbyname)(alloc.head)  # Ray wants the head's IP
        self._popen, self._count_nodes = popen, count_nodes
        self.wait_s, self.poll_s = wait_s, poll_s
        self.procs: list[subprocess.Popen] = []
        self.step_env = ray_step_env(env)

    @property
    def address(self) -> str:
        return f"{self.head_ip}:{self.port}"

    def commands(self) -> list[list[str]]:
        cmds = [ray_head_command(self.alloc, self.head_ip, self.port)]
        worker = ray_worker_command(self.alloc, self.head_ip, self.port)
        return cmds + ([worker] if worker else [])

    def __enter__(self) -> RayCluster:  # noqa: PYI034 (typing.Self needs Python 3.11)
        try:
            for cmd in self.commands():
                logger.info("starting: %s", " ".join(cmd))
                self.procs.append(self._popen(cmd, env=self.step_env))
            self._wait_for_nodes()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _wait_for_nodes(self) -> None:
        deadline = time.monotonic() + self.wait_s
        while True:
            dead = [p for p in self.procs if p.poll() is not None]
            if dead:
                raise RuntimeError(f"a Ray srun step exited early with code {dead[0].returncode}")
            alive = self._count_nodes(self.address)
            if alive >= self.alloc.nnodes:
                logger.info(
                    "Ray cluster at %s has %d/%d nodes", self.address, alive, self.alloc.nnodes
                )
                return
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"only {alive}/{self.alloc.nnodes} Ray nodes joined within {self.wait_s:.0f} s"
                )
            time.sleep(self.poll_s)

    def stop(self, grace_s: float = 30.0) -> None:
        """Terminate the srun steps we started (srun forwards the signal to ``ray start --block``,
        which stops its node), then kill any that do not exit in time."""
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()
