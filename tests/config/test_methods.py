"""The method specs and their dispatch tables: a new method is one spec class plus its branches,
and this test names every table that lacks a branch."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Literal

import pytest
import torch

import pacs
from pacs import core_algos
from pacs import methods as m

SRC = Path(pacs.__file__).resolve().parent


def import_table_modules() -> list[str]:
    """Import every pacs module that builds a MethodTable (found by its source text)."""
    names = []
    for info in pkgutil.walk_packages([str(SRC)], prefix="pacs."):
        path = SRC.joinpath(*info.name.split(".")[1:])
        source = path / "__init__.py" if info.ispkg else path.with_suffix(".py")
        if (
            source.is_file()
            and "MethodTable(" in source.read_text()
            and info.name != "pacs.methods"
        ):
            importlib.import_module(info.name)
            names.append(info.name)
    return names


def test_every_dispatch_table_has_a_branch_for_every_method():
    modules = import_table_modules()
    assert {"pacs.tiny.train", "pacs.verl_plugin.launch.overrides", "pacs.report.paper"} <= set(
        modules
    )
    tables = m.method_tables()
    missing = {
        where: [c.__name__ for c in t.missing()] for where, t in tables.items() if t.missing()
    }
    assert missing == {}, f"methods without a branch: {missing}"
    assert len(tables) >= 3


def test_a_new_method_is_named_in_every_table_that_lacks_it(monkeypatch):
    """What adding e.g. DAPO looks like before its branches exist."""

    @m.spec
    class DapoSpec:
        name: Literal["dapo"] = "dapo"

    import_table_modules()
    monkeypatch.setattr(m, "METHOD_SPECS", (*m.METHOD_SPECS, DapoSpec))
    lacking = sorted(where for where, t in m.method_tables().items() if DapoSpec in t.missing())
    assert lacking == sorted(m.method_tables())
    table = next(iter(m.method_tables().values()))
    with pytest.raises(m.MissingBranch, match=f"{table.where} has no branch for DapoSpec"):
        table[DapoSpec()]


def test_every_mode_a_spec_accepts_is_one_the_math_runs():
    """The specs offer pacs.loss_modes' names; core_algos computes with each and refuses others."""
    x, mask = torch.tensor([1.0, 0.0, 2.0, 5.0]), torch.ones(4, 3)
    for score in m.SCORE_METHODS:
        assert m.PacsSpec(score=score).score == score
        assert core_algos.group_scores(x, 2, score).shape == (4,)
    for mode in m.LOSS_AGG_MODES:
        assert m.GrpoSpec(loss_agg_mode=mode).loss_agg_mode == mode
        assert core_algos.agg_loss(torch.ones(4, 3), mask, mode).item() > 0
    with pytest.raises(ValueError, match="unknown score method"):
        core_algos.group_scores(x, 2, "dapo")
    with pytest.raises(ValueError, match="unknown loss_agg_mode"):
        core_algos.agg_loss(torch.ones(4, 3), mask, "sum")
    with pytest.raises(ValueError):
        m.PacsSpec(score="dapo")
    assert m.METHOD_NAMES == ("pacs", "grpo", "ppo")
    assert m.spec_class("ppo") is m.PpoSpec and m.spec_keys(m.GrpoSpec) == (
        "loss_agg_mode",
        "clip_ratio",
    )


def test_a_table_refuses_what_is_not_a_method():
    with pytest.raises(TypeError, match="not method specs"):
        m.MethodTable("test.bad", {int: 1})
