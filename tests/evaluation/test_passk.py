"""pass@k estimator, k selection, maj@k voting, bootstrap CIs and the passk CLI."""

from __future__ import annotations

import csv
import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from pacs.evaluation import passk
from pacs.evaluation.io import FormatError
from pacs.evaluation.passk import Problem, k_values, maj_correct, majority_vote, pass_at_k


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def graded(
    pid: str,
    idx: int,
    score: float,
    extracted: str | None = None,
    status: str = "ok",
    task: str = "gpqa",
) -> dict:
    return {
        "problem_id": pid,
        "sample_idx": idx,
        "response": "r",
        "finish_reason": "stop",
        "n_tokens": 1,
        "task": task,
        "score": score,
        "extracted": extracted,
        "status": status,
    }


# ----------------------------------------------------------------------------- pass_at_k


def test_pass_at_k_equals_comb_formula_for_all_small_n():
    worst = 0.0
    for n in range(1, 65):
        for c in range(n + 1):
            for k in range(1, n + 1):
                exact = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
                worst = max(worst, abs(pass_at_k(n, c, k) - float(exact)))
    assert worst <= 1e-12


@pytest.mark.parametrize("n", [1, 2, 7, 64, 256])
def test_pass_at_1_is_fraction_correct(n):
    for c in range(n + 1):
        assert pass_at_k(n, c, 1) == pytest.approx(c / n, abs=1e-12)


def test_pass_at_k_is_one_when_fewer_than_k_wrong():
    assert pass_at_k(10, 8, 3) == 1.0  # n - c = 2 < 3
    assert pass_at_k(5, 5, 1) == 1.0
    assert pass_at_k(10, 7, 3) < 1.0  # n - c = 3 = k: not guaranteed
    assert pass_at_k(10, 0, 10) == 0.0


BAD_ARGS = [(0, 0, 1), (5, 6, 1), (5, -1, 1), (5, 2, 0), (5, 2, 6), (5, 2.5, 1)]


@pytest.mark.parametrize("args", BAD_ARGS)
def test_pass_at_k_rejects_bad_values(args):
    with pytest.raises(ValueError, match="pass_at_k"):
        pass_at_k(*args)


@pytest.mark.parametrize("args", [(5, True, 1), ("5", 2, 1), (5, None, 1)])
def test_pass_at_k_rejects_non_numbers(args):
    with pytest.raises(TypeError, match="pass_at_k"):
        pass_at_k(*args)


def test_pass_at_k_accepts_numpy_ints_and_whole_floats():
    assert pass_at_k(np.int64(4), np.int64(2), np.int64(2)) == pytest.approx(5 / 6)
    assert pass_at_k(4, 2.0, 2) == pytest.approx(5 / 6)


def test_k_values():
    assert k_values(256) == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert k_values(10) == [1, 2, 4, 8, 10]
    assert k_values(1) == [1]
    assert k_values(3) == [1, 2, 3]


# ----------------------------------------------------------------------------- maj@k


def test_majority_vote_tie_goes_to_first_seen():
    assert majority_vote(["b", "a", "a", "b"]) == "b"
    assert majority_vote(["a", "b", "b"]) == "b"
    assert majority_vote([None, "c", None]) == "c"
    assert majority_vote([None, None]) is None
    assert majority_vote([]) is None


def test_maj_correct_hand_cases():
    # "a" is the right answer.
    answers = ["a", "b", "b", "a"]
    ok = [True, False, False, True]
    assert [maj_correct(answers, ok, k) for k in (1, 2, 3, 4)] == [True, True, False, True]
    # k=2: 1-1 tie -> "a" seen first; k=3: "b" wins 2-1; k=4: 2-2 tie -> "a" seen first.

    answers = [None, "b", "a", "a"]
    ok = [False, False, True, True]
    # k=1: no vote -> unsolved; k=2: "b"; k=3: 1-1 tie, "b" seen first; k=4: "a" wins 2-1.
    assert [maj_correct(answers, ok, k) for k in (1, 2, 3, 4)] == [False, False, False, True]


def test_maj_correct_needs_all_voted_samples_correct():
    assert maj_correct(["x", "x", "y"], [True, False, False], 3) is False
    assert maj_correct(["x", "x", "y"], [True, True, False], 3) is True
    with pytest.raises(ValueError):
        maj_correct(["x"], [True], 2)


def test_maj_at_k_through_compute_excludes_no_answer(tmp_path):
    # GPQA letters are normalised by strip + upper. Problem p: votes at k=4 are A, b, B and a
    # no_answer row carrying text (excluded) -> "B" wins 2-1 -> wrong.
    rows = [
        graded("p", 0, 1.0, "A"),
        graded("p", 1, 0.0, "b"),
        graded("p", 2, 0.0, " B"),
        graded("p", 3, 0.0, "A", status="no_answer"),
    ]
    rows += [graded("q", i, 1.0, "C") for i in range(4)]
    f = write_jsonl(tmp_path / "graded.jsonl", rows)
    doc, _ = passk.compute(f, benchmark="gpqa", model="m", run="r", seed=0, n_boot=0)
    maj = {r["k"]: r["value"] for r in doc["maj_at_k"]}
    assert maj == {1: 1.0, 2: 1.0, 4: 0.5}  # p: k=1 "A"; k=2 "A"/"B" tie -> "A"; k=4 "B"
    assert doc["status_counts"] == {"ok": 7, "no_answer": 1, "timeout": 0, "error": 0}
    assert doc["tie_rule"] == "first-seen answer among tied counts"


def test_maj_at_k_for_math_uses_math_normaliser(tmp_path):
    rows = [graded("p", i, float(e == "5"), e, task="math") for i, e in enumerate(["5", "5", "7"])]
    f = write_jsonl(tmp_path / "graded.jsonl", rows)
    doc, _ = passk.compute(f, benchmark="b", model="m", run="r", seed=0, n_boot=0)
    assert [r["value"] for r in doc["maj_at_k"]] == [1.0, 1.0, 1.0]


def test_rational_value_is_an_exact_normal_form():
    half = Fraction(1, 2)
    assert [passk.rational_value(k) for k in ["0.5", "1/2", "\\frac{1}{2}", ".50", "2/4"]] == [
        half
    ] * 5
    assert passk.rational_value("-\\frac{3}{4}") == Fraction(-3, 4)
    assert passk.rational_value("12") == 12 and passk.rational_value("-3") == -3
    assert [passk.rational_value(k) for k in ["1/0", "x", "1.2.3", "\\sqrt{2}", ""]] == [None] * 5


def test_maj_at_k_merges_mathematically_equal_votes(tmp_path):
    # Gold 1/2. Without merging, "3" (2 votes) beats each spelling of one half (1 vote each)
    # and maj@5 is wrong; merged, one half has 3 votes and wins.
    answers = ["3", "\\frac{1}{2}", "3", "0.5", "1/2"]
    rows = [graded("p", i, float(a != "3"), a, task="math") for i, a in enumerate(answers)]
    # Symbolic spellings reach the verifier: 2\sqrt{2} and \sqrt{8} are one answer.
    answers = ["2\\sqrt{2}", "5", "\\sqrt{8}", "5", "\\sqrt{8}"]
    rows += [graded("q", i, float(a != "5"), a, task="math") for i, a in enumerate(answers)]
    f = write_jsonl(tmp_path / "graded.jsonl", rows)
    doc, _ = passk.compute(f, benchmark="b", model="m", run="r", seed=0, n_boot=0)
    maj = {r["k"]: r["value"] for r in doc["maj_at_k"]}
    # k=1: p "3" wrong, q right; k=2: 1-1 ties go to the first seen; k=4: p 2-2 tie -> "3",
    # q 2-2 tie -> 2\sqrt{2}; k=5: both 3-2 for the right answer.
    assert maj == {1: 0.5, 2: 0.5, 4: 0.5, 5: 1.0}


def test_merge_equal_answers_asks_the_verifier_only_about_distinct_non_numeric_keys():
    asked = []

    def verifier(pairs):
        asked.extend(pairs)
        return [{a, b} == {"x+1", "1+x"} for a, b in pairs]

    p = Problem("p", [1.0] * 7, ["1/2", "0.5", "x+1", "1+x", "x+1", "0.5", None])
    passk.merge_equal_answers([p], verifier)
    assert p.answers == ["1/2", "1/2", "x+1", "x+1", "x+1", "1/2", None]
    # "0.5" joined "1/2" without a call, and number-number pairs are never asked.
    assert sorted(asked) == sorted([("x+1", "1+x"), ("1/2", "x+1"), ("1/2", "1+x")])
    # The number of calls per problem is capped, most-voted pairs first.
    asked.clear()
    q = Problem("q", [1.0] * 6, ["a", "b", "b", "c", "c", "c"])
    passk.merge_equal_answers([q], verifier, max_pairs=1)
    assert asked == [("b", "c")] and q.answers == ["a", "b", "b", "c", "c", "c"]


def test_the_math_verifier_treats_a_key_that_is_no_valid_gold_as_equal_to_nothing():
    # A weak model's vote keys can be any text: '+7=3}' has unbalanced braces, which the grader
    # refuses as a gold; the merge must go on (it once stopped the whole pass@k stage).
    pairs = [("+7=3}", "10"), ("10", "+7=3}"), ("\\frac{1}{2}", "0.5"), ("x+1", "1+x")]
    assert passk.math_verifier(pairs) == [False, False, True, True]
    p = Problem("p", [1.0] * 4, ["+7=3}", "x+1", "1+x", "+7=3}"])
    passk.merge_equal_answers([p], passk.math_verifier)
    assert p.answers == ["+7=3}", "x+1", "x+1", "+7=3}"]


def test_code_tasks_have_no_maj_at_k(tmp_path):
    rows = [graded("p", i, s, None, task="code") for i, s in enumerate([1.0, 0.0])]
    doc, _ = passk.compute(
        write_jsonl(tmp_path / "g.jsonl", rows),
        benchmark="lcb",
        model="m",
        run="r",
        seed=0,
        n_boot=10,
    )
    assert doc["maj_at_k"] == []
    assert [r["k"] for r in doc["pass_at_k"]] == [1, 2]


# ----------------------------------------------------------------------------- aggregation


def test_k_above_some_problem_n_is_not_reported(tmp_path):
    # a: n=4, c=2; b: n=3, c=3  ->  k in {1, 2, 3}; 4 is not reported.
    rows = [graded("a", i, s, "A") for i, s in enumerate([1.0, 0.0, 1.0, 0.0])]
    rows += [graded("b", i, 1.0, "A") for i in (2, 0, 1)]  # out of order on purpose
    f = write_jsonl(tmp_path / "graded.jsonl", rows)
    doc, mean_ci = passk.compute(f, benchmark="gpqa", model="m", run="r", seed=3, n_boot=0)
    assert (doc["n_problems"], doc["n_min"], doc["n_max"]) == (2, 3, 4)
    got = {r["k"]: r["value"] for r in doc["pass_at_k"]}
    assert sorted(got) == [1, 2, 3]
    assert got[1] == pytest.approx((0.5 + 1.0) / 2)
    assert got[2] == pytest.approx((1 - 1 / 6 + 1.0) / 2)  # 1 - C(2,2)/C(4,2)
    assert got[3] == pytest.approx(1.0)
    assert doc["mean_at_n"] == pytest.approx(5 / 7)  # pooled over samples
    assert mean_ci == (None, None)
    assert all(r["ci_low"] is None and r["ci_high"] is None for r in doc["pass_at_k"])


def test_bootstrap_ci_brackets_value_and_is_reproducible():
    rng = np.random.default_rng(0)
    problems = [
        Problem(f"p{i}", list((rng.random(16) < rng.random()).astype(float)), [None] * 16)
        for i in range(40)
    ]
    a, ci_a = passk.summarize(problems, with_maj=False, n_boot=500, boot_seed=1, status_counts={})
    b, ci_b = passk.summarize(problems, with_maj=False, n_boot=500, boot_seed=1, status_counts={})
    c, _ = passk.summarize(problems, with_maj=False, n_boot=500, boot_seed=2, status_counts={})
    assert a == b and ci_a == ci_b
    assert a["pass_at_k"] != c["pass_at_k"]
    for r in a["pass_at_k"]:
        assert r["ci_low"] <= r["value"] <= r["ci_high"]
    assert a["pass_at_k"][0]["ci_high"] - a["pass_at_k"][0]["ci_low"] > 0.05
    assert ci_a[0] <= a["mean_at_n"] <= ci_a[1]


def test_bootstrap_ci_collapses_when_all_problems_equal():
    problems = [Problem(f"p{i}", [1.0, 0.0, 0.0, 0.0], [None] * 4) for i in range(10)]
    doc, _ = passk.summarize(problems, with_maj=False, n_boot=200, boot_seed=0, status_counts={})
    for r in doc["pass_at_k"]:
        assert r["ci_low"] == pytest.approx(r["value"]) and r["ci_high"] == pytest.approx(
            r["value"]
        )


# ----------------------------------------------------------------------------- errors


def test_duplicate_sample_idx_is_an_error_naming_the_line(tmp_path):
    f = write_jsonl(
        tmp_path / "graded.jsonl", [graded("a", 0, 1.0), graded("a", 1, 1.0), graded("a", 0, 0.0)]
    )
    with pytest.raises(
        FormatError, match=r"graded\.jsonl:3: field 'sample_idx' 0 .*duplicates line 1"
    ):
        passk.compute(f, benchmark="b", model="m", run="r", seed=0)


def test_missing_or_bad_field_names_file_line_and_field(tmp_path):
    bad = graded("a", 1, 1.0)
    del bad["score"]
    f = write_jsonl(tmp_path / "graded.jsonl", [graded("a", 0, 1.0), bad])
    with pytest.raises(FormatError, match=r"graded\.jsonl:2: missing field 'score'"):
        passk.compute(f, benchmark="b", model="m", run="r", seed=0)
    f = write_jsonl(
        tmp_path / "graded.jsonl", [graded("a", 0, 1.0), graded("a", 1, 1.0, status="weird")]
    )
    with pytest.raises(FormatError, match=r"graded\.jsonl:2: field 'status'"):
        passk.compute(f, benchmark="b", model="m", run="r", seed=0)


def test_the_share_cut_at_the_token_budget_is_counted(tmp_path):
    """3 of 8 responses end at the budget (finish_reason "length"); a row without the field is
    a "stop" (docs/formats.md); a reason that is no answer is refused with file, line, field."""
    rows = [graded("a", i, 1.0) for i in range(4)] + [graded("b", i, 0.0) for i in range(4)]
    for i in (1, 5, 6):
        rows[i]["finish_reason"] = "length"
    del rows[7]["finish_reason"]
    doc, _ = passk.compute(write_jsonl(tmp_path / "g.jsonl", rows), benchmark="b", model="m",
                           run="r", seed=0, n_boot=0)  # fmt: skip
    assert doc["finish_counts"] == {"stop": 5, "length": 3} and doc["truncated_share"] == 3 / 8
    rows[2]["finish_reason"] = "abort"
    with pytest.raises(FormatError, match=r"g\.jsonl:3: field 'finish_reason' must be"):
        passk.compute(write_jsonl(tmp_path / "g.jsonl", rows), benchmark="b", model="m",
                      run="r", seed=0)  # fmt: skip


# ----------------------------------------------------------------------------- CLI


PASSK_JSON_KEYS = [
    "benchmark",
    "model",
    "run",
    "seed",
    "n_problems",
    "n_min",
    "n_max",
    "mean_at_n",
    "pass_at_k",
    "maj_at_k",
    "status_counts",
    "tie_rule",
    "bootstrap",
    "finish_counts",
    "truncated_share",
]


def test_cli_writes_json_and_long_csv(tmp_path):
    rows = [
        graded(f"p{j}", i, float((i + j) % 3 == 0), "ABCD"[(i + j) % 4])
        for j in range(6)
        for i in range(5)
    ]
    f = write_jsonl(tmp_path / "graded.jsonl", rows)
    out_json, out_csv = tmp_path / "o" / "passk.json", tmp_path / "o" / "passk.csv"
    args = "--benchmark gpqa --model tiny --run pacs --seed 1 --bootstrap 100"
    passk.main(
        ["--graded", str(f), "--out-json", str(out_json), "--out-csv", str(out_csv)] + args.split()
    )
    doc = json.loads(out_json.read_text())
    assert list(doc) == PASSK_JSON_KEYS
    assert (doc["benchmark"], doc["model"], doc["run"], doc["seed"], doc["bootstrap"]) == (
        "gpqa",
        "tiny",
        "pacs",
        1,
        100,
    )
    assert [r["k"] for r in doc["pass_at_k"]] == [1, 2, 4, 5]
    assert doc["mean_at_n"] == pytest.approx(sum(r["score"] for r in rows) / len(rows))
    with out_csv.open() as fh:
        table = list(csv.DictReader(fh))
    assert list(table[0]) == [
        "benchmark",
        "model",
        "run",
        "seed",
        "metric",
        "k",
        "value",
        "ci_low",
        "ci_high",
    ]
    metrics = [r["metric"] for r in table]
    assert (
        metrics.count("pass_at_k") == 4
        and metrics.count("maj_at_k") == 4
        and metrics.count("mean_at_n") == 1
    )
    p1 = next(r for r in table if r["metric"] == "pass_at_k" and r["k"] == "1")
    assert float(p1["value"]) == pytest.approx(doc["pass_at_k"][0]["value"])
    assert float(p1["ci_low"]) <= float(p1["value"]) <= float(p1["ci_high"])
    assert not list(out_json.parent.glob(".*tmp"))  # atomic writes leave no temp files
