"""The verl smoke config on 2 nodes through `snakemake --profile slurm` on the local cluster: the
DAG's preflight job, verl's trainer as one 2-node sbatch job (Ray across both nodes, bound to the
profile's network interface, launched by the jobstep plugin's `srun -n1 --nodes=2`), evaluation and
the report. The profile is the shipped one with the two values a user sets (partition, account)
and what this CPU cluster needs: one (fake) GPU per node for the 2 training ranks, and
`verl_device: cpu`, which the preflight reads to require no GPU and no GPU-env pin (saying so in
its table) instead of failing; no rule is skipped. While the DAG runs, a watcher records which node
each training rank runs on (from the processes' environments); the ranks dump the batches their
PACS loss saw; afterwards nothing of the job's Ray is left. Slow."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
import yaml

pytestmark = pytest.mark.slow

ADDRESS_FILE = Path("/tmp/ray/ray_current_cluster")


def _cluster_processes(conf: str) -> dict[int, dict[str, str]]:
    """Processes of this cluster's jobs on this host (their env names its SLURM_CONF: another
    local cluster may number its jobs alike), with their env."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        env = dict(item.decode(errors="replace").split("=", 1) for item in raw if b"=" in item)
        if env.get("SLURM_CONF") == conf and "SLURM_JOB_ID" in env:
            found[int(pid)] = env
    return found


class RankWatcher(threading.Thread):
    """Until stopped: which node (SLURMD_NODENAME of its Ray step) each training rank of the
    cluster's jobs runs on, per job id."""

    def __init__(self, conf: str):
        super().__init__(daemon=True)
        self.conf, self.ranks, self.done = conf, {}, threading.Event()

    def run(self) -> None:
        while not self.done.wait(1.0):
            for env in _cluster_processes(self.conf).values():
                if {"RANK", "WORLD_SIZE", "SLURMD_NODENAME"} <= env.keys():
                    job = self.ranks.setdefault(env["SLURM_JOB_ID"], {})
                    job.setdefault(env["RANK"], set()).add(env["SLURMD_NODENAME"])


def bind_interface() -> tuple[str, str]:
    """(name, IPv4) of an interface to bind Ray to: not lo where the host has another."""
    found = {
        name: next(a.address for a in addrs if a.family == socket.AF_INET)
        for name, addrs in psutil.net_if_addrs().items()
        if any(a.family == socket.AF_INET for a in addrs)
    }
    return min(found.items(), key=lambda kv: (kv[0] == "lo", kv[0]))


def cpu_cluster_profile(work, interface: str) -> None:
    path = work / "slurm" / "config.yaml"
    profile = yaml.safe_load(path.read_text())
    profile["set-resources"]["train_verl"].update(
        gres="gpu:h200:1",  # one training rank per node (gloo on the CPU)
        cpus_per_task=16,
        mem_mb=16000,
        runtime=60,
        verl_device="cpu",
        network_interface=interface,
    )
    path.write_text(yaml.safe_dump(profile))


@pytest.fixture(scope="module")
def verl_dag(local_slurm_workflow, slurm_env, verl_smoke_base, heavy_slot):
    work = local_slurm_workflow
    config = work / "configs" / "verl_smoke.yaml"
    cfg = yaml.safe_load(config.read_text())
    cfg["models"]["tiny"]["nnodes"] = 2
    dump = work / "dump"  # each rank's PACS-loss batches (pacs.verl_plugin.worker)
    cfg["verl"]["extra_overrides"].append(
        f"+ray_kwargs.ray_init.runtime_env.env_vars.PACS_LOSS_DUMP_DIR={dump}"
    )
    config.write_text(yaml.safe_dump(cfg))
    interface, ip = bind_interface()
    cpu_cluster_profile(work, interface)
    # the tiny base model the config names, as make verl-smoke builds it (built once per run)
    shutil.copytree(verl_smoke_base, work / "results" / "verl_smoke", ignore=lambda *_: [".built"])
    address_before = ADDRESS_FILE.read_text() if ADDRESS_FILE.exists() else None
    with heavy_slot("verl_two_nodes"):
        watcher = RankWatcher(slurm_env["SLURM_CONF"])
        watcher.start()
        started = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-m", "snakemake", "--profile", "slurm"]
            + ["--configfile", "configs/verl_smoke.yaml", "--jobs", "2"]
            + ["--slurm-init-seconds-before-status-checks", "10", "--slurm-keep-successful-logs"],
            cwd=work,
            env=slurm_env,
            capture_output=True,
            text=True,
            timeout=3600,
            check=False,
        )
        watcher.done.set()
        watcher.join()
    print(f"snakemake --profile slurm (verl smoke, 2 nodes): {time.monotonic() - started:.0f} s")
    log = result.stdout + result.stderr
    (work / "snakemake.log").write_text(log)
    assert result.returncode == 0, log[-6000:]
    return {
        "work": work,
        "log": log,
        "interface": interface,
        "ip": ip,
        "dump": dump,
        "ranks": watcher.ranks,
        "conf": slurm_env["SLURM_CONF"],
        "address_before": address_before,
    }


def _train_job(verl_dag) -> str:
    submitted = re.findall(
        r"has been submitted with SLURM jobid (\d+) \(log: (\S+)\)\.", verl_dag["log"]
    )
    train = [job for job, path in submitted if "rule_train_verl" in path]
    assert len(train) == 1, submitted
    return train[0]


def _train_log(verl_dag) -> str:
    logs = verl_dag["work"] / "results" / "verl_smoke" / "logs" / "train"
    return (logs / "tiny" / "pacs" / "seed0.log").read_text()


def test_the_preflight_job_checked_the_cpu_cluster_and_said_what_it_skipped(verl_dag):
    results = verl_dag["work"] / "results" / "verl_smoke"
    table = (results / "preflight" / "compute_node.txt").read_text()
    assert re.search(r"PASS  GPU env pins +not checked: the profile sets verl_device: cpu", table)
    assert re.search(r"PASS  version verl +verl 0\.9\.1", table), table
    assert re.search(r"PASS  GPUs/CPUs per node +SLURM job \d+: 0 GPUs", table), table
    name, ip = verl_dag["interface"], verl_dag["ip"]
    assert re.search(rf"PASS  network interface +{name}: {re.escape(ip)} on ", table), table
    assert "FAIL" not in table


def test_training_ran_as_one_two_node_job_with_ray_on_the_profiles_interface(verl_dag, slurm_jobs):
    work, name, ip = verl_dag["work"], verl_dag["interface"], verl_dag["ip"]
    train = _train_job(verl_dag)
    jobs = {j["id"]: j for j in slurm_jobs()}
    assert jobs[train]["nodes"] == "2" and jobs[train]["state"] == "COMPLETED", jobs
    run = work / "results" / "verl_smoke" / "train" / "tiny" / "pacs" / "seed0"
    log = _train_log(verl_dag)
    assert re.search(rf"Ray cluster at {re.escape(ip)}:\d+: 2/2 nodes", log), log[-3000:]
    starts = [line for line in log.splitlines() if "starting: srun" in line]
    assert len(starts) == 2 and all(f"--network-interface={name}" in s for s in starts), starts
    assert log.count("stopping this Ray node") == 2  # each node stopped by its supervisor
    launch = json.loads((run / "launch.json").read_text())
    overrides = dict(
        a.split("=", 1) for a in launch["command"] if "=" in a and not a.startswith("-")
    )
    assert overrides["trainer.nnodes"] == "2" and overrides["trainer.device"] == "cpu"
    assert overrides["trainer.n_gpus_per_node"] == "1"
    assert overrides["+ray_kwargs.ray_init.address"].strip("'").startswith(f"{ip}:")
    assert "ray_kwargs.ray_init.num_cpus" not in overrides  # Ray's CPUs are the nodes'
    assert json.loads((run / "summary.json").read_text())


def test_world_size_two_with_one_rank_on_each_node(verl_dag):
    dumps = {p.name.split("-")[0] for p in verl_dag["dump"].glob("rank*.pt")}
    assert dumps == {"rank0", "rank1"}  # both ranks ran the PACS loss
    ranks = verl_dag["ranks"].get(_train_job(verl_dag), {})
    assert set(ranks) == {"0", "1"}, verl_dag["ranks"]
    assert {node for nodes in ranks.values() for node in nodes} == {"n1", "n2"}, ranks
    assert all(len(nodes) == 1 for nodes in ranks.values()), ranks


def test_no_ray_process_or_address_of_the_job_is_left(verl_dag):
    job = _train_job(verl_dag)
    left = {
        pid: env.get("SLURM_JOB_ID")
        for pid, env in _cluster_processes(verl_dag["conf"]).items()
        if env.get("SLURM_JOB_ID") == job
    }
    assert left == {}
    if ADDRESS_FILE.exists():  # another cluster's file may stay; ours may not
        assert ADDRESS_FILE.read_text() == verl_dag["address_before"]
    run = verl_dag["work"] / "results" / "verl_smoke" / "train" / "tiny" / "pacs" / "seed0"
    assert not list(run.glob("ray-stop-*"))


def test_the_report_is_written(verl_dag):
    out = verl_dag["work"] / "paper_figures" / "verl_smoke"
    assert (out / "README.md").is_file() and (out / "tables" / "table1_pass1.csv").is_file()
