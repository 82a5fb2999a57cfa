"""Readers shared by the evaluation and report stages; errors name the file, the 1-based line
and the field. The JSONL reader (:func:`iter_jsonl`), its :class:`FormatError` and the atomic
writers live in :mod:`pacs.io`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pacs.io import FormatError, iter_jsonl

__all__ = ["FormatError", "iter_jsonl", "load_benchmark", "require"]


def require(
    row: dict, field: str, types: type | tuple[type, ...], path: str | Path, line: int
) -> Any:
    """Return ``row[field]``, raising :class:`FormatError` if it is missing or of the wrong type."""
    if field not in row:
        raise FormatError(f"{path}:{line}: missing field {field!r}")
    value = row[field]
    # bool is an int subclass; never accept it where a number is meant.
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise FormatError(f"{path}:{line}: field {field!r} must be {_type_names(types)}, got bool")
    if not isinstance(value, types):
        raise FormatError(
            f"{path}:{line}: field {field!r} must be {_type_names(types)}, "
            f"got {type(value).__name__} ({value!r:.60})"
        )
    return value


def _type_names(types: type | tuple[type, ...]) -> str:
    types = types if isinstance(types, tuple) else (types,)
    return " or ".join("null" if t is type(None) else t.__name__ for t in types)


def load_benchmark(path: str | Path) -> list[dict[str, Any]]:
    """Read a prepared benchmark file; check ``problem_id`` (unique), ``task`` and ``prompt``.

    Each returned row gets ``_line`` (its 1-based line number) for error messages. A manifest
    beside the file (``pacs.data``) must describe it: one that does not is refused.
    """
    from pacs.data.files import check_manifest

    check_manifest(path)
    rows: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for line, row in iter_jsonl(path):
        pid = require(row, "problem_id", str, path, line)
        require(row, "task", str, path, line)
        prompt = require(row, "prompt", list, path, line)
        if not prompt or not all(
            isinstance(m, dict) and "role" in m and "content" in m for m in prompt
        ):
            raise FormatError(
                f"{path}:{line}: field 'prompt' must be a non-empty list of "
                "{'role', 'content'} messages"
            )
        if pid in seen:
            raise FormatError(
                f"{path}:{line}: field 'problem_id' {pid!r} duplicates line {seen[pid]}"
            )
        seen[pid] = line
        rows.append({**row, "_line": line})
    if not rows:
        raise FormatError(f"{path}: benchmark file has no rows")
    return rows
