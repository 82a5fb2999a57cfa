"""The science study's raw data (pacs.report.science_data): exported from a results tree made by
hand, and, committed under docs/science_report/data, enough to recompute the committed claims
cells (C1, C1-n, C2, C3, C3-ref, C4, C4-s) and to check ψ during training."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from pacs.evaluation.io import FormatError
from pacs.report.science_data import export, read

from .science_cells import RawData, check_cells, read_cells

REPO = Path(__file__).resolve().parents[2]
REPORT = REPO / "docs" / "science_report"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _tree(root: Path) -> Path:
    run = root / "train" / "tiny" / "pacs" / "seed0"
    steps = [{"step": s, "entropy": 0.5 - s / 10, "psi_abs_mean/mb0": 0.0} for s in (1, 2)]
    _write(run / "metrics.jsonl", "".join(json.dumps(r) + "\n" for r in steps))
    _write(run / "eval_curve.jsonl", json.dumps({"step": 2, "pass_at_1": 0.25}) + "\n")
    bench = root / "eval" / "tiny" / "pacs" / "seed0" / "synthetic_hard"
    per_problem = {"synthetic_hard/0": {"n": 4, "c": 2, "paths": ["1-2-3", "2-1-3"]}}
    _write(bench / "paths.json", json.dumps({"per_problem": per_problem}))
    logp = {"1-2-3": -1.0, "2-1-3": -2.5}
    steps = {
        str(s): {"per_problem": {"synthetic_hard/0": {"logp": {k: v * s for k, v in logp.items()}}}}
        for s in (16, 32)
    }
    _write(bench / "path_exact.json", json.dumps({"steps": steps}))
    return root


def test_a_results_tree_is_exported_as_four_tidy_files(tmp_path):
    counts = export(_tree(tmp_path / "results"), tmp_path / "data")
    assert counts == {
        "metrics.csv.gz": 2,
        "eval_curve.csv.gz": 1,
        "paths.csv.gz": 1,
        "path_logp.csv.gz": 2,
    }
    metrics = read(tmp_path / "data", "metrics.csv.gz")
    assert list(metrics["entropy"]) == [0.4, 0.3] and set(metrics["run"]) == {"pacs"}
    assert list(metrics["psi_abs_mean/mb0"]) == [0.0, 0.0]  # per-mini-batch fields kept
    paths = read(tmp_path / "data", "paths.csv.gz").iloc[0]
    assert (paths["problem"], paths["n"], paths["c"], paths["paths"]) == (
        "synthetic_hard/0",
        4,
        2,
        "1-2-3 2-1-3",
    )
    logp = read(tmp_path / "data", "path_logp.csv.gz")
    assert set(logp["step"]) == {32}  # the last checkpoint only
    assert dict(zip(logp["path"], logp["logp"])) == {"1-2-3": -32.0, "2-1-3": -80.0}


def test_a_tree_without_exact_paths_gives_the_other_three_files(tmp_path):
    root = _tree(tmp_path / "results")
    (root / "eval" / "tiny" / "pacs" / "seed0" / "synthetic_hard" / "path_exact.json").unlink()
    counts = export(root, tmp_path / "data")
    assert counts["path_logp.csv.gz"] == 0 and counts["paths.csv.gz"] == 1
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == [
        "eval_curve.csv.gz",
        "metrics.csv.gz",
        "paths.csv.gz",
    ]


def test_a_file_missing_a_field_is_named_and_nothing_is_written(tmp_path):
    root = _tree(tmp_path / "results")
    bad = root / "eval" / "tiny" / "pacs" / "seed0" / "synthetic_hard" / "paths.json"
    bad.write_text(json.dumps({"per_problem": {"synthetic_hard/0": {"n": 4, "c": 2}}}))
    with pytest.raises(FormatError, match=r"paths\.json: per_problem\.synthetic_hard/0: .*'paths'"):
        export(root, tmp_path / "data")
    assert not (tmp_path / "data").exists() and list(tmp_path.iterdir()) == [root]


@pytest.fixture(scope="module")
def committed() -> RawData:
    if not (REPORT / "data" / "metrics.csv.gz").is_file():
        pytest.skip(f"{REPORT / 'data'} holds no exported raw data")
    claims = yaml.safe_load((REPO / "configs" / "science.yaml").read_text())["claims"]
    return RawData(REPORT / "data", claims["late_fraction"], claims["heldout_checkpoints"])


def test_the_committed_claims_cells_recompute_from_the_committed_raw_data(committed):
    checked = check_cells(
        read_cells(REPORT / "tables" / "claims_cells.csv"), committed, "synthetic_hard"
    )
    assert {"C1", "C1-n", "C2", "C3", "C4", "C4-s"} <= set(checked)


def test_psi_is_zero_on_each_steps_first_update_when_the_reference_is_the_rollout(committed):
    """docs/design.md#the-grpo-scores-gradient: with the reference reset every step, the first
    mini-batch scores with the policy that sampled (ψ ≡ 0); the later ones and a fixed reference's
    do not."""
    m = committed.metrics
    reset, fixed = m[m["run"] == "pacs"], m[m["run"] == "pacs_ref_fixed"]
    assert len(reset) and (reset["psi_abs_mean/mb0"].abs() < 1e-6).all()
    assert (reset["psi_abs_mean/mb1"] > 0).mean() > 0.99
    # a fixed reference equals the policy only before the first update (step 1 of each seed)
    assert len(fixed) and fixed.loc[fixed["step"] > 1, "psi_abs_mean/mb0"].min() > 0
    assert math.isfinite(m["grad_norm/mb1"].max())
