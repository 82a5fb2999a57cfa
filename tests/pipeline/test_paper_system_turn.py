"""configs/overlays/paper_system_turn.yaml: App. C.1's system turn as a switch
(``prompt.system_prompt``). `snakemake -n` shows where it goes: the training parquet's prompts and
the evaluation of our runs; a released model keeps its own documented system prompt (or none)."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

from pacs.config import load_config, load_profile

VENV_BIN = str(Path(sys.executable).parent)
REPO = Path(__file__).resolve().parents[2]
OVERLAY = "configs/overlays/paper_system_turn.yaml"
OURS = "results/paper/eval/qwen3_4b/pacs/seed0/aime24/passk.json"
LIMO = "results/paper/eval/limo/released/seed0/aime24/passk.json"  # documents its own
QWEN3_14B = "results/paper/eval/qwen3_14b/released/seed0/aime24/passk.json"  # documents none
SYSTEM = "You are a helpful assistant."


def shell_commands(paper_dry_run, workflow: Path, *configfiles: str) -> list[str]:
    """The shell commands of a dry run of the three targets above."""
    stdout = paper_dry_run(workflow, [OURS, LIMO, QWEN3_14B], {"aime24": 30}, *configfiles)
    return re.findall(r"^Shell command: (.*)$", stdout, re.MULTILINE)


def _one(commands: list[str], *parts: str) -> str:
    found = [c for c in commands if all(p in c for p in parts)]
    assert len(found) == 1, (parts, found)
    return found[0]


def _system_prompt(command: str) -> str | None:
    argv = shlex.split(command.split(" > ")[0])
    return argv[argv.index("--system-prompt") + 1] if "--system-prompt" in argv else None


@pytest.mark.parametrize(
    "configfiles,ours", [((), None), (("configs/paper.yaml", OVERLAY), SYSTEM)]
)
def test_the_system_turn_reaches_training_and_our_evaluations_only(
    paper_dry_run, workflow_copy, configfiles, ours
):
    commands = shell_commands(paper_dry_run, workflow_copy, *configfiles)
    assert _system_prompt(_one(commands, "pacs.data prepare-train")) == ours
    assert _system_prompt(_one(commands, "pacs.evaluation.generate", "qwen3_4b/pacs/")) == ours
    limo = load_profile(REPO / "configs" / "paper.yaml").eval.released["limo"].system_prompt
    assert _system_prompt(_one(commands, "pacs.evaluation.generate", "limo/released/")) == limo
    assert _system_prompt(_one(commands, "generate", "qwen3_14b/released/")) is None


def test_the_overlay_sets_only_the_system_turn_and_the_default_is_none():
    assert load_config(REPO / OVERLAY) == {"prompt": {"system_prompt": SYSTEM}}
    assert load_profile(REPO / "configs" / "paper.yaml").prompt.system_prompt is None
