"""`make setup`'s torch install (the Makefile's $(VENV)/.installed recipe): PyTorch's CPU wheel
index first, and where it is unreachable pip's own index with a one-line note. The recipe's torch
lines, as `make -n` prints them, run against a stand-in python that records each pip call."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# Records its arguments; fails a pip install from the CPU index when INDEX_DOWN is set.
STAND_IN = """#!/bin/sh
echo "$*" >> "$CALLS"
case "$*" in *--index-url*) [ -n "$INDEX_DOWN" ] && exit 1 ;; esac
exit 0
"""


def torch_lines(venv: Path) -> str:
    """The recipe's torch install command (with its continuation lines), from `make -n`."""
    out = subprocess.run(
        ["make", "-n", "-W", "pyproject.toml", f"VENV={venv}", f"{venv}/.installed"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    start = out.index(f"{venv}/bin/python -m pip install -q --timeout")
    end = out.index(f"{venv}/bin/python -m pip install -q uv==")
    return out[start:end]


@pytest.mark.parametrize("index_down", [False, True], ids=["cpu-index", "fallback"])
def test_torch_comes_from_the_cpu_index_else_from_pips_own_with_a_note(tmp_path, index_down):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text(STAND_IN)
    (venv / "bin" / "python").chmod(0o755)
    calls = tmp_path / "calls"
    env = {"PATH": "/usr/bin:/bin", "CALLS": str(calls), "INDEX_DOWN": "1" if index_down else ""}
    run = subprocess.run(
        ["sh", "-c", torch_lines(venv)], env=env, capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr
    made = calls.read_text().splitlines()
    assert made[0].endswith(f"--index-url {CPU_INDEX} torch==2.13.0")
    if not index_down:
        assert len(made) == 1 and run.stderr == ""
        return
    assert made[1:] == ["-m pip install -q torch==2.13.0"]
    (note,) = run.stderr.splitlines()
    assert note.startswith(f"[make setup] {CPU_INDEX} unreachable: torch 2.13.0 from pip's own")
