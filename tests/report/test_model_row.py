"""One model's Table-1-style row (pacs.report.model_row): ours with CIs, the paper's pass@1, the
difference and its CI, and Avg. over Table 1's five benchmarks, against numbers worked by hand."""

from __future__ import annotations

import math

import pytest

from pacs.report.model_row import (
    display_rows,
    paper_model_of,
    paper_pass1,
    records_frame,
    row_records,
)
from pacs.report.paper import load_paper_numbers

FIVE = ("math500", "amc23", "aime24", "aime25", "beyondaime")


@pytest.fixture(scope="module")
def paper():
    return load_paper_numbers()


def doc(benchmark: str, p1: float, lo: float, hi: float, p4: float = 0.9) -> dict:
    return {
        "benchmark": benchmark,
        "n_problems": 30,
        "n_min": 4,
        "pass_at_k": [
            {"k": 1, "value": p1, "ci_low": lo, "ci_high": hi},
            {"k": 2, "value": (p1 + p4) / 2, "ci_low": None, "ci_high": None},
            {"k": 4, "value": p4, "ci_low": p4 - 0.1, "ci_high": p4},
        ],
    }


def test_hub_ids_and_folders_map_to_table1_rows(paper):
    assert paper_model_of("Qwen/Qwen3-8B", paper) == "Qwen3-8B"
    assert paper_model_of("GAIR/LIMO", paper) == "LIMO"
    assert paper_model_of("/ckpt/PRIME-RL/Eurus-2-7B-PRIME/", paper) == "Eurus-2-7B-PRIME"
    assert paper_model_of("results/tiny/models/tiny/base", paper) is None
    assert paper_pass1(paper, "Qwen3-8B", "aime24")["value"] == 46.98  # Table 1, base row
    assert paper_pass1(paper, "LIMO", "avg")["value"] == 52.05  # Table 1, released row


def test_the_row_stands_beside_the_papers_numbers_with_the_difference(paper):
    # 12.5% of AIME24's responses cut at the token budget; the LiveCodeBench file predates the count
    docs = [
        {**doc("aime24", 0.5, 0.4, 0.6), "truncated_share": 0.125},
        doc("livecodebench", 0.3, 0.2, 0.4),
    ]
    records = row_records(docs, paper, model="q", label="q", paper_model="Qwen3-8B")
    by = {(r["benchmark"], r["metric"]): r for r in records}
    aime = by["aime24", "pass@1"]
    assert aime["value_pct"] == pytest.approx(50.0)
    assert aime["paper_pct"] == 46.98 and aime["paper_source"] == "paper, Table 1"
    assert aime["diff_pct"] == pytest.approx(50.0 - 46.98)
    assert (aime["diff_ci_low_pct"], aime["diff_ci_high_pct"]) == pytest.approx(
        (40.0 - 46.98, 60.0 - 46.98)
    )
    assert by["aime24", "pass@4"]["value_pct"] == pytest.approx(90.0)
    assert by["livecodebench", "pass@1"]["paper_pct"] is None  # not in Table 1
    assert ("avg", "pass@1") not in by  # Avg. needs all five of Table 1's benchmarks
    frame = display_rows(records)
    assert list(frame.columns) == ["Row", "AIME24", "LiveCodeBench"]
    assert frame.iloc[0, 1] == "50.00 [40.00, 60.00]"
    assert frame.iloc[1, 1] == "90.00 [80.00, 90.00] (k=4)"
    assert frame.iloc[2].tolist() == ["q: cut at the token budget (%)", "12.5", "–"]
    assert by["aime24", "pass@1"]["truncated_pct"] == 12.5
    assert frame.iloc[3].tolist() == ["paper (Qwen3-8B, Table 1): pass@1", "46.98", "–"]
    assert frame.iloc[4, 1] == "+3.02 [-6.98, +13.02]"


def test_the_average_and_its_ci_over_the_five_benchmarks(paper):
    values = [0.9, 0.8, 0.5, 0.3, 0.2]
    halves = [0.01, 0.02, 0.05, 0.05, 0.03]
    docs = [doc(b, v, v - h, v + h) for b, v, h in zip(FIVE, values, halves)]
    records = row_records(docs, paper, model="l", label="l", paper_model="LIMO")
    avg = records[-1]
    assert avg["benchmark"] == "avg" and avg["value_pct"] == pytest.approx(54.0)
    half = 100 * math.sqrt(sum(h * h for h in halves)) / 5
    assert (avg["ci_low_pct"], avg["ci_high_pct"]) == pytest.approx((54.0 - half, 54.0 + half))
    assert avg["paper_pct"] == 52.05 and avg["diff_pct"] == pytest.approx(54.0 - 52.05)
    assert len(records_frame(records)) == 11  # pass@1 and pass@4 per benchmark, then Avg.
