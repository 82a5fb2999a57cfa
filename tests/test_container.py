"""The container path (envs/gpu/pacs.def, docs/paper_scale.md "Clusters that run containers"):
what the recipe's %test runs, the commit an installed copy records, and the DAG's rules running
in the image through Snakemake's own `container:` support with `--sdm apptainer`, Snakemake on
the host submitting to SLURM (a dry run: no machine here runs Apptainer or has a GPU)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pacs.fingerprint import COMMIT_ENV, code_commit
from pacs.report.__main__ import code_version

REPO = Path(__file__).resolve().parents[1]
RECIPE = REPO / "envs" / "gpu" / "pacs.def"
CHECK = REPO / "envs" / "gpu" / "container_check.py"
ENGINE_PYTHON = REPO / ".engine-venv" / "bin" / "python"


def sections(recipe: str) -> dict[str, str]:
    """The recipe's %sections, each with its body."""
    parts = re.split(r"^%(\w+)\s*$", recipe, flags=re.MULTILINE)
    return {name: body for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def test_the_recipe_installs_a_compiler_pins_its_base_and_tests_by_compiling():
    recipe = RECIPE.read_text()
    base = re.search(r"^From: (\S+)$", recipe, re.MULTILINE).group(1)
    assert re.fullmatch(r"python:3\.12-slim-bookworm@sha256:[0-9a-f]{64}", base)
    parts = sections(recipe)
    assert "apt-get install -y --no-install-recommends build-essential" in parts["post"]
    assert "envs/gpu/container_check.py /opt/pacs/envs/gpu/container_check.py" in parts["files"]
    assert parts["test"].split() == ["python", "/opt/pacs/envs/gpu/container_check.py"]
    # the commit: written on the build host, exported to every process in the image
    assert "git rev-parse HEAD" in parts["setup"]
    assert f'echo "export {COMMIT_ENV}=$commit" >> "$APPTAINER_ENVIRONMENT"' in parts["post"]


def test_the_checks_compiler_and_triton_parts_pass_where_triton_is_installed():
    """%test's C compiler and Triton parts, in the engine env (Triton 3.6.0, as the GPU lock)."""
    if not ENGINE_PYTHON.exists():
        pytest.skip("no .engine-venv (make engine-env) with Triton to build through")
    out = subprocess.run(
        [str(ENGINE_PYTHON), str(CHECK), "--only", "cc,triton"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "PASS  cc:" in out.stdout and "PASS  triton: triton 3.6.0 built" in out.stdout


def test_the_check_fails_without_a_compiler(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path), "CC": ""}
    out = subprocess.run(
        [sys.executable, str(CHECK), "--only", "cc"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 1 and "FAIL  cc: RuntimeError('no C compiler" in out.stdout


def test_an_installed_copy_records_the_images_commit(tmp_path, monkeypatch):
    """Outside git (the image installs the package from a copy without .git) the commit comes
    from PACS_CODE_COMMIT; without it, none is known."""
    monkeypatch.delenv(COMMIT_ENV, raising=False)
    assert code_commit(tmp_path) is None
    assert code_version(tmp_path) == "an installed copy outside git (no commit known)"
    monkeypatch.setenv(COMMIT_ENV, "0123abc+edits")
    assert code_commit(tmp_path) == "0123abc+edits"
    assert code_version(tmp_path).startswith("git commit 0123abc with uncommitted edits (")
    monkeypatch.setenv(COMMIT_ENV, "0123abc")
    assert code_version(tmp_path).startswith("git commit 0123abc (an installed copy")
    assert code_commit(REPO) != "0123abc"  # a checkout's own commit wins


# No machine here has Apptainer: a stand-in on the PATH answers `apptainer --version` (Snakemake
# asks before it plans container jobs), logs each `apptainer exec` Snakemake runs and runs its
# command on the host (`... IMAGE bash -c CMD`: the last three arguments).
APPTAINER_STAND_IN = """#!/bin/bash
if [ "$1" = --version ]; then echo "apptainer version 1.3.4"; exit 0; fi
printf '%s\\n' "$*" >> "$APPTAINER_STAND_IN_LOG"
args=("$@")
exec "${args[-3]}" -c "${args[-1]}"
"""
# One job of the repo's Snakefile run for real: `python -m pacs...` as every rule runs it.
PROBE = """include: "Snakefile"


rule probe:
    output:
        "probe.txt",
    log:
        "probe.log",
    shell:
        "python -m pacs.budget --help > {output} 2> {log}"
"""


def _snakemake(work: Path, env: dict, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "snakemake", *args, "--configfile", "configs/verl_smoke.yaml"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    return out.stdout + out.stderr


def test_every_rule_runs_in_the_image_under_sdm_apptainer(workflow_copy, tmp_path):
    """With `--sdm apptainer --apptainer-args=--nv` a job's command runs as `apptainer exec ...
    --nv pacs-gpu.sif bash -c CMD` (a real local run through the stand-in); the paper DAG's SLURM
    profile takes the same flags (a dry run of the verl smoke DAG: no SLURM here)."""
    stand_in, log = tmp_path / "apptainer", tmp_path / "apptainer.log"
    stand_in.write_text(APPTAINER_STAND_IN)
    stand_in.chmod(0o755)
    path = f"{tmp_path}:{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"
    env = {**os.environ, "PATH": path, "APPTAINER_STAND_IN_LOG": str(log)}
    env.pop("PACS_IMAGE", None)
    (workflow_copy / "pacs-gpu.sif").write_bytes(b"")  # the image's place; never opened here
    (workflow_copy / "probe.smk").write_text(PROBE)
    flags = ("--sdm", "apptainer", "--apptainer-args=--nv")
    _snakemake(workflow_copy, env, "-s", "probe.smk", "--cores", "1", *flags, "probe")
    (call,) = log.read_text().splitlines()
    image = r"exec --home \S+ --nv (--bind \S+ )*pacs-gpu\.sif bash -c set -euo"
    assert re.match(image, call), call
    assert "python -m pacs.budget --help" in call
    assert "usage: python -m pacs.budget" in (workflow_copy / "probe.txt").read_text()
    dry = _snakemake(workflow_copy, env, "-n", "--profile", "slurm", *flags)
    assert "train_verl" in dry and "preflight" in dry
