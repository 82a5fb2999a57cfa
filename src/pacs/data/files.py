"""Manifests of prepared data files (source, revision or local path, sha256, size, row count).

A manifest describes exactly one version of its data file: it records the file's sha256 and
size, and :func:`check_manifest` refuses a data file that its manifest does not describe (a
write that was killed between the two renames). :func:`write_with_manifest` renames the
manifest into place first and the data file last, so that a kill at any moment leaves either
the old pair, or a new manifest beside old (or no) data, which the check catches; never new data
beside a manifest that vouches for it falsely. Temporary files a killed run left behind are
removed by the next run. The atomic writers themselves live in :mod:`pacs.io`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pacs
from pacs.data.errors import DataError
from pacs.io import atomic_path, sha256_file, write_json

log = logging.getLogger(__name__)


def manifest_path(data_path: str | Path) -> Path:
    """``x/aime24.jsonl`` -> ``x/aime24.manifest.json`` (same for ``.parquet``)."""
    data_path = Path(data_path)
    return data_path.with_name(data_path.stem + ".manifest.json")


def staging_path(data_path: str | Path) -> Path:
    """Where the new data file waits while its manifest is written (hidden, ends in .tmp)."""
    data_path = Path(data_path)
    return data_path.with_name(f".{data_path.name}.staging.tmp")


def write_manifest(
    data_path: str | Path,
    *,
    benchmark: str,
    source: str,
    rows: int,
    dataset_id: str | None = None,
    revision: str | None = None,
    local_path: str | Path | None = None,
    dropped: int = 0,
    extra: dict[str, Any] | None = None,
    describes: str | Path | None = None,
) -> Path:
    """Write ``<stem>.manifest.json`` beside ``data_path`` in the docs/formats.md schema.

    ``describes``: the file whose bytes will become ``data_path`` (default: ``data_path``).
    """
    data_path = Path(data_path)
    content = Path(describes) if describes is not None else data_path
    manifest = {
        "file": data_path.name,
        "benchmark": benchmark,
        "source": source,
        "dataset_id": dataset_id,
        "revision": revision,
        "local_path": str(local_path) if local_path is not None else None,
        "sha256": sha256_file(content),
        "bytes": content.stat().st_size,
        "rows": rows,
        "dropped": dropped,
        "created_by": f"pacs {pacs.__version__} (pacs.data)",
    }
    if extra:
        manifest.update(extra)
    return write_json(manifest_path(data_path), manifest)


def remove_leftovers(dest: str | Path) -> list[Path]:
    """Temporary files of ``dest`` and of its manifest that a killed run left behind."""
    dest = Path(dest)
    names = (dest.name, manifest_path(dest).name, staging_path(dest).name)
    patterns = [f".{name}.*tmp" for name in names]
    removed = [p for pattern in patterns for p in dest.parent.glob(pattern)]
    for path in removed:
        path.unlink(missing_ok=True)
    if removed:
        log.info("removed %d temporary file(s) an interrupted run left: %s", len(removed), removed)
    return removed


def write_with_manifest(
    dest: str | Path,
    rows: list[dict[str, Any]],
    writer: Callable[[Path, list[dict[str, Any]]], Any],
    **manifest: Any,
) -> Path:
    """``writer(staging, rows)``, the manifest, then the data file renamed onto ``dest``."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    remove_leftovers(dest)
    with atomic_path(dest, temp=staging_path(dest)) as staging:
        writer(staging, rows)
        write_manifest(dest, rows=len(rows), describes=staging, **manifest)
    log.info("wrote %d rows to %s (dropped %d)", len(rows), dest, manifest.get("dropped", 0))
    return dest


def check_manifest(data_path: str | Path, required: bool = False) -> dict[str, Any] | None:
    """The manifest of ``data_path`` if it describes the file (name, size, sha256), else a
    :class:`DataError`. No manifest: None, or an error when ``required``."""
    data_path, path = Path(data_path), manifest_path(data_path)
    if not path.is_file():
        if required:
            raise DataError(path, f"missing: {data_path} has no manifest; prepare it again")
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DataError(path, f"unreadable manifest: {err}") from None
    if not isinstance(manifest, dict):
        raise DataError(path, "a manifest must be a JSON object")
    problem = _mismatch(manifest, data_path)
    if problem:
        raise DataError(
            path,
            f"does not describe {data_path}: {problem} (an interrupted write? prepare it again)",
        )
    return manifest


def _mismatch(manifest: dict[str, Any], data_path: Path) -> str | None:
    if not data_path.is_file():
        return "the data file is missing"
    if manifest.get("file") != data_path.name:
        return f"it is the manifest of {manifest.get('file')!r}"
    size = data_path.stat().st_size
    if "bytes" in manifest and manifest["bytes"] != size:
        return f"{manifest['bytes']} bytes recorded, {size} found"
    digest = sha256_file(data_path)
    if manifest.get("sha256") != digest:
        return f"sha256 {manifest.get('sha256')} recorded, {digest} found"
    return None
