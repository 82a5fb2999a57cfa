"""Issue 18: every bad data row is named (file, row counted from 1, field) at preparation, and a
kill at the wrong moment never leaves data that looks complete.

Each case here ended in a bare codec error, ValueError or RecursionError, was accepted and failed
only at grading, or numbered rows from 0 in one message and from 1 in another.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pacs.data import DataError
from pacs.data.prepare import prepare_eval
from pacs.evaluation.io import load_benchmark

GOOD = {"id": 1, "problem": "p", "answer": "1"}


def _jsonl_bytes(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def _prepare(tmp_path: Path, src: Path, benchmark: str = "aime25") -> Path:
    return prepare_eval(benchmark, "local", tmp_path / "out" / f"{benchmark}.jsonl", path=src)


def _error(tmp_path: Path, src: Path, benchmark: str = "aime25") -> DataError:
    with pytest.raises(DataError) as err:
        _prepare(tmp_path, src, benchmark)
    return err.value


def test_bytes_that_are_not_utf8_name_the_row(tmp_path):
    src = _jsonl_bytes(
        tmp_path / "a.jsonl", [json.dumps(GOOD).encode(), b'{"id": 2, "problem": "\xff"}']
    )
    err = _error(tmp_path, src)
    assert (err.row, str(err).split(": ")[1]) == (2, "not UTF-8")
    assert "a.jsonl, row 2" in str(err) and "b'\\xff'" in str(err)


def test_a_csv_with_bytes_that_are_not_utf8_names_the_line(tmp_path):
    src = tmp_path / "g.csv"
    src.write_bytes(b"Question,Record ID\nq1,r1\nq\xe9,r2\n")
    err = _error(tmp_path, src, "gpqa")
    assert "g.csv: not UTF-8: byte b'\\xe9' on line 3" in str(err)


def test_a_lone_surrogate_names_row_and_field(tmp_path):
    src = _jsonl_bytes(
        tmp_path / "s.jsonl",
        [json.dumps(GOOD).encode(), b'{"id": 2, "problem": "x\\ud800", "answer": "2"}'],
    )
    err = _error(tmp_path, src)
    assert (err.row, err.field) == (2, "problem") and "not valid Unicode" in str(err)


def test_a_value_nested_100000_deep_names_the_row(tmp_path):
    deep = b'{"id": 2, "problem": ' + b"[" * 100_000 + b"]" * 100_000 + b', "answer": "1"}'
    src = _jsonl_bytes(tmp_path / "d.jsonl", [json.dumps(GOOD).encode(), deep])
    err = _error(tmp_path, src)
    assert err.row == 2 and "nested too deeply" in str(err)


def test_a_5000_digit_answer_is_kept_or_named(tmp_path):
    digits = "9" * 5000
    line = f'{{"problem": "p", "answer": {digits}}}'.encode()  # a JSON number, not a string
    src = _jsonl_bytes(tmp_path / "b.jsonl", [line])
    out = _prepare(tmp_path, src, "beyondaime")  # integers with no upper bound: kept, exactly
    assert json.loads(out.read_text())["answer"] == digits
    src = _jsonl_bytes(
        tmp_path / "a.jsonl", [f'{{"id": 1, "problem": "p", "answer": {digits}}}'.encode()]
    )
    err = _error(tmp_path, src)  # AIME answers run to 999: named, with a readable excerpt
    assert (err.row, err.field) == (1, "answer") and "(5000 characters)" in str(err)


def _lcb(tests, metadata='{"func_name": "f"}', qid="q2") -> dict:
    return {
        "question_content": "q",
        "question_id": qid,
        "contest_date": "2024-08-01T00:00:00",
        "public_test_cases": json.dumps(tests),
        "metadata": metadata,
    }


@pytest.mark.parametrize(
    ("tests", "message"),
    [
        # output `true`, not the string "true": accepted, then failed at grading
        (
            [{"input": "1", "output": True, "testtype": "functional"}],
            "test 1: 'output' must be a string, got bool",
        ),
        # functional output that is not JSON: failed at grading
        ([{"input": "1", "output": "[1,", "testtype": "functional"}], "test 1: output is not JSON"),
        (
            [{"input": "1", "output": "[" * 5000 + "]" * 5000, "testtype": "functional"}],
            "nested deeper",
        ),
    ],
)
def test_livecodebench_tests_the_grader_cannot_use_fail_preparation(tmp_path, tests, message):
    src = tmp_path / "lcb.jsonl"
    good = _lcb([{"input": "1", "output": "1", "testtype": "stdin"}], "{}", qid="q1")
    src.write_text(json.dumps(good) + "\n" + json.dumps(_lcb(tests)) + "\n")
    with pytest.raises(DataError) as err:
        prepare_eval("livecodebench", "local", tmp_path / "o.jsonl", path=src, window=None)
    assert str(err.value).startswith(f"{src}, row 2")
    assert message in str(err.value)


def test_a_bad_tests_field_says_what_it_is_not(tmp_path):
    record = _lcb([]) | {"public_test_cases": "not json, not base64!"}
    src = tmp_path / "lcb.jsonl"
    src.write_text(json.dumps(record) + "\n")
    with pytest.raises(DataError) as err:
        prepare_eval("livecodebench", "local", tmp_path / "o.jsonl", path=src, window=None)
    message = str(err.value)
    assert "row 1, field 'public_test_cases': cannot decode test cases: neither JSON" in message
    assert "nor LiveCodeBench's base64 of zlib of a pickle" in message


def test_gpqa_numbers_rows_like_every_other_error(tmp_path):
    wrong = ",".join(f"Incorrect Answer {i}" for i in (1, 2, 3))
    header = f"Question,Correct Answer,{wrong},Record ID\n"
    src = tmp_path / "g.csv"
    src.write_text(header + "q,a,b,c,d,r1\nq,a,,c,d,r2\n")
    assert "g.csv, row 2, field 'Incorrect Answer 1'" in str(_error(tmp_path, src, "gpqa"))
    src.write_text(header + "q,a,b,c,d,r1\nq,a,b,c,d,r1\n")
    assert (
        "g.csv, row 2, field 'problem_id': duplicate problem id 'gpqa/r1' (first at row 1)"
        in str(_error(tmp_path, src, "gpqa"))
    )


# ----------------------------------------------------------------------------- 8: kills


def _good_source(tmp_path: Path, answer: str) -> Path:
    return _jsonl_bytes(
        tmp_path / f"src{answer}.jsonl", [json.dumps(GOOD | {"answer": answer}).encode()]
    )


KILL_AT_THE_DATA_RENAME = """
import os, signal, sys
from pacs.data.prepare import prepare_eval
real = os.replace
def replace(src, dst):
    if str(src).endswith(".staging.tmp"):
        os.kill(os.getpid(), signal.SIGKILL)  # the manifest is in place, the data not yet
    return real(src, dst)
os.replace = replace  # pacs.io renames through it
prepare_eval("aime25", "local", sys.argv[2], path=sys.argv[1])
"""


def test_a_kill_between_the_renames_is_caught_and_cleaned_up(tmp_path):
    from pacs.data.files import check_manifest

    out = _prepare(tmp_path, _good_source(tmp_path, "1"))
    assert check_manifest(out)["rows"] == 1
    done = subprocess.run(
        [sys.executable, "-c", KILL_AT_THE_DATA_RENAME, str(_good_source(tmp_path, "2")), str(out)],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")},
        check=False,
    )
    assert done.returncode == -signal.SIGKILL
    # old data beside the new manifest: every reader refuses it
    with pytest.raises(
        DataError, match=r"aime25\.manifest\.json: does not describe .*aime25\.jsonl: sha256"
    ):
        check_manifest(out)
    with pytest.raises(DataError, match="does not describe"):
        load_benchmark(out)
    leftovers = sorted(p.name for p in out.parent.iterdir() if p.name.startswith("."))
    assert leftovers == [".aime25.jsonl.staging.tmp"]
    # the next run removes what the killed one left and writes a consistent pair
    _prepare(tmp_path, _good_source(tmp_path, "2"))
    assert sorted(p.name for p in out.parent.iterdir()) == ["aime25.jsonl", "aime25.manifest.json"]
    assert json.loads(out.read_text())["answer"] == "2" and check_manifest(out)["rows"] == 1


def test_a_manifest_records_size_and_hash_and_a_changed_file_is_refused(tmp_path):
    from pacs.data.files import manifest_path

    out = _prepare(tmp_path, _good_source(tmp_path, "1"))
    manifest = json.loads(manifest_path(out).read_text())
    assert manifest["bytes"] == out.stat().st_size and len(manifest["sha256"]) == 64
    out.write_text(out.read_text().replace('"1"', '"7"'))  # same size, other content
    with pytest.raises(DataError, match="sha256"):
        load_benchmark(out)
