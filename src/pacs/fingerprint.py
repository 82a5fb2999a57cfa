"""Run fingerprints: a checkpoint is only resumed by the run that wrote it.

A fingerprint is the sha256 of the canonical JSON (sorted keys, no whitespace) of every setting
that determines what a run trains. It is stored with the checkpoint together with the settings
themselves, so that a mismatch can name the keys that differ. The step budget is deliberately
left out of every fingerprint: extending a finished run to more steps is a legitimate resume.

Both engines share the policy (``--on-mismatch``): ``refuse`` (the default) stops with the
differing keys; ``restart`` sets the old run aside and starts from step 0.
"""

from __future__ import annotations

import hashlib
import json
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pacs import numerics
from pacs.io import sha256_file

ON_MISMATCH = ("refuse", "restart")
MAX_LISTED = 24  # differing keys spelled out in a message; the rest are counted


class FingerprintMismatch(RuntimeError):
    """A checkpoint was written under other settings than the run asking to resume it.

    ``keys`` holds the differing dotted keys; the message spells out their old and new values."""

    def __init__(self, where: Any, stored: dict | None, current: dict, hint: str):
        self.where = str(where)
        self.keys = differing_keys(stored, current)
        super().__init__(
            f"{where} was written by a run with other settings "
            f"({'; '.join(differences(stored, current))}). "
            f"{hint}"
        )


def canonical_json(obj: Any) -> str:
    """One spelling per value: sorted keys, no whitespace, tuples as lists, paths as strings."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def fingerprint(settings: dict[str, Any]) -> dict[str, Any]:
    """``{"sha256", "settings"}``: the hash and the canonical settings it was computed from."""
    text = canonical_json(settings)
    return {
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "settings": json.loads(text),
    }


def rows_digest(rows: Any) -> str:
    """sha256 of the canonical JSON of a data set's rows (order matters: it drives sampling)."""
    return hashlib.sha256(canonical_json(list(rows)).encode("utf-8")).hexdigest()


def folder_digest(path: str | Path, skip: tuple[str, ...] = ()) -> str:
    """sha256 over the names and contents of a folder's files (minus ``skip`` names); for a
    path that is not a folder (a hub id), the path itself."""
    path = Path(path)
    if not path.is_dir():
        return f"path:{path}"
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file() and p.name not in skip):
        digest.update(f"{file.relative_to(path).as_posix()}\0{sha256_file(file)}\0".encode())
    return digest.hexdigest()


def _flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(obj, dict) and obj:
        out: dict[str, Any] = {}
        for key, value in obj.items():
            out.update(_flatten(value, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): obj}


NO_FINGERPRINT = "<no fingerprint>"


def differing_keys(stored: dict[str, Any] | None, current: dict[str, Any]) -> list[str]:
    """Dotted setting keys whose values differ (``["lr", "run.method"]``); empty when the
    fingerprints agree. ``stored`` None, a checkpoint from before fingerprints:
    ``[NO_FINGERPRINT]``."""
    if stored is None:
        return [NO_FINGERPRINT]
    if stored.get("sha256") == current["sha256"]:
        return []
    old, new = _flatten(stored.get("settings") or {}), _flatten(current["settings"])
    missing = object()
    keys = [
        k for k in sorted(old.keys() | new.keys()) if old.get(k, missing) != new.get(k, missing)
    ]
    return keys or ["sha256"]  # same settings, other hash: the hashing itself changed


def differences(stored: dict[str, Any] | None, current: dict[str, Any]) -> list[str]:
    """One readable line per differing key (``"run.method: 'pacs' -> 'grpo'"``), at most
    ``MAX_LISTED`` of them; empty when the fingerprints agree."""
    keys = differing_keys(stored, current)
    if keys == [NO_FINGERPRINT]:
        return ["the checkpoint has no run fingerprint (written before fingerprints existed)"]
    old = _flatten((stored or {}).get("settings") or {}) | {"sha256": (stored or {}).get("sha256")}
    new = _flatten(current["settings"]) | {"sha256": current["sha256"]}
    lines = [f"{k}: {old.get(k, '<absent>')!r} -> {new.get(k, '<absent>')!r}" for k in keys]
    if len(lines) > MAX_LISTED:
        lines = lines[:MAX_LISTED] + [f"... and {len(lines) - MAX_LISTED} more"]
    return lines


# Set by the container image (envs/gpu/pacs.def) to the commit it was built from ("+edits" when
# tracked files differed): the package is installed there from a copy without .git.
COMMIT_ENV = "PACS_CODE_COMMIT"


def code_commit(where: str | Path | None = None) -> str | None:
    """The git commit of the code at ``where`` (default: this package), ``+edits`` appended when
    tracked files differ from it; outside a git checkout (an installed copy) the commit the
    environment's ``PACS_CODE_COMMIT`` names (the container image's), else None. A trainer
    writes it into ``summary.json`` (``commit``), which the report's runs table shows."""
    import os
    import subprocess

    folder = str(where or Path(__file__).parent)

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", folder, *args], capture_output=True, text=True, check=True, timeout=30
        ).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        edited = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return os.environ.get(COMMIT_ENV, "").strip() or None
    return commit + ("+edits" if edited else "")


def job_times(started: float, finished: float | None = None) -> dict[str, Any]:
    """A job's own start and end (``time.time()`` values) for its ``summary.json``: ISO-8601 UTC
    times and the seconds between, and the arithmetic path it ran on (``numerics``:
    :func:`pacs.numerics.describe`). The runs table's wall time reads ``job_seconds``: the whole
    job (loading, evaluation and saving included), not the sum of its steps' times."""
    finished = time.time() if finished is None else finished
    if finished < started:
        raise ValueError(f"job_times: finished {finished} is before started {started}")

    def iso(t: float) -> str:
        return datetime.fromtimestamp(t, tz=timezone.utc).isoformat(timespec="seconds")

    return {
        "job_started_at": iso(started),
        "job_finished_at": iso(finished),
        "job_seconds": round(finished - started, 2),
        "numerics": numerics.describe(),
    }
