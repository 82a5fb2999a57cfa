"""Fixtures shared by the sandbox tests: a private temp root and a probe for leftover processes."""

from __future__ import annotations

import os
import signal
import tempfile
import time

import pytest


def processes_naming(path) -> list[int]:
    """Processes whose command line names ``path`` (every sandbox process names its config)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if str(path).encode() in f.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """Sandbox folders under this test's tmp_path, so leftover processes can be found by path."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    yield tmp_path
    for pid in processes_naming(tmp_path):  # what an attack on a broken sandbox left running
        _kill(pid)


@pytest.fixture
def leftover_processes():
    """``f(path, wait_s=2.0)``: processes still naming ``path`` after ``wait_s`` (killed ones need a
    moment to be reaped by the sandbox's init)."""

    def leftovers(path, wait_s: float = 2.0) -> list[int]:
        deadline = time.monotonic() + wait_s
        while processes_naming(path) and time.monotonic() < deadline:
            time.sleep(0.05)
        return processes_naming(path)

    return leftovers
