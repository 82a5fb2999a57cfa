"""The Snakemake DAG: lint, the tiny and paper dry runs, and the smoke run end to end.

Snakemake runs in a copy of the workflow files (``workflow_copy``, tests/conftest.py), never in
the repo: a dry run there would list only the jobs the repo's own results/ still lacks, so these
tests would pass or fail depending on what `make reproduce` left behind.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pacs.budget import BENCHMARK_SIZES
from pacs.config import load_config

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = str(Path(sys.executable).parent)


def snakemake(*args: str, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    """Run snakemake with this interpreter's bin first on PATH (rules call `python -m pacs...`)."""
    env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}", "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def dry_run_jobs(output: str) -> list[dict]:
    """Parse `snakemake -n` output into [{rule, wildcards: {...}, resources: {...}}]."""
    jobs = []
    for block in re.split(r"\n(?=rule \S+:\n)", output):
        head = re.match(r"rule (\S+):\n", block)
        if not head:
            continue
        job = {"rule": head.group(1), "wildcards": {}, "resources": {}}
        for key in ("wildcards", "resources"):
            line = re.search(rf"^\s+{key}: (.*)$", block, re.MULTILINE)
            if line:
                job[key] = dict(
                    kv.split("=", 1) for kv in re.split(r",\s*", line.group(1)) if "=" in kv
                )
        jobs.append(job)
    return jobs


def expected_train_jobs(config_path: Path) -> set[tuple[str, str, str]]:
    """runs × their models × their seeds, read from the YAML by hand (not by pacs.config)."""
    cfg = load_config(config_path)
    jobs = set()
    for name, run in cfg["runs"].items():
        seeds = cfg["seeds"]["main" if run.get("ablation", "main") == "main" else "ablation"]
        for model in run.get("models", list(cfg["models"])):
            for seed in seeds:
                jobs.add((model, name, str(seed)))
    return jobs


def eval_job(job: dict) -> dict | None:
    """model/run/seed/benchmark of an eval/... job (generate, grade, passk share the `tree`
    wildcard with the checkpoint evaluations under curve/...); None for those."""
    parts = job["wildcards"]["tree"].split("/")
    if parts[0] != "eval":
        return None
    return {
        "model": parts[1],
        "run": parts[2],
        "seed": parts[3].removeprefix("seed"),
        "benchmark": parts[4],
    }


def test_lint_passes(workflow_copy):
    result = snakemake("--lint", cwd=workflow_copy)
    assert result.returncode == 0, result.stdout + result.stderr


def test_tiny_dry_run_covers_the_matrix(workflow_copy):
    """`make reproduce`'s DAG from a fresh clone: every run of configs/default.yaml is trained."""
    result = snakemake("-n", "--cores", "2", cwd=workflow_copy)
    assert result.returncode == 0, result.stderr
    jobs = dry_run_jobs(result.stdout)
    trained = {
        (j["wildcards"]["model"], j["wildcards"]["run"], j["wildcards"]["seed"])
        for j in jobs
        if j["rule"] == "train_tiny"
    }
    assert trained == expected_train_jobs(REPO / "configs" / "default.yaml")
    evaluated = {
        (e["run"], e["seed"]) for j in jobs if j["rule"] == "generate" and (e := eval_job(j))
    }
    assert ("base", "0") in evaluated and len(evaluated) == len(trained) + 1
    assert sum(j["rule"] == "report" for j in jobs) == 1


# Problems per benchmark (the real files' sizes, stated once in pacs.budget; LiveCodeBench: a window
# of 279 problems). The generate shards follow from them (prepare_eval is a checkpoint), as after
# `make fetch`.
PAPER_BENCHMARK_SIZES = BENCHMARK_SIZES


@pytest.fixture(scope="module")
def paper_dry_run_text(workflow_copy) -> str:
    """`snakemake -n --profile slurm` in a workflow copy whose benchmark files are prepared."""
    if not (REPO / "configs" / "paper.yaml").exists():
        pytest.fail("configs/paper.yaml is missing")
    eval_dir = workflow_copy / "results" / "paper" / "data" / "eval"
    eval_dir.mkdir(parents=True, exist_ok=True)
    for name, size in PAPER_BENCHMARK_SIZES.items():
        (eval_dir / f"{name}.jsonl").write_text(
            "".join(f'{{"problem_id": "{name}/{i}"}}\n' for i in range(size))
        )
    result = snakemake("-n", "--profile", "slurm", cwd=workflow_copy)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


@pytest.fixture(scope="module")
def paper_dry_run(paper_dry_run_text) -> list[dict]:
    return dry_run_jobs(paper_dry_run_text)


def test_paper_dry_run_lists_every_training_job(paper_dry_run):
    trained = {
        (j["wildcards"]["model"], j["wildcards"]["run"], j["wildcards"]["seed"])
        for j in paper_dry_run
        if j["rule"] == "train_verl"
    }
    assert trained == expected_train_jobs(REPO / "configs" / "paper.yaml")


def test_paper_dry_run_evaluates_every_model_and_benchmark(paper_dry_run):
    cfg = load_config(REPO / "configs" / "paper.yaml")
    for rule in ("generate", "grade", "passk"):
        pairs = set()
        for j in paper_dry_run:
            if j["rule"] == rule and (wc := eval_job(j)) and wc["run"] != "released":
                pairs.add((wc["model"], wc["benchmark"]))  # released: test_released_dry_run.py
        assert pairs == {(m, b) for m in cfg["models"] for b in cfg["data"]["benchmarks"]}, rule


def test_paper_gpu_jobs_carry_slurm_gpu_resources(paper_dry_run):
    for rule in ("generate", "diversity"):
        jobs = [j for j in paper_dry_run if j["rule"] == rule]
        assert jobs, rule
        for job in jobs:
            res = job["resources"]
            assert int(res["gpu"]) >= 1 and res["gpu_model"] == "h200", (rule, res)
            assert "cpus_per_gpu" in res and "runtime" in res and "mem_mb" in res, (rule, res)
    # Training asks for GPUs per node (--gres), never a job total
    # (tests/verl_plugin/test_slurm_submit.py).
    cfg = load_config(REPO / "configs" / "paper.yaml")
    for job in (j for j in paper_dry_run if j["rule"] == "train_verl"):
        res = job["resources"]
        assert res["gres"] == "gpu:h200:8" and "gpu" not in res, res
        assert int(res["nodes"]) == cfg["models"][job["wildcards"]["model"]]["nnodes"], job


# ------------------------------------------------------------------ compute nodes without internet

DOWNLOAD_STAGES = ("python -m pacs.fetch", "python -m pacs.data prepare-")


def _local_rules(configfile: Path, workdir: Path) -> tuple[set[str], dict[str, str]]:
    """(local rule names, rule -> shell command) of the real Snakefile with this config, parsed in
    ``workdir`` (parsing writes the resolved config under results/)."""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

    with SnakemakeApi(OutputSettings()) as api:
        workflow = api.workflow(
            resource_settings=ResourceSettings(),
            config_settings=ConfigSettings(configfiles=[configfile]),
            snakefile=REPO / "Snakefile",
            workdir=workdir,
        )._workflow
        return set(workflow._localrules), {r.name: r.shellcmd or "" for r in workflow.rules}


def test_paper_generation_is_sharded_to_fit_its_time_limit(paper_dry_run):
    """eval.shard: 74 problems per generate job at n = 256 (tests/evaluation/test_shards.py),
    one gather per evaluation; the Fig. 3 checkpoints sample eval.curve_n_samples = 32."""
    cfg = load_config(REPO / "configs" / "paper.yaml")
    shards = {}
    for j in paper_dry_run:
        if j["rule"] == "generate" and (e := eval_job(j)) and e["run"] == "base":
            shards.setdefault((e["model"], e["benchmark"]), set()).add(int(j["wildcards"]["shard"]))
    assert shards[("qwen3_8b", "math500")] == set(range(7))  # 6 × 74 + 56
    assert shards[("qwen3_8b", "aime24")] == {0}
    assert shards[("qwen3_8b", "livecodebench")] == set(range(4))
    gathers = [j for j in paper_dry_run if j["rule"] == "gather_samples"]
    evals = len(cfg["models"]) * len(cfg["data"]["benchmarks"]) * (1 + len(cfg["runs"]))
    ours = [j for j in gathers if "/released/" not in j["wildcards"]["tree"]]
    assert sum(j["wildcards"]["tree"].startswith("eval/") for j in ours) == evals


def test_paper_shell_commands_carry_shards_and_curve_n(paper_dry_run_text):
    assert "--shard-index 6 --shard-size 74 " in paper_dry_run_text
    curve = [
        line
        for line in paper_dry_run_text.splitlines()
        if "pacs.evaluation.generate" in line and "/curve/" in line
    ]
    assert curve and all(" --n 32 " in line for line in curve)


def test_every_verl_gpu_job_waits_for_the_compute_node_preflight(paper_dry_run, paper_dry_run_text):
    """Training and every generate job (base and released models too) come after it."""
    (pre,) = [j for j in paper_dry_run if j["rule"] == "preflight"]
    assert pre["resources"]["gres"] == "gpu:h200:8" and pre["resources"]["cpus_per_task"] == "96"
    assert "python -m pacs.preflight --config results/paper/config.yaml" in paper_dry_run_text
    for block in re.split(r"\n(?=rule \S+:\n)", paper_dry_run_text):
        if block.startswith(("rule train_verl:", "rule generate:")):
            assert "results/paper/preflight/compute_node.txt" in block, block[:300]


def test_every_download_runs_in_a_local_rule(tmp_path):
    local, shell = _local_rules(REPO / "configs" / "paper.yaml", tmp_path)
    downloads = {name for name, cmd in shell.items() if cmd.startswith(DOWNLOAD_STAGES)}
    assert {"fetch_hub", "prepare_train", "prepare_eval"} <= downloads
    assert downloads <= local, downloads - local
    assert {"train_verl", "generate", "diversity", "merge_verl_checkpoint"}.isdisjoint(local)


def test_paper_compute_jobs_name_no_hub_id(paper_dry_run_text):
    """Models and the embedder reach compute jobs as folders filled by fetch_hub."""
    cfg = load_config(REPO / "configs" / "paper.yaml")
    hub_ids = [m["hf_id"] for m in cfg["models"].values()] + [cfg["diversity"]["embedder"]]
    hub_ids += [m["hf_id"] for m in cfg["eval"]["released"].values()]  # Table 1's open models
    fetched = set(re.findall(r"python -m pacs\.fetch --repo-id (\S+)", paper_dry_run_text))
    assert fetched == set(hub_ids)
    for block in re.split(r"\n(?=rule \S+:\n)", paper_dry_run_text):
        command = re.search(r"^Shell command: (.*)$", block, re.MULTILINE)
        if command and not command.group(1).startswith(DOWNLOAD_STAGES):
            assert not any(h in command.group(1) for h in hub_ids), command.group(1)
    assert "--model results/paper/hub/qwen3_8b " in paper_dry_run_text  # base-model evaluation
    assert "--embedder results/paper/hub/diversity-embedder " in paper_dry_run_text


def test_training_reads_the_fetched_model(paper_dry_run_text, tmp_path, capsys):
    """The training rule hands the launcher the folder fetch_hub fills (--model-path), and the
    launcher gives verl that folder (absolute) instead of the hub id."""
    from pacs.verl_plugin.launch import train

    commands = [
        c for c in paper_dry_run_text.splitlines() if "python -m pacs.verl_plugin.launch.train" in c
    ]
    assert commands
    for command in commands:
        found = re.search(r"--model (\S+) --model-path (\S+) ", command)
        assert found and found.group(2) == f"results/paper/hub/{found.group(1)}", command
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        assert (
            train.main(
                [
                    "--dry-run",
                    "--device",
                    "cuda",
                    "--config",
                    str(REPO / "configs/paper.yaml"),
                    "--run",
                    "ppo",
                    "--model",
                    "qwen3_8b",
                    "--ray-address",
                    "h:1",
                    "--model-path",
                    "results/paper/hub/qwen3_8b",
                ]
            )
            == 0
        )
    finally:
        os.chdir(cwd)
    line = capsys.readouterr().out
    local = tmp_path / "results" / "paper" / "hub" / "qwen3_8b"
    assert f"actor_rollout_ref.model.path={local}" in line
    assert f"critic.model.path={local}" in line
    assert "Qwen/Qwen3-8B" not in line


def test_a_bad_config_fails_while_the_dag_is_parsed(tmp_path, workflow_copy):
    """A typo and an invalid value stop Snakemake before any job, naming the file and the keys."""
    cfg = load_config(REPO / "configs" / "smoke.yaml")
    cfg["runs"]["pacs_beta2"] = {"method": "pacs", "betta": 2.0, "ablation": "beta"}
    cfg["eval"]["top_p"] = 1.5
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(cfg))
    result = snakemake("-n", "--cores", "1", "--configfile", str(bad), cwd=workflow_copy)
    assert result.returncode != 0
    text = result.stdout + result.stderr
    assert f"{bad}: runs.pacs_beta2.betta: unknown key; did you mean 'beta'?" in text
    cfg["runs"]["pacs_beta2"] = {"method": "pacs", "beta": 2.0, "ablation": "beta"}
    bad.write_text(yaml.safe_dump(cfg))
    result = snakemake("-n", "--cores", "1", "--configfile", str(bad), cwd=workflow_copy)
    assert result.returncode != 0
    assert f"{bad}: eval.top_p: Input should be less than or equal to 1 (got 1.5)" in (
        result.stdout + result.stderr
    )


def test_nested_config_overrides_are_typed_like_top_level_ones(workflow_copy):
    """Snakemake reads `--config models={tiny: {sft: {steps: 151}}}` as the string '151'; the DAG
    takes it as the integer (a typo'd key is still refused)."""
    nested = "models={tiny: {sft: {steps: 151, lr: 0.0005}}}"
    result = snakemake("-n", "-p", "--cores", "2", "--config", nested, cwd=workflow_copy)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "rule sft_tiny_base:" in result.stdout
    typo = snakemake(
        "-n", "--cores", "2", "--config", "models={tiny: {sft: {stepz: 151}}}", cwd=workflow_copy
    )
    assert typo.returncode != 0
    assert "models.tiny.sft.stepz: unknown key; did you mean 'steps'?" in typo.stdout + typo.stderr


def test_compute_jobs_switch_the_hub_off(workflow_copy):
    """Jobs on compute nodes (Snakemake's remote mode, as the slurm executor runs them) get
    OFFLINE_ENV; the submitting process, which runs the downloads, does not."""
    from pacs.config import OFFLINE_ENV

    target = "results/paper/data/eval/aime24.jsonl"
    args = (target, "-n", "--cores", "1", "--configfile", "configs/paper.yaml")
    remote = snakemake(*args, "--mode", "remote", cwd=workflow_copy)
    local = snakemake(*args, cwd=workflow_copy)
    assert remote.returncode == 0 and local.returncode == 0, remote.stderr[-2000:]
    message = "compute job: hub access off (" + " ".join(f"{k}={v}" for k, v in OFFLINE_ENV.items())
    assert message in remote.stdout + remote.stderr
    assert "hub access off" not in local.stdout + local.stderr
    assert set(OFFLINE_ENV) == {"HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"}


def test_fig5b_problem_sample_comes_from_the_config(paper_dry_run_text, workflow_copy):
    """diversity.pca_problems / pca_seed reach the diversity command; null means every problem."""
    paper = yaml.safe_load((REPO / "configs" / "paper.yaml").read_text())["diversity"]
    expected = f"--pca-problems {paper['pca_problems']} --pca-seed {paper['pca_seed']}"
    commands = [
        line for line in paper_dry_run_text.splitlines() if "pacs.evaluation.diversity" in line
    ]
    assert commands and all(expected in c for c in commands), commands[:1]
    smoke = snakemake(
        "-n", "-p", "--cores", "2", "--configfile", "configs/smoke.yaml", cwd=workflow_copy
    )
    assert smoke.returncode == 0, smoke.stderr
    smoke_cmds = [c for c in smoke.stdout.splitlines() if "pacs.evaluation.diversity" in c]
    assert smoke_cmds and all("--pca-problems" not in c and "--pca-seed 0" in c for c in smoke_cmds)
