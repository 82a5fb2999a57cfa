"""AIME-style benchmarks: a gold answer must be an integer in the benchmark's range."""

from __future__ import annotations

import json

import pytest

from pacs.data.benchmarks import SCHEMAS, convert_math
from pacs.data.cli import main
from pacs.data.errors import DataError
from pacs.data.normalize import integer_answer


def _aime24(answer, row_id="2024-I-1"):
    return {"ID": row_id, "Problem": "p", "Solution": "s", "Answer": answer}


def _aime25(answer, row_id="1"):
    return {"id": row_id, "problem": "p", "answer": answer}


def _beyondaime(answer, problem="p"):
    return {"problem": problem, "answer": answer}


MAKERS = {"aime24": (_aime24, "Answer"), "aime25": (_aime25, "answer")}


@pytest.mark.parametrize("benchmark", list(MAKERS))
@pytest.mark.parametrize("bad", ["abc", "12.5", 12.5, 1000, "-1", "1e3", "\\frac{1}{2}"])
def test_aime_refuses_non_integer_or_out_of_range_golds(benchmark, bad):
    make, column = MAKERS[benchmark]
    records = [make(7, "a"), make(bad, "b")]
    with pytest.raises(DataError) as exc:
        convert_math(benchmark, records, "aime.jsonl")
    assert (exc.value.file, exc.value.row, exc.value.field) == ("aime.jsonl", 2, column)
    assert f"{benchmark} answers are integers from 0 to 999, got {bad!r}" in str(exc.value)


@pytest.mark.parametrize("benchmark", list(MAKERS))
@pytest.mark.parametrize(
    "value,gold", [("025", "25"), (25, "25"), ("0", "0"), (999, "999"), (27.0, "27"), (" 7 ", "7")]
)
def test_aime_accepts_integers_including_zero_padded(benchmark, value, gold):
    make, _ = MAKERS[benchmark]
    (row,) = convert_math(benchmark, [make(value)], "aime.jsonl")
    assert row["answer"] == gold


def test_beyondaime_answers_are_non_negative_integers_without_upper_bound():
    rows = convert_math(
        "beyondaime", [_beyondaime(33124147, "a"), _beyondaime("0042", "b")], "b.parquet"
    )
    assert [r["answer"] for r in rows] == ["33124147", "42"]
    for bad in ("abc", -3, "2.5"):
        with pytest.raises(DataError, match=r"b\.parquet, row 2, field 'answer'"):
            convert_math("beyondaime", [_beyondaime(1, "a"), _beyondaime(bad, "b")], "b.parquet")


def test_free_form_benchmarks_keep_their_answers():
    """math500 and amc23 have no integer rule (amc23 even holds -1.0)."""
    assert SCHEMAS["math500"].integer_range is None and SCHEMAS["amc23"].integer_range is None
    rows = convert_math("amc23", [{"id": 0, "question": "q", "answer": -1.0}], "amc.parquet")
    assert rows[0]["answer"] == "-1"


def test_integer_answer_without_upper_bound_message():
    with pytest.raises(DataError, match=r"f, row 3, field 'a': x are integers >= 0, got 'abc'"):
        integer_answer("abc", 0, None, file="f", index=2, field="a", what="x")


def test_cli_names_file_row_and_field_and_writes_nothing(tmp_path, capsys):
    src = tmp_path / "aime24.jsonl"
    src.write_text("\n".join(json.dumps(_aime24(a, f"id{i}")) for i, a in enumerate([5, "abc"])))
    out = tmp_path / "out" / "aime24.jsonl"
    argv = ["prepare-eval", "--benchmark", "aime24", "--source", "local", "--path", str(src)]
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{src}, row 2, field 'Answer'" in err and "got 'abc'" in err
    assert not out.exists() and not out.with_name("aime24.manifest.json").exists()


REAL = {
    "aime24": "aime24/aime_2024_problems.parquet",
    "aime25": "aime25/train-00000-of-00001-243207c6c994e1bd.parquet",
    "beyondaime": "beyondaime/test.parquet",
}


@pytest.mark.parametrize("benchmark", list(REAL))
def test_real_files_satisfy_the_integer_rule(benchmark, shared_data):
    from pacs.data.readers import read_records

    rows = convert_math(benchmark, read_records(shared_data / REAL[benchmark]), REAL[benchmark])
    golds = [int(r["answer"]) for r in rows]
    assert all(str(g) == r["answer"] for g, r in zip(golds, rows))
    if benchmark == "beyondaime":
        assert max(golds) > 999  # why BeyondAIME has no upper bound
    else:
        assert 0 <= min(golds) and max(golds) <= 999
