"""The claims table (pacs.report.claims): bootstrap, verdicts, and the table on a synthetic tree."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pacs.config import ClaimsSpec, load_config, parse_profile
from pacs.report import claims as C
from pacs.report.__main__ import build_report

# ----------------------------------------------------------------------------- statistics


def test_constant_difference_has_a_zero_width_interval():
    res = C.paired_bootstrap(np.full((3, 4), 0.5), 200, 0)
    assert (res.diff, res.ci_low, res.ci_high, res.se, res.mde) == (0.5, 0.5, 0.5, 0.0, 0.0)
    assert (res.seeds, res.problems) == (3, 4)


def test_two_problems_hand_computed():
    # One seed, problem differences 0 and 1: a resample's mean is 0, 1/2, 1 w.p. 1/4, 1/2, 1/4,
    # so SE = sqrt(1/8) and the 95 % percentile interval is [0, 1].
    res = C.paired_bootstrap(np.array([[0.0, 1.0]]), 20000, 1)
    assert res.diff == 0.5
    assert (res.ci_low, res.ci_high) == (0.0, 1.0)
    assert res.se == pytest.approx(math.sqrt(1 / 8), rel=0.03)
    assert res.mde == pytest.approx(2.8016 * math.sqrt(1 / 8), rel=0.03)


def test_missing_cells_are_left_out():
    diff = np.array([[1.0, np.nan], [3.0, 5.0]])
    res = C.paired_bootstrap(diff, 500, 0)
    assert res.diff == 3.0  # mean of the three present cells
    assert res.problems == 2 and res.seeds == 2
    with pytest.raises(ValueError):
        C.paired_bootstrap(np.full((2, 2), np.nan), 100, 0)


def test_seed_resampling_counts():
    # Seeds differ, problems do not: the interval must come from resampling seeds.
    diff = np.repeat(np.array([[-1.0], [1.0], [1.0], [3.0]]), 5, axis=1)
    res = C.paired_bootstrap(diff, 4000, 0)
    assert res.diff == 1.0 and res.ci_low < 0 < res.ci_high
    assert res.se == pytest.approx(math.sqrt(2 / 4), rel=0.08)  # sd of 4 seeds / sqrt(4), ddof 0


@pytest.mark.parametrize(
    ("lo", "hi", "want"),
    [
        (0.1, 2.0, "holds"),
        (-2.0, -0.1, "reversed"),
        (-0.1, 0.2, "not separable"),
        (0.0, 1.0, "not separable"),
    ],
)
def test_verdict(lo, hi, want):
    assert C.verdict(lo, hi) == want


def _simulated(effect: float, rng) -> np.ndarray:
    seed_effect = rng.normal(0, 0.02, size=(5, 1))
    return effect + seed_effect + rng.normal(0, 0.3, size=(5, 200))


def test_a_known_effect_is_detected_and_a_null_is_not_separable():
    rng = np.random.default_rng(0)
    hits = [C.verdict(*_ci(C.paired_bootstrap(_simulated(0.1, rng), 400, i))) for i in range(10)]
    assert hits.count("holds") >= 9
    falls = [C.verdict(*_ci(C.paired_bootstrap(_simulated(-0.1, rng), 400, i))) for i in range(10)]
    assert falls.count("reversed") >= 9
    nulls = [C.verdict(*_ci(C.paired_bootstrap(_simulated(0.0, rng), 400, i))) for i in range(40)]
    assert nulls.count("not separable") >= 34  # 95 % intervals: about 38 of 40 expected
    res = C.paired_bootstrap(_simulated(0.0, rng), 400, 0)
    assert 0.02 < res.mde < 0.1  # the design can see 0.1, and not much less than ~0.05


def _ci(res):
    return res.ci_low, res.ci_high


def test_seed_t_interval_hand_computed():
    """Differences 1, 2, 3: mean 2, SE 1/sqrt(3), t_0.975(2 df) = 4.302653, t = 3.4641."""
    res = C.seed_t_interval(np.array([[1.0], [2.0], [3.0]]))
    half = 4.302653 / math.sqrt(3)
    assert (res.diff, res.seeds, res.method) == (2.0, 3, C.SEED_T)
    assert (res.ci_low, res.ci_high) == pytest.approx((2 - half, 2 + half), abs=1e-5)
    assert res.p == pytest.approx(0.0742, abs=1e-4)
    assert C.verdict(res.ci_low, res.ci_high) == "not separable"
    one = C.seed_t_interval(np.array([[0.5], [np.nan]]))
    assert one.seeds == 1 and math.isnan(one.ci_low) and math.isnan(one.p)
    assert C.rules_out(one.ci_low, one.ci_high).startswith("nothing")


def test_t_mde_is_the_noncentral_t_power_solution():
    """At the MDE a two-sided α = 0.05 paired t-test has power 0.8 (scipy's noncentral t), and
    for many pairs it tends to the normal approximation 2.80 σ/√n."""
    from scipy import stats as st

    for n in (3, 8, 24):
        mde = C.t_mde(2.0, n)
        ncp, crit = mde * math.sqrt(n) / 2.0, st.t.ppf(0.975, n - 1)
        power = st.nct.sf(crit, n - 1, ncp) + st.nct.cdf(-crit, n - 1, ncp)
        assert power == pytest.approx(0.8, abs=1e-6)
    assert C.t_mde(1.0, 2000) * math.sqrt(2000) == pytest.approx(2.8016, abs=0.01)
    assert C.t_mde(7.33, 8) == pytest.approx(8.47, abs=0.01)  # C1 of docs/science_report_v2
    assert math.isnan(C.t_mde(1.0, 1))


def test_per_problem_rows_average_per_seed_then_pair():
    """A per-problem metric: the t-interval is on per-seed means over the problems both runs
    have; the bootstrap (cells) is beside it."""
    from scipy import stats as st

    a = np.array([[1.0, 3.0, np.nan], [2.0, 2.0, 5.0], [0.0, 4.0, 1.0]])
    b = np.array([[0.0, 1.0, 9.0], [1.0, 2.0, 2.0], [1.0, 1.0, 1.0]])
    got = C.matrix_stats(a, b, ClaimsSpec(bootstrap=500), seed_level=False)
    d = np.array([1.5, 4 / 3, 2 / 3])  # seed 0 leaves out problem 2 (A missing)
    ref = st.ttest_rel(np.array([2.0, 3.0, 5 / 3]), np.array([0.5, 5 / 3, 1.0]))
    assert got["diff"] == pytest.approx(d.mean()) and got["p"] == pytest.approx(ref.pvalue)
    assert got["mean_a"] - got["mean_b"] == pytest.approx(d.mean())
    assert got["sd"] == pytest.approx(d.std(ddof=1)) and got["interval"] == C.SEED_MEANS_T
    assert (got["seeds"], got["problems"]) == (3, 3)
    assert got["boot_low"] <= got["boot_high"] and 0 < got["boot_p"] <= 1


def test_heldout_endpoint_averages_the_last_checkpoints():
    """claims.heldout_checkpoints = 3: per seed, the mean of the in-loop pass@1 over its last
    three evaluated steps (each step's problems first), in percentage points."""
    curves = pd.DataFrame(
        {
            "run": ["x"] * 8,
            "seed": [0, 0, 0, 0, 1, 1, 1, 1],
            "step": [0, 16, 32, 48] * 2,
            "pass_at_1": [0.0, 0.2, 0.4, 0.6, 0.1, 0.1, 0.1, 0.4],
        }
    )
    data = C.ClaimData({}, pd.DataFrame(), curves, pd.DataFrame())
    got = C.seed_values("heldout_pass_at_1", data, "x", ClaimsSpec(heldout_checkpoints=3))
    assert got.to_dict() == pytest.approx({0: 40.0, 1: 20.0})
    last = C.seed_values("heldout_pass_at_1", data, "x", ClaimsSpec())
    assert last.to_dict() == pytest.approx({0: 60.0, 1: 40.0})
    row = C.ClaimRow("C1-n", "s", "heldout_pass_at_1", "x", "y")
    assert C.metric_name(row, ClaimsSpec(heldout_checkpoints=3)).endswith("last 3 checkpoints")


def test_holm_hand_computed():
    # sorted 0.01, 0.03, 0.04 -> 3 x 0.01, max(0.03, 2 x 0.03), max(0.06, 1 x 0.04)
    assert C.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    got = C.holm([float("nan"), 0.02, 0.8])
    assert math.isnan(got[0]) and got[1:] == pytest.approx([0.04, 0.8])
    assert C.holm_verdict(-1.0, 0.01) == "reversed" and C.holm_verdict(1.0, 0.06) == "not separable"


def test_bootstrap_p_counts_both_sides_and_is_never_zero():
    assert C.bootstrap_p(np.full(99, 1.0)) == pytest.approx(2 / 100)
    assert C.bootstrap_p(np.array([-1.0, 1.0, 1.0, 1.0])) == pytest.approx(2 * 2 / 5)


def test_claim_verdicts_aggregate():
    table = pd.DataFrame(
        {
            "claim": ["C1", "C1", "C3", "C3", "C5", "C6"],
            "verdict": ["holds", "holds", "holds", "not separable", "holds", "reversed"],
        }
    )
    got = C.claim_verdicts(
        pd.concat([table, pd.DataFrame({"claim": ["C5"], "verdict": ["reversed"]})])
    )
    verdicts = dict(zip(got["claim"], got["verdict"]))
    assert verdicts["C1"] == "holds" and verdicts["C5"] == "mixed" and verdicts["C6"] == "reversed"
    assert verdicts["C3"].startswith("partly")


# ----------------------------------------------------------------------------- a synthetic tree
# (the tree itself: conftest.build_claims_tree, given by the claims_tree fixture)

SCIENCE = Path(__file__).resolve().parents[2] / "configs" / "science.yaml"


@pytest.mark.parametrize("figures", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_report_writes_claims_with_the_planted_verdicts(tmp_path, figures, claims_tree):
    claims_tree.build(tmp_path / "results", np.random.default_rng(0))
    cfg = claims_tree.config(tmp_path / "cfg.yaml")
    log = build_report(cfg, tmp_path / "results", tmp_path / "out", figures=figures)
    N = claims_tree.n
    table = pd.read_csv(tmp_path / "out/tables/claims.csv")
    got = {(r.claim, r.run_b, r.metric.split(" ")[0]): r for r in table.itertuples()}
    assert got["C1", "grpo", "pass@1"].verdict == "holds"
    assert got["C1", "grpo", "pass@1"].diff == pytest.approx(20, abs=2.5)  # percentage points
    assert got["C2", "grpo", f"pass@{N}"].verdict == "holds"
    assert got["C3", "grpo", "token"].verdict == "holds"
    assert got["C1-n", "grpo", "held-out"].verdict == "holds"  # +10 points in every seed
    assert got["C1-n", "grpo", "held-out"].diff == pytest.approx(10.0)
    c4 = table[table.claim == "C4"]
    assert list(c4["metric"].str.split(",").str[0]) == [
        "exact path entropy (nats)",
        "exact path Gini-Simpson",
    ]
    assert (c4["verdict"] == "holds").all() and (c4["problems"] == claims_tree.problems).all()
    assert (table.loc[table.claim == "C4-s", "verdict"] == "holds").all()
    assert got["C3-ref-cost", "pacs_fixed", "pass@1"].verdict == "not separable"  # same skill
    assert got["C3-ref-cost-n", "pacs_fixed", "held-out"].interval == C.SEED_T
    assert got["C7", "pacs_beta2", "pass@1"].verdict == "not separable"  # same skill
    ref = table[(table.claim == "C3-ref")].set_index("run_b")
    assert (
        ref.loc["grpo", "verdict"] == "not separable" and ref.loc["pacs", "verdict"] == "reversed"
    )
    assert (table["seeds"] == 5).all()
    intervals = dict(zip(table["metric"].str.split(" ").str[0], table["interval"]))
    assert intervals["token"] == C.SEED_T and intervals["pass@1"] == C.SEED_MEANS_T
    assert intervals["held-out"] == C.SEED_T and intervals["exact"] == C.SEED_MEANS_T
    per_problem = table["interval"] == C.SEED_MEANS_T
    assert table.loc[per_problem, ["boot_low", "boot_high", "boot_p"]].notna().all().all()
    assert table.loc[~per_problem, ["boot_low", "boot_high", "boot_p"]].isna().all().all()
    assert (table["p_holm"] >= table["p"]).all()
    quiet = table[table["verdict"] == "not separable"]
    assert len(quiet) and quiet["rules_out"].str.startswith("A − B <").all()
    md = (tmp_path / "out/tables/claims.md").read_text()
    assert "| C1 | 1 | holds |" in md and "| C7 | 1 | not separable |" in md
    written = {rel for rel, _ in log.written}
    assert ("figures/claims_curves.png" in written) == figures
    assert ("figures/study_curves.png" in written) == figures
    assert ("figures/study_scatter.png" in written) == figures
    assert "tables/study_checkpoints.csv" in written


def test_claims_section_is_optional_with_defaults():
    raw = load_config(SCIENCE)
    assert parse_profile({k: v for k, v in raw.items() if k != "claims"}).claims is None
    got = parse_profile({**raw, "claims": {"bootstrap": 10}}).claims
    assert got == ClaimsSpec(
        bootstrap=10, seed=0, late_fraction=0.25, smooth=5, large_k=(), heldout_checkpoints=1
    )
    with pytest.raises(ValueError, match="claims.late_fraction"):
        parse_profile({**raw, "claims": {"late_fraction": 0}})


def test_no_claims_section_no_claims_table(tmp_path, claims_tree):
    claims_tree.build(tmp_path / "results", np.random.default_rng(0))
    cfg = claims_tree.config(tmp_path / "cfg.yaml", claims=None)
    build_report(cfg, tmp_path / "results", tmp_path / "out", figures=False)
    assert not (tmp_path / "out/tables/claims.md").exists()


def test_a_comparison_without_data_is_listed_not_dropped():
    table = pd.DataFrame(
        [
            {
                "claim": "C1",
                "statement": "s",
                "metric": "pass@1 (%)",
                "run_a": "a",
                "run_b": "b",
                "seeds": 2,
                "problems": 3,
                "mean_a": 1.0,
                "mean_b": 0.5,
                "diff": 0.5,
                "ci_low": 0.1,
                "ci_high": 0.9,
                "mde": 0.3,
                "verdict": "holds",
            },
            {
                "claim": "C4",
                "statement": "more path-diverse",
                "metric": "path diversity",
                "run_a": "a",
                "run_b": "b",
                "seeds": 0,
                "problems": 0,
                "verdict": C.NO_DATA,
            },
        ]
    )
    assert dict(zip(*C.claim_verdicts(table)[["claim", "verdict"]].to_numpy().T))["C4"] == C.NO_DATA
    md = C.claims_markdown(table, ClaimsSpec(), "10 resamples")
    assert "Not computed (no seed with a value in both runs): C4 more path-diverse" in md
    assert md.count("| C4 |") == 1  # in the verdict list only


def test_every_claims_baseline_method_gets_the_baseline_rows(claims_tree):
    """MethodTraits.claims_baseline: GRPO, PPO, DAPO and REAL are each compared with PACS on
    C1-C4; C3-ref (the reference ablations' entropy) only with GRPO (entropy_baseline)."""
    from pacs.report.context import ReportContext

    runs = {
        **claims_tree.runs,
        "ppo": {"method": "ppo", "ablation": "main", "label": "PPO"},
        "dapo": {"method": "dapo", "ablation": "main", "label": "DAPO"},
        "real": {"method": "real", "ablation": "main", "label": "REAL"},
    }
    ctx = ReportContext.__new__(ReportContext)  # the run catalogue needs the spec only
    raw = load_config(SCIENCE)  # without the fourth design's arm, its claims are not declared
    claims = {k: v for k, v in raw["claims"].items() if not k.startswith(("families", "tost"))}
    ctx.spec = parse_profile({**raw, "runs": runs, "claims": claims})
    ctx.runs = ctx._run_catalogue()
    rows = C.claim_rows(ctx, k_max=8)
    c1 = [r.run_b for r in rows if r.claim == "C1"]
    assert c1 == ["grpo", "ppo", "dapo", "real"]
    assert {r.run_a for r in rows if r.claim == "C1"} == {"pacs"}
    ref_vs = [r.run_b for r in rows if r.claim == "C3-ref"]
    assert ref_vs == ["grpo", "pacs"]
