"""Issue 47: finite extremes are refused too: every bounded knob names its key and its bound
(``clip_ratio_high: 1e308``, ``tau: 1e-300``, ``max_gen_rounds: 1e9`` loaded before), and
the values the shipped configs use still load."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from pacs.config import ConfigError
from pacs.config.load import parse_profile

REPO = Path(__file__).resolve().parents[2]

# (method, key, a value past the bound, the bound as the error states it)
EXTREMES = [
    ("dapo", "clip_ratio_high", 1e308, "less than or equal to 1"),
    ("dapo", "clip_ratio_low", 1.5, "less than or equal to 1"),
    ("dapo", "max_gen_rounds", 1_000_000_000, "less than or equal to 64"),
    ("dapo", "clip_ratio_c", 1e308, "less than or equal to 100"),
    ("grpo", "clip_ratio", 2.0, "less than or equal to 1"),
    ("ppo", "critic_lr", 10.0, "less than or equal to 1"),
    ("real", "tau", 1e-300, "greater than or equal to 0.001"),
    ("real", "tau", 1e308, "less than or equal to 1000"),
    ("pacs", "beta", 1e308, "less than or equal to 1000"),
]


def _raw_with(method: str, **knobs) -> dict:
    raw = copy.deepcopy(yaml.safe_load((REPO / "configs" / "default.yaml").read_text()))
    raw["runs"]["x_run"] = {"method": method, **knobs}
    return raw


@pytest.mark.parametrize(("method", "key", "value", "bound"), EXTREMES)
def test_a_value_past_its_bound_is_refused_naming_key_and_bound(method, key, value, bound):
    with pytest.raises((ConfigError, ValueError)) as err:
        parse_profile(_raw_with(method, **{key: value}), source="cfg.yaml")
    assert f"runs.x_run.{key}" in str(err.value) and bound in str(err.value), str(err.value)


@pytest.mark.parametrize(
    ("method", "knobs"),
    [
        ("dapo", {"clip_ratio_high": 1.0, "clip_ratio_low": 0.2, "max_gen_rounds": 64}),
        ("real", {"tau": 0.001}),
        ("pacs", {"beta": 1000.0}),
        ("ppo", {"critic_lr": 1.0e-3}),
    ],
)
def test_values_at_the_bounds_load(method, knobs):
    parse_profile(_raw_with(method, **knobs), source="cfg.yaml")
