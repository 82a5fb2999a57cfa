"""data.synthetic.task (arithmetic | paths) and its knobs in the typed spec (pacs.config)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from pacs.config import ConfigError, load_config, load_profile, parse_profile

REPO = Path(__file__).resolve().parents[2]


def with_synthetic(path: str, **synthetic) -> dict:
    cfg = copy.deepcopy(load_config(REPO / "configs" / path))
    cfg["data"]["synthetic"] = {**cfg["data"]["synthetic"], **synthetic}
    return cfg


def test_the_arithmetic_command_line_is_unchanged():
    # main's synthetic_args before the paths task: every field in order, no --task.
    got = load_profile(REPO / "configs" / "default.yaml").data.synthetic
    assert got.task == "arithmetic"
    assert got.cli_args() == (
        "--seed 1234 --n-sft 20000 --n-train 4000 --n-test 200 "
        "--min-steps 2 --max-steps 3 --max-operand 50"
    )


def test_the_paths_task_command_line():
    got = load_profile(REPO / "configs" / "science.yaml").data.synthetic
    assert got.cli_args() == (
        "--task paths --seed 1234 --n-sft 20000 --n-train 4000 --n-test 200 "
        "--min-terms 3 --max-terms 3 --max-operand 50"
    )


@pytest.mark.parametrize(
    ("path", "synthetic", "message"),
    [
        ("science.yaml", {"min_terms": None}, "min_terms: required by task: paths"),
        ("science.yaml", {"min_steps": 2}, "min_steps: task arithmetic only; this task is paths"),
        ("default.yaml", {"max_terms": 3}, "max_terms: task paths only; this task is arithmetic"),
        ("default.yaml", {"task": "arithmetic", "max_steps": None}, "max_steps: required by task"),
        ("science.yaml", {"min_terms": 4, "max_terms": 3}, "min > max: 4 > 3"),
        ("default.yaml", {"min_steps": 3, "max_steps": 2}, "min > max: 3 > 2"),
        ("science.yaml", {"max_operand": 2}, "max_operand=2 < max_terms=3"),
        (
            "science.yaml",
            {"max_terms": 7},
            "data.synthetic.max_terms: Input should be less than or equal to 6",
        ),
        (
            "science.yaml",
            {"task": "trees"},
            "data.synthetic.task: Input should be 'arithmetic' or 'paths'",
        ),
    ],
)
def test_knobs_that_do_not_fit_the_task_fail_at_load(path, synthetic, message):
    cfg = with_synthetic(path, **synthetic)
    cfg["data"]["synthetic"] = {k: v for k, v in cfg["data"]["synthetic"].items() if v is not None}
    with pytest.raises(ConfigError) as err:
        parse_profile(cfg, "configs/x.yaml")
    assert message in str(err.value) and "configs/x.yaml: data.synthetic" in str(err.value)
