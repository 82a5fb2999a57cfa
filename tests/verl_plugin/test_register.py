"""The plugin loads through the ``verl.plugins`` entry point on a plain ``import verl``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CHECK = """
import sys
import verl
assert "pacs.verl_plugin.register" in sys.modules, "entry point not loaded by import verl"
from verl.trainer.ppo.core_algos import get_adv_estimator_fn, get_policy_loss_fn
from verl.trainer.ppo.v1 import get_trainer_cls
from pacs.verl_plugin.advantage import compute_pacs_advantage
from pacs.verl_plugin.loss import compute_policy_loss_pacs
from pacs.verl_plugin.trainer import PACSTrainerSync
assert get_policy_loss_fn("pacs") is compute_policy_loss_pacs
assert get_adv_estimator_fn("pacs") is compute_pacs_advantage
assert get_trainer_cls("label_sync") is PACSTrainerSync
from verl.trainer.ppo.v1 import PPOTrainerSync
assert issubclass(PACSTrainerSync, PPOTrainerSync)
print("ok")
"""


def _run(env_updates: dict[str, str | None]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERL_USE_EXTERNAL")}
    for key, value in env_updates.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return subprocess.run(
        [sys.executable, "-c", CHECK],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_entry_point_registers_everything_without_env_var():
    result = _run({})
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr[-3000:]


@pytest.mark.slow
def test_env_var_fallback_when_entry_points_are_disabled():
    """VERL_USE_EXTERNAL_MODULES (what the launcher puts in the Ray runtime env) alone suffices."""
    result = _run(
        {
            "VERL_USE_EXTERNAL_PLUGINS": "none",
            "VERL_USE_EXTERNAL_MODULES": "pacs.verl_plugin.register",
        }
    )
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr[-3000:]


@pytest.mark.slow
def test_nothing_registers_with_both_mechanisms_off():
    """Guards the two tests above: with entry points off and no env var, the names are absent."""
    result = _run({"VERL_USE_EXTERNAL_PLUGINS": "none"})
    assert result.returncode != 0 and "entry point not loaded" in result.stderr
