"""The launcher: dry-run commands for every paper run, SLURM/Ray multi-node, resume, teardown."""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from pacs.config import load_config, load_profile
from pacs.methods import traits
from pacs.verl_plugin.cluster import slurm
from pacs.verl_plugin.launch import train
from pacs.verl_plugin.launch.overrides import ClusterShape, RunPaths, build_overrides

REPO = Path(__file__).resolve().parents[2]
PAPER_CONFIGS = (REPO / "configs" / "paper.yaml", REPO / "configs" / "paper_v1.yaml")
SLURM_VARS = (
    "SLURM_JOB_ID",
    "SLURM_JOB_NODELIST",
    "SLURM_NODELIST",
    "SLURM_JOB_NUM_NODES",
    "SLURM_NNODES",
    "SLURM_GPUS_ON_NODE",
    "SLURM_GPUS_PER_NODE",
    "SLURM_JOB_GPUS",
    "SLURM_CPUS_ON_NODE",
)
DRY_CASES = [
    (p, r, m)
    for p in PAPER_CONFIGS
    for r in load_config(p)["runs"]
    for m in load_config(p)["models"]
]


@pytest.fixture(autouse=True)
def no_slurm(monkeypatch):
    for var in SLURM_VARS:
        monkeypatch.delenv(var, raising=False)


def _dry_run(capsys, *args) -> list[list[str]]:
    """The launcher's dry-run lines; on the GPU cluster's device unless the test names one."""
    device = [] if "--device" in args else ["--device", "cuda"]
    assert train.main(["--dry-run", *device, *map(str, args)]) == 0
    return [shlex.split(line) for line in capsys.readouterr().out.strip().splitlines()]


@pytest.mark.parametrize(
    "config_path,run_name,model", DRY_CASES, ids=[f"{p.stem}-{r}-{m}" for p, r, m in DRY_CASES]
)
def test_dry_run_prints_the_full_verl_command(config_path, run_name, model, capsys, tmp_path):
    """The printed command is verl's main_ppo with exactly the overrides that compose with
    verl's ppo_trainer.yaml (test_config_compose), plus the Hydra run dir."""
    out = tmp_path / "run"
    (cmd,) = _dry_run(
        capsys,
        "--config",
        config_path,
        "--run",
        run_name,
        "--model",
        model,
        "--out",
        out,
        "--train-file",
        "/data/train.parquet",
        "--gpus-per-node",
        8,
        "--ray-address",
        "10.0.0.9:6379",
    )
    assert cmd[:3] == [sys.executable, "-m", "verl.trainer.main_ppo"]
    cfg = load_config(config_path)
    shape = ClusterShape(
        int(cfg["models"][model]["nnodes"]),
        8,
        "10.0.0.9:6379" if cfg["models"][model]["nnodes"] > 1 else None,
    )
    paths = RunPaths("/data/train.parquet", "/data/train.parquet", out.resolve())
    log = str(out.resolve() / "verl_logs" / "attempt-001.jsonl")
    profile = load_profile(config_path)
    assert cmd[3:] == build_overrides(
        profile, profile.run(run_name), model, 0, paths, shape, log
    ) + [f"hydra.run.dir={out.resolve() / 'hydra'}"]
    # a loss that reads whole groups (PACS, REAL: MethodTraits) runs under label_sync
    whole = traits(profile.run(run_name).method).needs_whole_groups
    expected_mode = "label_sync" if whole else "plugin_sync"
    assert f"trainer.v1.trainer_mode={expected_mode}" in cmd
    assert f"trainer.default_local_dir={out.resolve() / 'checkpoints'}" in cmd


def test_extra_overrides_and_loss_agg_mode_reach_the_command(capsys, tmp_path):
    (cmd,) = _dry_run(
        capsys,
        "--config",
        PAPER_CONFIGS[0],
        "--run",
        "grpo",
        "--out",
        tmp_path,
        "--loss-agg-mode",
        "token-mean",
        "--",
        "trainer.save_freq=5",
    )
    assert "actor_rollout_ref.actor.loss_agg_mode=token-mean" in cmd
    assert cmd[-2] == "trainer.save_freq=5"


def test_multi_node_outside_slurm_needs_a_ray_address(tmp_path):
    with pytest.raises(ValueError, match="--ray-address"):
        train.main(
            [
                "--config",
                str(PAPER_CONFIGS[0]),
                "--run",
                "pacs",
                "--model",
                "qwen3_8b",
                "--out",
                str(tmp_path),
            ]
        )


# ------------------------------------------------------------------- SLURM allocation


@pytest.fixture
def two_node_job(monkeypatch, scontrol):
    """Job 4242 on gpu01-gpu02 with 4 GPUs per node, as scontrol reports it (the launcher's own
    step variables name its first node only)."""
    scontrol.install(
        scontrol.answers(
            "4242", ["gpu01", "gpu02"], "gpu[01-02]", {"gpu01": "gpu01-ib"}, cpus=32, gpus=4
        )
    )
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu01")
    monkeypatch.setenv("SLURM_NNODES", "1")
    monkeypatch.setattr(slurm.socket, "gethostbyname", lambda host: {"gpu01-ib": "10.1.0.1"}[host])


def test_read_allocation_from_scontrol(two_node_job):
    alloc = slurm.read_allocation()
    assert alloc == slurm.SlurmAllocation(
        job_id="4242",
        hostnames=("gpu01", "gpu02"),
        gpus_per_node=4,
        cpus_per_node=32,
        head_address="gpu01-ib",
    )
    assert alloc.head == "gpu01" and alloc.workers == ("gpu02",)


def test_read_allocation_detects_inconsistent_node_count(scontrol, monkeypatch):
    answers = scontrol.answers("4242", ["gpu01", "gpu02"], "gpu[01-02]", {"gpu01": "gpu01"})
    key = ("show", "job", "-d", "-o", "4242")
    answers[key] = answers[key].replace("NumNodes=2", "NumNodes=3")
    with pytest.raises(RuntimeError, match="expands to 2 hosts"):
        slurm.read_allocation({"SLURM_JOB_ID": "4242"}, run=scontrol.run(answers))


def test_no_slurm_means_no_allocation():
    assert slurm.read_allocation() is None


@pytest.mark.parametrize(
    "value,count", [("8", 8), ("h100:4", 4), ("gpu:h200:2", 2), ("gpu:4(IDX:0-3)", 4)]
)
def test_gpu_count_spellings(value, count):
    assert slurm.parse_gpu_count(value) == count


def test_dry_run_inside_a_two_node_allocation(two_node_job, capsys, tmp_path, compose):
    head, worker, cmd = _dry_run(
        capsys,
        "--config",
        PAPER_CONFIGS[0],
        "--run",
        "pacs",
        "--model",
        "qwen3_8b",
        "--out",
        tmp_path,
    )
    ray_node = [
        sys.executable,
        "-m",
        "pacs.verl_plugin.cluster.ray_node",
        f"--stop-file={tmp_path.resolve() / 'ray-stop-4242'}",
        "--",
        "start",
    ]
    node = ["--num-cpus=32", "--num-gpus=4", "--disable-usage-stats", "--block"]
    assert head == [
        "srun",
        "--nodes=1",
        "--ntasks=1",
        "--nodelist=gpu01",
        "--overlap",
        "--cpus-per-task=32",
        "--gres=gpu:4",
        *ray_node,
        "--head",
        "--node-ip-address=10.1.0.1",
        "--port=6379",
        "--include-dashboard=false",
        *node,
    ]
    assert worker == [
        "srun",
        "--nodes=1",
        "--ntasks=1",
        "--ntasks-per-node=1",
        "--nodelist=gpu02",
        "--overlap",
        "--cpus-per-task=32",
        "--gres=gpu:4",
        *ray_node,
        "--address=10.1.0.1:6379",
        *node,
    ]
    c = compose(cmd[3:])
    assert (c.trainer.nnodes, c.trainer.n_gpus_per_node, c.ray_kwargs.ray_init.address) == (
        2,
        4,
        "10.1.0.1:6379",
    )
    assert (
        c.ray_kwargs.ray_init.runtime_env.env_vars.VERL_USE_EXTERNAL_MODULES
        == "pacs.verl_plugin.register"
    )


def test_flags_that_contradict_the_allocation_are_refused(two_node_job, tmp_path):
    with pytest.raises(ValueError, match="disagrees with the SLURM allocation"):
        train.main(
            [
                "--config",
                str(PAPER_CONFIGS[0]),
                "--run",
                "pacs",
                "--gpus-per-node",
                "8",
                "--out",
                str(tmp_path),
                "--dry-run",
            ]
        )


# ------------------------------------------------------------------- Ray cluster lifecycle


def _alloc(n=2):
    return slurm.SlurmAllocation("1", tuple(f"n{i}" for i in range(n)), 8)


def _nodes(*counts):
    """probe(): the Ray cluster grows through ``counts`` nodes of 8 GPUs each."""
    found = iter(counts)
    last = [0]

    def probe(address):
        last[0] = next(found, last[0])
        return slurm.RayNodes((8.0,) * last[0])

    return probe


def test_ray_cluster_starts_waits_and_tears_down(tmp_path, spawner):
    with slurm.RayCluster(
        _alloc(),
        tmp_path,
        resolve=lambda h: "10.0.0.1",
        popen=spawner,
        probe=_nodes(0, 1, 1, 2),
        poll_s=0.01,
        stop_grace_s=0.1,
    ) as cluster:
        assert cluster.address == "10.0.0.1:6379"
        ray_parts = [c[c.index("--") + 1 : c.index("--") + 3] for c in spawner.commands]
        assert ray_parts == [["start", "--head"], ["start", "--address=10.0.0.1:6379"]]
        assert all(p.poll() is None for p in spawner.procs)
    assert all(p.poll() is not None for p in spawner.procs)


def test_ray_cluster_is_stopped_when_nodes_never_join(tmp_path, spawner):
    with (
        pytest.raises(RuntimeError, match="holds 1 node"),
        slurm.RayCluster(
            _alloc(),
            tmp_path,
            resolve=lambda h: "10.0.0.1",
            popen=spawner,
            probe=_nodes(1),
            wait_s=0.05,
            poll_s=0.01,
            stop_grace_s=0.1,
        ),
    ):
        pass
    assert all(p.poll() is not None for p in spawner.procs)


def test_supervise_stops_verl_and_cluster_on_sigterm(tmp_path, spawner):
    pid_file = tmp_path / "pid"
    # The PID appears whole or not at all (written aside, then renamed): the watcher below must
    # never read a file that exists but is still empty.
    write_pid = (
        f"open({str(pid_file)!r} + '.tmp', 'w').write(str(os.getpid())); "
        f"os.replace({str(pid_file)!r} + '.tmp', {str(pid_file)!r})"
    )
    child = [sys.executable, "-c", f"import os, time; {write_pid}; time.sleep(60)"]
    cluster = slurm.RayCluster(
        _alloc(),
        tmp_path,
        resolve=lambda h: "10.0.0.1",
        popen=spawner,
        probe=_nodes(2),
        poll_s=0.01,
        stop_grace_s=0.1,
    )

    def send_term():
        while not pid_file.exists():
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=send_term, daemon=True).start()
    before = signal.getsignal(signal.SIGTERM)
    assert train.supervise(child, dict(os.environ), cluster) == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before  # handlers restored
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)  # verl's process is gone
    assert all(p.poll() is not None for p in spawner.procs)  # Ray steps are gone


def test_supervise_returns_verls_exit_code():
    assert train.supervise([sys.executable, "-c", "raise SystemExit(3)"], dict(os.environ)) == 3


# ------------------------------------------------------------------- resume


def _checkpoint(ckpt: Path, step: int, tracker: bool = True):
    (ckpt / f"global_step_{step}" / "actor").mkdir(parents=True)
    if tracker:
        (ckpt / "latest_checkpointed_iteration.txt").write_text(str(step))


def test_resume_point(tmp_path):
    ckpt = tmp_path / "checkpoints"
    assert train.resume_point(ckpt) is None
    _checkpoint(ckpt, 20)
    assert train.resume_point(ckpt) == 20


def test_resume_refuses_to_start_over_silently(tmp_path):
    ckpt = tmp_path / "checkpoints"
    _checkpoint(ckpt, 40, tracker=False)
    with pytest.raises(RuntimeError, match="silently start over"):
        train.resume_point(ckpt)
    (ckpt / "latest_checkpointed_iteration.txt").write_text("60")
    with pytest.raises(RuntimeError, match="global_step_60/actor is missing"):
        train.resume_point(ckpt)


FAKE_VERL = """
import json, os, sys
log = os.environ["VERL_FILE_LOGGER_PATH"]
ckpt = [a.split("=", 1)[1] for a in sys.argv if a.startswith("trainer.default_local_dir=")][0]
latest = os.path.join(ckpt, "latest_checkpointed_iteration.txt")
start = int(open(latest).read()) if os.path.exists(latest) else 0
with open(log, "w") as f:
    for step in range(start + 1, start + 3):
        data = {"timing_s/step": 1.0, "critic/rewards/mean": step / 10}
        f.write(json.dumps({"step": step, "data": data}) + "\\n")
os.makedirs(os.path.join(ckpt, f"global_step_{start + 2}", "actor"), exist_ok=True)
open(os.path.join(ckpt, "latest_checkpointed_iteration.txt"), "w").write(str(start + 2))
"""


def test_main_runs_resumes_and_finalizes(monkeypatch, tmp_path, caplog):
    """A stand-in for verl (same argv and env contract) run twice: the second run resumes."""
    monkeypatch.setattr(
        train, "verl_command", lambda overrides, out: [sys.executable, "-c", FAKE_VERL, *overrides]
    )
    monkeypatch.setattr(train, "check_plugin_registered", lambda: None)
    monkeypatch.setattr(train, "rollout_problem", lambda profile: None)  # no vLLM needed here
    merged = []
    import pacs.verl_plugin.launch.merge as merge_mod

    monkeypatch.setattr(
        merge_mod, "merge_checkpoint", lambda ckpt, out: merged.append((ckpt, out)) or ckpt
    )
    out = tmp_path / "run"
    args = [
        "--config",
        str(PAPER_CONFIGS[0]),
        "--run",
        "pacs",
        "--out",
        str(out),
        "--train-file",
        "/d/t.parquet",
    ]
    caplog.set_level("INFO", logger="pacs.verl_plugin.launch.train")
    assert train.main(args) == 0
    assert "no checkpoint in" in caplog.text
    assert train.main(args) == 0
    assert "resuming from" in caplog.text and "global_step_2" in caplog.text
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3, 4]  # both attempts, merged
    assert sorted(p.name for p in (out / "verl_logs").iterdir()) == [
        "attempt-001.jsonl",
        "attempt-002.jsonl",
    ]
    summary = json.loads((out / "summary.json").read_text())
    assert (
        summary["resumed_from_step"] == 2
        and summary["run"] == "pacs"
        and summary["metrics_rows"] == 4
    )
    assert merged[-1][1] == out.resolve() / "model"
    assert train.main([*args, "--no-merge"]) == 0  # third attempt, pipeline merges on its own
    assert len(merged) == 2 and "merged_from" not in json.loads((out / "summary.json").read_text())
