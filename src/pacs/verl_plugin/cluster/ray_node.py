"""One Ray node of a multi-node run, stopped cleanly: ``ray ARGS`` (``start ... --block``) in the
foreground until a stop file appears or the task is signalled; then every process of this Ray
node (the ``ray start`` process and its descendants: GCS, raylet, workers) gets SIGTERM, and
SIGKILL after a grace period; the head's address file goes if it still names this cluster.

    python -m pacs.verl_plugin.cluster.ray_node --stop-file PATH [--network-interface IF] \
        -- start --head ... --block

With ``--network-interface`` the node binds to its own IPv4 address on that interface (looked up
here, on the node the srun step placed us on): ``--node-ip-address`` of ``ray start``.

Why not ``ray start --block`` alone under srun: srun does not pass SIGTERM on to it (its tasks
end ``Killed``), and ``/tmp/ray/ray_current_cluster`` then outlives the job, so a later plain
``ray.init()`` on that host attaches to the dead address. Why not ``ray stop``: it stops every
Ray process on the host, a neighbouring job's too. Started by ``slurm.RayCluster``.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from pacs.verl_plugin.cluster.owner import stop_processes
from pacs.verl_plugin.cluster.ray_start import START_WAIT_ENV, start_wait_s
from pacs.verl_plugin.cluster.slurm import (
    interface_ipv4,
    with_ray_start_deadlines,
    without_rocr,
)

GRACE_S = 20.0
START_ATTEMPTS = 3
POLL_S = 0.5
ADDRESS_FILE = Path("/tmp/ray/ray_current_cluster")  # Ray's default temp dir


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    """Our options before ``--``, the arguments of ``ray`` after it."""
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stop-file", type=Path, required=True, help="stop when this appears")
    parser.add_argument("--network-interface", help="bind this Ray node to its address on it")
    return parser.parse_args(argv[:split]), argv[split + 1 :]


def stop_tree(root: psutil.Process, grace_s: float | None = None) -> None:
    """SIGTERM to ``root`` and all its descendants at once (as ``ray stop`` does to the processes
    it finds), SIGKILL to those still alive after ``grace_s``."""
    try:
        procs = [*root.children(recursive=True), root]
    except psutil.NoSuchProcess:
        return
    stop_processes(procs, GRACE_S if grace_s is None else grace_s)


def bound_to(ray_args: list[str], ip: str) -> list[str]:
    """``ray_args`` with ``--node-ip-address=ip`` in place of any other."""
    kept = [a for a in ray_args if not a.startswith("--node-ip-address=")]
    return [*kept, f"--node-ip-address={ip}"]


def head_port(ray_args: list[str]) -> str | None:
    """The GCS port of a head node (``ray start --head``); None for the other nodes."""
    if "--head" not in ray_args:
        return None
    ports = [a.split("=", 1)[1] for a in ray_args if a.startswith("--port=")]
    return ports[0] if ports else "6379"


def drop_address_file(port: str | None, since: float, path: Path | None = None) -> None:
    """Remove Ray's "last cluster" file when our head wrote it: our port, written after we
    started (Ray may write the host's own IP there rather than --node-ip-address)."""
    path = ADDRESS_FILE if path is None else path
    try:
        if port and path.stat().st_mtime >= since and path.read_text().strip().endswith(f":{port}"):
            path.unlink()
    except FileNotFoundError:
        pass


def ray_command() -> list[str]:
    """Ray's CLI of this interpreter's environment (srun's PATH may name another one), with the
    start-up wait of ``PACS_RAY_START_WAIT_S`` (``ray_start``) in place of Ray's fixed 30 s."""
    return [sys.executable, "-m", "pacs.verl_plugin.cluster.ray_start"]


def run_node(cmd: list[str], stop_file: Path, received: list[int]) -> int | None:
    """Run ``cmd`` until it exits (its code) or we are told to stop (None, after stopping it)."""
    # slurmstepd sets ROCR_VISIBLE_DEVICES beside CUDA_VISIBLE_DEVICES in this task's own
    # environment (gres.conf without Flags=nvidia_gpu_env); Ray's workers would inherit both.
    proc = subprocess.Popen(cmd, env=with_ray_start_deadlines(without_rocr(os.environ)))
    while proc.poll() is None and not received and not stop_file.exists():
        time.sleep(POLL_S)
    code = proc.poll()
    if code is None:
        why = f"signal {received[0]}" if received else f"{stop_file} appeared"
        print(f"ray_node: {why}: stopping this Ray node", file=sys.stderr, flush=True)
        stop_tree(psutil.Process(proc.pid))
    return code


def main(argv: list[str] | None = None) -> int:
    args, ray_args = parse_args(argv)
    if args.network_interface:
        try:
            ray_args = bound_to(ray_args, interface_ipv4(args.network_interface))
        except RuntimeError as err:
            print(f"ray_node: {err}", file=sys.stderr, flush=True)
            return 2
    received: list[int] = []
    previous = {
        sig: signal.signal(sig, lambda signum, _frame: received.append(signum))
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1)
    }
    started = time.time() - 1  # file times may be coarser than the clock
    try:
        for attempt in range(1, START_ATTEMPTS + 1):
            # A raylet whose agents miss even the raised deadline (RAY_START_DEADLINES, a very
            # busy host) exits: `ray start` then fails, and is tried again.
            code = run_node([*ray_command(), *ray_args], args.stop_file, received)
            if code in (None, 0) or received or args.stop_file.exists():
                break
            print(
                f"ray_node: ray start failed ({code}), attempt {attempt}/{START_ATTEMPTS}: "
                f"its error is above; a node that timed out during start-up needs a longer "
                f"{START_WAIT_ENV} (now {start_wait_s():g} s), one that cannot bind its address "
                "the profile's set-resources.train_verl.network_interface",
                file=sys.stderr,
                flush=True,
            )
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    drop_address_file(head_port(ray_args), started)
    return code or 0


if __name__ == "__main__":
    raise SystemExit(main())
