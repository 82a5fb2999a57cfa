"""Stopping a run on purpose (docs/paper_scale.md, "Stopping a run"): Ctrl-C once on the
Snakemake that submitted the jobs cancels its running SLURM job (the executor's scancel) without
resubmitting it, although the profile's `retries: 2` would resubmit a job that failed; Snakemake
ends without a lock, and the same command afterwards resumes (the profile's rerun-incomplete).
On the local two-node cluster (tools/local_slurm.sh, no accounting). Slow."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

# The repo's Snakefile (its onstart installs the profile's SLURM hooks) and one rule that runs
# until it is stopped, unless `resume_fast` exists (the resumed run).
STOPPER = """include: "Snakefile"


rule stopper:
    output:
        "stopped",
    shell:
        "if [ -e resume_fast ]; then touch {output}; else sleep 600; fi"
"""
STOP_BOUND_S = 120


def _command() -> list[str]:
    return (
        [sys.executable, "-m", "snakemake", "-s", "stopper.smk", "--profile", "slurm", "stopper"]
        + ["--configfile", "configs/smoke.yaml", "--jobs", "1"]
        + ["--slurm-init-seconds-before-status-checks", "1"]
    )


def _squeue(env: dict, *args: str) -> str:
    return subprocess.run(
        ["squeue", "-h", *args], env=env, capture_output=True, text=True, check=False
    ).stdout


def _running_job(env: dict, rule: str, deadline_s: float = 300) -> str:
    """The id of the running SLURM job of ``rule`` (the executor's job comment names it)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        for line in _squeue(env, "-t", "RUNNING", "-o", "%i|%k").splitlines():
            job, _, comment = line.partition("|")
            if rule in comment:
                return job
        time.sleep(1)
    raise AssertionError(f"no running job of rule {rule} within {deadline_s} s")


def _gone(env: dict, job: str, deadline_s: float = 60) -> bool:
    """The job is no longer pending or running (cancelled, or forgotten by slurmctld)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if _squeue(env, "-t", "PENDING,RUNNING,CONFIGURING,COMPLETING", "-j", job).strip() == "":
            return True
        time.sleep(1)
    return False


def test_ctrl_c_once_cancels_the_running_job_and_the_same_command_resumes(
    slurm_env, local_slurm_workflow
):
    work: Path = local_slurm_workflow
    (work / "stopper.smk").write_text(STOPPER)
    proc = subprocess.Popen(
        _command(), cwd=work, env=slurm_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    try:
        job = _running_job(slurm_env, "stopper")
        proc.send_signal(signal.SIGINT)  # what one Ctrl-C in the terminal sends
        stopped = time.monotonic()
        log, _ = proc.communicate(timeout=STOP_BOUND_S)
        took = time.monotonic() - stopped
    finally:
        if proc.poll() is None:
            proc.kill()
    print(f"Ctrl-C to Snakemake's exit: {took:.1f} s")
    assert proc.returncode != 0, log[-4000:]
    assert _gone(slurm_env, job), f"job {job} still queued or running after Ctrl-C\n{log[-4000:]}"
    # the executor's scancel ended it (slurmctld keeps ended jobs 600 s here: MinJobAge)
    assert _squeue(slurm_env, "-t", "all", "-j", job, "-o", "%T").strip() == "CANCELLED"
    assert re.findall(r"submitted with SLURM jobid (\d+)", log) == [job], log[-4000:]
    assert not list((work / ".snakemake" / "locks").glob("*")), "a lock is left"
    assert not (work / "stopped").exists()

    (work / "resume_fast").touch()
    again = subprocess.run(
        _command(), cwd=work, env=slurm_env, capture_output=True, text=True, timeout=600,
        check=False,
    )  # fmt: skip
    assert again.returncode == 0, (again.stdout + again.stderr)[-4000:]
    assert (work / "stopped").exists()
