"""Atomic file writers and the one JSONL reader, shared by every stage.

Every file is written to a temporary name in its destination folder, fsynced, and renamed into
place with :func:`os.replace` (a folder: :func:`atomic_dir`). A file that exists under its final
name is therefore complete, and a failure leaves nothing behind (docs/formats.md).

Every JSONL file is read by :func:`iter_jsonl` / :func:`read_jsonl`: a bad line is a
:class:`JsonlLineError` naming the file, the 1-based line (blank lines count) and, where one is at
fault, the field.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _temp_beside(dest: Path) -> tuple[int, Path]:
    """A temp file next to ``dest`` with the permissions a plain ``open`` would have given
    (``mkstemp`` makes it owner-only, which would survive the rename)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    os.fchmod(fd, 0o666 & ~_umask())
    return fd, Path(tmp)


@contextlib.contextmanager
def atomic_path(dest: str | Path, temp: str | Path | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``dest``; rename it onto ``dest`` if the block succeeds.

    For writers that want a path (``torch.save``, ``DataFrame.to_parquet``). ``temp`` fixes the
    temporary's name (in ``dest``'s folder), for callers whose next run must find what a killed
    one left (:func:`pacs.data.files.write_with_manifest`); by default it is a fresh hidden name."""
    dest = Path(dest)
    if temp is None:
        fd, tmp = _temp_beside(dest)
        os.close(fd)
    else:
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(temp)
    try:
        yield tmp
        os.replace(tmp, dest)
    finally:
        if tmp.exists():
            tmp.unlink()


@contextlib.contextmanager
def atomic_open(path: str | Path) -> Iterator[TextIO]:
    """Open a UTF-8 text file beside ``path``; on success fsync it and rename it to ``path``."""
    path = Path(path)
    fd, tmp = _temp_beside(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def dumps_row(row: dict[str, Any]) -> str:
    """One JSONL line (no newline); non-ASCII is kept as is."""
    return json.dumps(row, ensure_ascii=False)


def write_jsonl(path: str | Path, rows: Iterable[dict[str, Any]]) -> Path:
    """Write rows as JSON lines, atomically."""
    with atomic_open(path) as fh:
        for row in rows:
            fh.write(dumps_row(row) + "\n")
    return Path(path)


def write_json(path: str | Path, obj: Any) -> Path:
    """Write an indented JSON document, atomically."""
    with atomic_open(path) as fh:
        json.dump(obj, fh, indent=2, ensure_ascii=False)
        fh.write("\n")
    return Path(path)


def write_csv(path: str | Path, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Path:
    """Write a CSV with a header line, atomically; ``None`` becomes an empty cell."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if v is None else v for v in row])
    with atomic_open(path) as fh:
        fh.write(buf.getvalue())
    return Path(path)


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def atomic_dir(dest: str | Path) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``dest``; if the block succeeds, replace ``dest``
    (a folder, if any) with it. A failure leaves ``dest`` as it was and no temporary behind.

    The swap is two renames (the old folder aside, the new one in), not one atomic step: a crash
    between them leaves no ``dest`` (a missing output, never a partial one)."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it owner-only, which the rename would keep
    old = dest.with_name(f"{tmp.name}.old")
    try:
        yield tmp
        if dest.exists():
            os.replace(dest, old)
        os.replace(tmp, dest)
    finally:
        for leftover in (tmp, old):
            if leftover.exists():
                shutil.rmtree(leftover)


# ----------------------------------------------------------------------------------------------
# Reading JSONL
# ----------------------------------------------------------------------------------------------

# Python refuses str -> int past 4300 digits; such a number is kept as its text.
_INT_DIGITS = 4300


class FormatError(ValueError):
    """A malformed input file or row; the message names the file, the 1-based line and the field."""


class JsonlLineError(FormatError):
    """One bad line of a JSONL file; ``path``, ``line``, ``field`` and ``reason`` stay readable
    for callers that word their errors their own way (:mod:`pacs.data.readers`)."""

    def __init__(self, path: str | Path, line: int, reason: str, field: str | None = None):
        self.path, self.line, self.reason, self.field = str(path), line, reason, field
        where = f"{path}:{line}: " + (f"field {field!r}: " if field is not None else "")
        super().__init__(where + reason)


def parse_json_int(text: str) -> int | str:
    """``json.loads``'s ``parse_int``: an integer past Python's digit limit is kept as its text."""
    return int(text) if len(text.lstrip("-")) <= _INT_DIGITS else text


def unencodable_text(row: dict[str, Any]) -> tuple[str, str] | None:
    """``(field, reason)`` of the first string in ``row`` (keys too, at any depth) that UTF-8
    cannot encode (a lone surrogate from a JSON ``"\\ud800"`` escape), else None."""
    for field, value in row.items():
        stack = [field, value]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError as err:
                    return field, f"text is not valid Unicode ({err.reason})"
            elif isinstance(item, dict):
                stack += [*item.keys(), *item.values()]
            elif isinstance(item, list):
                stack += item
    return None


def _parse_line(path: Path, raw: bytes, line: int) -> dict[str, Any]:
    """One JSONL line as a dict, or a :class:`JsonlLineError` saying what is wrong with it."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        reason = f"not UTF-8: byte {raw[err.start : err.start + 1]!r} at byte {err.start + 1}"
        raise JsonlLineError(path, line, reason) from None
    try:
        row = json.loads(text, parse_int=parse_json_int)
    except json.JSONDecodeError as err:
        reason = f"invalid JSON at column {err.colno}: {err.msg}"
        raise JsonlLineError(path, line, reason) from None
    except RecursionError:
        raise JsonlLineError(path, line, "a value is nested too deeply to read") from None
    if not isinstance(row, dict):
        raise JsonlLineError(path, line, f"a JSON {type(row).__name__}, expected an object")
    bad_text = unencodable_text(row)
    if bad_text is not None:
        raise JsonlLineError(path, line, bad_text[1], bad_text[0])
    return row


def iter_jsonl(
    path: str | Path, *, allow_truncated_tail: bool = False
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, row)`` for each non-empty line of a JSONL file (lines end in ``\\n``).

    With ``allow_truncated_tail`` a last line that has no newline and does not read (a write that
    was cut off) is dropped silently; anywhere else a bad line raises :class:`JsonlLineError`.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: file not found")
    chunks = path.read_bytes().split(b"\n")
    for i, raw in enumerate(chunks, start=1):
        if not raw.strip():
            continue
        try:
            yield i, _parse_line(path, raw, i)
        except JsonlLineError:
            if allow_truncated_tail and i == len(chunks):  # the last chunk has no newline
                return
            raise


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Every row of a JSONL file (see :func:`iter_jsonl`)."""
    return [row for _, row in iter_jsonl(path)]
