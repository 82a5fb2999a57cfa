"""The network interface of a multi-node run (RAY_NETWORK_INTERFACE, the profile's
set-resources.train_verl.network_interface): every Ray node binds to its own address on it, verl's
NCCL and Gloo get it, and a name the node lacks is refused with the interfaces it has."""

from __future__ import annotations

import importlib
import socket
import sys
from pathlib import Path

import psutil
import pytest

from pacs.verl_plugin.cluster import slurm

ALLOC = slurm.SlurmAllocation(
    job_id="7", hostnames=("n1", "n2"), gpus_per_node=8, cpus_per_node=16, head_address="n1"
)


def ipv4_interfaces() -> dict[str, str]:
    """This host's interfaces with an IPv4 address (lo at least)."""
    return {
        name: next(a.address for a in addrs if a.family == socket.AF_INET)
        for name, addrs in psutil.net_if_addrs().items()
        if any(a.family == socket.AF_INET for a in addrs)
    }


def test_an_interface_gives_this_hosts_ipv4_address_on_it():
    for name, ip in ipv4_interfaces().items():
        assert slurm.interface_ipv4(name) == ip
    assert slurm.interface_ipv4("lo") == "127.0.0.1"


def test_a_missing_interface_is_refused_naming_those_there_are():
    with pytest.raises(RuntimeError) as err:
        slurm.interface_ipv4("ib9")
    message = str(err.value)
    assert message.startswith("RAY_NETWORK_INTERFACE=ib9 (the profile's set-resources.train_verl")
    assert "no such network interface" in message and "lo" in message.split("it has ")[1]


def test_nccl_and_gloo_follow_the_interface_in_every_ray_process_and_the_driver():
    env = {"RAY_NETWORK_INTERFACE": "ib0", "SLURM_JOB_ID": "7", "SLURM_NNODES": "1"}
    for out in (slurm.ray_step_env(env), slurm.verl_env(env, multi_node=True)):
        assert out["NCCL_SOCKET_IFNAME"] == out["GLOO_SOCKET_IFNAME"] == "ib0"
    assert "SLURM_NNODES" not in slurm.ray_step_env(env)
    plain = slurm.ray_step_env({"SLURM_JOB_ID": "7", "NCCL_SOCKET_IFNAME": "eth1"})
    assert plain["NCCL_SOCKET_IFNAME"] == "eth1" and "GLOO_SOCKET_IFNAME" not in plain


def test_every_ray_node_binds_to_the_interface(tmp_path, monkeypatch):
    """The head is reached at its address on the interface (the launcher runs on the head node),
    not at its NodeAddr; each node's supervisor gets the interface to bind to on its own node."""
    name, ip = next(iter(sorted(ipv4_interfaces().items(), key=lambda kv: kv[0] == "lo")))
    cluster = slurm.RayCluster(
        ALLOC,
        tmp_path,
        port=6400,
        resolve=lambda host: "192.0.2.1",  # NodeAddr: unused with an interface
        env={"RAY_NETWORK_INTERFACE": name, "SLURM_JOB_ID": "7"},
    )
    assert cluster.address == f"{ip}:6400"
    head, worker = cluster.commands()
    for cmd in (head, worker):
        assert f"--network-interface={name}" in cmd[: cmd.index("--")]
    assert f"--address={ip}:6400" in worker
    assert cluster.step_env["NCCL_SOCKET_IFNAME"] == name
    without = slurm.RayCluster(ALLOC, tmp_path, resolve=lambda host: "192.0.2.1", env={})
    assert without.address == "192.0.2.1:6379"
    assert not any(a.startswith("--network-interface") for a in without.commands()[0])


@pytest.fixture
def ray_node():
    return importlib.import_module("pacs.verl_plugin.cluster.ray_node")


def test_a_ray_node_starts_ray_on_its_own_address(ray_node, tmp_path, monkeypatch, capfd):
    """ray_node looks the interface up on its node and puts --node-ip-address in place of the
    one it was given (the head's, from the launcher)."""
    echo = [sys.executable, "-c", "import sys; print('ARGS', *sys.argv[1:])"]
    monkeypatch.setattr(ray_node, "ray_command", lambda: echo)
    monkeypatch.setattr(ray_node, "ADDRESS_FILE", tmp_path / "ray_current_cluster")
    stop = f"--stop-file={tmp_path / 'stop'}"
    ray = ["start", "--head", "--node-ip-address=10.0.0.1", "--port=6400", "--block"]
    assert ray_node.main([stop, "--network-interface=lo", "--", *ray]) == 0
    args = capfd.readouterr().out.split("ARGS ", 1)[1].split()
    assert args == ["start", "--head", "--port=6400", "--block", "--node-ip-address=127.0.0.1"]


def test_a_ray_node_without_the_interface_stops_with_why(ray_node, tmp_path, capfd):
    stop = f"--stop-file={tmp_path / 'stop'}"
    assert ray_node.main([stop, "--network-interface=ib9", "--", "start", "--block"]) == 2
    err = capfd.readouterr().err
    assert err.startswith("ray_node: RAY_NETWORK_INTERFACE=ib9") and "it has" in err
    assert not Path(tmp_path / "stop").exists()
