"""The claims table's raw cells (pacs.report.claims_cells): claims.csv rebuilt from them alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pacs.config import ClaimsSpec, load_profile
from pacs.report.__main__ import build_report
from pacs.report.claims import CELLS_COLUMNS, NO_DATA, SEED_T, ClaimRow, claims_cells
from pacs.report.claims_cells import read_cells, recompute_claims

SETTINGS = ClaimsSpec(bootstrap=300)


@pytest.fixture(scope="module")
def report(tmp_path_factory, claims_tree) -> dict:
    """The report (no figures) of the claims tree: its OutputLog and its tables folder."""
    root = tmp_path_factory.mktemp("claims_cells")
    claims_tree.build(root / "results", np.random.default_rng(0))
    cfg = claims_tree.config(root / "cfg.yaml", {"bootstrap": SETTINGS.bootstrap})
    log = build_report(cfg, root / "results", root / "out", figures=False)
    return {"log": log, "tables": root / "out" / "tables"}


def test_cells_rebuild_every_number_of_the_claims_table(report):
    table = pd.read_csv(report["tables"] / "claims.csv")
    cells = read_cells(report["tables"] / "claims_cells.csv")
    again = recompute_claims(cells, SETTINGS)
    # through the same CSV writer, so both sides have the same dtypes
    again = pd.read_csv(pd.io.common.StringIO(again.to_csv(index=False)))
    assert list(again.columns) == list(table.columns)
    pd.testing.assert_frame_equal(again, table, check_exact=False, rtol=0, atol=1e-12)
    assert (table["verdict"] != NO_DATA).all()  # every row was recomputed, none is empty


def test_cells_row_count_and_columns(report, claims_tree):
    """C1, C2 (k = n = 8: claims.large_k's 64 exceeds it), C4 (exact: 2 metrics), C4-s (sampled:
    2 metrics), C3-ref-cost and C7: seeds × problems cells each; C1-n, C3, C3-ref (2 rows) and
    C3-ref-cost-n: one cell per seed, problem ''."""
    cells = read_cells(report["tables"] / "claims_cells.csv")
    s, q = len(claims_tree.seeds), claims_tree.problems
    assert list(cells.columns) == CELLS_COLUMNS
    assert len(cells) == 8 * s * q + 5 * s == 2425
    per_row = cells.groupby("row").size()
    assert sorted(per_row.tolist()) == [s] * 5 + [s * q] * 8
    seed_level = cells[cells["problem"] == ""]
    assert len(seed_level) == 5 * s
    kinds = set(seed_level["metric"].str.split(" ").str[0])
    assert kinds == {"token", "held-out"}
    written = {rel for rel, _ in report["log"].written}
    assert "tables/claims_cells.csv" in written
    readme = (report["tables"].parent / "README.md").read_text()
    assert "claims_cells.csv" in readme


def test_pass_at_1_cells_are_the_per_problem_pass_rates(report):
    """pass@1 cells are c / n in percentage points; A − B averaged is the table's diff."""
    cells = read_cells(report["tables"] / "claims_cells.csv")
    table = pd.read_csv(report["tables"] / "claims.csv")
    c1 = cells[(cells["claim"] == "C1")]
    assert set(np.round(c1["value_a"] * 8 / 100, 9)) <= set(range(9))  # n = 8 samples
    diff = (c1["value_a"] - c1["value_b"]).mean()
    assert diff == pytest.approx(table.loc[table["claim"] == "C1", "diff"].item(), abs=1e-12)
    assert table.loc[table["claim"] == "C3", "interval"].item() == SEED_T


def test_a_comparison_without_cells_stays_a_no_data_row():
    a = pd.DataFrame([[1.0, 0.0], [1.0, np.nan]], index=[0, 1], columns=["p0", "p1"])
    b = pd.DataFrame([[0.0, 0.0], [0.0, 1.0]], index=[0, 1], columns=["p0", "p1"])
    rows = [
        (ClaimRow("C1", "s", "pass_at_k", "x", "y"), (a, b)),
        (ClaimRow("C4", "t", "path_entropy", "x", "y"), None),
    ]
    cells = claims_cells(rows, SETTINGS)
    assert len(cells) == 5 and cells["seed"].isna().sum() == 1
    got = recompute_claims(cells, SETTINGS)
    assert got["verdict"].tolist()[1] == NO_DATA and got["seeds"].tolist() == [2, 0]
    # per seed first: seed 0 cells 1, 0 -> 0.5; seed 1 cell 1, (1, NaN) left out -> 1
    assert got.loc[0, "diff"] == pytest.approx(0.75)
    assert got.loc[0, "problems"] == 2


@pytest.mark.parametrize("report", ["science_report", "science_report_v2"])
def test_the_committed_science_reports_are_rebuilt_from_their_own_cells(report):
    """docs/science_report (the third design's full make science) and science_report_v2 (the
    second's): every number of claims.csv from claims_cells.csv and configs/science.yaml's claims
    settings, nothing else."""
    repo = Path(__file__).resolve().parents[2]
    tables = repo / "docs" / report / "tables"
    if not (tables / "claims_cells.csv").is_file():
        pytest.skip(f"{tables} holds no claims cells")
    settings = load_profile(repo / "configs" / "science.yaml").claims
    table = pd.read_csv(tables / "claims.csv")
    again = recompute_claims(read_cells(tables / "claims_cells.csv"), settings)
    again = pd.read_csv(pd.io.common.StringIO(again.to_csv(index=False)))
    # written before families, the signed-rank and TOST columns: each claim its own family
    assert set(again.columns) - set(table.columns) == {
        "family", "wilcoxon_p", "tost_margin", "tost_p", "equivalent"
    }  # fmt: skip
    assert (again["family"] == again["claim"]).all()
    again = again[table.columns]
    pd.testing.assert_frame_equal(again, table, check_exact=False, rtol=0, atol=1e-12)
    assert set(table["claim"]) >= {"C1", "C1-n", "C2", "C3", "C3-ref", "C3-ref-cost", "C4", "C4-s"}
