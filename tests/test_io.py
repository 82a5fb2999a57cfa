"""The shared atomic writers (complete files or nothing, with normal permissions) and the one
JSONL reader (every bad line named by file, line and field)."""

from __future__ import annotations

import json
import os

import pytest

from pacs.io import (
    FormatError,
    JsonlLineError,
    atomic_dir,
    atomic_open,
    atomic_path,
    iter_jsonl,
    read_jsonl,
    sha256_file,
    write_csv,
    write_json,
    write_jsonl,
)


def test_failed_write_leaves_nothing_behind(tmp_path):
    dest = tmp_path / "out.jsonl"
    with pytest.raises(RuntimeError), atomic_open(dest) as fh:
        fh.write('{"a": 1}\n')
        raise RuntimeError("crash mid-write")
    assert list(tmp_path.iterdir()) == []


def test_failed_write_keeps_the_previous_complete_file(tmp_path):
    dest = write_jsonl(tmp_path / "out.jsonl", [{"a": 1}])
    with pytest.raises(RuntimeError), atomic_path(dest) as tmp:
        tmp.write_text("partial")
        raise RuntimeError
    assert dest.read_text() == '{"a": 1}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def test_files_get_umask_permissions_not_owner_only(tmp_path):
    old = os.umask(0o022)
    try:
        path = write_json(tmp_path / "x.json", {"é": [1, 2]})
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644
    assert json.loads(path.read_text(encoding="utf-8")) == {"é": [1, 2]}


def test_csv_and_checksum(tmp_path):
    path = write_csv(tmp_path / "t.csv", ["k", "v"], [[1, None], [2, 0.5]])
    assert path.read_text() == "k,v\n1,\n2,0.5\n"
    # `printf 'k,v\\n1,\\n2,0.5\\n' | sha256sum`
    assert sha256_file(path) == "ff787650f316ec6b357bb271b6104c4f2bd42a3c8c04f757a63265f586c55f41"


def test_a_fixed_temp_name_is_used_and_removed_on_failure(tmp_path):
    dest, temp = tmp_path / "d.jsonl", tmp_path / ".d.jsonl.staging.tmp"
    with atomic_path(dest, temp=temp) as tmp:
        assert tmp == temp
        tmp.write_text("new")
    assert dest.read_text() == "new" and not temp.exists()
    with pytest.raises(RuntimeError), atomic_path(dest, temp=temp) as tmp:
        tmp.write_text("partial")
        raise RuntimeError
    assert dest.read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["d.jsonl"]


def test_atomic_dir_replaces_a_folder_whole_or_not_at_all(tmp_path):
    dest = tmp_path / "model"
    old = os.umask(0o022)
    try:
        with atomic_dir(dest) as tmp:
            assert list(tmp.iterdir()) == [] and tmp.parent == tmp_path
            (tmp / "a.txt").write_text("1")
    finally:
        os.umask(old)
    assert dest.stat().st_mode & 0o777 == 0o755
    with atomic_dir(dest) as tmp:
        (tmp / "b.txt").write_text("2")
    assert sorted(p.name for p in dest.iterdir()) == ["b.txt"]  # the old folder's files are gone
    with pytest.raises(RuntimeError), atomic_dir(dest) as tmp:
        (tmp / "c.txt").write_text("partial")
        raise RuntimeError
    assert sorted(p.name for p in dest.iterdir()) == ["b.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def _jsonl(tmp_path, data: bytes):
    path = tmp_path / "r.jsonl"
    path.write_bytes(data)
    return path


def test_read_jsonl_counts_blank_lines_and_accepts_crlf(tmp_path):
    path = _jsonl(tmp_path, b'{"a": 1}\r\n\n  \n{"a": 2}\n')
    assert list(iter_jsonl(path)) == [(1, {"a": 1}), (4, {"a": 2})]
    assert read_jsonl(path) == [{"a": 1}, {"a": 2}]


@pytest.mark.parametrize(
    ("data", "line", "field", "reason"),
    [
        (b'{"a": 1}\n{"a": \n', 2, None, "invalid JSON at column 7: Expecting value"),
        (b'{"a": 1}\n\n[1, 2]\n', 3, None, "a JSON list, expected an object"),
        (b'{"a": "\xff"}\n', 1, None, "not UTF-8: byte b'\\xff' at byte 8"),
        (b'{"a": 1}\n{"p": ["x\\ud800"]}\n', 2, "p", "text is not valid Unicode"),
        (b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n", 1, None, "nested too deeply"),
    ],
)
def test_a_bad_jsonl_line_names_file_line_and_field(tmp_path, data, line, field, reason):
    path = _jsonl(tmp_path, data)
    with pytest.raises(JsonlLineError) as err:
        read_jsonl(path)
    assert (err.value.line, err.value.field, err.value.path) == (line, field, str(path))
    assert reason in err.value.reason and isinstance(err.value, FormatError)
    where = f"{path}:{line}: " + (f"field {field!r}: " if field else "")
    assert str(err.value).startswith(where)


def test_a_truncated_last_line_is_dropped_only_when_allowed(tmp_path):
    path = _jsonl(tmp_path, b'{"a": 1}\n{"a": 2, "b": "\xc3')  # cut mid-write, mid-character
    assert list(iter_jsonl(path, allow_truncated_tail=True)) == [(1, {"a": 1})]
    with pytest.raises(JsonlLineError, match=r"r\.jsonl:2: not UTF-8"):
        read_jsonl(path)
    inner = _jsonl(tmp_path, b'{"a": \n{"a": 2}')  # a bad line that is not the last one
    with pytest.raises(JsonlLineError, match=r"r\.jsonl:1: invalid JSON"):
        list(iter_jsonl(inner, allow_truncated_tail=True))


def test_huge_integers_are_kept_as_text_and_a_missing_file_is_named(tmp_path):
    digits = "9" * 5000
    assert read_jsonl(_jsonl(tmp_path, f'{{"n": {digits}, "m": 12}}\n'.encode())) == [
        {"n": digits, "m": 12}
    ]
    with pytest.raises(FileNotFoundError, match=r"nope\.jsonl: file not found"):
        read_jsonl(tmp_path / "nope.jsonl")
