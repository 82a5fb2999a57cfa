"""Multi-node runs inside a SLURM allocation: read the allocation, run a Ray cluster across it.

Inside ``sbatch``/``salloc`` with N nodes, the launcher (running on the first node) reads the
job's real allocation from ``scontrol show job`` (its own step's ``SLURM_*`` variables describe
that one-node step only), starts the Ray head there and one Ray node on every other node with
``srun``, each under ``pacs.verl_plugin.cluster.ray_node`` (which stops its node's Ray processes on
a stop file or a signal), checks that the cluster holds every node and GPU of the job before verl
starts,
points verl at the head (``ray_kwargs.ray_init.address``), and stops every Ray node when training
ends, fails, or the job is signalled. No verl import here.

On multi-homed nodes Ray and NCCL may pick an interface the other nodes cannot reach, and hang.
``RAY_NETWORK_INTERFACE`` (this launcher's variable; neither verl nor Ray reads it; the DAG sets
it from the profile's ``set-resources.train_verl.network_interface``) names the one to use: every
Ray node binds to its own address on it (``--node-ip-address``, looked up on that node), and verl's
NCCL and Gloo get it as ``NCCL_SOCKET_IFNAME`` / ``GLOO_SOCKET_IFNAME``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

RAY_PORT = 6379
NODE_WAIT_S = 300.0
STOP_GRACE_S = 60.0
PROBE_TIMEOUT_S = 90.0  # ray.init against a head that is not up yet can hang
# Ray's own start-up deadlines, as RAY_<name> overrides of the raylet's config (read from the
# environment by every Ray process a node starts). Ray 2.60's raylet exits when its dashboard
# and runtime-env agents have not registered within agent_register_timeout_ms, and reaps
# workers that take over worker_register_timeout_seconds (60 s): both happen on a loaded host
# (Python imports of a cold environment, a 2-core CI machine). A longer deadline only delays
# the error of a Ray that is really broken. A value already set in the environment wins.
RAY_START_DEADLINES = {
    "RAY_agent_register_timeout_ms": "300000",
    "RAY_worker_register_timeout_seconds": "300",
}
# SLURM variables a nested srun may inherit: the job's identity (the set the
# snakemake-executor-plugin-slurm-jobstep keeps for its own srun) and where the cluster's
# configuration is (without it srun fails on clusters that rely on SLURM_CONF).
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
        "SLURM_CONF",
        "SLURM_CONF_SERVER",
    }
)

NETWORK_ENV = "RAY_NETWORK_INTERFACE"
SOCKET_IFNAME_VARS = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME")

Runner = Callable[..., subprocess.CompletedProcess]


@dataclass(frozen=True)
class SlurmAllocation:
    job_id: str
    hostnames: tuple[str, ...]
    gpus_per_node: int
    cpus_per_node: int | None = None  # the job's CPUs on each node
    head_address: str | None = None  # the head node's NodeAddr, as Slurm reaches it

    @property
    def nnodes(self) -> int:
        return len(self.hostnames)

    @property
    def head(self) -> str:
        return self.hostnames[0]

    @property
    def workers(self) -> tuple[str, ...]:
        return self.hostnames[1:]


# ---------------------------------------------------------------------------- allocation


def parse_gpu_count(value: str) -> int:
    """GPUs per node from SLURM's spellings: "4", "h100:4", "gpu:h200:2", "gpu:h200:8(IDX:0-7)"."""
    match = re.search(r"(\d+)(?:\(.*\))?\s*$", value.strip())
    if not match:
        raise ValueError(f"cannot read a GPU count from {value!r}")
    return int(match.group(1))


def count_ids(ranges: str) -> int:
    """How many ids a SLURM id list names: "0-15" -> 16, "0,2,4-7" -> 6."""
    total = 0
    for part in ranges.split(","):
        low, _, high = part.partition("-")
        total += int(high or low) - int(low) + 1
    return total


def _scontrol(args: list[str], run: Runner) -> str:
    result = run(["scontrol", *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"scontrol {' '.join(args)} failed: {result.stderr.strip()}")
    return result.stdout


def record_fields(record: str) -> dict[str, str]:
    """``key=value`` fields of one ``scontrol ... -o`` record (the first of repeated keys)."""
    fields: dict[str, str] = {}
    for key, value in re.findall(r"(?:^|\s)([\w/:.]+)=(\S*)", record):
        fields.setdefault(key, value)
    return fields


def expand_hostnames(nodelist: str, run: Runner = subprocess.run) -> list[str]:
    """``scontrol show hostnames NODELIST`` (expands "gpu[01-03,07]" etc.)."""
    hosts = [h.strip() for h in _scontrol(["show", "hostnames", nodelist], run).splitlines()]
    if not any(hosts):
        raise RuntimeError(f"scontrol returned no hostnames for {nodelist!r}")
    return [h for h in hosts if h]


def _per_node(record: str, job_id: str) -> tuple[int, int]:
    """(CPUs, GPUs) the job holds on each node, from the ``-d`` groups "Nodes=.. CPU_IDs=..
    Mem=.. GRES=..". Refuses uneven nodes: verl lays ranks out as nnodes x n_gpus_per_node."""
    groups = re.findall(r"\sNodes=(\S+) CPU_IDs=(\S+) Mem=\S+ GRES=(\S*)", record)
    if not groups:
        raise RuntimeError(f"scontrol show job -d {job_id} lists no per-node allocation")
    shapes = {
        (count_ids(cpus), parse_gpu_count(gres) if "gpu" in gres else 0)
        for _nodes, cpus, gres in groups
    }
    if len(shapes) > 1:
        raise RuntimeError(f"job {job_id} holds different CPUs/GPUs on its nodes: {groups}")
    cpus, gpus = shapes.pop()
    if gpus == 0:
        raise RuntimeError(
            f"job {job_id} holds no GPU (scontrol show job -d: {groups}); request them per node, "
            "e.g. sbatch --gres=gpu:8"
        )
    return cpus, gpus


def node_address(node: str, run: Runner = subprocess.run) -> str:
    """The node's ``NodeAddr`` (how Slurm itself reaches it; a NodeName need not resolve)."""
    fields = record_fields(_scontrol(["show", "node", "-o", node], run))
    if not fields.get("NodeAddr"):
        raise RuntimeError(f"scontrol show node {node} gives no NodeAddr")
    return fields["NodeAddr"]


def read_allocation(
    env: Mapping[str, str] | None = None, run: Runner = subprocess.run
) -> SlurmAllocation | None:
    """The job's allocation as slurmctld holds it, or None outside SLURM.

    Not from the environment: inside the jobstep's ``srun -n1 --nodes=N`` step srun shrinks the
    step to one node and SLURM_JOB_NODELIST / SLURM_NNODES then name that node only.
    """
    env = os.environ if env is None else env
    job_id = env.get("SLURM_JOB_ID")
    if not job_id:
        return None
    record = _scontrol(["show", "job", "-d", "-o", job_id], run)
    fields = record_fields(record)
    hosts = expand_hostnames(fields["NodeList"], run=run)
    if int(fields["NumNodes"]) != len(hosts):
        raise RuntimeError(
            f"job {job_id}: NumNodes={fields['NumNodes']} but NodeList={fields['NodeList']} "
            f"expands to {len(hosts)} hosts"
        )
    cpus, gpus = _per_node(record, job_id)
    return SlurmAllocation(
        job_id=job_id,
        hostnames=tuple(hosts),
        gpus_per_node=gpus,
        cpus_per_node=cpus,
        head_address=node_address(hosts[0], run=run),
    )


# ---------------------------------------------------------------------------- network


def interface_ipv4(name: str, addrs: Mapping | None = None) -> str:
    """This host's IPv4 address on network interface ``name``; raises, naming the interfaces
    there are, when it has no such interface or no IPv4 address on it."""
    import psutil

    addrs = psutil.net_if_addrs() if addrs is None else addrs
    where = f"{NETWORK_ENV}={name} (the profile's set-resources.train_verl.network_interface)"
    if name not in addrs:
        raise RuntimeError(
            f"{where}: no such network interface on {socket.gethostname()}; it has "
            f"{', '.join(sorted(addrs))}"
        )
    ips = [a.address for a in addrs[name] if a.family == socket.AF_INET]
    if not ips:
        raise RuntimeError(
            f"{where}: interface {name} has no IPv4 address on {socket.gethostname()}"
        )
    return ips[0]


def with_network_interface(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with verl's NCCL and Gloo on the interface ``RAY_NETWORK_INTERFACE`` names (when
    it names one): NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME, for every process Ray starts."""
    iface = env.get(NETWORK_ENV)
    return {**env, **{var: iface for var in SOCKET_IFNAME_VARS}} if iface else dict(env)


# ---------------------------------------------------------------------------- environment


def without_rocr(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` minus ROCR_VISIBLE_DEVICES where CUDA_VISIBLE_DEVICES is set: Slurm sets both
    (gres.conf without Flags=nvidia_gpu_env) and verl's workers refuse to start with both."""
    if env.get("CUDA_VISIBLE_DEVICES"):
        return {k: v for k, v in env.items() if k != "ROCR_VISIBLE_DEVICES"}
    return dict(env)


def ray_step_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for the Ray srun steps: ours minus the step settings we inherited.

    The launcher runs inside the jobstep's ``srun -n1 --nodes=...`` step, whose SLURM_NTASKS,
    SLURM_NNODES, SLURM_CPUS_PER_TASK, SLURM_GPUS... srun would read as defaults for our steps
    (one node, one task) and override what we ask for. The job's identity and SLURM_CONF are kept.
    """
    env = os.environ if env is None else env
    kept = {
        key: value
        for key, value in env.items()
        if not (
            (key.startswith("SLURM_") and key not in KEEP_SLURM_VARS)
            or key.startswith(("SRUN_", "SBATCH_"))
        )
    }
    return with_network_interface(with_ray_start_deadlines(with_ray_auth_mode(without_rocr(kept))))


def with_ray_start_deadlines(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with Ray's start-up deadlines raised (``RAY_START_DEADLINES``) where not set."""
    return {**RAY_START_DEADLINES, **env}


def with_ray_auth_mode(env: Mapping[str, str], home: Path | None = None) -> dict[str, str]:
    """``env`` with RAY_AUTH_MODE decided once, for our Ray nodes and every client of them alike.

    Ray 2.60 turns token authentication on for ``ray start`` when ~/.ray/auth_token exists and
    RAY_AUTH_MODE is unset, but a client connecting with ``ray.init(address=...)`` then stays
    'disabled' and is refused (InvalidAuthToken). An explicit RAY_AUTH_MODE is kept."""
    out = dict(env)
    if not out.get("RAY_AUTH_MODE"):
        token = (
            out.get("RAY_AUTH_TOKEN")
            or out.get("RAY_AUTH_TOKEN_PATH")
            or ((home or Path.home()) / ".ray" / "auth_token").is_file()
        )
        out["RAY_AUTH_MODE"] = "token" if token else "disabled"
    return out


def verl_env(env: Mapping[str, str], multi_node: bool) -> dict[str, str]:
    """verl's environment: one node starts its own local Ray (RAY_ADDRESS=local), never a
    cluster a killed job left in /tmp/ray/ray_current_cluster (a plain ray.init() would attach
    to that dead address and hang); several nodes get the address as an override."""
    # a local Ray starts its own raylet
    out = with_network_interface(with_ray_start_deadlines(without_rocr(env)))
    if not multi_node:
        out["RAY_ADDRESS"] = "local"
        return out
    return with_ray_auth_mode(out)


# ---------------------------------------------------------------------------- Ray steps


def _step_resources(alloc: SlurmAllocation) -> list[str]:
    """The whole node for a Ray step: its GPUs and (when known) its CPUs; without
    --cpus-per-task srun gives the step one CPU, and every Ray worker would share it."""
    cpus = [f"--cpus-per-task={alloc.cpus_per_node}"] if alloc.cpus_per_node else []
    return [*cpus, f"--gres=gpu:{alloc.gpus_per_node}"]


def _ray_node(
    alloc: SlurmAllocation, stop_file: Path, ray_args: list[str], interface: str | None = None
) -> list[str]:
    """``ray start --block`` under our supervisor, with the node's CPUs and GPUs as Ray's
    logical resources (Ray would count the whole machine's CPUs); with ``interface``, the
    supervisor binds the node to its own address on it."""
    cpus = [f"--num-cpus={alloc.cpus_per_node}"] if alloc.cpus_per_node else []
    bind = [f"--network-interface={interface}"] if interface else []
    return [
        sys.executable,
        "-m",
        "pacs.verl_plugin.cluster.ray_node",
        f"--stop-file={stop_file}",
        *bind,
        "--",
        "start",
        *ray_args,
        *cpus,
        f"--num-gpus={alloc.gpus_per_node}",
        "--disable-usage-stats",
        "--block",
    ]


def ray_head_command(
    alloc: SlurmAllocation,
    head_ip: str,
    stop_file: Path,
    port: int = RAY_PORT,
    interface: str | None = None,
) -> list[str]:
    """srun step that runs the Ray head on the first node."""
    return [
        "srun",
        "--nodes=1",
        "--ntasks=1",
        f"--nodelist={alloc.head}",
        "--overlap",
        *_step_resources(alloc),
        *_ray_node(
            alloc,
            stop_file,
            [
                "--head",
                f"--node-ip-address={head_ip}",
                f"--port={port}",
                "--include-dashboard=false",
            ],
            interface,
        ),
    ]


def ray_worker_command(
    alloc: SlurmAllocation,
    head_ip: str,
    stop_file: Path,
    port: int = RAY_PORT,
    interface: str | None = None,
) -> list[str] | None:
    """srun step that runs one Ray node on each other node; None for a single node."""
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
        *_ray_node(alloc, stop_file, [f"--address={head_ip}:{port}"], interface),
    ]


# ---------------------------------------------------------------------------- cluster check


@dataclass(frozen=True)
class RayNodes:
    """What the Ray cluster holds: alive nodes and the GPUs each of them offers."""

    gpus: tuple[float, ...]

    @property
    def count(self) -> int:
        return len(self.gpus)


PROBE = (
    "import json, ray; ray.init(address=%r, logging_level='ERROR'); "
    "print(json.dumps([n['Resources'].get('GPU', 0) for n in ray.nodes() if n['Alive']]))"
)


def probe_ray_nodes(address: str) -> RayNodes:
    """The alive nodes at ``address``, asked from a separate interpreter so the launcher itself
    never joins the cluster; no node when the head does not answer yet."""
    try:
        result = subprocess.run(
            [sys.executable, "-c", PROBE % address],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
            env=with_ray_auth_mode({k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}),
        )
        return RayNodes(tuple(json.loads(result.stdout.strip().splitlines()[-1])))
    except (subprocess.TimeoutExpired, ValueError, IndexError):
        return RayNodes(())


def check_ray_nodes(found: RayNodes, alloc: SlurmAllocation) -> None:
    """Refuse to train on less than the job holds: every node, each with all its GPUs."""
    short = [g for g in found.gpus if g < alloc.gpus_per_node]
    if found.count < alloc.nnodes or short:
        raise RuntimeError(
            f"the Ray cluster holds {found.count} node(s) with GPUs {list(found.gpus)}, but job "
            f"{alloc.job_id} has {alloc.nnodes} nodes ({', '.join(alloc.hostnames)}) with "
            f"{alloc.gpus_per_node} GPUs each; refusing to train on part of the allocation"
        )


def head_timeout_message(address: str, wait_s: float, interface: str | None) -> str:
    """Why a Ray head may not answer, and the setting for each cause."""
    reach = (
        f"{interface} (the profile's set-resources.train_verl.network_interface) may not reach it"
        if interface
        else "on a multi-homed node it may listen where this node cannot reach it: set "
        "set-resources.train_verl.network_interface in the profile"
    )
    return (
        f"the Ray head at {address} did not answer in {wait_s:.0f} s. Its `ray start` error, if "
        "any, is above (ray_node): a node start that timed out needs a longer "
        "set-resources.train_verl.ray_start_wait_s in the profile (PACS_RAY_START_WAIT_S, "
        f"pacs.verl_plugin.cluster.ray_start); {reach}"
    )


class RayCluster:
    """Context manager: start the Ray head and nodes with srun, wait for all nodes and check
    their GPUs, stop them on exit (normal end, exception, or a signal turned into an exception
    by the launcher): a stop file every node's supervisor watches, then the srun steps."""

    def __init__(
        self,
        alloc: SlurmAllocation,
        run_dir: Path,
        port: int = RAY_PORT,
        resolve: Callable[[str], str] | None = None,
        popen: Callable[..., subprocess.Popen] = subprocess.Popen,
        probe: Callable[[str], RayNodes] = probe_ray_nodes,
        wait_s: float = NODE_WAIT_S,
        poll_s: float = 5.0,
        env: Mapping[str, str] | None = None,
        stop_grace_s: float = STOP_GRACE_S,
    ):
        self.alloc, self.port = alloc, port
        self.step_env = ray_step_env(env)
        self.interface = self.step_env.get(NETWORK_ENV) or None
        # Ray wants an IP: the head's address on the chosen interface (the launcher runs on the
        # head node), else its NodeAddr, resolved (it may be a name or already an IP)
        self.head_ip = (
            interface_ipv4(self.interface)
            if self.interface
            else (resolve or socket.gethostbyname)(alloc.head_address or alloc.head)
        )
        # On the run folder, which every node sees (Snakemake needs a shared file system anyway)
        self.stop_file = Path(run_dir) / f"ray-stop-{alloc.job_id}"
        self._popen, self._probe = popen, probe
        self.wait_s, self.poll_s, self.stop_grace_s = wait_s, poll_s, stop_grace_s
        self.procs: list[subprocess.Popen] = []

    @property
    def address(self) -> str:
        return f"{self.head_ip}:{self.port}"

    def commands(self) -> list[list[str]]:
        args = (self.alloc, self.head_ip, self.stop_file, self.port, self.interface)
        cmds = [ray_head_command(*args)]
        worker = ray_worker_command(*args)
        return cmds + ([worker] if worker else [])

    def __enter__(self) -> RayCluster:  # noqa: PYI034 (typing.Self needs Python 3.11)
        self.stop_file.unlink(missing_ok=True)
        try:
            # The head first: nodes started together with it race its start-up, and on a busy
            # host a raylet that waits too long for its agents gives up.
            head, *workers = self.commands()
            self._start(head)
            if self._wait_for_nodes(1).count < 1:
                raise TimeoutError(head_timeout_message(self.address, self.wait_s, self.interface))
            for cmd in workers:
                self._start(cmd)
            check_ray_nodes(self._wait_for_nodes(self.alloc.nnodes), self.alloc)
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _start(self, cmd: list[str]) -> None:
        logger.info("starting: %s", " ".join(cmd))
        self.procs.append(self._popen(cmd, env=self.step_env))

    def _wait_for_nodes(self, want: int) -> RayNodes:
        """The cluster once ``want`` nodes are alive, or as it is at the deadline."""
        deadline = time.monotonic() + self.wait_s
        while True:
            dead = [p for p in self.procs if p.poll() is not None]
            if dead:
                raise RuntimeError(f"a Ray srun step exited early with code {dead[0].returncode}")
            found = self._probe(self.address)
            if found.count >= want or time.monotonic() > deadline:
                logger.info(
                    "Ray cluster at %s: %d/%d nodes, GPUs %s",
                    self.address,
                    found.count,
                    self.alloc.nnodes,
                    list(found.gpus),
                )
                return found
            time.sleep(self.poll_s)

    def stop(self) -> None:
        """Every node's supervisor stops its Ray processes when the stop file appears (srun
        does not pass SIGTERM on to its tasks reliably); srun steps still alive after the
        grace period are terminated, then killed."""
        if self.procs:
            self.stop_file.parent.mkdir(parents=True, exist_ok=True)
            self.stop_file.touch()
        deadline = time.monotonic() + self.stop_grace_s
        for proc in self.procs:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs.clear()
        self.stop_file.unlink(missing_ok=True)
