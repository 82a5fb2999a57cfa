"""Bring your own generations: a foreign file is checked by file, row and field, then graded by
our grader and pass@k to numbers computed here by hand (pacs.evaluation.external, evaluate)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pacs import model_eval as evaluate
from pacs.evaluation.external import convert, read_foreign
from pacs.evaluation.io import FormatError

# Three problems with golds 7, 12, 30; their foreign samples (correct = the gold boxed):
#   p0: 4 samples, 2 correct  -> pass@1 = 2/4, pass@2 = 1 - C(2,2)/C(4,2) = 1 - 1/6 = 5/6
#   p1: 4 samples, 0 correct  -> 0, 0
#   p2: 4 samples, 4 correct  -> 1, 1
# pass@1 = (0.5 + 0 + 1) / 3 = 0.5; pass@2 = (5/6 + 0 + 1) / 3 = 11/18; pass@4 = (1 + 0 + 1) / 3.
SMOKE = str(Path(__file__).resolve().parents[2] / "configs" / "smoke.yaml")
GOLDS = ["7", "12", "30"]
ANSWERS = {0: ["7", "8", "\\frac{14}{2}", None], 1: ["11", "13", None, "1"], 2: ["30"] * 4}


def bench_rows() -> list[dict]:
    return [
        {
            "problem_id": f"aime24/{i}",
            "benchmark": "aime24",
            "task": "math",
            "prompt": [{"role": "user", "content": f"Problem {i}"}],
            "answer": gold,
            "problem": f"Problem {i}",
        }
        for i, gold in enumerate(GOLDS)
    ]


def foreign_rows() -> list[dict]:
    """In the foreign harness's own order (problems interleaved), with an extra field it keeps."""
    rows = []
    for j in range(4):
        for i in (2, 0, 1):
            answer = ANSWERS[i][j]
            text = "I give up." if answer is None else f"So the answer is \\boxed{{{answer}}}."
            rows.append(
                {"problem_id": f"aime24/{i}", "sample_idx": j, "response": text, "harness": "x"}
            )
    return rows


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture()
def bench(tmp_path) -> Path:
    """A results folder holding the prepared aime24 file, as the DAG's data/eval/ does."""
    path = tmp_path / "res" / "data" / "eval" / "aime24.jsonl"
    path.parent.mkdir(parents=True)
    return write_jsonl(path, bench_rows())


def test_a_foreign_file_grades_to_the_hand_computed_numbers(tmp_path, bench, capsys):
    gens = write_jsonl(tmp_path / "gens.jsonl", foreign_rows())
    out = tmp_path / "out"
    argv = ["--generations", str(gens), "--benchmarks", "aime24", "--config", SMOKE]
    argv += ["--data-root", str(tmp_path / "res"), "--out", str(out), "--name", "theirs"]
    assert evaluate.main(argv) == 0
    doc = json.loads((out / "aime24" / "passk.json").read_text())
    values = {e["k"]: e["value"] for e in doc["pass_at_k"]}
    assert values == pytest.approx({1: 0.5, 2: 11 / 18, 4: 2 / 3})
    assert doc["n_problems"] == 3 and doc["n_min"] == 4 and doc["mean_at_n"] == pytest.approx(0.5)
    # maj@1 = first sample's answer: p0 "7" right, p1 "11" wrong, p2 right.
    assert doc["maj_at_k"][0]["value"] == pytest.approx(2 / 3)
    assert doc["status_counts"] == {"ok": 10, "no_answer": 2, "timeout": 0, "error": 0}
    samples = [json.loads(x) for x in (out / "aime24" / "samples.jsonl").read_text().splitlines()]
    assert [(s["problem_id"], s["sample_idx"]) for s in samples][:5] == [
        ("aime24/0", 0),
        ("aime24/0", 1),
        ("aime24/0", 2),
        ("aime24/0", 3),
        ("aime24/1", 0),
    ]
    assert set(samples[0]) == {"problem_id", "sample_idx", "response", "finish_reason", "n_tokens"}
    row = (out / "row.csv").read_text()
    assert "pass@1" in row and "Table 1" not in row  # "theirs" is no paper model
    assert "50.00" in capsys.readouterr().out


def _row_md(tmp_path, rows) -> str:
    gens = write_jsonl(tmp_path / "gens.jsonl", rows)
    out = tmp_path / "out"
    argv = ["--generations", str(gens), "--benchmarks", "aime24", "--config", SMOKE]
    argv += ["--data-root", str(tmp_path / "res"), "--out", str(out), "--name", "theirs"]
    assert evaluate.main(argv) == 0
    return (out / "row.md").read_text()


def test_an_unrecorded_finish_reason_is_unknown_not_zero(tmp_path, bench):
    """No finish_reason in the foreign file: the cut share is 'unknown', and the heading says the
    generations were made elsewhere (none of the protocol's generation settings were used)."""
    md = _row_md(tmp_path, foreign_rows())
    assert md.startswith("# theirs: generations made elsewhere, graded by the `smoke` protocol")
    cut = next(line for line in md.splitlines() if "cut at the token budget" in line)
    assert "| unknown |" in cut and "0.0" not in cut


def test_recorded_finish_reasons_give_the_cut_share(tmp_path, bench):
    rows = [{**r, "finish_reason": "stop"} for r in foreign_rows()]
    rows[0]["finish_reason"] = "length"  # 1 of 12 responses cut
    cut = next(line for line in _row_md(tmp_path, rows).splitlines() if "token budget" in line)
    assert "| 8.3 |" in cut


def _refused(tmp_path, bench, rows, match):
    gens = write_jsonl(tmp_path / "gens.jsonl", rows)
    with pytest.raises(FormatError, match=match):
        convert(gens, bench, tmp_path / "samples.jsonl")
    assert not (tmp_path / "samples.jsonl").exists()


def test_a_missing_field_is_named_by_file_row_and_field(tmp_path, bench):
    rows = foreign_rows()
    del rows[4]["response"]
    _refused(tmp_path, bench, rows, r"gens\.jsonl:5: missing field 'response'")


def test_a_mistyped_field_is_refused(tmp_path, bench):
    rows = foreign_rows()
    rows[1]["sample_idx"] = "0"
    _refused(tmp_path, bench, rows, r"gens\.jsonl:2: field 'sample_idx' must be int")


def test_a_duplicate_sample_names_both_rows(tmp_path, bench):
    rows = foreign_rows()
    rows.append(dict(rows[0]))
    _refused(tmp_path, bench, rows, r"gens\.jsonl:13: .*\('aime24/2', 0\) repeat row 1: duplicate")


def test_mixed_up_problem_ids_are_refused(tmp_path, bench):
    rows = foreign_rows()
    rows[2]["problem_id"] = "aime25/1"
    _refused(tmp_path, bench, rows, r"gens\.jsonl:3: field 'problem_id' 'aime25/1' belongs to")
    rows[2]["problem_id"] = "aime24/99"
    _refused(tmp_path, bench, rows, r"gens\.jsonl:3: field 'problem_id' 'aime24/99' is not in")


def test_a_file_that_leaves_problems_out_is_refused(tmp_path, bench):
    rows = [r for r in foreign_rows() if r["problem_id"] != "aime24/1"]
    _refused(tmp_path, bench, rows, r"1 of the 3 problems .* have no generation \(aime24/1\)")


def test_a_gap_in_sample_indices_is_refused(tmp_path, bench):
    rows = [r for r in foreign_rows() if (r["problem_id"], r["sample_idx"]) != ("aime24/0", 1)]
    _refused(tmp_path, bench, rows, r"problem 'aime24/0' has 3 samples but no sample_idx 1")


def test_an_engine_failure_is_not_an_answer(tmp_path, bench):
    rows = foreign_rows()
    rows[0]["finish_reason"] = "abort"
    _refused(tmp_path, bench, rows, r"gens\.jsonl:1: field 'finish_reason' is 'abort'")


def test_a_limit_keeps_the_first_problems(tmp_path, bench):
    rows = [r for r in foreign_rows() if r["problem_id"] == "aime24/0"]
    gens = write_jsonl(tmp_path / "gens.jsonl", rows)
    assert len(read_foreign(gens, bench, limit=1)) == 4


def test_a_bad_generations_file_fails_the_cli_with_its_message(tmp_path, bench, capsys):
    rows = foreign_rows()
    del rows[0]["problem_id"]
    gens = write_jsonl(tmp_path / "gens.jsonl", rows)
    argv = ["--generations", str(gens), "--benchmarks", "aime24", "--config", SMOKE]
    argv += ["--data-root", str(tmp_path / "res"), "--out", str(tmp_path / "out")]
    assert evaluate.main(argv) == 2
    assert "gens.jsonl:1: missing field 'problem_id'" in capsys.readouterr().err


def test_generations_for_the_real_aime24_grade_to_known_numbers(shared_data, tmp_path):
    """The real AIME 2024 file (../shared/data): make eval prepares it from the profile's local
    path; a foreign file answering each problem once right (its gold) and once wrong grades to
    pass@1 = 0.5 and pass@2 = 1."""
    import yaml

    cfg = yaml.safe_load(Path(SMOKE).read_text())
    cfg["data"]["benchmark_paths"] = {
        "aime24": str(shared_data / "aime24" / "aime_2024_problems.parquet")
    }
    config = tmp_path / "cfg.yaml"
    config.write_text(yaml.safe_dump(cfg))
    res = tmp_path / "res"
    plan = evaluate.make_plan(
        evaluate.parse_args(
            ["--generations", "g.jsonl", "--benchmarks", "aime24", "--config", str(config)]
            + ["--data-root", str(res), "--bootstrap", "0"]
        )
    )
    bench = [
        json.loads(x) for x in evaluate.benchmark_file(plan, "aime24").read_text().splitlines()
    ]
    assert len(bench) == 30
    rows = []
    for b in bench:
        wrong = str(int(b["answer"]) + 1)
        for j, answer in enumerate((b["answer"], wrong)):
            rows.append(
                {"problem_id": b["problem_id"], "sample_idx": j, "response": f"\\boxed{{{answer}}}"}
            )
    gens = write_jsonl(tmp_path / "gens.jsonl", rows)
    out = tmp_path / "out"
    argv = ["--generations", str(gens), "--benchmarks", "aime24", "--config", str(config)]
    argv += ["--data-root", str(res), "--out", str(out), "--limit", "30"]
    assert evaluate.main(argv) == 0
    doc = json.loads((out / "aime24" / "passk.json").read_text())
    assert doc["n_problems"] == 30
    assert {e["k"]: e["value"] for e in doc["pass_at_k"]} == {1: 0.5, 2: 1.0}
