"""pacs.report.claims_families: families, the signed-rank p beside every paired t, the TOST line
of the primary endpoint and the clip-bound share of each arm; hand-computed cases, scipy as the
reference, and the committed third-design report (docs/science_report) under the fourth design's
declarations (configs/science.yaml, docs/science.md)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pacs.config import ClaimsSpec, load_profile
from pacs.config.claims_design import claim_catalogue
from pacs.report import claims as C
from pacs.report.claims_cells import read_cells, recompute_claims
from pacs.report.claims_families import (
    clip_lines,
    clip_share,
    clip_shares,
    family_of,
    signed_rank_p,
    tost_margin_of,
    tost_p,
)
from pacs.report.science_data import read

REPO = Path(__file__).resolve().parents[2]
SCIENCE = REPO / "configs" / "science.yaml"
REPORT = REPO / "docs" / "science_report"

DECLARED = ClaimsSpec(
    families={"sec": ("C2", "C3")}, tost_margin=1.5, tost_claims=("C1-n",)
)  # fmt: skip


def test_a_claim_in_no_family_is_its_own_and_only_tost_claims_get_a_margin():
    assert family_of("C2", DECLARED) == family_of("C3", DECLARED) == "sec"
    assert family_of("C4", DECLARED) == "C4"
    assert tost_margin_of("C1-n", DECLARED) == 1.5 and math.isnan(tost_margin_of("C2", DECLARED))


def test_signed_rank_p_hand_computed():
    """|d| ranks 1..5, negative rank sum 3: 5 of the 32 sign patterns have a sum <= 3
    ({}, {1}, {2}, {3}, {1, 2}), so the exact two-sided p is 2 * 5 / 32."""
    assert signed_rank_p(np.array([1.0, 2.0, -3.0, 4.0, 5.0])) == pytest.approx(10 / 32)
    assert signed_rank_p(np.array([1.0, 2.0, -3.0, np.nan, 4.0, 5.0])) == pytest.approx(10 / 32)
    assert math.isnan(signed_rank_p(np.zeros(4)))


def test_tost_p_hand_computed_and_against_scipy():
    d = np.array([0.5, 1.5, 0.5, 1.5])  # mean 1, SD 1/sqrt(3), SE 1/sqrt(12)
    se = 1 / math.sqrt(12)
    want = stats.t.cdf((1 - 2) / se, 3)  # the upper test binds: (1 - 2) / SE = -3.46
    assert tost_p(1.0, d.std(ddof=1), 4, 2.0) == pytest.approx(want, rel=1e-12)
    ref = max(
        stats.ttest_1samp(d, -2.0, alternative="greater").pvalue,
        stats.ttest_1samp(d, 2.0, alternative="less").pvalue,
    )
    assert tost_p(1.0, d.std(ddof=1), 4, 2.0) == pytest.approx(ref, rel=1e-10)
    assert tost_p(1.0, d.std(ddof=1), 4, 0.5) > 0.5  # the mean is outside the margin
    assert tost_p(0.2, 0.0, 4, 0.5) == 0.0 and tost_p(0.7, 0.0, 4, 0.5) == 1.0
    assert math.isnan(tost_p(1.0, 1.0, 1, 2.0))


def test_clip_share_hand_computed():
    per_update = pd.DataFrame({"grad_norm/mb0": [2.0, 0.5], "grad_norm/mb1": [3.0, 1.0]})
    got = clip_share(per_update, 1.0)
    assert (got["counted"], got["bound"], got["share"]) == (4, 2, 0.5)  # 1.0 is not above 1.0
    assert got["median_norm"] == 1.5 and got["source"] == "pre-clip norm per update"
    flagged = pd.DataFrame({"clip_bound/mb0": [1.0, 0.0, 1.0], "clip_bound/mb1": [1.0, 1.0, 0.0]})
    assert clip_share(flagged, 1.0)["share"] == pytest.approx(4 / 6)
    steps = pd.DataFrame({"clip_bound": [1.0, 0.25, np.nan], "grad_norm": [3.0, 0.9, 1.0]})
    got = clip_share(steps, 1.0)
    assert got["share"] == pytest.approx(0.625) and got["source"].startswith("clip_bound per step")
    got = clip_share(pd.DataFrame({"grad_norm": [0.5, 2.0, 0.7]}), 1.0)
    assert got["share"] == pytest.approx(1 / 3) and got["source"].startswith("step-mean")
    unclipped = clip_share(steps, None)
    assert unclipped["source"] == "no clip" and unclipped["share"] == 0.0
    assert unclipped["median_norm"] == 1.0  # the step means 3.0, 0.9, 1.0


def test_every_claim_the_report_gives_is_in_the_catalogue_the_config_checks():
    """The load-time check (pacs.config.claims_design) and the report's rows agree on the ids,
    the fourth design's arm included; each row names its family."""
    from pacs.report.context import ReportContext

    ctx = ReportContext.__new__(ReportContext)  # the run catalogue needs the spec only
    ctx.spec = load_profile(SCIENCE)
    ctx.runs = ctx._run_catalogue()
    rows = C.claim_rows(ctx, k_max=32)
    assert {r.claim for r in rows} == set(claim_catalogue(ctx.spec))
    arm = {r.claim: r for r in rows if r.claim.endswith("@pacs_official")}
    assert arm["C1-n@pacs_official"].run_a == "pacs_official"
    assert arm["C1-n@pacs_official"].run_b == "grpo"
    assert (arm["arm-n@pacs_official"].run_a, arm["arm-n@pacs_official"].run_b) == (
        "pacs_official",
        "pacs",
    )
    assert C.row_head(arm["C2@pacs_official"], ctx.spec.claims)["family"] == "secondary_official"
    # the third design's rows keep their order in front (its cells' row numbers stay valid)
    assert [r.claim for r in rows[:12]] == list(pd.read_csv(REPORT / "tables/claims.csv").claim)


@pytest.fixture(scope="module")
def fourth() -> pd.DataFrame:
    """The committed third-design cells with the fourth design's families and TOST."""
    if not (REPORT / "tables" / "claims_cells.csv").is_file():
        pytest.skip(f"{REPORT} holds no claims cells")
    settings = load_profile(SCIENCE).claims
    cells = read_cells(REPORT / "tables" / "claims_cells.csv")
    cells["family"] = cells["claim"].map(lambda c: family_of(c, settings))
    return recompute_claims(cells, settings)


def test_the_secondary_comparisons_adjusted_together_on_the_committed_data(fourth):
    """Issue 50: across the seven PACS-vs-GRPO secondary comparisons C2's p 0.030 becomes 0.21
    and C3's 0.046 becomes 0.28; neither holds any more. The reference rows, now one family."""
    sec = fourth[fourth["family"] == "secondary_clipped"]
    assert len(sec) == 7
    p = sec["p"].to_numpy()
    order = np.argsort(p)
    want = np.maximum.accumulate(np.minimum(1, (7 - np.arange(7)) * p[order]))
    assert np.allclose(np.sort(sec["p_holm"].to_numpy()), np.sort(want), atol=1e-12)
    row = fourth.set_index("claim")
    assert (
        row.loc["C2", "p_holm"]
        == pytest.approx(7 * row.loc["C2", "p"])
        == pytest.approx(0.2118, abs=1e-4)
    )
    assert row.loc["C3", "p_holm"] == pytest.approx(0.2763, abs=1e-4)
    assert (sec["verdict"] == "not separable").all()
    assert row.loc["C1-n", "family"] == "C1-n" and len(fourth[fourth.family == "reference"]) == 4


def test_a_signed_rank_p_beside_every_row_equals_scipys_on_the_per_seed_differences(fourth):
    cells = read_cells(REPORT / "tables" / "claims_cells.csv")
    for i, g in cells.groupby("row"):
        per_seed = g.groupby("seed")[["value_a", "value_b"]].mean()  # no NaN pairs in C1-C3
        if g["claim"].iloc[0] in ("C1", "C1-n", "C2", "C3", "C3-ref-cost-n"):
            d = (per_seed["value_a"] - per_seed["value_b"]).round(10)  # ties are ties
            want = stats.wilcoxon(d).pvalue
            assert fourth.loc[i, "wilcoxon_p"] == pytest.approx(want, rel=1e-12)
    by_claim = fourth.set_index("claim")
    assert by_claim.loc["C3", "wilcoxon_p"] == pytest.approx(0.0126, abs=1e-4)  # issue 50
    assert by_claim.loc["C2", "wilcoxon_p"] == pytest.approx(0.0354, abs=1e-4)  # 9 tied |d|
    assert fourth["wilcoxon_p"].notna().all()


def test_the_primary_endpoints_tost_on_the_committed_data(fourth):
    """C1-n (the third design's primary): −0.05 points over 24 pairs; against ±1 the issue's
    p 0.011, against the fourth design's ±1.4 p < 0.001: equivalent."""
    row = fourth.set_index("claim").loc["C1-n"]
    assert row["tost_margin"] == 1.4 and row["equivalent"] == "yes"
    assert row["tost_p"] == pytest.approx(0.000986, abs=2e-6)
    assert tost_p(row["diff"], row["sd"], int(row["seeds"]), 1.0) == pytest.approx(0.0109, abs=1e-4)
    assert fourth.loc[fourth["claim"] != "C1-n", "tost_p"].isna().all()
    md = C.claims_markdown(fourth, load_profile(SCIENCE).claims, "20000 resamples")
    assert "## Equivalence (TOST)" in md and "equivalent within ±1.4" in md
    assert "| C2 | secondary_clipped |" in md


def test_the_clip_bound_share_of_each_arm_on_the_committed_data():
    if not (REPORT / "data" / "metrics.csv.gz").is_file():
        pytest.skip(f"{REPORT / 'data'} holds no exported raw data")
    metrics = read(REPORT / "data", "metrics.csv.gz")
    runs = {"pacs": ("PACS", 1.0), "grpo": ("GRPO", 1.0), "pacs_ref_fixed": ("fixed", 1.0)}
    shares = clip_shares(metrics, runs).set_index("run")
    assert shares.loc["pacs", "counted"] == 24 * 128 * 4
    assert shares.loc["pacs", "bound"] == 12_287  # issue 50: 12,287 of 12,288 updates
    assert shares.loc["pacs", "median_norm"] == pytest.approx(13.2, abs=0.05)
    assert shares.loc["grpo", "source"] == "step-mean norm (not per update)"
    assert shares.loc["grpo", "share"] == 0.0 and shares.loc["grpo", "counted"] == 24 * 128
    lines = "\n".join(clip_lines(shares.reset_index()))
    assert "| PACS | 1 | 12288 | 100.0 % | 13.2 | pre-clip norm per update |" in lines
