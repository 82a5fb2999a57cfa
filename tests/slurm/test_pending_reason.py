"""A job that waits on a dead node is named with the scheduler's pending reason
(pacs.slurm_profile.PendingWatch, started by the Snakefile under the SLURM executor): on the
local cluster, node n2 is set DOWN and a job that needs it stays pending; jobs pending for a
routine reason (a start time) are not reported."""

from __future__ import annotations

import functools
import subprocess
import time

import pytest

from pacs.slurm_profile import PendingWatch, pending_jobs


def _scontrol(slurm_env, *args: str) -> None:
    subprocess.run(["scontrol", *args], env=slurm_env, check=True, capture_output=True, text=True)


def _sbatch(slurm_env, workdir, *args: str) -> str:
    return subprocess.run(
        ["sbatch", "--parsable", "-D", str(workdir), "-o", "/dev/null", *args, "--wrap", "true"],
        env=slurm_env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.fixture
def dead_n2(slurm_env):
    _scontrol(slurm_env, "update", "nodename=n2", "state=down", "reason=pacs test: dead node")
    try:
        yield
    finally:
        _scontrol(slurm_env, "update", "nodename=n2", "state=resume")


def test_a_job_stuck_on_a_dead_node_is_logged_with_its_pending_reason(slurm_env, dead_n2, tmp_path):
    run = functools.partial(subprocess.run, env=slurm_env)
    stuck = _sbatch(slurm_env, tmp_path, "--nodelist=n2", "--comment=rule_train_verl")
    later = _sbatch(slurm_env, tmp_path, "--begin=now+3600", "--comment=rule_grade")
    other = _sbatch(slurm_env, "/tmp", "--nodelist=n2", "--comment=another_workflow")
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            jobs = pending_jobs(str(tmp_path), run)
            if "ReqNodeNotAvail" in jobs.get(stuck, ("", ""))[1]:
                break
            time.sleep(1)
        assert set(jobs) == {stuck, later}, jobs  # the other workflow's job is not ours
        logged: list[str] = []
        watch = PendingWatch(str(tmp_path), logged.append, run=run)
        assert watch.check() == logged
        (line,) = logged
        assert line.startswith(f"SLURM job {stuck} (rule_train_verl) is pending: ReqNodeNotAvail")
        assert "UnavailableNodes:n2" in line and "sinfo -R" in line
        assert watch.check() == []  # once per job and reason
    finally:
        subprocess.run(["scancel", stuck, later, other], env=slurm_env, check=False)
