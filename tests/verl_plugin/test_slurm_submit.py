"""The SLURM lines a paper training run really gets: sbatch (snakemake-executor-plugin-slurm),
the jobstep's srun (snakemake-executor-plugin-slurm-jobstep) and our Ray srun steps.

The resources come from ``snakemake -n --profile slurm`` (profile + rule resources as Snakemake
computes them); the sbatch and srun lines are rendered by the plugins' own functions and
``Executor.run_job``, not re-implemented here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from pacs.verl_plugin.cluster import slurm

sm_slurm = pytest.importorskip("snakemake_executor_plugin_slurm")
jobstep = pytest.importorskip("snakemake_executor_plugin_slurm_jobstep")
from snakemake.iocontainers import ResourceList
from snakemake_executor_plugin_slurm.submit_string import get_submit_command
from snakemake_executor_plugin_slurm.utils import set_gres_string
from snakemake_executor_plugin_slurm.validation import validate_slurm_extra

JOB_EXEC = "python -m snakemake --mode remote <job>"  # what format_job_exec returns; not ours
NODES = {"qwen3_4b": ("gpu01",), "qwen3_8b": ("gpu01", "gpu02")}


def _value(text: str):
    return int(text) if text.isdigit() else text


@pytest.fixture(scope="module")
def train_resources(workflow_copy) -> dict[str, dict]:
    """model -> the resources of its `pacs` training job in the paper dry run (in a copy of the
    workflow: in the repo, finished jobs would be missing from the dry run)."""
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        "HF_HUB_OFFLINE": "1",
    }
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--profile", "slurm"],
        cwd=workflow_copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    found = {}
    for block in re.split(r"\n(?=(?:local)?rule \S+:\n)", result.stdout):
        if not block.startswith("rule train_verl:"):
            continue
        wildcards = re.search(r"wildcards: model=(\S+), run=(\S+), seed=(\d+)", block)
        if wildcards.group(2) != "pacs":
            continue
        line = re.search(r"^\s+resources: (.*)$", block, re.MULTILINE).group(1)
        res = dict(kv.split("=", 1) for kv in re.split(r",\s*", line))
        found[wildcards.group(1)] = {
            k: _value(v) for k, v in res.items() if not v.startswith("<TBD>") and k != "mem"
        }
    assert set(found) == set(NODES), found
    return found


class _Job:
    """The job attributes the plugins read (a real Snakemake ResourceList for the resources)."""

    name, threads = "train_verl", 1

    def __init__(self, resources: dict):
        self.resources = ResourceList(fromdict=resources)

    def is_group(self) -> bool:
        return False


def _job(resources: dict) -> _Job:
    return _Job(resources)


def render_sbatch(resources: dict) -> str:
    """What SlurmExecutor.run_job submits for one job (minus the --wrap payload)."""
    job = _job(resources)
    validate_slurm_extra(job)
    params = {
        "run_uuid": "RUN",
        "slurm_logfile": "LOG",
        "comment_str": "rule_train_verl",
        "account": f"-A {resources['slurm_account']}",
        "partition": f"-p {resources['slurm_partition']}",
        "workdir": "/work",
    }
    return get_submit_command(job, params) + set_gres_string(job)


class _Proc:
    stdin = None

    def wait(self):
        return 0


def render_jobstep(resources: dict, batch_env: dict, monkeypatch) -> tuple[str, dict]:
    """The srun line and environment the jobstep Executor.run_job starts inside the sbatch job."""
    calls = []

    def fake_popen(call, **kwargs):
        calls.append((" ".join(call.split()), kwargs["env"]))
        return _Proc()

    monkeypatch.setattr(jobstep.subprocess, "Popen", fake_popen)
    for key in [k for k in os.environ if k.startswith(("SLURM_", "SRUN_", "SBATCH_"))]:
        monkeypatch.delenv(key)
    for key, value in batch_env.items():
        monkeypatch.setenv(key, value)
    executor = object.__new__(jobstep.Executor)
    executor.logger = SimpleNamespace(debug=lambda *a: None, error=lambda *a: None)
    executor.workflow = SimpleNamespace(
        executor_settings=jobstep.ExecutorSettings(pass_command_as_script=False, array_execs="")
    )
    executor.format_job_exec = lambda job: JOB_EXEC
    executor.report_job_submission = executor.report_job_success = lambda info: None
    executor.report_job_error = lambda info: pytest.fail("jobstep reported an error")
    executor.__post_init__()  # reads SLURM_JOB_ID / SLURM_GPUS from the (batch) environment
    executor.run_job(_job(resources))
    [(call, env)] = calls
    return call, env


def batch_env(nodes: tuple[str, ...]) -> dict[str, str]:
    """What SLURM sets in the batch step of `sbatch --nodes=N --gres=gpu:h200:8 --cpus-per-task=96`
    (no --gpus, so no SLURM_GPUS)."""
    return {
        "SLURM_JOB_ID": "4242",
        "SLURM_JOB_NODELIST": ",".join(nodes),
        "SLURM_NODELIST": ",".join(nodes),
        "SLURM_JOB_NUM_NODES": str(len(nodes)),
        "SLURM_NNODES": str(len(nodes)),
        "SLURM_NTASKS": str(len(nodes)),
        "SLURM_CPUS_PER_TASK": "96",
        "SLURM_CPUS_ON_NODE": "96",
        "SLURM_GPUS_ON_NODE": "8",
        "SLURM_JOB_GPUS": "0,1,2,3,4,5,6,7",
        "SLURM_MEM_PER_NODE": "1000000",
        "SLURM_SUBMIT_DIR": "/work",
    }


def launcher_env(nodes: tuple[str, ...]) -> dict[str, str]:
    """What srun sets for the launcher's task: job-wide values plus its one-node step's own."""
    return {
        **batch_env(nodes),
        "SLURM_NODELIST": nodes[0],
        "SLURM_STEP_NODELIST": nodes[0],
        "SLURM_NNODES": "1",
        "SLURM_STEP_NUM_NODES": "1",
        "SLURM_NTASKS": "1",
        "SLURM_STEP_NUM_TASKS": "1",
        "SLURM_STEP_ID": "0",
        "SLURM_STEPID": "0",
        "SLURM_CPU_BIND": "quiet",
        "SLURM_DISTRIBUTION": "cyclic",
        "SRUN_DEBUG": "3",
        "HF_HUB_OFFLINE": "1",
    }


EXPECTED_SBATCH = {
    "qwen3_4b": (
        "sbatch --parsable --job-name RUN --output LOG --export=ALL --comment rule_train_verl "
        "-A SET_ME_account -p SET_ME_partition -t 4320 --mem 1000000 --nodes=1 "
        "--cpus-per-task=96 -D /work --gres=gpu:h200:8"
    ),
    "qwen3_8b": (
        "sbatch --parsable --job-name RUN --output LOG --export=ALL --comment rule_train_verl "
        "-A SET_ME_account -p SET_ME_partition -t 4320 --mem 1000000 --nodes=2 "
        "--cpus-per-task=96 -D /work --gres=gpu:h200:8"
    ),
}
EXPECTED_JOBSTEP = {
    "qwen3_4b": f"srun -n1 --cpu-bind=q --cpus-per-task=96 --nodes=1 {JOB_EXEC}",
    # -n1 on 2 nodes: srun warns and runs the launcher on the first node, which is what we want;
    # with no --gpus the step gets every GPU the job has there (SLURM's default for GRES).
    "qwen3_8b": f"srun -n1 --cpu-bind=q --cpus-per-task=96 --nodes=2 {JOB_EXEC}",
}


def expected_ray(model: str, run_dir: Path) -> list[str]:
    """Our Ray srun steps: each node whole (its CPUs and GPUs), Ray under our supervisor."""
    if model == "qwen3_4b":
        return []  # one node: verl starts its own local Ray
    node = (
        f"{sys.executable} -m pacs.verl_plugin.cluster.ray_node "
        f"--stop-file={run_dir}/ray-stop-4242 -- start"
    )
    res = "--num-cpus=96 --num-gpus=8 --disable-usage-stats --block"
    return [
        (
            "srun --nodes=1 --ntasks=1 --nodelist=gpu01 --overlap --cpus-per-task=96 --gres=gpu:8 "
            f"{node} --head --node-ip-address=10.1.0.1 --port=6379 --include-dashboard=false {res}"
        ),
        (
            "srun --nodes=1 --ntasks=1 --ntasks-per-node=1 --nodelist=gpu02 --overlap "
            f"--cpus-per-task=96 --gres=gpu:8 {node} --address=10.1.0.1:6379 {res}"
        ),
    ]


@pytest.mark.parametrize("model", sorted(NODES))
def test_sbatch_requests_eight_gpus_on_every_node(model, train_resources):
    line = render_sbatch(train_resources[model])
    assert line == EXPECTED_SBATCH[model]
    # --gres counts per node; --gpus would count for the whole job.
    assert f"--nodes={len(NODES[model])}" in line and "--gres=gpu:h200:8" in line
    assert "--gpus" not in line and "--ntasks" not in line  # sbatch default: one task per node


@pytest.mark.parametrize("model", sorted(NODES))
def test_jobstep_srun_does_not_cap_the_gpus(model, train_resources, monkeypatch):
    call, _ = render_jobstep(train_resources[model], batch_env(NODES[model]), monkeypatch)
    assert call == EXPECTED_JOBSTEP[model]
    assert "--gpus" not in call


@pytest.mark.parametrize("model", sorted(NODES))
def test_ray_steps_span_the_allocation(model, scontrol, tmp_path):
    nodes = NODES[model]
    answers = scontrol.answers("4242", list(nodes), ",".join(nodes), {"gpu01": "gpu01"}, cpus=96)
    alloc = slurm.read_allocation(launcher_env(nodes), run=scontrol.run(answers))
    assert (alloc.nnodes, alloc.gpus_per_node, alloc.cpus_per_node) == (len(nodes), 8, 96)
    if alloc.nnodes == 1:
        assert expected_ray(model, tmp_path) == []
        return
    cluster = slurm.RayCluster(alloc, tmp_path, resolve={"gpu01": "10.1.0.1"}.get)
    assert [" ".join(c) for c in cluster.commands()] == expected_ray(model, tmp_path)


def test_ray_steps_drop_the_launchers_step_variables_as_the_jobstep_does(
    train_resources, monkeypatch
):
    """Our Ray srun steps get the environment the jobstep plugin would give a nested srun."""
    env = launcher_env(NODES["qwen3_8b"])
    _, jobstep_env = render_jobstep(train_resources["qwen3_8b"], env, monkeypatch)
    ours = slurm.ray_step_env({**os.environ, **env})
    # ours adds Ray's auth mode, decided once for the nodes and their clients, and Ray's start-up
    # deadlines (slurm.RAY_START_DEADLINES)
    added = {"RAY_AUTH_MODE", *slurm.RAY_START_DEADLINES}
    assert {k: v for k, v in ours.items() if k not in added} == jobstep_env
    assert ours["RAY_AUTH_MODE"] in ("token", "disabled")
    for dropped in (
        "SLURM_NNODES",
        "SLURM_NTASKS",
        "SLURM_CPUS_PER_TASK",
        "SLURM_NODELIST",
        "SLURM_STEP_ID",
        "SLURM_CPU_BIND",
        "SRUN_DEBUG",
    ):
        assert dropped not in ours, dropped
    assert ours["SLURM_JOB_ID"] == "4242" and ours["HF_HUB_OFFLINE"] == "1"


def test_ray_cluster_starts_its_steps_with_the_cleaned_environment(tmp_path):
    started = []

    class Proc:
        returncode = None

        def poll(self):
            return None

        def terminate(self):
            self.returncode = -15

        def wait(self, timeout=None):
            return self.returncode

    def popen(cmd, env=None):
        started.append(env)
        return Proc()

    alloc = slurm.SlurmAllocation("4242", ("gpu01", "gpu02"), 8, 96)
    env = launcher_env(("gpu01", "gpu02"))
    with slurm.RayCluster(
        alloc,
        tmp_path,
        resolve=lambda h: "10.1.0.1",
        popen=popen,
        probe=lambda a: slurm.RayNodes((8.0, 8.0)),
        env=env,
        stop_grace_s=0.1,
    ):
        pass
    assert len(started) == 2
    assert all(e == slurm.ray_step_env(env) and "SLURM_NTASKS" not in e for e in started)
