"""Table 1's open models in the report (pacs.report.released): the DAG's passk.json of each
released model beside the paper's Table 1 pass@1, the difference and its CI."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from pacs.report import build_report

REPO = Path(__file__).resolve().parents[2]
FIVE = ("math500", "amc23", "aime24", "aime25", "beyondaime")
OURS = {"math500": 0.90, "amc23": 0.80, "aime24": 0.42, "aime25": 0.30, "beyondaime": 0.15}


def passk(bench: str, value: float) -> dict:
    entry = {"k": 1, "value": value, "ci_low": value - 0.02, "ci_high": value + 0.02}
    top = {"k": 256, "value": min(1.0, value + 0.3), "ci_low": None, "ci_high": None}
    return {
        "benchmark": bench, "model": "limo", "run": "released", "seed": 0, "n_problems": 30,
        "n_min": 256, "n_max": 256, "mean_at_n": value, "pass_at_k": [entry, top],
        "maj_at_k": [], "status_counts": {"ok": 1, "no_answer": 0, "timeout": 0, "error": 0},
        "tie_rule": "first-seen answer among tied counts", "bootstrap": 1000,
    }  # fmt: skip


def test_released_rows_stand_beside_the_papers_with_the_difference(tmp_path):
    results = tmp_path / "results" / "paper"
    for bench, value in OURS.items():
        path = results / "eval" / "limo" / "released" / "seed0" / bench / "passk.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(passk(bench, value)))
    out = tmp_path / "report"
    build_report(REPO / "configs" / "paper.yaml", results, out, figures=False)
    table = pd.read_csv(out / "tables" / "table1_released.csv")
    ones = table[table.metric == "pass@1"].set_index("benchmark")
    paper_limo = {"math500": 91.00, "amc23": 80.61, "aime24": 40.86, "aime25": 31.82}
    for bench, paper in paper_limo.items():
        assert ones.loc[bench, "paper_pct"] == paper
        assert ones.loc[bench, "diff_pct"] == pytest.approx(100 * OURS[bench] - paper)
        assert ones.loc[bench, "diff_ci_low_pct"] == pytest.approx(100 * OURS[bench] - 2 - paper)
    assert ones.loc["avg", "value_pct"] == pytest.approx(100 * sum(OURS.values()) / 5)
    assert ones.loc["avg", "paper_pct"] == 52.05
    md = (out / "tables" / "table1_released.md").read_text()
    assert "LIMO — GAIR/LIMO (unpinned), its system prompt" in md
    settings = (out / "tables" / "table4_5_settings.md").read_text()
    assert "limo" not in settings  # a released model is none of our trained models
    readme = (out / "README.md").read_text()
    assert "results of run 'released'" not in readme  # not an unknown run: it has its table
    # the six other models of eval.released have no results: 6 x 5 evaluations are listed missing
    assert "not produced: pass@k of 30 released-model evaluation(s) (qwen3_14b/math500," in readme
