"""Malformed inputs give a DataError naming the file, the row and the field, and write nothing."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from pacs.data import DataError
from pacs.data.normalize import normalize_answer
from pacs.data.prepare import prepare_eval, prepare_train
from pacs.data.readers import read_records


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _assert_nothing_written(out):
    assert not out.exists()
    assert not out.with_name(out.stem + ".manifest.json").exists()
    assert not [p for p in out.parent.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize(
    "value,expected",
    [
        (25, "25"),
        ("025", "25"),
        (27.0, "27"),
        ("27.0", "27"),
        (" 7 ", "7"),
        ("-3", "-3"),
        ("+4", "4"),
        (0.5, "0.5"),
        ("\\frac{1}{2}", "\\frac{1}{2}"),
        ("1,000", "1,000"),
        ("(3, 4)", "(3, 4)"),
    ],
)
def test_normalize_answer(value, expected):
    assert normalize_answer(value, file="f", index=0) == expected


@pytest.mark.parametrize("value", [None, True, "", "  ", math.nan, math.inf, [1]])
def test_normalize_answer_rejects(value):
    with pytest.raises(DataError, match=r"f\.jsonl, row 4, field 'answer'"):
        normalize_answer(value, file="f.jsonl", index=3)


def test_missing_field_names_file_row_field(tmp_path):
    src = _jsonl(
        tmp_path / "aime.jsonl",
        [{"id": 1, "problem": "p1", "answer": "1"}, {"id": 2, "problem": "p2"}],
    )
    out = tmp_path / "out" / "aime25.jsonl"
    with pytest.raises(DataError) as err:
        prepare_eval("aime25", "local", out, path=src)
    msg = str(err.value)
    assert "aime.jsonl" in msg and "row 2" in msg and "'answer'" in msg
    assert err.value.row == 2 and err.value.field == "answer"
    assert not out.exists()


def test_unknown_schema_names_the_missing_column(tmp_path):
    src = _jsonl(tmp_path / "x.jsonl", [{"question": "q", "gold": "1"}])
    with pytest.raises(
        DataError, match=r"x\.jsonl, row 1, field 'problem': unknown schema.*'gold'"
    ):
        prepare_eval("math500", "local", tmp_path / "o.jsonl", path=src)


def test_empty_file(tmp_path):
    src = tmp_path / "empty.jsonl"
    src.write_text("")
    out = tmp_path / "o.jsonl"
    with pytest.raises(DataError, match=r"empty\.jsonl: file is empty"):
        prepare_eval("aime25", "local", out, path=src)
    _assert_nothing_written(out)
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n\n")
    with pytest.raises(DataError, match="no rows"):
        read_records(blank)
    empty_list = tmp_path / "list.json"
    empty_list.write_text("[]")
    with pytest.raises(DataError, match=r"list\.json: file holds no rows"):
        read_records(empty_list)


def test_bad_json_line(tmp_path):
    src = tmp_path / "bad.jsonl"
    src.write_text('{"id": 0, "problem": "p", "answer": "1"}\n{"id": 1, "problem": \n')
    out = tmp_path / "o.jsonl"
    with pytest.raises(DataError, match=r"bad\.jsonl, row 2: invalid JSON at column"):
        prepare_eval("aime25", "local", out, path=src)
    _assert_nothing_written(out)


def test_bad_json_document_and_non_objects(tmp_path):
    doc = tmp_path / "d.json"
    doc.write_text('[{"problem": "p", "answer": 1},')
    with pytest.raises(DataError, match=r"d\.json: invalid JSON at line 1"):
        read_records(doc)
    doc.write_text('[{"problem": "p", "answer": 1}, 5]')
    with pytest.raises(DataError, match=r"d\.json, row 2: expected an object"):
        read_records(doc)
    lines = tmp_path / "l.jsonl"
    lines.write_text('{"a": 1}\n[1, 2]\n')
    with pytest.raises(DataError, match=r"l\.jsonl, row 2: a JSON list"):
        read_records(lines)


def test_duplicate_id(tmp_path):
    rows = [
        {"id": 7, "problem": "a", "answer": "1"},
        {"id": 8, "problem": "b", "answer": "2"},
        {"id": 7, "problem": "c", "answer": "3"},
    ]
    src = _jsonl(tmp_path / "dup.jsonl", rows)
    out = tmp_path / "o.jsonl"
    with pytest.raises(
        DataError,
        match=r"dup\.jsonl, row 3, field 'problem_id': duplicate problem id 'aime25/7' "
        r"\(first at row 1\)",
    ):
        prepare_eval("aime25", "local", out, path=src)
    _assert_nothing_written(out)


def test_duplicate_problem_text_in_beyondaime(tmp_path):
    src = tmp_path / "b.parquet"
    pd.DataFrame({"problem": ["x", "y", "x"], "answer": [1, 2, 3]}).to_parquet(src)
    with pytest.raises(DataError, match=r"b\.parquet, row 3, field 'problem_id': duplicate"):
        prepare_eval("beyondaime", "local", tmp_path / "o.jsonl", path=src)


def test_parquet_null_and_wrong_type(tmp_path):
    src = tmp_path / "a.parquet"
    pd.DataFrame({"ID": ["1", "2"], "Problem": ["p", None], "Answer": [1, 2]}).to_parquet(src)
    with pytest.raises(DataError, match=r"a\.parquet, row 2, field 'Problem': missing"):
        prepare_eval("aime24", "local", tmp_path / "o.jsonl", path=src)
    pd.DataFrame({"ID": ["1"], "Problem": [3], "Answer": [1]}).to_parquet(src)
    with pytest.raises(
        DataError, match=r"a\.parquet, row 1, field 'Problem': expected a string, got int"
    ):
        prepare_eval("aime24", "local", tmp_path / "o.jsonl", path=src)


def test_unsupported_extension_and_missing_file(tmp_path):
    src = tmp_path / "data.txt"
    src.write_text("x")
    with pytest.raises(DataError, match=r"data\.txt: unsupported file type '\.txt'"):
        read_records(src)
    with pytest.raises(DataError, match=r"nope\.jsonl: file not found"):
        read_records(tmp_path / "nope.jsonl")
    bad = tmp_path / "broken.parquet"
    bad.write_bytes(b"not a parquet file")
    with pytest.raises(DataError, match=r"broken\.parquet: cannot read parquet"):
        read_records(bad)


def test_csv_rows_and_extra_fields(tmp_path):
    src = tmp_path / "t.csv"
    src.write_text('problem,answer\n"multi\nline",1\nok,2,extra\n')
    with pytest.raises(DataError, match=r"t\.csv, row 2: more fields"):
        read_records(src)
    src.write_text('problem,answer\n"multi\nline",1\n')
    assert read_records(src) == [{"problem": "multi\nline", "answer": "1"}]


def test_existing_output_survives_a_failed_run(tmp_path):
    good = _jsonl(tmp_path / "good.jsonl", [{"id": 0, "problem": "p", "answer": "1"}])
    out = tmp_path / "aime25.jsonl"
    prepare_eval("aime25", "local", out, path=good)
    before = out.read_bytes()
    bad = _jsonl(tmp_path / "bad.jsonl", [{"id": 0, "problem": "p"}])
    with pytest.raises(DataError):
        prepare_eval("aime25", "local", out, path=bad)
    assert out.read_bytes() == before


def test_source_arguments_are_checked(tmp_path):
    with pytest.raises(DataError, match="--source local needs --path"):
        prepare_eval("aime25", "local", tmp_path / "o.jsonl")
    with pytest.raises(DataError, match="--path is only for --source local"):
        prepare_eval("aime25", "hf", tmp_path / "o.jsonl", path=tmp_path / "x.jsonl")
    with pytest.raises(DataError, match="unknown benchmark"):
        prepare_eval("gsm8k", "local", tmp_path / "o.jsonl", path=tmp_path / "x.jsonl")


def test_deepscaler_missing_answer(tmp_path):
    src = tmp_path / "ds.json"
    src.write_text(json.dumps([{"problem": "p", "answer": "1"}, {"problem": "q", "solution": "s"}]))
    out = tmp_path / "train.parquet"
    with pytest.raises(DataError, match=r"ds\.json, row 2, field 'answer'"):
        prepare_train("local", out, path=src)
    _assert_nothing_written(out)
