"""The processes one launch started, found by a mark in their environment, and stopped.

``ray stop --force`` stops every Ray process on the host: another user's cluster, or a test's
running beside ours. A launch that starts its own local Ray (verl's ``ray.init()`` with
``RAY_ADDRESS=local``) runs instead with ``PACS_PROCESS_OWNER=<token>`` in its environment. Every
process it starts inherits the mark (GCS, raylet, Ray's workers, vLLM's engine), so
:func:`stop_owned` finds exactly those, even the ones re-parented to init when the launch died.
Marks nest (``outer:inner``): a test that runs ``make verl-smoke``'s launcher, which marks each of
its parts, can still stop everything below it when the launcher itself is killed.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psutil

OWNER_ENV = "PACS_PROCESS_OWNER"
GRACE_S = 10.0


def new_token() -> str:
    """A mark no other launch on this host carries."""
    return f"{os.getpid()}-{uuid.uuid4().hex}"


def owned_by(token: str) -> list[psutil.Process]:
    """Every live process of this user whose environment carries ``token`` (this one excluded)."""
    found = []
    for proc in psutil.process_iter():
        if proc.pid == os.getpid():
            continue
        try:
            if token in proc.environ().get(OWNER_ENV, "").split(":"):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def stop_owned(token: str, grace_s: float = GRACE_S) -> int:
    """SIGTERM to every process marked ``token``, SIGKILL to those alive after ``grace_s``;
    how many there were."""
    procs = owned_by(token)
    stop_processes(procs, grace_s)
    return len(procs)


def stop_processes(procs: list[psutil.Process], grace_s: float = GRACE_S) -> None:
    """SIGTERM to every one of ``procs`` at once (as ``ray stop`` does), SIGKILL to those still
    alive after ``grace_s``."""
    for proc in procs:
        try:
            proc.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    for proc in alive:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=5)


@contextmanager
def owned_env(env: dict[str, str] | None = None) -> Iterator[dict[str, str]]:
    """``env`` (default: this process's) with a fresh owner mark added to any it carries; on
    leaving, whatever the processes started with it left running is stopped."""
    env = dict(os.environ if env is None else env)
    token = new_token()
    env[OWNER_ENV] = f"{env[OWNER_ENV]}:{token}" if env.get(OWNER_ENV) else token
    try:
        yield env
    finally:
        stop_owned(token)
