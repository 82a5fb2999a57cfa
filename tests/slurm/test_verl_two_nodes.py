"""verl's trainer (the verl smoke on CPU) as ONE 2-node SLURM job through our launcher, launched
the way the jobstep plugin launches it (`srun -n1 --nodes=2` with the step's SLURM_* variables
stripped, SLURM_CONF kept): a 2-node Ray cluster, world size 2 with one rank on each node, and
nothing of Ray left behind afterwards. Slow; CI runs it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "configs" / "verl_smoke.yaml"
ADDRESS_FILE = Path("/tmp/ray/ray_current_cluster")
KEEP = "SLURM_JOB_ID|SLURM_JOBID|SLURM_CONF|SLURM_SUBMIT_DIR|SLURM_SUBMIT_HOST|SLURM_CLUSTER_NAME"

pytestmark = pytest.mark.slow

# What the jobstep plugin (snakemake-executor-plugin-slurm-jobstep 0.6.1) does in the batch
# step: drop every SLURM_*/SRUN_*/SBATCH_* variable but the job's identity (and SLURM_CONF, which
# the workflow puts back: pacs.slurm_profile), then `srun -n1 --cpu-bind=q --cpus-per-task=C
# --nodes=N <rule>`.
BATCH = """#!/bin/bash
for v in $(compgen -e); do
  case $v in {keep}) ;; SLURM_*|SRUN_*|SBATCH_*) unset "$v" ;; esac
done
exec srun -n1 --cpu-bind=q --cpus-per-task=16 --nodes=2 {cmd}
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("", 0))
        return sock.getsockname()[1]


def _job_processes(job_id: str, conf: str) -> dict[int, dict[str, str]]:
    """Processes of this SLURM job on this host (their env names the job and its cluster's
    SLURM_CONF: another local cluster may number its jobs alike), with their env."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        env = dict(item.decode(errors="replace").split("=", 1) for item in raw if b"=" in item)
        if env.get("SLURM_JOB_ID") == job_id and env.get("SLURM_CONF") == conf:
            found[int(pid)] = env
    return found


def _wait_and_watch(job_id: str, env: dict, timeout: float) -> dict[str, set[str]]:
    """Until the job ends: which node (SLURMD_NODENAME of its Ray step) each training rank runs on."""
    ranks: dict[str, set[str]] = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for proc_env in _job_processes(job_id, env["SLURM_CONF"]).values():
            if "RANK" in proc_env and "WORLD_SIZE" in proc_env and "SLURMD_NODENAME" in proc_env:
                ranks.setdefault(proc_env["RANK"], set()).add(proc_env["SLURMD_NODENAME"])
        state = subprocess.run(
            ["squeue", "-h", "-t", "all", "-j", job_id, "-o", "%T"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        if state in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"):
            return ranks
        time.sleep(1.0)
    subprocess.run(["scancel", job_id], env=env, check=False)
    pytest.fail(f"job {job_id} still running after {timeout:.0f} s")


@pytest.fixture(scope="module")
def two_node_run(tmp_path_factory, slurm_env):
    root = tmp_path_factory.mktemp("verl_2node")
    prep = subprocess.run(
        [sys.executable, "-m", "pacs.tiny.smoke", "--config", str(CONFIG), "--out", str(root)],
        env=slurm_env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert prep.returncode == 0, prep.stdout[-2000:] + prep.stderr[-2000:]
    port = _free_port()
    cmd = [
        sys.executable,
        "-m",
        "pacs.verl_plugin.launch.train",
        "--config",
        str(CONFIG),
        "--run",
        "pacs",
        "--device",
        "cpu",
        "--train-file",
        str(root / "data" / "train.parquet"),
        "--out",
        str(root / "train"),
        "--ray-port",
        str(port),
        "--no-finalize",
        "--",
        f"actor_rollout_ref.model.path={root / 'model' / 'base'}",
        "trainer.total_training_steps=1",
        f"+ray_kwargs.ray_init.runtime_env.env_vars.PACS_LOSS_DUMP_DIR={root / 'dump'}",
    ]
    batch = root / "job.sh"
    batch.write_text(BATCH.format(keep=KEEP, cmd=" ".join(cmd)))
    address_before = ADDRESS_FILE.read_text() if ADDRESS_FILE.exists() else None
    started = time.monotonic()
    job_id = subprocess.run(
        [
            "sbatch",
            "--parsable",
            "--nodes=2",
            "--cpus-per-task=16",
            "--gres=gpu:h200:1",
            "--mem=8000",
            "-t",
            "60",
            "-o",
            str(root / "job.log"),
            "-D",
            str(root),
            str(batch),
        ],
        env=slurm_env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ranks = _wait_and_watch(job_id, slurm_env, timeout=2400)
    print(f"2-node verl job {job_id}: {time.monotonic() - started:.0f} s")
    state = subprocess.run(
        ["squeue", "-h", "-t", "all", "-j", job_id, "-o", "%T"],
        env=slurm_env,
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    log = (root / "job.log").read_text()
    return {
        "root": root,
        "job": job_id,
        "conf": slurm_env["SLURM_CONF"],
        "state": state,
        "log": log,
        "ranks": ranks,
        "port": port,
        "address_before": address_before,
    }


def test_the_job_trained_on_both_nodes(two_node_run):
    log = two_node_run["log"]
    assert two_node_run["state"] == "COMPLETED", log[-6000:]
    assert "Ray cluster at" in log and "2/2 nodes" in log, log[-3000:]
    launch = json.loads((two_node_run["root"] / "train" / "launch.json").read_text())
    overrides = dict(
        a.split("=", 1) for a in launch["command"] if "=" in a and not a.startswith("-")
    )
    assert overrides["trainer.nnodes"] == "2" and overrides["trainer.n_gpus_per_node"] == "1"
    assert overrides["+ray_kwargs.ray_init.address"].strip("'").endswith(f":{two_node_run['port']}")
    assert "ray_kwargs.ray_init.num_cpus" not in overrides  # 3: Ray's CPUs are the nodes'
    assert log.count("stopping this Ray node") == 2  # 2: each node stopped by its supervisor


def test_world_size_two_with_one_rank_on_each_node(two_node_run):
    dumps = sorted(p.name.split("-")[0] for p in (two_node_run["root"] / "dump").glob("rank*.pt"))
    assert set(dumps) == {"rank0", "rank1"}  # both ranks ran the PACS loss
    ranks = two_node_run["ranks"]
    assert set(ranks) == {"0", "1"}, ranks
    assert {node for nodes in ranks.values() for node in nodes} == {"n1", "n2"}, ranks
    assert all(len(nodes) == 1 for nodes in ranks.values()), ranks


def test_no_ray_process_or_address_is_left(two_node_run):
    assert _job_processes(two_node_run["job"], two_node_run["conf"]) == {}
    if ADDRESS_FILE.exists():  # another cluster's file may stay; ours may not
        assert ADDRESS_FILE.read_text() == two_node_run["address_before"]
        assert not ADDRESS_FILE.read_text().strip().endswith(f":{two_node_run['port']}")
    assert not list((two_node_run["root"] / "train").glob("ray-stop-*"))
