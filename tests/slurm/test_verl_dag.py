"""The verl smoke config on 2 nodes through `snakemake --profile slurm` on the local cluster: the
DAG's preflight job, verl's trainer as one 2-node sbatch job (Ray across both nodes, bound to the
profile's network interface), evaluation and the report. The profile is the shipped one with the
two values a user sets (partition, account) and what this CPU cluster needs: one (fake) GPU per
node for the 2 training ranks, and `verl_device: cpu`, which the preflight reads to require no GPU
and no GPU-env pin (saying so in its table) instead of failing; no rule is skipped. Slow."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time

import psutil
import pytest
import yaml

pytestmark = pytest.mark.slow


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
def verl_dag(local_slurm_workflow, slurm_env):
    work = local_slurm_workflow
    config = work / "configs" / "verl_smoke.yaml"
    cfg = yaml.safe_load(config.read_text())
    cfg["models"]["tiny"]["nnodes"] = 2
    config.write_text(yaml.safe_dump(cfg))
    interface, ip = bind_interface()
    cpu_cluster_profile(work, interface)
    prep = subprocess.run(  # the tiny base model the config names (as make verl-smoke builds it)
        [sys.executable, "-m", "pacs.tiny.smoke", "--config", str(config)]
        + ["--out", str(work / "results" / "verl_smoke")],
        env=slurm_env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert prep.returncode == 0, prep.stdout[-2000:] + prep.stderr[-2000:]
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
    print(f"snakemake --profile slurm (verl smoke, 2 nodes): {time.monotonic() - started:.0f} s")
    log = result.stdout + result.stderr
    (work / "snakemake.log").write_text(log)
    assert result.returncode == 0, log[-6000:]
    return {"work": work, "log": log, "interface": interface, "ip": ip}


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
    submitted = re.findall(
        r"has been submitted with SLURM jobid (\d+) \(log: (\S+)\)\.", verl_dag["log"]
    )
    train = [job for job, path in submitted if "rule_train_verl" in path]
    assert len(train) == 1, submitted
    jobs = {j["id"]: j for j in slurm_jobs()}
    assert jobs[train[0]]["nodes"] == "2" and jobs[train[0]]["state"] == "COMPLETED", jobs
    run = work / "results" / "verl_smoke" / "train" / "tiny" / "pacs" / "seed0"
    log = (
        work / "results" / "verl_smoke" / "logs" / "train" / "tiny" / "pacs" / "seed0.log"
    ).read_text()
    assert re.search(rf"Ray cluster at {re.escape(ip)}:\d+: 2/2 nodes", log), log[-3000:]
    starts = [line for line in log.splitlines() if "starting: srun" in line]
    assert len(starts) == 2 and all(f"--network-interface={name}" in s for s in starts), starts
    launch = json.loads((run / "launch.json").read_text())
    overrides = dict(
        a.split("=", 1) for a in launch["command"] if "=" in a and not a.startswith("-")
    )
    assert overrides["trainer.nnodes"] == "2" and overrides["trainer.device"] == "cpu"
    assert overrides["+ray_kwargs.ray_init.address"].strip("'").startswith(f"{ip}:")
    assert json.loads((run / "summary.json").read_text())


def test_the_report_is_written(verl_dag):
    out = verl_dag["work"] / "paper_figures" / "verl_smoke"
    assert (out / "README.md").is_file() and (out / "tables" / "table1_pass1.csv").is_file()
