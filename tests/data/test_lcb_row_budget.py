"""Issue 35: a LiveCodeBench row's tests are bounded before they are built.

A 0.95 MB row holding 5 million tiny tests, or 12 rows of 240 MB each under the per-field cap,
ended in an unnamed MemoryError under 3 GB. Now a row's tests (public and private together) are
counted while they are parsed and their text measured before it, and a row over either cap is
refused naming file, row and field, with nothing written.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from pacs.data import DataError
from pacs.data import livecodebench as lcb
from pacs.data.prepare import prepare_eval

TINY = {"input": "", "output": "", "testtype": "stdin"}


def _lcb(qid: str, public: str, private: str | None = None) -> dict:
    row = {
        "question_content": f"Solve {qid}.",
        "question_id": qid,
        "contest_date": "2024-08-01T00:00:00",
        "public_test_cases": public,
    }
    return row | ({} if private is None else {"private_test_cases": private})


def _refused(tmp_path, records) -> DataError:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out" / "prepared.jsonl"
    out.parent.mkdir()
    with pytest.raises(DataError) as err:
        prepare_eval("livecodebench", "local", out, path=src, window=None)
    assert list(out.parent.iterdir()) == []  # nothing written, no temporary file
    assert str(err.value).startswith(f"{src}, row 2")
    return err.value


def test_too_many_tests_in_one_row_are_refused_by_count(tmp_path, monkeypatch):
    monkeypatch.setattr(lcb, "MAX_ROW_TESTS", 50)
    ok = _lcb("ok", json.dumps([TINY] * 50))
    # 30 public + 30 private: each field under the cap, the row over it
    bad = _lcb("bad", json.dumps([TINY] * 30), json.dumps([TINY] * 30))
    err = _refused(tmp_path, [ok, bad])
    assert err.field == "private_test_cases"
    assert "more than 50 tests" in str(err)


def test_a_row_over_the_text_cap_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    monkeypatch.setattr(lcb, "MAX_ROW_TEST_MB", 1)
    half = json.dumps([{"input": "7" * 600_000, "output": "1", "testtype": "stdin"}])
    parsed = []
    real_loads = json.loads
    monkeypatch.setattr(
        lcb.json, "loads", lambda s, **kw: parsed.append(len(s)) or real_loads(s, **kw)
    )
    err = _refused(tmp_path, [_lcb("ok", json.dumps([TINY])), _lcb("bad", half, half)])
    assert err.field == "private_test_cases" and "exceed 1 MB of text" in str(err)
    assert parsed.count(len(half)) == 1  # the private field was refused before json.loads saw it


def test_a_parsed_list_counts_too():
    with pytest.raises(DataError, match="more than"):
        budget = lcb.RowBudget()
        budget.objects = 2
        lcb._parse_tests("f", 0, [TINY] * 3, "public_test_cases", budget)


# In a child process under a real address-space limit: before the fix json.loads built all
# 3 million tests (~750 MB of dicts) and died of MemoryError; now it stops at MAX_ROW_TESTS.
CHILD = textwrap.dedent(
    """
    import base64, pickle, resource, zlib
    from pacs.data import DataError
    from pacs.data import livecodebench as lcb

    text = "[" + '{"input":"","output":"","testtype":"stdin"},' * 2_999_999
    text += '{"input":"","output":"","testtype":"stdin"}]'
    blob = base64.b64encode(zlib.compress(pickle.dumps(text, protocol=4), 1)).decode()
    del text
    with open("/proc/self/statm") as f:
        size = int(f.read().split()[0]) * resource.getpagesize()
    limit = size + (512 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    row = {"question_content": "q", "question_id": "q", "contest_date": "2024-08-01",
           "public_test_cases": "[]", "private_test_cases": blob}
    try:
        lcb.convert_row("lcb.jsonl", 0, row)
    except DataError as err:
        print("REFUSED", len(blob), err)
    except MemoryError:
        print("MEMORYERROR")
    """
)


def test_a_row_of_millions_of_tiny_tests_under_a_real_rlimit():
    done = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert out.startswith("REFUSED"), out + done.stderr[-2000:]
    assert "lcb.jsonl, row 1, field 'private_test_cases'" in out
    assert "more than 100,000 tests" in out


def _big_row(qid: str, chars: int) -> dict:
    """One stdin test of ``chars`` input characters, as LiveCodeBench ships it (base64 of zlib
    of a pickled JSON string): a few KB in the file, ``chars`` once decoded."""
    import base64
    import pickle
    import zlib

    text = json.dumps([{"input": "7" * chars, "output": "1", "testtype": "stdin"}])
    blob = base64.b64encode(zlib.compress(pickle.dumps(text, protocol=4), 9)).decode()
    return _lcb(qid, json.dumps([TINY]), blob)


def test_rows_under_their_cap_add_up_to_the_file_cap(tmp_path, monkeypatch):
    """Issue 47: every row under its own cap, the file over its cap at row 4 (0-based 3)."""
    monkeypatch.setattr(lcb, "MAX_FILE_TEST_MB", 3)
    records = [_big_row(f"q{i}", 900_000) for i in range(5)]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out" / "prepared.jsonl"
    out.parent.mkdir()
    with pytest.raises(DataError) as err:
        prepare_eval("livecodebench", "local", out, path=src, window=None)
    assert list(out.parent.iterdir()) == []  # nothing written, no temporary file
    assert str(err.value).startswith(f"{src}, row 4")
    assert err.value.field == "private_test_cases"
    assert "the file's tests" in str(err.value) and "exceed 3 MB" in str(err.value)


def test_the_file_cap_counts_tests_across_rows(monkeypatch):
    monkeypatch.setattr(lcb, "MAX_FILE_TESTS", 5)
    records = [_lcb(f"q{i}", json.dumps([TINY] * 2)) for i in range(3)]
    with pytest.raises(DataError, match=r"row 3.*more than 5 tests .*together"):
        lcb.convert_records(records, "lcb.jsonl", window=None)
    assert len(lcb.convert_records(records[:2], "lcb.jsonl", window=None)[0]) == 2


def test_a_large_file_may_hold_more_than_the_floor(tmp_path, monkeypatch):
    """The cap is FILE_EXPANSION times the file's size when that is more than the floor."""
    monkeypatch.setattr(lcb, "MAX_FILE_TEST_MB", 1)
    src = tmp_path / "big.jsonl"
    src.write_bytes(b" " * (1 << 20))
    assert lcb.FileBudget(src).limit_chars == lcb.FILE_EXPANSION << 20
    assert lcb.FileBudget("label, not a file").limit_chars == 1 << 20


# 8 rows of one 40 MB test each (a file of a few hundred KB) under a real address-space limit of
# 160 MB over the child's start: before the file cap the rows were all built (MemoryError).
CHILD_ROWS = textwrap.dedent(
    """
    import base64, json, pickle, resource, zlib
    from pacs.data import DataError
    from pacs.data import livecodebench as lcb

    lcb.MAX_FILE_TEST_MB = 100
    text = json.dumps([{"input": "7" * (40 << 20), "output": "1", "testtype": "stdin"}])
    blob = base64.b64encode(zlib.compress(pickle.dumps(text, protocol=4), 9)).decode()
    del text
    rows = [{"question_content": "q", "question_id": f"q{i}", "contest_date": "2024-08-01",
             "public_test_cases": "[]", "private_test_cases": blob} for i in range(8)]
    with open("/proc/self/statm") as f:
        size = int(f.read().split()[0]) * resource.getpagesize()
    limit = size + (160 << 20) * 2
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        lcb.convert_records(rows, "lcb.jsonl", window=None)
        print("BUILT")
    except DataError as err:
        print("REFUSED", err)
    except MemoryError:
        print("MEMORYERROR")
    """
)


def test_rows_of_one_huge_test_each_under_a_real_rlimit():
    done = subprocess.run(
        [sys.executable, "-c", CHILD_ROWS], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("REFUSED"), done.stdout + done.stderr[-2000:]
    assert "lcb.jsonl, row 3, field 'private_test_cases'" in done.stdout  # 3 x 40 MB > 100 MB
