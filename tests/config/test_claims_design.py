"""pacs.config.claims_design: the claim ids a profile's runs give, and the load-time check of the
declared families and TOST claims against them (the science profile's bad input:
tests/config/test_study.py)."""

from __future__ import annotations

import copy
from pathlib import Path

from pacs.config import load_config, parse_profile
from pacs.config.claims_design import claim_catalogue, claims_problems

REPO = Path(__file__).resolve().parents[2]
SCIENCE = REPO / "configs" / "science.yaml"
OVERLAY = REPO / "configs" / "overlays" / "science_ablations.yaml"


def _bare(runs: dict, study: bool = True):
    raw = copy.deepcopy(load_config(SCIENCE))
    raw["claims"] = {"bootstrap": 10}
    raw["runs"] = runs
    if not study:
        raw.pop("study")
    return parse_profile(raw)


PACS = {"method": "pacs", "ablation": "main", "label": "PACS"}
GRPO = {"method": "grpo", "ablation": "main", "label": "GRPO"}


def test_the_science_profile_gives_the_third_designs_claims_and_the_arms():
    got = claim_catalogue(parse_profile(load_config(SCIENCE)))
    third = ["C1", "C2", "C3", "C1-n", "C4", "C4-s", "C3-ref", "C3-ref-cost", "C3-ref-cost-n"]
    arm = [f"{c}@pacs_official" for c in ("C1", "C2", "C3", "C1-n", "C4", "C4-s")]
    assert list(got) == [*third, *arm, "arm@pacs_official", "arm-n@pacs_official"]
    assert got["C1-n@pacs_official"] == got["arm-n@pacs_official"] == "heldout_pass_at_1"


def test_without_a_study_c4_is_sampled_and_there_is_no_in_loop_claim():
    runs = {"pacs": PACS, "grpo": GRPO, "b": {**PACS, "ablation": "beta"}}
    got = claim_catalogue(_bare(runs, study=False))
    assert got == {"C1": "pass_at_k", "C2": "pass_at_k", "C3": "entropy",
                   "C4": "sampled_paths", "C7": "pass_at_k"}  # fmt: skip


def test_no_subject_or_no_baseline_gives_no_comparison_claims():
    assert claim_catalogue(_bare({"grpo": GRPO})) == {}
    assert claim_catalogue(_bare({"pacs": PACS, "arm": PACS})) == {
        "arm@arm": "pass_at_k",
        "arm-n@arm": "heldout_pass_at_1",
    }


def test_the_ablation_overlay_adds_its_claims_and_still_loads():
    raw = load_config(SCIENCE)
    extra = load_config(OVERLAY)
    p = parse_profile({**raw, "runs": {**raw["runs"], **extra["runs"]}})
    got = claim_catalogue(p)
    assert {"C5", "C6", "C7"} <= set(got) and claims_problems(p) == []
