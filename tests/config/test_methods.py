"""The method specs and their dispatch tables: a new method is one spec class plus its branches,
and this test names every table that lacks a branch."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path
from typing import Literal

import pytest
import torch

import pacs
from pacs import core_algos
from pacs import methods as m
from pacs.report.paper import IN_PAPER

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
    assert m.METHOD_NAMES == ("pacs", "grpo", "ppo", "dapo", "real")
    assert m.spec_class("ppo") is m.PpoSpec and m.spec_keys(m.GrpoSpec) == (
        "loss_agg_mode",
        "clip_ratio",
        "clip_ratio_c",
        "loss_scale",
        "grad_clip",
    )


def test_a_table_refuses_what_is_not_a_method():
    with pytest.raises(TypeError, match="not method specs"):
        m.MethodTable("test.bad", {int: 1})


# ------------------------------------------------------------------ traits, not names

ROOT = SRC.parents[1]
# Where code may decide something per method: every source, rule and notebook of the project.
SCANNED = ("src", "workflow", "notebooks", "Snakefile")
METHOD_ALT = "|".join(m.METHOD_NAMES)
NAME_BRANCH = re.compile(
    rf"""(?:[=!]=\s*["']({METHOD_ALT})["'])"""  # x == "pacs"
    rf"""|(?:\bin\s*[(\[{{]\s*["']({METHOD_ALT})["'])"""  # x in ("grpo", "ppo")
    rf"""|(?:["']({METHOD_ALT})["']\s*(?:in|not in)\s+[\w.]*runs\b)"""  # "pacs" in ctx.runs
)
SPEC_BRANCH = re.compile(r"isinstance\([^)]*\b(?:[A-Z][a-z]+Spec)\b")


def method_branches() -> list[str]:
    """``path:line: text`` of every line outside pacs.methods that branches on a method's name
    or spec class."""
    found = []
    for top in SCANNED:
        base = ROOT / top
        paths = [base] if base.is_file() else sorted(base.rglob("*"))
        for path in paths:
            rel = str(path.relative_to(ROOT))
            if path.suffix not in {".py", ".smk", ".ipynb", ""} or not path.is_file():
                continue
            if rel == "src/pacs/methods.py" or ".ipynb_checkpoints" in rel:
                continue
            for i, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if NAME_BRANCH.search(line) or SPEC_BRANCH.search(line):
                    found.append(f"{rel}:{i}: {line.strip()}")
    return found


def test_nothing_outside_methods_branches_on_a_method_name_or_spec_class():
    """docs/design.md#the-run-spec: method-dependent code reads ``MethodTraits`` or a
    ``MethodTable``."""
    assert method_branches() == []


def test_the_scan_finds_name_and_class_branches(tmp_path):
    for bad in (
        'if r.method == "pacs":',
        'runs = [r for r in x if method.get(r) in ("grpo", "ppo")]',
        'if "pacs" in profile.ctx.runs:',
        "if isinstance(method, PacsSpec):",
        "if not isinstance(run.method, DapoSpec):",
    ):
        assert NAME_BRANCH.search(bad) or SPEC_BRANCH.search(bad), bad
    for fine in ('score: str = "rloo"', "traits(method).has_critic", 'name = "pacs"'):
        assert not (NAME_BRANCH.search(fine) or SPEC_BRANCH.search(fine)), fine


def test_every_method_states_its_traits():
    """The sites that read traits (docs/design.md#the-run-spec): the preflight's critic disk, the
    config's whole-group and no-op checks, the verl launcher's label_sync, the loss panel, the
    claims."""
    for cls in m.METHOD_SPECS:
        t = cls.TRAITS
        assert isinstance(t, m.MethodTraits), cls.__name__
        assert t.objective in m.OBJECTIVES and t.label and t.loss_title, cls.__name__
        assert "loss" in t.loss_panel_metrics, cls.__name__
        assert m.traits(cls) is t and m.traits(cls()) is t
        assert m.traits(cls.__dataclass_fields__["name"].default) is t
        if t.objective == "classification":
            assert t.needs_whole_groups, f"{cls.__name__}: a classification loss reads groups"
    assert m.methods_with(has_critic=True) == ("ppo",)
    assert m.methods_with(needs_whole_groups=True) == ("pacs", "real")


def test_the_baselines_overlay_adds_dapo_and_real_to_the_tiny_profile():
    """`make baselines` deep-merges configs/overlays/baselines.yaml into configs/default.yaml
    (Snakemake's update_config): the tiny profile with every method in its main comparison."""
    from snakemake.utils import update_config

    from pacs.config import load_config, parse_profile

    cfg = load_config(ROOT / "configs" / "default.yaml")
    update_config(cfg, load_config(ROOT / "configs" / "overlays" / "baselines.yaml"))
    profile = parse_profile(cfg)
    assert profile.profile == "tiny"
    main = [r.method.name for r in profile.runs.values() if r.ablation == "main"]
    assert main == list(m.METHOD_NAMES)
    assert [n for n in m.METHOD_NAMES if not IN_PAPER[m.spec_class(n)]] == ["dapo", "real"]
    assert {r.name for r in profile.runs.values()} > set(
        load_config(ROOT / "configs" / "default.yaml")["runs"]
    )


def test_an_overlong_buffer_longer_than_the_responses_is_refused():
    from pacs.config import ConfigError, load_config, parse_profile

    cfg = load_config(ROOT / "configs" / "default.yaml")
    cfg["runs"] = {"d": {"method": "dapo", "overlong_buffer": 49}}
    with pytest.raises(ConfigError, match="runs.d.overlong_buffer: 49 tokens exceeds"):
        parse_profile(cfg, "configs/x.yaml")
    cfg["runs"]["d"]["overlong_buffer"] = 16
    assert parse_profile(cfg).runs["d"].method.overlong_buffer == 16


def test_dual_clip_is_a_stated_field_of_every_clipped_method():
    """verl's default cap 3 for GRPO and PPO, the DAPO recipe's 10, null for none; a cap of 1 or
    less is refused (verl asserts c > 1) with the run and the field named."""
    from pacs.config import ConfigError, load_config, parse_profile

    assert m.GrpoSpec().clip_ratio_c == m.PpoSpec().clip_ratio_c == 3.0
    assert m.DapoSpec().clip_ratio_c == 10.0 and m.GrpoSpec(clip_ratio_c=None).clip_ratio_c is None
    assert m.DapoSpec().clip_range == (0.2, 0.28) and m.PpoSpec(clip_ratio=0.1).clip_range == (
        0.1,
        0.1,
    )
    cfg = load_config(ROOT / "configs" / "default.yaml")
    cfg["runs"] = {"g": {"method": "grpo", "clip_ratio_c": 1.0}}
    with pytest.raises(ConfigError, match=r"runs\.g\.clip_ratio_c: .*greater than 1"):
        parse_profile(cfg, "configs/x.yaml")
    cfg["runs"]["g"]["clip_ratio_c"] = None
    assert parse_profile(cfg).runs["g"].method.clip_ratio_c is None


def test_the_paper_profile_runs_dapo_as_its_recipe():
    """The recipe's overlong buffer (4096 of 20480 tokens) at our response limit, its penalty
    (1.0 against a +1/-1 reward, half the gap) against our 0/1 reward, its cap of 10."""
    from pacs.config import load_config, parse_profile

    profile = parse_profile(load_config(ROOT / "configs" / "paper.yaml"))
    dapo, limit = profile.runs["dapo"].method, profile.train.max_new_tokens
    assert dapo.overlong_buffer == round(4096 / 20480 * limit) == 1638
    assert dapo.overlong_penalty == 1.0 * (1 - 0) / (1 - (-1))
    assert (dapo.clip_ratio_c, dapo.dynamic_sampling, dapo.loss_agg_mode) == (
        10.0,
        True,
        "token-mean",
    )


def test_the_study_chooses_its_subject_and_baselines():
    """``claims:`` holds the study's choices (subject, baselines), not the method traits."""
    from pacs.config import load_config, parse_profile
    from pacs.report.context import ReportContext

    cfg = load_config(ROOT / "configs" / "science.yaml")
    cfg["claims"] = {**cfg["claims"], "subject": "grpo", "baselines": ["pacs"]}
    for key in ("families", "tost_claims", "tost_margin"):  # PACS-subject claim ids
        cfg["claims"].pop(key)
    ctx = ReportContext.__new__(ReportContext)  # the run catalogue needs the spec only
    ctx.spec = parse_profile(cfg)
    ctx.runs = ctx._run_catalogue()
    assert {r.spec.method.name for r in ctx.subject_runs()} == {"grpo"}
    assert {r.spec.method.name for r in ctx.baseline_runs()} == {"pacs"}
    assert [r.name for r in ctx.baseline_runs(entropy_baseline=True)] == ["grpo"]
    cfg["claims"]["subject"] = "sft"
    with pytest.raises(Exception, match="subject"):
        parse_profile(cfg)
