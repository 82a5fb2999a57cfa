"""The plugin registers only with the verl it is written for (issue 17, defect 10).

A later verl may lack the private tables the plugin writes into; the plugin must then register
nothing, say why once, and leave ``import verl`` and verl's own losses working.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pacs.verl_plugin import SUPPORTED_VERL, verl_version_problem

UPGRADED = """
import logging, sys
logging.basicConfig(level=logging.WARNING)
import verl
from verl.workers.rollout import base as rollout_base
verl.__version__ = "0.10.0"
del rollout_base._ROLLOUT_REGISTRY   # a private table the plugin writes into, gone in the upgrade
import pacs.verl_plugin.register as register
assert register.REGISTERED is False, "registered on an unsupported verl"
from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY, get_policy_loss_fn
assert "pacs" not in POLICY_LOSS_REGISTRY
get_policy_loss_fn("vanilla")          # unrelated verl use still works
print("ok")
"""


def test_version_message_names_both_versions():
    assert verl_version_problem(SUPPORTED_VERL) is None
    message = verl_version_problem("0.10.0")
    assert "0.10.0" in message and SUPPORTED_VERL in message and "NOT registered" in message


def test_installed_verl_is_the_supported_one():
    import verl

    assert verl.__version__ == SUPPORTED_VERL
    from pacs.verl_plugin import register

    assert register.REGISTERED and register.VERSION_PROBLEM is None


@pytest.mark.slow  # a fresh interpreter importing verl
def test_unsupported_verl_registers_nothing_and_does_not_break_import():
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERL_USE_EXTERNAL")}
    env["VERL_USE_EXTERNAL_PLUGINS"] = "none"  # so the script imports the plugin after the patch
    result = subprocess.run(
        [sys.executable, "-c", UPGRADED],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr[-3000:]
    assert "supports verl 0.9.1 only, found verl 0.10.0" in result.stderr
