"""Issue 17's scheduler defects, each against what a real Slurm 22.05 cluster printed or did
(the records in conftest.py; the environment below is the launcher step's, as recorded inside
the jobstep's `srun -n1 --nodes=2` on tools/local_slurm.sh's two-node cluster)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from pacs import slurm_profile
from pacs.verl_plugin.cluster import slurm
from pacs.verl_plugin.launch import devices

# The launcher's own environment in a 2-node job (recorded): srun shrank the step to n1.
STEP_ENV = {
    "SLURM_JOB_ID": "1",
    "SLURM_JOBID": "1",
    "SLURM_JOB_NODELIST": "n1",
    "SLURM_NNODES": "1",
    "SLURM_NODELIST": "n[1-2]",
    "SLURM_STEP_NODELIST": "n1",
    "SLURM_STEP_NUM_NODES": "1",
    "SLURM_JOB_CPUS_PER_NODE_PACK_GROUP_0": "16(x2)",
    "SLURM_CPUS_ON_NODE": "16",
    "SLURM_CPUS_PER_TASK": "16",
    "SLURM_GPUS_ON_NODE": "8",
    "SLURM_STEP_GPUS": "0,1,2,3,4,5,6,7",
    "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7",
    "ROCR_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7",
    "GPU_DEVICE_ORDINAL": "0,1,2,3,4,5,6,7",
    "SLURM_CONF": "/tmp/pslurm/etc/slurm.conf",
    "HF_HUB_OFFLINE": "1",
}


@pytest.fixture
def two_nodes(scontrol):
    """scontrol as it answered for job 1 on n[1-2]; n1/n2 are NodeNames that do not resolve."""
    return scontrol.run(scontrol.answers("1", ["n1", "n2"], "n[1-2]", {"n1": "127.0.0.1"}))


# ------------------------------------------------------------------- 1. the real allocation


def test_allocation_is_the_jobs_not_the_launcher_steps(two_nodes):
    alloc = slurm.read_allocation(STEP_ENV, run=two_nodes)
    assert alloc == slurm.SlurmAllocation(
        job_id="1",
        hostnames=("n1", "n2"),
        gpus_per_node=8,
        cpus_per_node=16,
        head_address="127.0.0.1",
    )
    assert alloc.workers == ("n2",)


def test_uneven_or_gpu_less_allocations_are_refused(scontrol):
    answers = scontrol.answers("7", ["n1", "n2"], "n[1-2]", {"n1": "10.0.0.1"})
    key = ("show", "job", "-d", "-o", "7")
    two_groups = answers[key].replace(
        "Nodes=n[1-2] CPU_IDs=0-15 Mem=0 GRES=gpu:h200:8(IDX:0-7)",
        "Nodes=n1 CPU_IDs=0-15 Mem=0 GRES=gpu:h200:8(IDX:0-7) "
        "Nodes=n2 CPU_IDs=0-15 Mem=0 GRES=gpu:h200:4(IDX:0-3)",
    )
    with pytest.raises(RuntimeError, match="different CPUs/GPUs"):
        slurm.read_allocation({"SLURM_JOB_ID": "7"}, run=scontrol.run({**answers, key: two_groups}))
    no_gpu = answers[key].replace("GRES=gpu:h200:8(IDX:0-7)", "GRES=")
    with pytest.raises(RuntimeError, match="holds no GPU"):
        slurm.read_allocation({"SLURM_JOB_ID": "7"}, run=scontrol.run({**answers, key: no_gpu}))


@pytest.mark.parametrize("ids,count", [("0-15", 16), ("0,2,4-7", 6), ("3", 1)])
def test_cpu_id_lists(ids, count):
    assert slurm.count_ids(ids) == count


def _alloc() -> slurm.SlurmAllocation:
    """Job 1's allocation as read_allocation returns it (two nodes, 16 CPUs and 8 GPUs each)."""
    return slurm.SlurmAllocation("1", ("n1", "n2"), 8, 16, "127.0.0.1")


@pytest.mark.parametrize(
    "gpus", [(8.0,), (8.0, 4.0), (0.0, 8.0)], ids=["one node", "half a node", "no GPU"]
)
def test_a_cluster_short_of_the_allocation_is_refused(gpus):
    with pytest.raises(RuntimeError, match="refusing to train on part of the allocation"):
        slurm.check_ray_nodes(slurm.RayNodes(gpus), _alloc())
    slurm.check_ray_nodes(slurm.RayNodes((8.0, 8.0)), _alloc())  # the whole job: fine


def test_training_does_not_start_on_a_short_cluster(tmp_path, spawner):
    cluster = slurm.RayCluster(
        _alloc(),
        tmp_path,
        resolve=lambda h: h,
        popen=spawner,
        probe=lambda a: slurm.RayNodes((8.0, 4.0)),
        poll_s=0.01,
        stop_grace_s=5,
    )
    with pytest.raises(RuntimeError, match="holds 2 node"), cluster:
        pytest.fail("entered a cluster with half the GPUs of a node")
    assert all(p.poll() is not None for p in spawner.procs)


# ------------------------------------------------------------------- 2. Ray stopped, no leftover


def test_a_single_node_run_never_attaches_to_a_leftover_cluster(tmp_path, monkeypatch):
    """Ray's own address resolution: the stale address file wins for a plain ray.init(); with
    the launcher's environment Ray starts a local instance instead."""
    from ray._private import services

    (tmp_path / "ray_current_cluster").write_text("10.9.9.9:6379")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert services.canonicalize_bootstrap_address(None, str(tmp_path)) == "10.9.9.9:6379"
    env = slurm.verl_env(STEP_ENV, multi_node=False)
    monkeypatch.setenv("RAY_ADDRESS", env["RAY_ADDRESS"])
    assert services.canonicalize_bootstrap_address(None, str(tmp_path)) is None  # start local
    assert "RAY_ADDRESS" not in slurm.verl_env(STEP_ENV, multi_node=True)  # the override rules


FAKE_RAY = """
import os, subprocess, sys, time
addr_file, pids = sys.argv[1], sys.argv[2]
if "--head" in sys.argv:
    open(addr_file, "w").write("192.0.2.2:6399")  # Ray writes the host's IP, not --node-ip-address
# a daemon-like child with a child of its own (as ray start -> raylet -> workers)
grandchild = "import time; time.sleep(120)"
child = subprocess.Popen([sys.executable, "-c",
    "import subprocess, sys, time; "
    f"subprocess.Popen([sys.executable, '-c', {grandchild!r}]); time.sleep(120)"])
import psutil
while len(psutil.Process().children(recursive=True)) < 2:
    time.sleep(0.05)
me = psutil.Process()
open(pids + ".env", "w").write(os.environ.get("ROCR_VISIBLE_DEVICES", "-"))
open(pids + ".deadline", "w").write(os.environ.get("RAY_agent_register_timeout_ms", "-"))
# last, and whole or not at all (written aside, renamed): the test watches for this file
open(pids + ".tmp", "w").write(" ".join(str(p.pid) for p in [me, *me.children(recursive=True)]))
os.replace(pids + ".tmp", pids)
time.sleep(120)
"""


@pytest.fixture
def ray_node():
    import importlib

    return importlib.import_module("pacs.verl_plugin.cluster.ray_node")


def _fake_ray(ray_node, tmp_path, monkeypatch) -> tuple[Path, Path]:
    addr_file, pids = tmp_path / "ray_current_cluster", tmp_path / "pids"
    script = tmp_path / "fake_ray.py"
    script.write_text(FAKE_RAY)
    monkeypatch.setattr(ray_node, "ADDRESS_FILE", addr_file)
    monkeypatch.setattr(
        ray_node, "ray_command", lambda: [sys.executable, str(script), str(addr_file), str(pids)]
    )
    monkeypatch.setattr(ray_node, "GRACE_S", 5.0)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.setenv("ROCR_VISIBLE_DEVICES", "0")
    return addr_file, pids


def _all_gone(pids: list[int]) -> bool:
    return not [
        p
        for p in pids
        if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
    ]


@pytest.mark.parametrize("how", ["stop file", "SIGTERM"])
def test_a_ray_node_stops_its_whole_tree_and_its_address_file(how, ray_node, tmp_path, monkeypatch):
    addr_file, pids = _fake_ray(ray_node, tmp_path, monkeypatch)
    stop = tmp_path / "stop"

    def trigger():
        while not pids.exists():
            time.sleep(0.05)
        time.sleep(0.2)
        stop.touch() if how == "stop file" else os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=trigger, daemon=True).start()
    before = signal.getsignal(signal.SIGTERM)
    try:
        code = ray_node.main(
            [f"--stop-file={stop}", "--", "start", "--head", "--port=6399", "--block"]
        )
    finally:
        signal.signal(signal.SIGTERM, before)
    tree = [int(p) for p in pids.read_text().split()]
    assert code == 0 and len(tree) == 3 and _all_gone(tree)
    assert not addr_file.exists()
    assert (tmp_path / "pids.env").read_text() == "-"  # 4. no ROCR_VISIBLE_DEVICES for Ray
    assert (tmp_path / "pids.deadline").read_text() == "300000"  # Ray's agents: 5 min to start


def test_another_clusters_address_file_is_left_alone(ray_node, tmp_path):
    path = tmp_path / "ray_current_cluster"
    path.write_text("10.0.0.5:6380")
    ray_node.drop_address_file("6399", since=0, path=path)
    assert path.exists()
    ray_node.drop_address_file("6380", since=time.time() + 60, path=path)  # older than our start
    assert path.exists()
    ray_node.drop_address_file("6380", since=0, path=path)
    assert not path.exists()


def test_cluster_stop_signals_every_node_through_the_stop_file(tmp_path):
    """RayCluster.stop: the stop file first; the srun steps end on their own (here: a step that
    exits when the file appears), nothing is left running, the file is gone afterwards."""
    stop_file = tmp_path / f"ray-stop-{_alloc().job_id}"
    waiter = (
        f"import os, sys, time\nwhile not os.path.exists({str(stop_file)!r}): time.sleep(0.05)\n"
    )
    started = []

    def popen(cmd, env=None):
        started.append(subprocess.Popen([sys.executable, "-c", waiter]))
        return started[-1]

    with slurm.RayCluster(
        _alloc(),
        tmp_path,
        resolve=lambda h: h,
        popen=popen,
        probe=lambda a: slurm.RayNodes((8.0, 8.0)),
        poll_s=0.01,
    ):
        assert all(p.poll() is None for p in started)
    assert [p.returncode for p in started] == [0, 0]  # ended by the file, not killed
    assert not stop_file.exists()


def test_ray_nodes_and_their_clients_agree_on_token_auth(tmp_path):
    """Found on the local cluster: with ~/.ray/auth_token present and RAY_AUTH_MODE unset, Ray
    2.60's `ray start` turns token auth on while `ray.init(address=...)` stays off and is
    refused. The nodes' steps, the probe and verl get one explicit mode."""
    assert slurm.with_ray_auth_mode({}, home=tmp_path)["RAY_AUTH_MODE"] == "disabled"
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("x" * 32)
    assert slurm.with_ray_auth_mode({}, home=tmp_path)["RAY_AUTH_MODE"] == "token"
    assert (
        slurm.with_ray_auth_mode({"RAY_AUTH_MODE": "disabled"}, home=tmp_path)["RAY_AUTH_MODE"]
        == "disabled"
    )
    step, driver = slurm.ray_step_env(STEP_ENV), slurm.verl_env(STEP_ENV, multi_node=True)
    assert step["RAY_AUTH_MODE"] == driver["RAY_AUTH_MODE"]


def test_every_ray_process_we_start_gets_the_raised_start_deadlines():
    """Found on the local cluster: on a loaded host Ray 2.60's raylet exited because its agents
    had not registered in time. Our Ray steps, the Ray nodes and verl's own local Ray (one node)
    get longer deadlines; the names are the raylet's own config keys; a user's value wins."""
    import ray

    raylet = Path(ray.__file__).parent / "core" / "src" / "ray" / "raylet" / "raylet"
    binary = raylet.read_bytes()
    for key in slurm.RAY_START_DEADLINES:
        assert key.encode() in binary, f"{key}: not a config key of {raylet}"
    envs = (
        slurm.ray_step_env(STEP_ENV),
        slurm.verl_env(STEP_ENV, multi_node=False),
        slurm.verl_env(STEP_ENV, multi_node=True),
    )
    for env in envs:
        assert env["RAY_agent_register_timeout_ms"] == "300000"
        assert env["RAY_worker_register_timeout_seconds"] == "300"
    mine = {**STEP_ENV, "RAY_agent_register_timeout_ms": "900000"}
    assert slurm.ray_step_env(mine)["RAY_agent_register_timeout_ms"] == "900000"


# ------------------------------------------------------------------- 3. CPU device, several nodes


def test_cpu_on_several_nodes_gives_ray_init_no_resources(compose, two_nodes, tmp_path):
    alloc = slurm.read_allocation(STEP_ENV, run=two_nodes)
    cluster = slurm.RayCluster(alloc, tmp_path, resolve=lambda h: h)
    cfg = compose(
        devices.device_overrides("cpu", 2 * alloc.gpus_per_node, cluster.address)
        + [f"+ray_kwargs.ray_init.address={cluster.address}"]
    )
    assert cfg.ray_kwargs.ray_init.num_cpus is None and "num_gpus" not in cfg.ray_kwargs.ray_init
    assert cfg.trainer.device == "cpu"
    for cmd in cluster.commands():  # each node's logical CPUs: the job's CPUs there
        assert "--num-cpus=16" in cmd and "--num-gpus=8" in cmd and "--cpus-per-task=16" in cmd
    local = compose(devices.device_overrides("cpu", 2))  # one node: verl's local Ray, sized
    assert local.ray_kwargs.ray_init.num_cpus == devices.CPU_RAY_SLOTS_BASE + 6


# ------------------------------------------------------------------- 4. ROCR beside CUDA


def test_rocr_visible_devices_is_dropped_beside_cuda():
    for env in (slurm.ray_step_env(STEP_ENV), slurm.verl_env(STEP_ENV, multi_node=False)):
        assert (
            "ROCR_VISIBLE_DEVICES" not in env and env["CUDA_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7"
        )
    rocm_only = {"ROCR_VISIBLE_DEVICES": "0,1"}  # an AMD node: ROCR alone is kept
    assert slurm.without_rocr(rocm_only) == rocm_only


# ------------------------------------------------------------------- 5. the head's NodeAddr


def test_the_head_is_reached_at_its_nodeaddr(two_nodes, tmp_path):
    """n1 is a NodeName that resolves nowhere; Slurm reaches it at NodeAddr 127.0.0.1."""
    alloc = slurm.read_allocation(STEP_ENV, run=two_nodes)
    cluster = slurm.RayCluster(alloc, tmp_path)  # the real socket.gethostbyname
    assert cluster.address == "127.0.0.1:6379"
    head, worker = cluster.commands()
    assert "--node-ip-address=127.0.0.1" in head and "--address=127.0.0.1:6379" in worker


# ------------------------------------------------------------------- 6. SLURM_CONF kept


def test_our_ray_steps_keep_slurm_conf():
    env = slurm.ray_step_env(STEP_ENV)
    assert env["SLURM_CONF"] == STEP_ENV["SLURM_CONF"]
    assert "SLURM_NNODES" not in env and "SLURM_JOB_NODELIST" not in env


def test_the_jobsteps_srun_keeps_slurm_conf(monkeypatch):
    """The jobstep plugin's own run_job, its Popen recorded: SLURM_CONF reaches its srun."""
    jobstep = pytest.importorskip("snakemake_executor_plugin_slurm_jobstep")
    from snakemake.iocontainers import ResourceList

    calls = []
    fake_subprocess = SimpleNamespace(
        Popen=lambda call, **kw: (
            calls.append(kw["env"]) or SimpleNamespace(wait=lambda: 0, stdin=None)
        ),
        PIPE=subprocess.PIPE,
    )
    monkeypatch.setattr(jobstep, "subprocess", fake_subprocess)
    for key in [k for k in os.environ if k.startswith(("SLURM_", "SRUN_", "SBATCH_"))]:
        monkeypatch.delenv(key)
    for key, value in STEP_ENV.items():
        monkeypatch.setenv(key, value)
    assert slurm_profile.keep_slurm_config_in_jobsteps(jobstep) is True
    assert slurm_profile.keep_slurm_config_in_jobsteps(jobstep) is True  # twice: wrapped once

    class Job:  # the attributes the plugin reads (hashable, as Snakemake's jobs are)
        name, threads, resources = "train_verl", 1, ResourceList(fromdict={"nodes": 2})

        def is_group(self):
            return False

    job = Job()
    executor = object.__new__(jobstep.Executor)
    executor.logger = SimpleNamespace(debug=lambda *a: None, error=lambda *a: None)
    executor.workflow = SimpleNamespace(
        executor_settings=jobstep.ExecutorSettings(pass_command_as_script=False, array_execs="")
    )
    executor.format_job_exec = lambda job: "python -m snakemake <job>"
    executor.report_job_submission = executor.report_job_success = lambda info: None
    executor.__post_init__()
    executor.run_job(job)
    [env] = calls
    assert env["SLURM_CONF"] == STEP_ENV["SLURM_CONF"]
    assert "SLURM_NNODES" not in env  # the plugin's own clean-up still applies


# ------------------------------------------------------------------- 7. no accounting


CONFIG = """Configuration data as of 2026-11-24T02:24:00
AccountingStorageType   = {acct}
MinJobAge               = {age}
SlurmctldPort           = 57793
"""


def _config_run(acct: str, age: str):
    out = CONFIG.format(acct=acct, age=age)
    return lambda cmd, **kw: subprocess.CompletedProcess(cmd, 0, stdout=out)


@pytest.mark.parametrize(
    "acct,age,chosen,expected",
    [
        ("accounting_storage/none", "600 sec", "sacct", "squeue"),
        ("accounting_storage/none", "300 sec", "sacct", "squeue"),
        ("accounting_storage/slurmdbd", "300 sec", "sacct", "sacct"),
        ("accounting_storage/slurmdbd", "30 sec", "squeue", "squeue"),
    ],
)
def test_status_command_follows_the_clusters_accounting(acct, age, chosen, expected):
    settings, said = SimpleNamespace(status_command=chosen), []
    slurm_profile.check_status_command(settings, log=said.append, run=_config_run(acct, age))
    assert settings.status_command == expected
    assert bool(said) == (expected != chosen)


def test_no_accounting_and_a_short_min_job_age_is_refused_with_what_to_set():
    settings = SimpleNamespace(status_command="sacct")
    with pytest.raises(RuntimeError, match=r"MinJobAge=300 or more.*slurm-status-command: squeue"):
        slurm_profile.check_status_command(
            settings, run=_config_run("accounting_storage/none", "120 sec")
        )
