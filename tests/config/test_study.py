"""pacs.config's ``study:`` section (the science profile's checkpoint study,
docs/design.md#the-study-design) and ``claims.large_k``: the shipped profile, the matrix it builds,
and every refusal."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest

from pacs.config import ConfigError, HardSplitSpec, load_config, load_profile, parse_profile

REPO = Path(__file__).resolve().parents[2]
SCIENCE = REPO / "configs" / "science.yaml"


def science() -> dict:
    return copy.deepcopy(load_config(SCIENCE))


def problems(cfg: dict) -> str:
    with pytest.raises(ConfigError) as err:
        parse_profile(cfg, "configs/x.yaml")
    return str(err.value)


def test_the_science_profile_is_the_committed_design():
    p = load_profile(SCIENCE)
    assert list(p.runs) == ["pacs", "grpo", "pacs_ref_fixed", "pacs_official"]
    # the third design's runs keep their settings; the fourth's arm differs from pacs in the clip
    assert p.runs["pacs"].method.grad_clip == p.runs["grpo"].method.grad_clip == 1.0
    assert p.runs["grpo"].method.loss_scale == "sequence_mean"
    official = dataclasses.replace(p.runs["pacs_official"].method, grad_clip=1.0)
    assert p.runs["pacs_official"].method.grad_clip is None and official == p.runs["pacs"].method
    assert p.runs["pacs"].method.reference.mode == "rollout"
    assert p.runs["pacs_ref_fixed"].method.reference.mode == "fixed"
    # the third design's seeds
    assert p.seeds.main == tuple(range(24)) and p.seeds.ablation == tuple(range(4))
    assert p.train.steps == 128 and p.train.save_every == p.train.eval_every == 16
    assert p.data.benchmarks == (p.study.hard.benchmark,) == ("synthetic_hard",)
    assert p.eval.n_samples == 32 and p.claims.large_k == ()
    assert p.claims.heldout_checkpoints == 3
    m = p.matrix
    assert m.checkpoint_steps == list(range(16, 129, 16))
    assert m.exact_benchmarks == ["synthetic_hard", "synthetic"]
    assert len(m.train_jobs) == 3 * 24 + 4
    assert len(m.exact_jobs) == (1 + 3 * 24 + 4) * 2
    assert m.exact_jobs[0] == ("tiny", "base", 0, "synthetic_hard")


def test_a_profile_without_study_has_no_checkpoint_jobs():
    p = load_profile(REPO / "configs" / "default.yaml")
    assert p.study is None and p.claims is None
    assert p.matrix.checkpoint_steps == [] and p.matrix.exact_jobs == []


def test_the_last_step_is_scored_when_it_is_not_a_multiple_of_save_every():
    cfg = science()
    cfg["train"].update(steps=40, save_every=16, eval_every=16)
    assert parse_profile(cfg).matrix.checkpoint_steps == [16, 32, 40]


def test_hard_split_command_line():
    hard = HardSplitSpec(n=64, seed=3, min_operand=30, min_carries=3)
    assert hard.cli_args() == (
        "--seed 3 --n 64 --terms 3 --min-operand 30 --max-operand 50 --min-carries 3"
    )


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda c: c["study"]["hard"].update(max_operand=60), "max_operand=60 > data.synthetic"),
        (lambda c: c["study"]["hard"].update(terms=4), "terms=4 is outside data.synthetic's 3..3"),
        (lambda c: c["study"]["hard"].update(min_operand=49), "3 distinct quantities do not fit"),
        (lambda c: c["train"].update(eval_every=8), "eval_every=8 must equal train.save_every=16"),
        (lambda c: c["study"]["hard"].update(carries=2), "study.hard.carries: unknown key"),
        (lambda c: c["study"]["hard"].pop("n"), "study.hard.n"),
        (lambda c: c["claims"].update(large_k=[0]), "claims.large_k.0"),
    ],
)
def test_a_bad_study_is_named_with_its_key(edit, expected):
    cfg = science()
    edit(cfg)
    assert expected in problems(cfg)


def test_study_needs_the_paths_task():
    cfg = copy.deepcopy(load_config(REPO / "configs" / "default.yaml"))
    cfg["study"] = science()["study"]
    cfg["train"]["eval_every"] = cfg["train"]["save_every"]
    assert "needs engine: tiny and data.synthetic.task: paths" in problems(cfg)


def test_the_fourth_designs_families_and_tost_claims_are_declared():
    claims = load_profile(SCIENCE).claims
    assert claims.families["primary"] == ("C1-n@pacs_official", "arm-n@pacs_official")
    assert claims.families["secondary_clipped"] == ("C1", "C2", "C3", "C4", "C4-s")
    assert claims.tost_margin == 1.4 and "C1-n@pacs_official" in claims.tost_claims


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        ({"families": {"f": ["C9"]}}, r"claims\.families\.f: 'C9' is no claim the report"),
        ({"families": {"f": ["C2@ppo"]}}, r"claims\.families\.f: 'C2@ppo' is no claim"),
        (
            {"families": {"f": ["C2"], "g": ["C3", "C2"]}},
            r"claims\.families\.g: 'C2' is already in family 'f'",
        ),
        ({"tost_claims": ["C1-n"]}, r"claims\.tost_claims: needs claims\.tost_margin"),
        ({"tost_margin": 1.0}, r"claims\.tost_margin: names no claim"),
        (
            {"tost_margin": 1.0, "tost_claims": ["C2"]},
            r"claims\.tost_claims: 'C2' is not an in-loop held-out pass@1 claim",
        ),
        ({"hard_checkpoints": 3}, r"claims\.hard_checkpoints=3: the report cannot compute"),
    ],
)
def test_a_family_or_endpoint_the_report_cannot_compute_fails_at_load(claims, expected):
    cfg = science()
    cfg["claims"] = {k: v for k, v in cfg["claims"].items() if k not in ("families", "tost_claims")}
    cfg["claims"].pop("tost_margin")
    cfg["claims"].update(claims)
    with pytest.raises(ConfigError, match=expected):
        parse_profile(cfg, "configs/x.yaml")


def test_an_arms_claims_need_the_arm():
    """Without the unclipped run its claims are unknown: the design cannot name them."""
    cfg = science()
    del cfg["runs"]["pacs_official"]
    with pytest.raises(ConfigError, match=r"'C1-n@pacs_official' is no claim the report"):
        parse_profile(cfg, "configs/x.yaml")
