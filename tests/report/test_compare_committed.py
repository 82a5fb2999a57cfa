"""The user's first check (pacs.report.compare_committed) on small hand-made reports."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest

from pacs.report import compare_committed as cc

PASS1 = ["model", "run", "label", "k", "mean_pct", "std_pct", "n_seeds"]
RUNS = ["model", "run", "seed", "wall_time_h", "job_started_at", "commit", "fingerprint", "steps"]


def _write(path: Path, columns: list[str], rows: list[list]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        writer.writerows(rows)


def _report(root: Path, base=40.9375, pacs=52.93750000000001, wall=0.05, commit="add22f6"):
    _write(
        root / "tables" / "table1_pass1.csv",
        PASS1,
        [
            ["tiny", "base", "Base", 1, base, "", 1],
            ["tiny", "pacs", "PACS", 1, pacs, "", 1],
            ["tiny", "pacs", "PACS", 2, 64.075, "", 1],
        ],
    )
    _write(
        root / "tables" / "table_runs.csv",
        RUNS,
        [["tiny", "pacs", 0, wall, "2026-11-27T18:55:16+00:00", commit, "f05d", 40]],
    )
    return root


def test_excluded_columns_are_times_dates_commit_and_fingerprint():
    for column in ("wall_time_h", "job_started_at", "time_total_mean_s", "commit", "fingerprint"):
        assert cc.excluded(column), column
    for column in ("mean_pct", "run", "steps_done", "n_seeds", "D", "commitment"):
        assert not cc.excluded(column), column


def test_identical_when_only_times_commit_and_fingerprint_differ(tmp_path):
    committed = _report(tmp_path / "committed")
    ours = _report(tmp_path / "ours", wall=0.09, commit="0e328e5")
    lines = cc.report_lines(cc.compare_reports(committed, ours), committed, ours)
    assert lines[-1] == "identical: all 2 tables."
    assert cc.main(["--ours", str(ours), "--committed", str(committed), "--strict"]) == 0


def test_a_differing_cell_is_named_with_both_values_and_the_difference(tmp_path):
    committed = _report(tmp_path / "committed")
    ours = _report(tmp_path / "ours", pacs=43.75)
    diffs = cc.compare_reports(committed, ours)
    pass1 = next(d for d in diffs if d.name == "table1_pass1.csv")
    assert pass1.cells == [("run=pacs label=PACS k=1", "mean_pct", "52.93750000000001", "43.75")]
    assert pass1.largest() == pytest.approx(9.1875)
    lines = cc.report_lines(diffs, committed, ours)
    assert "1 of 2 tables differ:" in lines
    assert "  table1_pass1.csv: 1 cell differs, largest difference 9.188" in lines
    assert "    run=pacs label=PACS k=1 mean_pct: 52.94 -> 43.75 (-9.19)" in lines
    assert "  identical: table_runs.csv" in lines


def test_first_look_is_the_base_pass1_and_the_setting_its_summary_records(tmp_path):
    committed = _report(tmp_path / "committed")
    same = cc.base_lines(committed, _report(tmp_path / "same"), tmp_path)
    assert same[0].startswith("First look: the SFT base's pass@1 (table1_pass1.csv, run=base")
    assert "matches (40.94)" in same[0]
    summary = tmp_path / "results" / "models" / "tiny" / "base" / "sft_summary.json"
    summary.parent.mkdir(parents=True)
    summary.write_text(json.dumps({"numerics": {"setting": "native", "aten_kernels": "AVX512"}}))
    lines = cc.base_lines(committed, _report(tmp_path / "ours", base=36.0), tmp_path / "results")
    assert "differs: committed 40.94, yours 36.00" in lines[0]
    assert lines[-1] == f"  {summary}: numerics {{'setting': 'native', 'aten_kernels': 'AVX512'}}"


def test_missing_tables_columns_and_rows_are_reported(tmp_path):
    committed = _report(tmp_path / "committed")
    ours = _report(tmp_path / "ours")
    (ours / "tables" / "table_runs.csv").unlink()
    _write(ours / "tables" / "table1_pass1.csv", PASS1, [["tiny", "grpo", "GRPO", 1, 54.4, "", 1]])
    diffs = {d.name: d for d in cc.compare_reports(committed, ours)}
    assert diffs["table_runs.csv"].missing.startswith("absent from this run")
    pass1 = diffs["table1_pass1.csv"]
    assert pass1.only_committed == [
        "run=base label=Base",
        "run=pacs label=PACS",
        "run=pacs label=PACS",
    ]
    assert pass1.only_ours == ["run=grpo label=GRPO"]
    _write(ours / "tables" / "table_runs.csv", ["model", "run"], [["tiny", "pacs"]])
    other = cc.compare_table(
        "table_runs.csv",
        committed / "tables" / "table_runs.csv",
        ours / "tables" / "table_runs.csv",
    )
    assert other.missing.startswith("other columns (only committed: ['commit', 'fingerprint'")
    assert cc.main(["--ours", str(ours), "--committed", str(committed), "--strict"]) == 1


def test_seed_spread_is_the_std_of_each_runs_last_pass1_across_seeds(tmp_path):
    path = tmp_path / "eval_curve.csv.gz"
    values = {"grpo": [0.60, 0.62, 0.64, 0.66, 0.60, 0.62, 0.64, 0.66]}
    values["pacs"] = [0.5, 0.5, 0.5, 0.5, 0.7, 0.7, 0.7, 0.7]
    with gzip.open(path, "wt", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["model", "run", "seed", "benchmark", "step", "pass_at_1"])
        for run, finals in values.items():
            for seed, value in enumerate(finals):
                writer.writerow(["tiny", run, seed, "held-out", 0, 0.35])
                writer.writerow(["tiny", run, seed, "held-out", 128, value])
    low, high, n = cc.seed_spread(path)
    # grpo: values 60, 62, 64, 66 twice; mean 63, squared deviations 9+1+1+9 twice = 40, /7
    assert low == pytest.approx((40 / 7) ** 0.5)
    # pacs: 50 x4, 70 x4; mean 60, squared deviations 8 x 100 = 800, /7
    assert high == pytest.approx((800 / 7) ** 0.5) and n == 8
    assert cc.seed_spread(tmp_path / "absent.csv.gz") is None
    assert "unknown here" in cc.spread_lines(None, tmp_path / "absent.csv.gz")[0]


def test_the_committed_tiny_report_matches_itself():
    repo = Path(__file__).resolve().parents[2]
    committed = repo / "docs" / "tiny_report"
    diffs = cc.compare_reports(committed, committed)
    assert diffs and all(d.identical for d in diffs)
    assert cc.seed_spread(repo / cc.SPREAD_SOURCE) is not None
