"""Issue 35: every ratio, temperature and penalty is finite and in range, and a run name that
collides with the results layout is refused at load, naming the key. Each case loaded before."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from pacs.config import ConfigError, load_profile
from pacs.config.load import parse_profile

REPO = Path(__file__).resolve().parents[2]
CONFIGS = sorted((REPO / "configs").glob("*.yaml"))


def _raw() -> dict:
    return yaml.safe_load((REPO / "configs" / "default.yaml").read_text())


def _dapo_run(raw: dict, **knobs) -> dict:
    raw = copy.deepcopy(raw)
    raw["runs"]["dapo_x"] = {"method": "dapo", **knobs}
    return raw


def _refused(raw: dict, *fragments: str) -> None:
    with pytest.raises((ConfigError, ValueError)) as err:
        parse_profile(raw, source="cfg.yaml")
    for fragment in fragments:
        assert fragment in str(err.value), str(err.value)


@pytest.mark.parametrize("key", ["clip_ratio_low", "clip_ratio_high", "overlong_penalty"])
def test_an_infinite_knob_is_refused_by_name(key):
    _refused(_dapo_run(_raw(), **{key: float("inf")}), f"runs.dapo_x.{key}", "finite")


def test_an_infinite_temperature_is_refused_by_name():
    raw = _raw()
    raw["train"]["temperature"] = float("inf")
    _refused(raw, "train.temperature", "finite")


def test_clip_ratio_high_below_low_is_refused():
    raw = _dapo_run(_raw(), clip_ratio_low=0.3, clip_ratio_high=0.2)
    _refused(raw, "runs.dapo_x.clip_ratio_high", "below clip_ratio_low 0.3")


def test_equal_clip_ratios_load():
    parse_profile(_dapo_run(_raw(), clip_ratio_low=0.2, clip_ratio_high=0.2))


@pytest.mark.parametrize("name", [".", "..", "base", "released"])
def test_a_run_name_of_the_results_layout_is_refused(name):
    raw = _raw()
    raw["runs"][name] = next(iter(raw["runs"].values()))
    _refused(raw, f"runs.{name}", "collides with the results layout")


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_every_committed_profile_still_loads(path):
    load_profile(path)
