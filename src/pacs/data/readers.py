"""Read local data files (jsonl, json, parquet, csv: chosen by extension) into lists of dicts.

Every failure is a :class:`DataError` naming the file and, where one is at fault, the row
(counted from 1: in a ``.jsonl`` file row N is line N, blank lines included; in a ``.csv`` file
the N-th record after the header) and the field. Bytes that are not UTF-8, text holding a lone
surrogate (a JSON ``"\\ud800"`` escape: no UTF-8 writer can write it back), values nested deeper
than the JSON parser allows and integers too long for Python's ``int`` (kept as their digits, a
string) are caught here, where the file and row are known.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

from pacs.data.errors import DataError
from pacs.io import JsonlLineError, parse_json_int, read_jsonl, unencodable_text

SUPPORTED_SUFFIXES = (".jsonl", ".json", ".parquet", ".csv")


def _loads(path: Path, text: str, index: int | None) -> Any:
    """``json.loads``; a syntax error or too deep a value is a DataError at ``index``."""
    try:
        return json.loads(text, parse_int=parse_json_int)
    except json.JSONDecodeError as err:
        where = f"line {err.lineno}, column {err.colno}" if index is None else f"column {err.colno}"
        raise DataError(path, f"invalid JSON at {where}: {err.msg}", index) from None
    except RecursionError:
        raise DataError(path, "a value is nested too deeply to read", index) from None


def _decode(path: Path, data: bytes, index: int | None = None, encoding: str = "utf-8") -> str:
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as err:
        if index is None:  # a whole file: name the line the bad byte is on
            line = data.count(b"\n", 0, err.start) + 1
            message = f"not UTF-8: byte {data[err.start : err.start + 1]!r} on line {line}"
        else:
            message = f"not UTF-8: byte {data[err.start : err.start + 1]!r} at byte {err.start + 1}"
        raise DataError(path, message, index) from None


def check_text(path: Any, row: dict[str, Any], index: int) -> None:
    """Every string in ``row`` (at any depth) must be encodable as UTF-8 (no lone surrogate)."""
    bad_text = unencodable_text(row)
    if bad_text is not None:
        raise DataError(path, bad_text[1], index, bad_text[0])


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    """:func:`pacs.io.read_jsonl`, its line errors worded as :class:`DataError` (row = line)."""
    try:
        return read_jsonl(path)
    except JsonlLineError as err:
        raise DataError(path, err.reason, err.line - 1, err.field) from None


def _read_json(path: Path) -> list[dict[str, Any]]:
    obj = _loads(path, _decode(path, path.read_bytes()), None)
    if isinstance(obj, dict) and isinstance(obj.get("data"), list):
        obj = obj["data"]
    if not isinstance(obj, list):
        raise DataError(path, f"expected a JSON list of objects, got a {type(obj).__name__}")
    for i, row in enumerate(obj):
        if not isinstance(row, dict):
            raise DataError(path, f"expected an object, got a {type(row).__name__}", i)
        check_text(path, row, i)
    return obj


def _clean_value(value: Any) -> Any:
    """Parquet nulls and float NaN both mean 'missing'."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _read_parquet(path: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except Exception as err:  # pyarrow raises several types for corrupt files
        raise DataError(path, f"cannot read parquet: {err}") from err
    return [{k: _clean_value(v) for k, v in row.items()} for row in table.to_pylist()]


def _read_csv(path: Path) -> list[dict[str, Any]]:
    text = _decode(path, path.read_bytes(), encoding="utf-8-sig")  # a BOM is not a column name
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows = []
    try:
        for i, row in enumerate(reader):
            if None in row:
                columns = len(reader.fieldnames or [])
                raise DataError(path, f"more fields than the {columns} header columns", i)
            rows.append(dict(row))
    except csv.Error as err:
        raise DataError(path, f"malformed CSV: {err}", len(rows)) from None
    return rows


_READERS = {
    ".jsonl": _read_jsonl,
    ".json": _read_json,
    ".parquet": _read_parquet,
    ".csv": _read_csv,
}


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """All rows of a local file; an empty file or one with no rows is an error."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, "file not found")
    suffix = path.suffix.lower()
    if suffix not in _READERS:
        raise DataError(
            path, f"unsupported file type {suffix!r}; expected one of {SUPPORTED_SUFFIXES}"
        )
    if path.stat().st_size == 0:
        raise DataError(path, "file is empty")
    rows = _READERS[suffix](path)
    if not rows:
        raise DataError(path, "file holds no rows")
    return rows
