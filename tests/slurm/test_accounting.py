"""The SLURM executor's sacct path: `snakemake --profile slurm` on a local cluster WITH accounting
(its own slurmdbd and MariaDB, tools/local_slurm.sh up --accounting), running the smoke config up
to its first compute job. The workflow keeps the executor's sacct status command
(pacs.slurm_profile switches to squeue only without accounting), the executor asks sacct for its
run's jobs (a logging sacct first on the PATH records each call), and, with MinJobAge=2, squeue
forgets the ended job, so only sacct could have told Snakemake it completed. And a running job
cancelled with scancel (sacct: "CANCELLED by 0") fails its rule: Snakemake ends, no lock left. Slow."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SACCT_SHIM = '#!/bin/sh\necho "$*" >> "{log}"\nexec {real} "$@"\n'


@pytest.fixture(scope="module")
def accounted_run(slurm_accounting_env, local_slurm_workflow, tmp_path_factory):
    env = dict(slurm_accounting_env)
    shim = tmp_path_factory.mktemp("shim")
    calls = shim / "sacct.log"
    real = subprocess.check_output(["which", "sacct"], env=env, text=True).strip()
    (shim / "sacct").write_text(SACCT_SHIM.format(log=calls, real=real))
    (shim / "sacct").chmod(0o755)
    env["PATH"] = f"{shim}:{env['PATH']}"
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--profile", "slurm"]
        + ["--configfile", "configs/smoke.yaml", "--until", "build_tiny_model", "--jobs", "1"]
        + ["--slurm-init-seconds-before-status-checks", "5"],
        cwd=local_slurm_workflow,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-6000:]
    calls_text = calls.read_text() if calls.exists() else ""
    return {"log": log, "calls": calls_text, "env": env}


def test_the_workflow_keeps_sacct_where_the_cluster_keeps_accounting(accounted_run):
    assert "job states come from squeue" not in accounted_run["log"]


def test_the_executor_asked_sacct_for_its_jobs(accounted_run):
    (run_id,) = set(re.findall(r"SLURM run ID: (\S+)", accounted_run["log"]))
    asked = [c for c in accounted_run["calls"].splitlines() if f"--name {run_id}" in c]
    assert asked and all(c.startswith("-X --parsable2") for c in asked), accounted_run["calls"]


def test_only_sacct_still_knows_the_ended_job(accounted_run):
    log, env = accounted_run["log"], accounted_run["env"]
    (job,) = re.findall(r"has been submitted with SLURM jobid (\d+)", log)
    state = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-j", job, "-o", "State"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert state == "COMPLETED"
    deadline = time.monotonic() + 120  # slurmctld purges ended jobs past MinJobAge (2 s) in passes
    while time.monotonic() < deadline:
        listed = subprocess.run(
            ["squeue", "-h", "-t", "all", "-j", job, "-o", "%T"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        if not listed:
            break
        time.sleep(2)
    assert not listed, f"squeue still lists job {job}: {listed}"


# The repo's Snakefile (its onstart installs pacs.slurm_profile.read_ended_states) and one rule
# that runs until it is cancelled.
SLEEPER = """include: "Snakefile"


rule sleeper:
    output:
        "slept",
    shell:
        "sleep 600; touch {output}"
"""
CANCEL_BOUND_S = 90  # status checks 1 s, then 11 s, 21 s... apart (the executor adds 10 s a pass)


def _running_job(env: dict, rule: str, deadline_s: float = 300) -> str:
    """The id of this user's running SLURM job of ``rule`` (the executor's job comment names it)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        listed = subprocess.run(
            ["squeue", "--me", "-h", "-t", "RUNNING", "-o", "%i|%k"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        for line in listed.splitlines():
            job, _, comment = line.partition("|")
            if rule in comment:
                return job
        time.sleep(1)
    raise AssertionError(f"no running job of rule {rule} within {deadline_s} s")


def test_a_cancelled_running_job_fails_its_rule_and_snakemake_ends(
    slurm_accounting_env, local_slurm_workflow
):
    work: Path = local_slurm_workflow
    (work / "sleeper.smk").write_text(SLEEPER)
    proc = subprocess.Popen(
        [sys.executable, "-m", "snakemake", "-s", "sleeper.smk", "--profile", "slurm", "sleeper"]
        + ["--configfile", "configs/smoke.yaml", "--jobs", "1", "--retries", "0"]
        + ["--slurm-init-seconds-before-status-checks", "1"],
        cwd=work,
        env=slurm_accounting_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        job = _running_job(slurm_accounting_env, "sleeper")
        subprocess.run(["scancel", job], env=slurm_accounting_env, check=True)
        cancelled = time.monotonic()
        log, _ = proc.communicate(timeout=CANCEL_BOUND_S)
        took = time.monotonic() - cancelled
    finally:
        if proc.poll() is None:
            proc.kill()
    print(f"scancel to a failed rule: {took:.1f} s")
    assert proc.returncode != 0, log[-4000:]
    assert f"SLURM job {job} ended as 'CANCELLED by 0': counted as CANCELLED" in log, log[-4000:]
    assert f"SLURM-job '{job}' failed, SLURM status is: 'CANCELLED'" in log, log[-4000:]
    assert "Error in rule sleeper" in log, log[-4000:]
    assert not list((work / ".snakemake" / "locks").glob("*")), "a lock is left"
