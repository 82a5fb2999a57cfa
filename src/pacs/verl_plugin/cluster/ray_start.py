"""Ray's start-up wait as a setting, and a start that fails saying why and what to change.

Ray 2.60 waits a fixed 30 s (``raylet_start_wait_time_s`` in ``ray._private.node.Node``, no
override) for a new node's raylet to register with the GCS, then fails with "The current node
timed out during startup"; on a loaded host (cold imports, a busy 2-core machine) that failed
3 of 5 training jobs. Ray polls ``ray._private.services.get_node`` in that loop:
:func:`install` makes that lookup itself wait up to ``PACS_RAY_START_WAIT_S`` seconds (default
300, the same as ``slurm.RAY_START_DEADLINES``), and past it raise :class:`RayStartTimeout`,
which names the cause and the setting. A raylet that has already died ends the wait at once
(:class:`RayletDied`, with its exit code and log): under load Ray 2.60's raylet can crash while
it waits for its dashboard agent, and nothing would register for the whole wait. Installed where
Ray nodes start: verl's driver (its ``ray.init`` of a one-node run; ``pacs.verl_plugin.register``)
and our ``ray start`` of a multi-node run (``python -m pacs.verl_plugin.cluster.ray_start
start ...`` is ``ray start ...`` with it; ``ray_node`` runs that).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

START_WAIT_ENV = "PACS_RAY_START_WAIT_S"
START_WAIT_S = 300.0
POLL_S = 0.5


class RayStartTimeout(Exception):
    """Not a RuntimeError: Ray's loop retries those; this one must end the start."""


class RayletDied(RayStartTimeout):
    """The node's raylet exited before it registered: waiting longer cannot help."""


def start_wait_s(env: Mapping[str, str] = os.environ) -> float:
    """The wait ``PACS_RAY_START_WAIT_S`` sets (seconds), else :data:`START_WAIT_S`."""
    value = env.get(START_WAIT_ENV, "").strip()
    if not value:
        return START_WAIT_S
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if seconds <= 0:
        raise ValueError(f"{START_WAIT_ENV}={value!r}: give a number of seconds > 0")
    return seconds


def starting_raylet() -> tuple[object, Path | None] | None:
    """The raylet process (a ``Popen``) and log folder of the Ray node whose start called us:
    the ``self`` of the calling ``Node.__init__`` frame, found by its ``all_processes``; None
    when the caller is not a starting node (a node that only connects starts no raylet)."""
    frame = sys._getframe(1)
    while frame is not None:
        node = frame.f_locals.get("self")
        raylets = getattr(node, "all_processes", {}).get("raylet") if node is not None else None
        if raylets:
            logs = getattr(node, "get_logs_dir_path", None)
            return raylets[0].process, Path(logs()) if callable(logs) else None
        frame = frame.f_back
    return None


def patient(
    get_node: Callable,
    wait_s: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    find_raylet: Callable[[], tuple[object, Path | None] | None] = starting_raylet,
) -> Callable:
    """``get_node`` retried while it raises RuntimeError (the node has not registered yet), for
    up to ``wait_s`` seconds from the first call; then :class:`RayStartTimeout`. If the starting
    node's raylet (``find_raylet``) has exited, :class:`RayletDied` at once."""
    deadline: list[float] = []

    def wait_for_node(gcs_address, node_id):
        deadline[:] = deadline or [clock() + wait_s]
        raylet = find_raylet()
        while True:
            try:
                return get_node(gcs_address, node_id)
            except RuntimeError as err:
                if raylet is not None and raylet[0].poll() is not None:
                    raise RayletDied(raylet_died_message(raylet[0], raylet[1], err)) from err
                if clock() >= deadline[0]:
                    raise RayStartTimeout(timeout_message(wait_s, err)) from err
            sleep(POLL_S)

    wait_for_node.pacs_patient = True
    return wait_for_node


def timeout_message(wait_s: float, err: Exception) -> str:
    return (
        f"Ray's raylet did not register with the GCS within {wait_s:g} s ({err}): the node "
        "is overloaded (imports of a cold environment, too many processes for its cores) or its "
        "raylet died (see /tmp/ray/session_latest/logs/raylet.err). Raise the wait: "
        f"ray_start_wait_s: {2 * wait_s:g} under set-resources: train_verl: in the SLURM profile, "
        f"or export {START_WAIT_ENV}={2 * wait_s:g} where snakemake (or the launcher) runs"
    )


def raylet_died_message(process, logs: Path | None, err: Exception) -> str:
    where = logs / "raylet.err" if logs else "/tmp/ray/session_latest/logs/raylet.err"
    return (
        f"Ray's raylet (pid {process.pid}) exited with code {process.returncode} before it "
        f"registered with the GCS ({err}); its last words are in {where} and raylet.out beside "
        "it. On a loaded host it can die waiting for its dashboard agent: rerun with fewer "
        "processes on the node"
    )


def install(env: Mapping[str, str] = os.environ) -> bool:
    """Make this process's Ray wait ``start_wait_s`` for its node; False without Ray."""
    try:
        from ray._private import services
    except ImportError:
        return False
    if not getattr(services.get_node, "pacs_patient", False):
        services.get_node = patient(services.get_node, start_wait_s(env))
    return True


def main(argv: list[str] | None = None) -> int:
    """``ray ARGS`` with :func:`install` first (``ray start`` runs Ray's node start in-process)."""
    install()
    from ray.scripts.scripts import main as ray_main

    sys.argv = ["ray", *(sys.argv[1:] if argv is None else argv)]
    try:
        ray_main()
    except RayStartTimeout as err:
        print(f"ray start: {err}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
