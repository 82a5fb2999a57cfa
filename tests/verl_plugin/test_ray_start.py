"""Ray's node start-up wait as a setting (pacs.verl_plugin.cluster.ray_start): Ray 2.60 polls
``services.get_node`` for a fixed 30 s; ours waits PACS_RAY_START_WAIT_S and then names the
cause and the setting."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from pacs.verl_plugin.cluster import ray_start, slurm


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _registers_after(seconds: float, clock: _Clock):
    def get_node(gcs_address, node_id):
        if clock.now < seconds:
            raise RuntimeError(f"node {node_id} not found")
        return {"NodeID": node_id}

    return get_node


def test_a_node_slower_than_rays_30_s_starts_within_the_setting():
    clock = _Clock()
    get = ray_start.patient(_registers_after(45, clock), 60, clock, clock.sleep)
    assert get("gcs:6379", "n1") == {"NodeID": "n1"} and 45 <= clock.now < 46


def test_past_the_setting_the_start_fails_naming_the_cause_and_the_setting():
    clock = _Clock()
    get = ray_start.patient(_registers_after(100, clock), 60, clock, clock.sleep)
    with pytest.raises(ray_start.RayStartTimeout) as err:
        get("gcs:6379", "n1")
    assert not isinstance(err.value, RuntimeError)  # Ray's own loop would swallow a RuntimeError
    message = str(err.value)
    assert "did not register with the GCS within 60 s (node n1 not found)" in message
    assert "export PACS_RAY_START_WAIT_S=120" in message and "raylet.err" in message


class _StartingNode:
    """Stands for Ray's ``Node`` while its ``__init__`` polls: a raylet process in
    ``all_processes`` and a log folder, found by ``ray_start.starting_raylet``."""

    def __init__(self, raylet: subprocess.Popen, logs: Path):
        self.all_processes = {"raylet": [SimpleNamespace(process=raylet)]}
        self._logs = logs

    def get_logs_dir_path(self) -> str:
        return str(self._logs)

    def start(self, get_node):
        return get_node("gcs:6379", "n1")


def test_a_dead_raylet_ends_the_wait_at_once_with_its_exit_code_and_log(tmp_path):
    raylet = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    raylet.wait()
    clock = _Clock()
    get = ray_start.patient(_registers_after(100, clock), 60, clock, clock.sleep)
    with pytest.raises(ray_start.RayletDied) as err:
        _StartingNode(raylet, tmp_path).start(get)
    assert clock.now == 0  # no wait at all
    message = str(err.value)
    assert f"raylet (pid {raylet.pid}) exited with code 3" in message
    assert str(tmp_path / "raylet.err") in message


def test_a_live_raylet_is_waited_for(tmp_path):
    raylet = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        clock = _Clock()
        get = ray_start.patient(_registers_after(45, clock), 60, clock, clock.sleep)
        assert _StartingNode(raylet, tmp_path).start(get) == {"NodeID": "n1"}
        assert 45 <= clock.now < 46
    finally:
        raylet.kill()
        raylet.wait()


@pytest.mark.parametrize(("value", "seconds"), [(None, 300.0), ("90", 90.0), (" 7.5 ", 7.5)])
def test_the_wait_comes_from_the_environment(value, seconds):
    env = {} if value is None else {"PACS_RAY_START_WAIT_S": value}
    assert ray_start.start_wait_s(env) == seconds


@pytest.mark.parametrize("value", ["0", "-3", "soon"])
def test_a_wait_that_is_no_positive_number_is_refused(value):
    with pytest.raises(ValueError, match="PACS_RAY_START_WAIT_S=.*seconds > 0"):
        ray_start.start_wait_s({"PACS_RAY_START_WAIT_S": value})


def test_install_replaces_the_lookup_rays_start_loop_calls_once(monkeypatch):
    services = pytest.importorskip("ray._private.services")
    import inspect

    from ray._private import node, ray_constants

    # Ray's fixed wait polls this very module attribute (a release that moves it breaks this)
    assert "ray._private.services.get_node(" in inspect.getsource(node.Node.__init__)
    # ... and starting_raylet reads the node's raylet where this Ray keeps it
    assert ray_constants.PROCESS_TYPE_RAYLET == "raylet"
    assert "process" in services.ProcessInfo._fields and hasattr(node.Node, "get_logs_dir_path")
    monkeypatch.setattr(services, "get_node", services.get_node)
    assert ray_start.install({"PACS_RAY_START_WAIT_S": "5"})
    patched = services.get_node
    assert patched.pacs_patient and ray_start.install({}) and services.get_node is patched


def test_a_head_that_does_not_answer_names_the_settings():
    without = slurm.head_timeout_message("10.0.0.1:6379", 300, None)
    assert "PACS_RAY_START_WAIT_S" in without and "network_interface in the profile" in without
    named = slurm.head_timeout_message("10.0.0.1:6379", 300, "ib0")
    assert "ib0 (the profile's set-resources.train_verl.network_interface)" in named
