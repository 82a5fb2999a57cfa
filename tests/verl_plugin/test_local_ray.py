"""A CPU run's local Ray starts only what verl uses (pacs.verl_plugin.launch.devices): no
dashboard and no idle workers started ahead of demand. A run that joins a running cluster (its
nodes started by ``ray start --include-dashboard=false``) and a GPU run keep Ray's settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from pacs.verl_plugin.launch import devices


def test_a_cpu_runs_local_ray_starts_no_dashboard(compose):
    local = compose(devices.device_overrides("cpu", 1))
    assert local.ray_kwargs.ray_init.include_dashboard is False  # a bool for ray.init
    address = "10.0.0.1:6379"
    joined = compose(
        devices.device_overrides("cpu", 2, address) + [f"+ray_kwargs.ray_init.address={address}"]
    )
    assert "include_dashboard" not in joined.ray_kwargs.ray_init  # ray.init only connects
    assert devices.device_overrides("cuda", 8) == []  # GPUs: verl's defaults


def test_a_cpu_runs_local_ray_prestarts_no_idle_workers():
    """The keys are the installed raylet's own config keys (it reads RAY_<key> from the
    environment it inherits from verl's driver), set for CPU runs only."""
    ray = pytest.importorskip("ray")
    raylet = Path(ray.__file__).parent / "core" / "src" / "ray" / "raylet" / "raylet"
    binary = raylet.read_bytes()
    for key, value in devices.LOCAL_RAY_ENV.items():
        assert key.encode() in binary, f"{key}: not a config key of {raylet}"
        assert value == "0"
    assert devices.device_env("cpu") == {"VERL_PLATFORM": "cpu", **devices.LOCAL_RAY_ENV}
    assert devices.device_env("cuda") == {}
