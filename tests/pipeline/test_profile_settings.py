"""docs/paper_scale.md's per-cluster settings block, run as written in a copy of the workflow: a
profile of one's own (`cp -rL slurm mycluster`), the edit its comment describes (partition,
account and `network_interface: "ib0"` under set-resources: train_verl:, made by a stand-in for
$EDITOR), then `snakemake -n --profile mycluster` keeps the training GPUs and gives training
the interface, and `make preflight PROFILE=mycluster` reads that profile."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs" / "paper_scale.md"
# $EDITOR: what the block's comment says to set, with yaml as a person would by hand
EDITOR = """import sys, yaml
path = sys.argv[1]
profile = yaml.safe_load(open(path))
profile["default-resources"].update(slurm_partition="gpuq", slurm_account="lab42")
profile["set-resources"]["train_verl"]["network_interface"] = "ib0"
open(path, "w").write(yaml.safe_dump(profile))
"""


def docs_block() -> list[str]:
    """The commands of the bash block after "Every per-cluster setting lives in one place"."""
    text = DOCS.read_text().split("Every per-cluster setting lives in one place", 1)[1]
    block = re.search(r"```bash\n(.*?)```", text, re.DOTALL).group(1)
    lines = (line.split("#", 1)[0].strip() for line in block.splitlines())
    return [line for line in lines if line]


@pytest.fixture(scope="module")
def ran(workflow_copy, tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    shutil.copy2(REPO / "Makefile", workflow_copy / "Makefile")
    editor = tmp_path_factory.mktemp("editor") / "editor.py"
    editor.write_text(EDITOR)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        "EDITOR": f"{sys.executable} {editor}",
        "HF_HUB_OFFLINE": "1",
    }
    out = {}
    for line in docs_block():
        out[line] = subprocess.run(
            line, shell=True, cwd=workflow_copy, env=env, capture_output=True, text=True,
            timeout=600, check=False,
        )  # fmt: skip
    return out


def test_the_block_is_the_documented_one():
    assert docs_block() == [
        "cp -rL slurm mycluster",
        "$EDITOR mycluster/config.yaml",
        "snakemake -n --profile mycluster",
        "make preflight PROFILE=mycluster",
    ]


def _jobs(stdout: str, rule: str) -> list[str]:
    return [
        b for b in re.split(r"\n(?=(?:local)?rule \S+:\n)", stdout) if b.startswith(f"rule {rule}:")
    ]


def test_the_dry_run_keeps_every_gpu_and_gives_training_the_interface(ran):
    dry = ran["snakemake -n --profile mycluster"]
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
    # (generate jobs need the benchmark files, absent here; they share set-resources with these)
    train, preflight = _jobs(dry.stdout, "train_verl"), _jobs(dry.stdout, "preflight")
    assert train and len(preflight) == 1
    assert all("gres=gpu:h200:8" in b and "cpus_per_task=96" in b for b in train + preflight)
    assert all("RAY_NETWORK_INTERFACE=ib0 PACS_RAY_START_WAIT_S=" in b for b in train)
    assert '"network_interface": "ib0"' in preflight[0]  # the preflight job checks it


def test_make_preflight_reads_the_copied_profile(ran):
    pre = ran["make preflight PROFILE=mycluster"]
    assert "slurm_partition = gpuq" in pre.stdout, pre.stdout + pre.stderr
    assert "GPU request" not in pre.stdout  # the GPUs are still asked for
