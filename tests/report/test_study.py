"""The checkpoint study's table and figures (pacs.report.study, pacs.report.study_figures): the
claims tree's path_exact.json, eval_curve.jsonl and metrics.jsonl joined per run × seed × step."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from pacs.config import load_profile
from pacs.evaluation.io import FormatError
from pacs.report import study as st
from pacs.report.context import ReportContext
from pacs.report.loaders import load_results
from pacs.report.paper import load_paper_numbers
from pacs.report.study_figures import curve_points, seed_interval


@pytest.fixture(scope="module")
def tree(tmp_path_factory, claims_tree):
    root = tmp_path_factory.mktemp("study")
    claims_tree.build(root / "results", np.random.default_rng(0))
    cfg = claims_tree.config(root / "cfg.yaml")
    ctx = ReportContext(load_profile(cfg), load_results(root / "results"), load_paper_numbers())
    return {"root": root / "results", "ctx": ctx}


def test_the_table_has_a_row_per_run_seed_and_checkpoint(tree, claims_tree):
    table = st.checkpoint_table(tree["ctx"])
    steps = [0, claims_tree.save_every, claims_tree.steps]
    assert len(table) == len(claims_tree.runs) * len(claims_tree.seeds) * len(steps)
    assert sorted(table["step"].unique()) == steps
    hard = claims_tree.hard
    # step 0 is the base model, the same in every run and seed
    base = table[table["step"] == 0]
    assert base[f"entropy_{hard}"].nunique() == 1 and base["token_entropy"].isna().all()
    assert (base["pass_at_1"] == 0.3).all()


def test_token_entropy_is_the_mean_over_the_window_before_each_checkpoint():
    metrics = pd.DataFrame(
        {"run": "r", "seed": 0, "step": [1, 2, 3, 4], "entropy": [1.0, 2.0, 4.0, 8.0]}
    )
    got = st.window_entropy(metrics, [0, 2, 4])
    assert got["step"].tolist() == [2, 4]
    assert got["token_entropy"].tolist() == [1.5, 6.0]  # steps 1-2, then 3-4


def test_exact_columns_are_the_means_over_problems(tree, claims_tree):
    exact = st.load_path_exact(tree["root"])
    hard = claims_tree.hard
    one = exact[(exact.run == "grpo") & (exact.seed == 2) & (exact.step == 20)]
    one = one[one.benchmark == hard]
    assert len(one) == claims_tree.problems
    table = st.checkpoint_table(tree["ctx"], exact)
    row = table[(table.run == "grpo") & (table.seed == 2) & (table.step == 20)]
    assert row[f"entropy_{hard}"].item() == pytest.approx(one["entropy"].mean())
    assert row[f"gini_simpson_{hard}"].item() == pytest.approx(one["gini_simpson"].mean())


def test_seed_interval_hand_computed():
    mean, lo, hi, n = seed_interval(pd.Series([1.0, 2.0, 3.0, np.nan]))
    half = 4.302652729911275 / np.sqrt(3)  # t(0.975, 2) x sd 1 / sqrt(3)
    assert (mean, n) == (2.0, 3)
    assert lo == pytest.approx(2 - half) and hi == pytest.approx(2 + half)
    assert seed_interval(pd.Series([5.0]))[:2] == (5.0, pytest.approx(np.nan, nan_ok=True))


def test_curve_points_per_run_and_step():
    table = pd.DataFrame(
        {
            "run": ["a", "a", "a", "b"],
            "seed": [0, 1, 0, 0],
            "step": [0, 0, 8, 8],
            "x": [1, 3, 2, 7.0],
        }
    )
    got = curve_points(table, "x").set_index(["run", "step"])
    assert got.loc[("a", 0), "mean"] == 2.0 and got.loc[("a", 0), "seeds"] == 2
    assert got.loc[("b", 8), "mean"] == 7.0 and np.isnan(got.loc[("b", 8), "lo"])


def _write(path, doc):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))


def test_a_path_exact_file_in_the_wrong_folder_or_without_a_field_is_named(tmp_path):
    doc = {
        "benchmark": "h",
        "model": "tiny",
        "run": "pacs",
        "seed": 1,
        "steps": {"8": {"per_problem": {"p0": {"entropy": 0.5, "gini_simpson": 0.3, "mass": 0.2}}}},
    }
    path = tmp_path / "eval/tiny/pacs/seed0/h/path_exact.json"
    _write(path, doc)
    with pytest.raises(
        FormatError, match=r"path_exact.json: field 'seed' is 1 but the path says 0"
    ):
        st.load_path_exact(tmp_path)
    doc["seed"] = 0
    del doc["steps"]["8"]["per_problem"]["p0"]["mass"]
    _write(path, doc)
    with pytest.raises(FormatError, match=r"steps.8.per_problem.p0: missing field 'mass'"):
        st.load_path_exact(tmp_path)
    doc["steps"] = {"last": {"per_problem": {}}}
    _write(path, doc)
    with pytest.raises(FormatError, match="steps.last: a step must be a non-negative integer"):
        st.load_path_exact(tmp_path)
