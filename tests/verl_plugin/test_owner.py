"""pacs.verl_plugin.cluster.owner: a launch's leftovers are stopped, a neighbour's are not."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil

from pacs.verl_plugin.cluster.owner import OWNER_ENV, owned_by, owned_env, stop_owned

# A parent that starts a grandchild in a session of its own (as a daemon would) and exits at once:
# the grandchild is re-parented to init, out of reach of any process-tree walk.
ORPHAN = (
    "import subprocess, sys; "
    "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], "
    "start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print(p.pid)"
)


def _start_orphan(env: dict[str, str]) -> int:
    out = subprocess.run(
        [sys.executable, "-c", ORPHAN], env=env, capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip())


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_the_owners_orphans_are_stopped_and_a_neighbours_are_kept():
    neighbour = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with owned_env() as outer, owned_env(outer) as env:
            outer_token, token = env[OWNER_ENV].split(":")  # nested marks: both owners see it
            assert outer[OWNER_ENV] == outer_token and outer_token != os.environ.get(OWNER_ENV)
            orphan = _start_orphan(env)
            deadline = time.monotonic() + 10
            while not owned_by(token) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert [p.pid for p in owned_by(token)] == [p.pid for p in owned_by(outer_token)]
            assert [p.pid for p in owned_by(token)] == [orphan]
        deadline = time.monotonic() + 10
        while _alive(orphan) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(orphan)
        assert neighbour.poll() is None  # not ours: still running
    finally:
        neighbour.kill()
        neighbour.wait()


def test_stop_owned_of_an_unused_token_stops_nothing():
    assert stop_owned("no-such-owner", grace_s=0.1) == 0
