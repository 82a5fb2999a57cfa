"""``python -m pacs.preflight``: on this machine, and on fabricated situations."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pacs import preflight
from pacs.config import load_config, load_profile, parse_profile

REPO = Path(__file__).resolve().parents[1]
PAPER = REPO / "configs" / "paper.yaml"
PROFILE = REPO / "workflow" / "profiles" / "slurm" / "config.yaml"


def _lines(checks) -> dict[str, preflight.Check]:
    return {c.name: c for c in checks}


def _profile(tmp_path: Path, partition="gpu", account="lab", **train) -> Path:
    profile = yaml.safe_load(PROFILE.read_text())
    profile["default-resources"].update(slurm_partition=partition, slurm_account=account)
    profile["set-resources"]["train_verl"].update(train)
    path = tmp_path / "profile.yaml"
    path.write_text(yaml.safe_dump(profile))
    return path


def _fetched(results: Path, names=("qwen3_4b", "qwen3_8b", "diversity-embedder")) -> None:
    for name in names:
        folder = results / "hub" / name
        folder.mkdir(parents=True)
        (folder / "config.json").write_text("{}")


def _sinfo(text: str):
    return lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout=text, stderr="")


def test_on_this_machine_the_table_names_each_failure_with_its_fix(tmp_path):
    """Here: CPU torch, no vLLM, no flash-attn, no snapshots, the profile's SET_ME values."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pacs.preflight",
            "--config",
            str(PAPER),
            "--profile",
            str(PROFILE),
            "--results",
            str(tmp_path / "results"),
            "--out",
            str(tmp_path / "ok.txt"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = result.stdout
    assert result.returncode == 1 and not (tmp_path / "ok.txt").exists()
    assert "FAIL  version vllm" in out and "pip install vllm==0.24.0" in out
    assert "PASS  version verl" in out
    assert "FAIL  attention" in out and "import flash_attn" in out
    assert re.search(r"FAIL  slurm_partition +slurm_partition = SET_ME_partition", out)
    assert f"fix: set default-resources.slurm_account in {PROFILE}" in out
    assert "FAIL  snapshot qwen3_8b" in out and "fix: make fetch" in out
    assert "PASS  generate time limit" in out  # eval.shard.job_minutes = the profile's 720 min
    assert "code sandbox" in out and "disk" in out
    assert out.rstrip().endswith("failed")


def test_missing_snapshot_fails_and_a_fetched_one_passes(tmp_path):
    results = tmp_path / "results"
    _fetched(results, names=("qwen3_4b", "diversity-embedder"))
    lines = _lines(preflight.snapshot_checks(load_profile(PAPER), results))
    assert lines["snapshot qwen3_4b"].ok and lines["snapshot diversity-embedder"].ok
    missing = lines["snapshot qwen3_8b"]
    assert not missing.ok and "Qwen/Qwen3-8B" in missing.detail and "make fetch" in missing.fix


def test_partition_and_account(tmp_path):
    profile = preflight.read_profile(_profile(tmp_path, partition="gpu", account=""))
    lines = _lines(preflight.account_checks(profile, Path("p.yaml")))
    assert lines["slurm_partition"].ok
    assert (
        not lines["slurm_account"].ok
        and "default-resources.slurm_account in p.yaml" in lines["slurm_account"].fix
    )


def test_generate_limit_shorter_than_the_shards_plan_fails(tmp_path):
    profile = yaml.safe_load(PROFILE.read_text())
    profile["set-resources"]["generate"]["runtime"] = 600
    (check,) = preflight.shard_limit_checks(load_profile(PAPER), profile)
    assert not check.ok and "profile runtime 600 min" in check.detail and "720" in check.detail
    raw = load_config(PAPER)
    raw["eval"]["shard"] = None
    assert preflight.shard_limit_checks(parse_profile(raw), profile) == []


def test_gpus_and_cpus_per_node_from_sinfo_and_inside_a_job(tmp_path, monkeypatch):
    profile = preflight.read_profile(_profile(tmp_path))  # train_verl: gpu:h200:8, 96 CPUs
    assert preflight.train_request(profile) == (8, 96)
    big = _sinfo("gpu:h200:8(S:0-1) 112\ngpu:h200:4 64\n")
    assert preflight.resource_check(profile, env={}, run=big).ok
    small = preflight.resource_check(profile, env={}, run=_sinfo("gpu:h200:4(S:0) 64\n"))
    assert not small.ok and "4 GPUs, 64 CPUs; training asks 8 GPUs, 96 CPUs" in small.detail
    assert "gres / cpus_per_task" in small.fix
    monkeypatch.setattr(preflight, "job_node", lambda: (8, 96))
    assert preflight.resource_check(profile, env={"SLURM_JOB_ID": "7"}).detail.startswith(
        "SLURM job 7"
    )


def test_checkpoint_disk_by_hand():
    spec = load_profile(PAPER)
    # Qwen3-8B-sized (1e9 here): 320 steps, a checkpoint every 20 and all kept: 16 × 16 B/param,
    # plus 1 + 16 merged bf16 models (2 B/param) for the final model and the Fig. 3 curve
    assert preflight.run_bytes(spec, "qwen3_8b", "pacs", 1e9) == pytest.approx(16 * 16e9 + 17 * 2e9)
    # PPO keeps one critic checkpoint (verl.max_critic_ckpt_to_keep: 1) on top
    assert preflight.run_bytes(spec, "qwen3_8b", "ppo", 1e9) == pytest.approx(
        16 * 16e9 + 16e9 + 34e9
    )
    raw = load_config(PAPER)
    raw["verl"]["max_actor_ckpt_to_keep"] = 2
    assert preflight.run_bytes(parse_profile(raw), "qwen3_8b", "pacs", 1e9) == pytest.approx(
        2 * 16e9 + 34e9
    )


def test_disk_check_states_the_estimate_and_fails_when_short(tmp_path, monkeypatch):
    results = tmp_path / "results"
    results.mkdir()
    check = preflight.disk_check(load_profile(PAPER), results)
    assert "TB" in check.detail and not check.ok  # ~23 TB as configured; this disk is smaller
    assert "max_actor_ckpt_to_keep" in check.fix


def test_out_is_written_only_when_everything_passes(tmp_path, monkeypatch):
    monkeypatch.setattr(
        preflight, "run_checks", lambda *a, **k: [preflight.Check("x", True, "fine")]
    )
    out = tmp_path / "ok.txt"
    assert (
        preflight.main(["--config", str(PAPER), "--profile", str(PROFILE), "--out", str(out)]) == 0
    )
    assert out.read_text() == "PASS  x  fine\n1 passed, 0 failed\n"


# ------------------------------------------------------------------ the DAG's preflight job

OTHER_PROFILE = {
    "executor": "slurm",
    "jobs": 4,
    "default-resources": {"slurm_partition": "gpuq", "slurm_account": "lab42", "runtime": 60},
    "set-resources": {"train_verl": {"gres": "gpu:a100:4", "cpus_per_task": 32}},
}


def preflight_command(work: Path, *args: str) -> list[str]:
    """The DAG's preflight job as `snakemake preflight -n -p ARGS` prints it, split into argv."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "preflight", "-n", "-p", *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (line,) = [x for x in result.stdout.splitlines() if "-m pacs.preflight" in x]
    return shlex.split(line.split("Shell command: ", 1)[1].split(" > ")[0])


def test_the_dags_preflight_checks_the_active_profile_and_set_resources(workflow_copy):
    """Not workflow/profiles/slurm: the profile snakemake was started with (here ./other, which
    sets a real partition while the shipped one still says SET_ME) and the command line's
    --set-resources, which replaces the profile's set-resources as Snakemake does for the jobs."""
    (workflow_copy / "other").mkdir(exist_ok=True)
    (workflow_copy / "other" / "config.yaml").write_text(yaml.safe_dump(OTHER_PROFILE))
    argv = preflight_command(
        workflow_copy,
        "--profile",
        "other",
        "--configfile",
        "configs/verl_smoke.yaml",
        "--set-resources",
        'train_verl:gres="gpu:a100:4"',
        "train_verl:cpus_per_task=48",
        "generate:runtime=900",
    )
    assert "--profile" not in argv
    active = json.loads(argv[argv.index("--resources") + 1])
    assert active == {
        "default-resources": {"slurm_partition": "gpuq", "slurm_account": "lab42", "runtime": 60},
        "set-resources": {
            "train_verl": {"gres": "gpu:a100:4", "cpus_per_task": 48},
            "generate": {"runtime": 900},
        },
    }
    lines = _lines(preflight.account_checks(active, preflight.ACTIVE_PROFILE))
    assert lines["slurm_partition"].ok and lines["slurm_account"].ok
    assert preflight.train_request(active) == (4, 48)
    (limit,) = preflight.shard_limit_checks(load_profile(PAPER), active)
    assert limit.ok and "profile runtime 900 min" in limit.detail


def test_without_a_partition_the_dags_preflight_says_where_to_set_it(workflow_copy, capsys):
    argv = preflight_command(
        workflow_copy, "--cores", "1", "--configfile", "configs/verl_smoke.yaml"
    )
    active = json.loads(argv[argv.index("--resources") + 1])
    assert "slurm_partition" not in active["default-resources"]
    check = _lines(preflight.account_checks(active, preflight.ACTIVE_PROFILE))["slurm_partition"]
    assert not check.ok and check.fix == (
        "set default-resources.slurm_partition in the profile snakemake runs with (--profile), "
        "or --default-resources/--set-resources"
    )


def test_the_network_interface_must_exist_on_the_compute_node():
    def profile(name):
        return {"set-resources": {"train_verl": {"network_interface": name}}}

    assert preflight.interface_check({}, env={}) == []  # none named: Ray and NCCL choose
    (here,) = preflight.interface_check(profile("lo"), env={"SLURM_JOB_ID": "7"})
    assert here.ok and here.detail.startswith("lo: 127.0.0.1 on ")
    (missing,) = preflight.interface_check(profile("ib9"), env={"SLURM_JOB_ID": "7"})
    assert not missing.ok and "no such network interface" in missing.detail
    assert "lo" in missing.detail and "set-resources.train_verl.network_interface" in missing.fix
    (login,) = preflight.interface_check(profile("ib9"), env={})  # a login node may lack it
    assert (
        login.ok and "ib9 is not on" in login.detail and "preflight job checks it" in login.detail
    )
    (from_env,) = preflight.interface_check(
        {}, env={"RAY_NETWORK_INTERFACE": "ib9", "SLURM_JOB_ID": "7"}
    )
    assert not from_env.ok


def test_the_profiles_network_interface_reaches_the_training_job_and_its_preflight(workflow_copy):
    """set-resources.train_verl.network_interface and ray_start_wait_s: RAY_NETWORK_INTERFACE and
    PACS_RAY_START_WAIT_S of every training command (resources, so changing them reruns nothing),
    and the preflight job checks them; every generate job waits for the preflight job."""
    train_verl = {"network_interface": "lo", "ray_start_wait_s": 750}
    profile = {**OTHER_PROFILE, "set-resources": {"train_verl": train_verl}}
    (workflow_copy / "other").mkdir(exist_ok=True)
    (workflow_copy / "other" / "config.yaml").write_text(yaml.safe_dump(profile))
    argv = preflight_command(
        workflow_copy, "--profile", "other", "--configfile", "configs/verl_smoke.yaml"
    )
    active = json.loads(argv[argv.index("--resources") + 1])
    assert active["set-resources"]["train_verl"] == train_verl
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    out = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "-p", "--profile", "other"]
        + ["--configfile", "configs/verl_smoke.yaml"],
        cwd=workflow_copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    train = [x for x in out.splitlines() if "pacs.verl_plugin.launch.train" in x]
    prefix = "Shell command: RAY_NETWORK_INTERFACE=lo PACS_RAY_START_WAIT_S=750 python -m"
    assert train and all(prefix in x for x in train)
    generate = re.findall(r"^rule generate:\n(?:    .*\n)*?    input: (.*)$", out, re.MULTILINE)
    assert generate and all("results/verl_smoke/preflight" in x for x in generate)


def test_no_gpu_in_a_job_says_whether_slurm_granted_none_or_torch_cannot_see_them(
    tmp_path, monkeypatch
):
    """Not "resize the profile" when torch sees 0 GPUs: resizing helps with neither case."""
    profile = preflight.read_profile(_profile(tmp_path))  # 8 GPUs, 96 CPUs per node
    monkeypatch.setattr(preflight, "job_node", lambda: (0, 96))
    import torch

    none = preflight.resource_check(profile, env={"SLURM_JOB_ID": "7"})
    assert not none.ok and "SLURM granted this job no GPU (none of SLURM_JOB_GPUS" in none.detail
    assert "resizing the request does not help" in none.fix
    granted = {"SLURM_JOB_ID": "7", "SLURM_JOB_GPUS": "0,1", "CUDA_VISIBLE_DEVICES": "0,1"}
    hidden = preflight.resource_check(profile, env=granted)
    assert not hidden.ok
    assert (
        "SLURM granted GPUs (SLURM_JOB_GPUS=0,1, CUDA_VISIBLE_DEVICES=0,1) but torch sees none"
        in (hidden.detail)
    )
    assert (
        f"CUDA {torch.version.cuda}" if torch.version.cuda else "CPU-only torch"
    ) in hidden.detail
    assert "nvidia-smi" in hidden.fix and "make gpu-env" in hidden.fix
    nodev = preflight.resource_check(
        profile, env={"SLURM_JOB_ID": "7", "CUDA_VISIBLE_DEVICES": "NoDevFiles"}
    )
    assert "granted this job no GPU" in nodev.detail
    monkeypatch.setattr(preflight, "job_node", lambda: (4, 96))  # some GPUs: the request is too big
    fewer = preflight.resource_check(profile, env=granted)
    assert not fewer.ok and "gres / cpus_per_task" in fewer.fix


def test_make_preflight_outside_the_env_says_which_env(tmp_path):
    """`make preflight` runs in the caller's env (conda activate pacs): where that python has no
    pacs, it says so, naming the python, instead of a bare ModuleNotFoundError."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python = bin_dir / "python"  # the base interpreter of this venv: no pacs installed
    python.write_text(f'#!/bin/sh\nexec {sys.base_prefix}/bin/python3 -I "$@"\n')
    python.chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    result = subprocess.run(
        ["make", "-s", "preflight"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0
    assert "No module named" not in result.stderr
    assert f"make preflight: {python} has no pacs" in result.stderr, result.stderr
    assert "conda activate pacs" in result.stderr and "make gpu-env" in result.stderr


def test_a_cpu_cluster_is_declared_in_the_profile_and_the_table_says_what_it_skips(
    tmp_path, monkeypatch
):
    """verl_device: cpu (a GPU-less test cluster): no GPU per node and no GPU-env pin is
    required, each said in the table; verl's own pin and the CPUs per node still are."""
    cpu = preflight.read_profile(_profile(tmp_path, verl_device="cpu"))
    assert preflight.cpu_cluster(cpu) and preflight.train_request(cpu) == (0, 96)
    lines = _lines(preflight.software_checks(load_profile(PAPER), cpu))
    assert set(lines) == {"version verl", "GPU env pins", "attention"}
    assert lines["GPU env pins"].ok and "verl_device: cpu" in lines["GPU env pins"].detail
    assert "torch 2.11.0" in lines["GPU env pins"].detail
    monkeypatch.setattr(preflight, "job_node", lambda: (0, 96))
    assert preflight.resource_check(cpu, env={"SLURM_JOB_ID": "7"}).ok
    monkeypatch.setattr(preflight, "job_node", lambda: (0, 16))
    assert not preflight.resource_check(cpu, env={"SLURM_JOB_ID": "7"}).ok  # CPUs still count
    # on the CPU, Ray's CPUs are the job's SLURM CPUs (slots), whatever cores the host has
    slots = {"SLURM_JOB_ID": "7", "SLURM_CPUS_ON_NODE": "96"}
    assert preflight.resource_check(cpu, env=slots).ok
    gpu_profile = preflight.read_profile(_profile(tmp_path))
    monkeypatch.setattr(preflight, "job_node", lambda: (8, 16))
    assert not preflight.resource_check(gpu_profile, env=slots).ok  # a GPU run: the real cores
    gpu = preflight.read_profile(_profile(tmp_path))
    assert {"version torch", "version vllm"} <= set(
        _lines(preflight.software_checks(load_profile(PAPER), gpu))
    )


def test_a_command_line_set_resources_that_drops_the_gpus_fails_naming_why():
    """`--set-resources train_verl:network_interface=ib0` replaces the profile's whole
    set-resources (as the DAG's preflight test above shows): the GPU rules ask for no GPU."""
    shipped = preflight.read_profile(PROFILE)
    assert preflight.gpu_request_check(shipped, PROFILE) == []
    dropped = {**shipped, "set-resources": {"train_verl": {"network_interface": "ib0"}}}
    (check,) = preflight.gpu_request_check(dropped, preflight.ACTIVE_PROFILE)
    assert not check.ok
    assert check.detail.startswith("train_verl, generate, diversity ask(s) no GPU")
    assert "replaces the profile's whole set-resources" in check.detail
    assert "not with --set-resources" in check.fix
    cpu = {"set-resources": {"train_verl": {"verl_device": "cpu"}}}
    assert preflight.gpu_request_check(cpu, PROFILE) == []  # a CPU test cluster asks none
    # diversity embeds on a GPU too: a profile that drops only its GPU fails naming it
    rules = {**shipped["set-resources"], "diversity": {"runtime": 120}}
    (check,) = preflight.gpu_request_check({**shipped, "set-resources": rules}, PROFILE)
    assert check.detail.startswith("diversity ask(s) no GPU")


def test_the_fix_text_names_only_settings_the_workflow_reads():
    """Each per-cluster setting the GPU-request fix names is a train_verl resource of the rule
    (workflow/rules/train.smk) and documented in the shipped profile."""
    dropped = {"set-resources": {"train_verl": {"network_interface": "ib0"}}}
    (check,) = preflight.gpu_request_check(dropped, preflight.ACTIVE_PROFILE)
    named = re.search(r"train_verl's ([\w, ]+)\)", check.fix).group(1).split(", ")
    assert named == ["network_interface", "ray_start_wait_s", "verl_device"]
    rule = (PROFILE.parents[2] / "rules" / "train.smk").read_text()
    shipped = PROFILE.read_text()
    for name in named:
        assert f"{name}=" in rule and f"{name}:" in shipped, name


@pytest.mark.parametrize(
    "value,ok,detail",
    [(600, True, "600 s"), ("90.5", True, "90.5 s"), ("soon", False, "seconds > 0"),
     (0, False, "seconds > 0")],
)  # fmt: skip
def test_the_profiles_ray_start_wait_is_checked(value, ok, detail):
    profile = {"set-resources": {"train_verl": {"ray_start_wait_s": value}}}
    (check,) = preflight.ray_wait_check(profile)
    assert check.ok is ok and detail in check.detail
    assert preflight.ray_wait_check({"set-resources": {"train_verl": {}}}) == []


def test_a_profile_is_found_by_name_folder_or_file(tmp_path, monkeypatch):
    home = tmp_path / "home"
    user = home / ".config" / "snakemake" / "mycluster"
    user.mkdir(parents=True)
    (user / "config.yaml").write_text("executor: slurm\n")
    monkeypatch.chdir(tmp_path)
    assert preflight.find_profile("mycluster", home) == user / "config.yaml"
    (tmp_path / "mycluster").mkdir()
    (tmp_path / "mycluster" / "config.yaml").write_text("executor: slurm\n")
    assert preflight.find_profile("mycluster", home) == Path("mycluster/config.yaml")  # ./ first
    assert preflight.find_profile(str(user), home) == user / "config.yaml"
    assert preflight.find_profile(str(PROFILE), home) == PROFILE
    with pytest.raises(FileNotFoundError, match="no SLURM profile 'nocluster': no config.yaml at"):
        preflight.find_profile("nocluster", home)


def _make_preflight(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    return subprocess.run(
        ["make", "-s", "preflight", *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def test_make_preflight_reads_the_profile_it_is_given(tmp_path):
    """PROFILE=<name> as `snakemake --profile` takes it: here ./<name> in the repo root would be
    the repo's own files, so a folder path; the table shows that profile's partition."""
    profile = yaml.safe_load(PROFILE.read_text())
    profile["default-resources"].update(slurm_partition="gpuq7", slurm_account="lab42")
    (tmp_path / "mycluster").mkdir()
    (tmp_path / "mycluster" / "config.yaml").write_text(yaml.safe_dump(profile))
    result = _make_preflight(f"PROFILE={tmp_path / 'mycluster'}")
    assert "PASS  slurm_partition" in result.stdout and "gpuq7" in result.stdout, result.stderr
    missing = _make_preflight("PROFILE=nocluster")
    assert missing.returncode != 0 and "no SLURM profile 'nocluster'" in missing.stderr
