"""LiveCodeBench: the real release_v1 slice, compressed private tests, the date window."""

from __future__ import annotations

import base64
import json
import pickle
import zlib
from datetime import date

import pytest

from pacs.data import DataError
from pacs.data.livecodebench import (
    PAPER_WINDOW,
    build_code_prompt,
    convert_livecodebench,
    decode_test_cases,
)
from pacs.data.prepare import prepare_eval
from pacs.data.readers import read_records

SLICE = "livecodebench/mavencoder_lcb_release_v1_public.jsonl"


def _record(qid="q1", date_="2024-08-01T00:00:00", tests=None, metadata="{}", starter="", **extra):
    tests = tests if tests is not None else [{"input": "1\n", "output": "2\n", "testtype": "stdin"}]
    return {
        "question_title": "t",
        "question_content": f"Solve {qid}.",
        "platform": "atcoder",
        "question_id": qid,
        "contest_date": date_,
        "starter_code": starter,
        "difficulty": "easy",
        "public_test_cases": json.dumps(tests),
        "metadata": metadata,
        **extra,
    }


def _compress(obj) -> str:
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(obj)))).decode()


@pytest.fixture(scope="module")
def slice_rows(shared_data):
    path = shared_data / SLICE
    rows, dropped = convert_livecodebench(read_records(path), path, window=None)
    return rows, dropped


def test_slice_parses_both_test_types(slice_rows):
    rows, dropped = slice_rows
    assert len(rows) == 400 and dropped == 0
    assert len({r["problem_id"] for r in rows}) == 400
    types = {t["testtype"] for r in rows for t in r["tests"]}
    assert types == {"stdin", "functional"}
    functional = [r for r in rows if r["tests"][0]["testtype"] == "functional"]
    stdin = [r for r in rows if r["tests"][0]["testtype"] == "stdin"]
    assert functional and stdin
    assert all(r["fn_name"] and r["starter_code"] for r in functional)
    assert all(r["fn_name"] is None for r in stdin)
    for r in rows:
        assert r["task"] == "code" and r["answer"] == "" and r["benchmark"] == "livecodebench"
        assert all(isinstance(t["input"], str) and isinstance(t["output"], str) for t in r["tests"])


def test_slice_known_rows(slice_rows):
    by_id = {r["problem_id"]: r for r in slice_rows[0]}
    seniors = by_id["livecodebench/2727"]
    assert seniors["fn_name"] == "countSeniors"
    assert seniors["tests"][0] == {
        "input": '["7868190130M7522", "5303914400F9211", "9273338290F4010"]',
        "output": "2",
        "testtype": "functional",
    }
    assert "```python\nclass Solution:\n    def countSeniors" in seniors["prompt"][0]["content"]
    sort = by_id["livecodebench/1873_A"]
    assert sort["tests"][0]["input"].startswith("6\nabc\n")
    assert "# YOUR CODE HERE" in sort["prompt"][0]["content"]


def test_prompt_template():
    with_starter = build_code_prompt("Q?", "class Solution:\n    pass")
    assert with_starter.startswith(
        "### Question:\nQ?\n\n### Format: You will use the following starter code"
    )
    assert with_starter.endswith("### Answer: (use the provided format with backticks)\n\n")
    assert "stdin" in build_code_prompt("Q?", "")


def test_paper_window_on_the_slice(shared_data):
    path = shared_data / SLICE
    with pytest.raises(
        DataError, match=r"no problem has a contest_date in \[2024-07-01, 2025-01-01\)"
    ):
        convert_livecodebench(read_records(path), path, window=PAPER_WINDOW)
    rows, dropped = convert_livecodebench(
        read_records(path), path, window=(date(2023, 9, 1), date(2023, 10, 1))
    )
    assert 0 < len(rows) < 400 and len(rows) + dropped == 400


def test_window_bounds_and_compressed_private_tests(tmp_path):
    private = [{"input": "[1, 2]", "output": "3", "testtype": "functional"}]
    records = [
        _record(
            "in_start",
            "2024-07-01T00:00:00",
            metadata='{"func_name": "add"}',
            tests=[{"input": "[0, 0]", "output": "0", "testtype": "functional"}],
            private_test_cases=_compress(private),
        ),
        _record("before", "2024-06-30T23:59:59"),
        _record("at_end", "2025-01-01T00:00:00"),
        _record(
            "plain_private",
            "2024-12-31T00:00:00",
            private_test_cases=json.dumps([{"input": "5\n", "output": "6\n", "testtype": "stdin"}]),
        ),
    ]
    rows, dropped = convert_livecodebench(records, "f.jsonl")
    assert [r["problem_id"] for r in rows] == [
        "livecodebench/in_start",
        "livecodebench/plain_private",
    ]
    assert dropped == 2
    assert rows[0]["tests"] == [
        {"input": "[0, 0]", "output": "0", "testtype": "functional"},
        *private,
    ]
    assert rows[0]["fn_name"] == "add"
    assert len(rows[1]["tests"]) == 2


def test_malicious_pickle_is_refused(capsys):
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    raw = base64.b64encode(zlib.compress(pickle.dumps(Evil()))).decode()
    with pytest.raises(ValueError, match="the pickle holds STACK_GLOBAL, not only one JSON"):
        decode_test_cases(raw)
    assert "pwned" not in capsys.readouterr().out  # refused before anything was loaded
    rec = _record(private_test_cases=raw)
    with pytest.raises(DataError, match=r"row 1, field 'private_test_cases': cannot decode"):
        convert_livecodebench([rec], "f.jsonl")


@pytest.mark.parametrize(
    "change,field,message",
    [
        ({"public_test_cases": "[{"}, "public_test_cases", "cannot decode"),
        ({"public_test_cases": json.dumps([{"input": "1"}])}, "public_test_cases", "lacks"),
        (
            {"public_test_cases": json.dumps([{"input": "1", "output": "1", "testtype": "x"}])},
            "public_test_cases",
            "unknown testtype",
        ),
        (
            {
                "public_test_cases": json.dumps(
                    [{"input": "1", "output": "1", "testtype": "functional"}]
                )
            },
            "metadata",
            "func_name",
        ),
        ({"metadata": "{oops"}, "metadata", "not a JSON object"),
        ({"contest_date": "yesterday"}, "contest_date", "not an ISO date"),
        ({"question_content": ""}, "question_content", "missing or empty"),
    ],
)
def test_bad_records(change, field, message):
    rec = _record()
    rec.update(change)
    with pytest.raises(DataError, match=rf"lcb\.jsonl, row 2, field '{field}': .*{message}"):
        convert_livecodebench([_record("ok"), rec], "lcb.jsonl")


def test_duplicate_question_ids_name_source_rows():
    records = [_record("a"), _record("b", "2020-01-01T00:00:00"), _record("a")]
    with pytest.raises(
        DataError, match=r"row 3, field 'problem_id': duplicate .* \(first at .*row 1\)"
    ):
        convert_livecodebench(records, "lcb.jsonl")


def test_prepare_eval_writes_window_in_manifest(tmp_path):
    src = tmp_path / "lcb.jsonl"
    src.write_text(
        "".join(json.dumps(r) + "\n" for r in [_record("a"), _record("b", "2023-01-01T00:00:00")])
    )
    out = prepare_eval("livecodebench", "local", tmp_path / "livecodebench.jsonl", path=src)
    manifest = json.loads((tmp_path / "livecodebench.manifest.json").read_text())
    assert manifest["rows"] == 1 and manifest["dropped"] == 1
    assert manifest["contest_date_window"] == ["2024-07-01", "2025-01-01"]
    assert json.loads(out.read_text())["problem_id"] == "livecodebench/a"
