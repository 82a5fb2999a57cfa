"""Hostile data rows (issue 25): refused by file, row and field, within a memory bound, and
nothing is written. Golds the grader could not use, bad LiveCodeBench metadata and test blobs."""

from __future__ import annotations

import base64
import json
import pickle
import tracemalloc
import zlib

import pytest

from pacs.data import DataError
from pacs.data import livecodebench as lcb
from pacs.data.normalize import normalize_answer
from pacs.data.prepare import prepare_eval
from pacs.rewards import math as M

STDIN_TEST = {"input": "1\n", "output": "2\n", "testtype": "stdin"}
FUNCTIONAL_TEST = {"input": "1", "output": "1", "testtype": "functional"}


def _lcb(qid="q1", tests=(STDIN_TEST,), **extra) -> dict:
    return {
        "question_content": f"Solve {qid}.",
        "question_id": qid,
        "contest_date": "2024-08-01T00:00:00",
        "public_test_cases": json.dumps(list(tests)),
        **extra,
    }


def _refused(tmp_path, records, benchmark="livecodebench") -> DataError:
    """Prepare ``records`` (a JSONL file); the DataError raised, after checking nothing was
    written."""
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out" / "prepared.jsonl"
    out.parent.mkdir()
    with pytest.raises(DataError) as err:
        prepare_eval(benchmark, "local", out, path=src, window=None)
    assert list(out.parent.iterdir()) == []  # no data file, no manifest, no temporary file
    assert str(err.value).startswith(f"{src}, row 2")
    return err.value


# ----------------------------------------------------------------------------- golds


@pytest.mark.parametrize(
    "gold,message",
    [
        ("$$", "holds only math delimiters"),
        ("$ $", "holds only math delimiters"),
        ("\\(\\)", "holds only math delimiters"),
        ("\\frac{1}{2", "braces that do not balance"),
        ("}{", "braces that do not balance"),
    ],
)
def test_golds_no_response_could_match_are_refused(tmp_path, gold, message):
    good = {"unique_id": "a.json", "problem": "p", "answer": "1"}
    bad = {"unique_id": "b.json", "problem": "p", "answer": gold}
    err = _refused(tmp_path, [good, bad], benchmark="math500")
    assert (err.row, err.field) == (2, "answer") and message in str(err)
    with pytest.raises(ValueError, match=message):  # the grader refuses it too
        M.normalize_gold(gold)


@pytest.mark.parametrize(
    "gold,stored",
    [(1e-05, "0.00001"), (1e-07, "0.0000001"), (1.5e-07, "0.00000015"), ("1e-05", "0.00001"),
     ("2.5E3", "2500"), (2.5, "2.5"), ("\\$5", "\\$5"), ("$\\frac{1}{2}$", "$\\frac{1}{2}$")],
)  # fmt: skip
def test_float_and_e_notation_golds_are_stored_positionally(gold, stored):
    assert normalize_answer(gold, file="f", index=0) == stored
    assert M.normalize_gold(gold) == stored or isinstance(gold, str)


def test_an_e_notation_gold_now_matches_its_decimal_answer():
    for gold in (1e-05, "1e-05"):
        assert M.grade("\\boxed{0.00001}", gold).score == 1.0
        assert M.grade("\\boxed{0.0001}", gold).score == 0.0


# ----------------------------------------------------------------------------- metadata


@pytest.mark.parametrize(
    "metadata,message",
    [
        ("[1, 2]", "metadata must be a JSON object, got list"),
        ("null", "metadata must be a JSON object, got null"),
        ('"func"', "metadata must be a JSON object, got str"),
        ("7", "metadata must be a JSON object, got int"),
        ("[" * 100_000, "metadata is not a JSON object"),
        (["not", "a", "dict"], "metadata must be a JSON object, got list"),
    ],
)
def test_metadata_that_is_not_an_object_is_refused(tmp_path, metadata, message):
    err = _refused(tmp_path, [_lcb("ok", metadata="{}"), _lcb("bad", metadata=metadata)])
    assert (err.row, err.field) == (2, "metadata") and message in str(err)


@pytest.mark.parametrize("func_name", ["not a name", "f(x)", "1abc", "class", 7, ["f"], "a.b"])
def test_a_func_name_that_is_not_an_identifier_is_refused(tmp_path, func_name):
    bad = _lcb("bad", tests=[FUNCTIONAL_TEST], metadata=json.dumps({"func_name": func_name}))
    err = _refused(tmp_path, [_lcb("ok", metadata="{}"), bad])
    assert (err.row, err.field) == (2, "metadata") and "is not a Python identifier" in str(err)


def test_good_metadata_still_passes():
    good = _lcb(tests=[FUNCTIONAL_TEST], metadata='{"func_name": "maxScore"}')
    assert lcb.convert_row("f", 0, good)["fn_name"] == "maxScore"
    assert lcb.convert_row("f", 0, _lcb(metadata=None))["fn_name"] is None
    assert lcb.convert_row("f", 0, _lcb(metadata='{"func_name": ""}'))["fn_name"] is None


# ----------------------------------------------------------------------------- test blobs


def _blob(payload: bytes) -> str:
    return base64.b64encode(zlib.compress(payload, 9)).decode()


def test_a_zlib_bomb_is_refused_within_the_memory_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(lcb, "MAX_DECODED_MB", 8)
    bomb = _blob(pickle.dumps("x" * (64 << 20)))  # 64 MB of pickle in ~90 KB of base64
    tracemalloc.start()
    try:
        err = _refused(tmp_path, [_lcb("ok"), _lcb("bad", private_test_cases=bomb)])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (err.row, err.field) == (2, "private_test_cases")
    assert "decompresses to more than 8 MB" in str(err)
    assert peak < 3 * (8 << 20) + (16 << 20), f"peak {peak >> 20} MB"


def test_a_pickle_sharing_one_string_across_many_tests_is_refused(tmp_path):
    shared = "9" * (1 << 20)
    tests = [{"input": shared, "output": "1", "testtype": "stdin"}] * 300  # one memo entry
    blob = _blob(pickle.dumps(tests))
    assert len(blob) < 10_000  # 300 MB once expanded
    err = _refused(tmp_path, [_lcb("ok"), _lcb("bad", private_test_cases=blob)])
    assert (err.row, err.field) == (2, "private_test_cases")
    assert "not only one JSON string" in str(err)


@pytest.mark.parametrize(
    "payload,message",
    [
        (pickle.dumps(["a"]), "the pickle holds"),
        (pickle.dumps(7), "the pickle holds"),
        (pickle.dumps("x", protocol=0)[:-1] + b"0" * 40 + b".", "the pickle holds POP"),
    ],
)
def test_only_a_pickled_string_is_loaded(payload, message):
    with pytest.raises(ValueError, match=message):
        lcb.decode_test_cases(_blob(payload))


def test_lcb_compressed_tests_still_decode_at_every_protocol():
    tests = [STDIN_TEST, FUNCTIONAL_TEST]
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        blob = _blob(pickle.dumps(json.dumps(tests), protocol=protocol))
        assert lcb.decode_test_cases(blob) == tests
