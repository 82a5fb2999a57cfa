"""Which of ``make eval``'s stage outputs may be reused, and whether they are complete.

Each benchmark folder holds ``stages.json``: for every finished stage (``samples``, ``graded``,
``passk``) the sha256 of its output, of each of its inputs and of the protocol it ran under
(``protocol.json``'s settings). A stage is skipped only when all of them are as recorded now;
anything else (an edited, truncated or replaced file, a changed input, other settings, no
record) runs the stage again, after its old output is removed (so nothing made under other
settings is resumed). Modification times decide nothing.

A stage's output is checked before it is recorded: ``samples.jsonl`` must hold every problem of
the benchmark file (its first ``limit``) with sample indices ``0..n-1`` (``n`` of the protocol,
or one count per problem for generations made elsewhere), and ``graded.jsonl`` exactly the
samples' (problem, sample) pairs. A file that falls short is a :class:`FormatError` naming the
file, what is missing and the first problems concerned; no row is written after it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pacs.evaluation.io import FormatError, iter_jsonl, load_benchmark, require
from pacs.io import write_json

RECORD = "stages.json"
SHOWN = 5  # problem ids named in an error


def file_sha256(path: Path) -> str:
    """The sha256 of a file's content, read in 1 MB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def settings_sha256(settings: dict) -> str:
    """The sha256 of a protocol's settings (canonical JSON)."""
    text = json.dumps(settings, sort_keys=True, ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class StageRecord:
    """A benchmark folder's ``stages.json``: what each finished stage produced, from what."""

    def __init__(self, folder: Path, protocol: str) -> None:
        self.path = Path(folder) / RECORD
        self.protocol = protocol
        self.stages = self._load()

    def _load(self) -> dict:
        if not self.path.is_file():
            return {}
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise FormatError(f"{self.path}: corrupt (not JSON: {err}); delete it") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("stages"), dict):
            raise FormatError(f"{self.path}: corrupt (no 'stages' object); delete it")
        return doc["stages"]

    def reusable(self, stage: str, output: Path, inputs: dict[str, Path]) -> bool:
        """Whether ``output`` is what ``stage`` wrote from these inputs under this protocol."""
        entry = self.stages.get(stage)
        if not isinstance(entry, dict) or not Path(output).is_file():
            return False
        if entry.get("protocol") != self.protocol:
            return False
        if entry.get("sha256") != file_sha256(Path(output)):
            return False
        return entry.get("inputs") == {k: file_sha256(Path(p)) for k, p in inputs.items()}

    def forget(self, stage: str, *outputs: Path) -> None:
        """Before ``stage`` runs again: its record and its old outputs go."""
        if self.stages.pop(stage, None) is not None:
            self._save()
        for output in outputs:
            Path(output).unlink(missing_ok=True)

    def record(self, stage: str, output: Path, inputs: dict[str, Path]) -> None:
        self.stages[stage] = {
            "protocol": self.protocol,
            "sha256": file_sha256(Path(output)),
            "inputs": {k: file_sha256(Path(p)) for k, p in inputs.items()},
        }
        self._save()

    def _save(self) -> None:
        write_json(self.path, {"stages": self.stages})


def sample_keys(path: Path) -> dict[str, list[int]]:
    """problem_id -> its sample indices, in file order; a repeated pair is named."""
    keys: dict[str, list[int]] = {}
    seen: dict[tuple[str, int], int] = {}
    for line, row in iter_jsonl(path):
        pid = require(row, "problem_id", str, path, line)
        idx = require(row, "sample_idx", int, path, line)
        if (pid, idx) in seen:
            raise FormatError(
                f"{path}:{line}: fields 'problem_id', 'sample_idx' {(pid, idx)} repeat line "
                f"{seen[pid, idx]}"
            )
        seen[pid, idx] = line
        keys.setdefault(pid, []).append(idx)
    return keys


def _named(ids: list[str]) -> str:
    return ", ".join(ids[:SHOWN]) + (", ..." if len(ids) > SHOWN else "")


def check_samples(samples: Path, bench: Path, n: int | None, limit: int | None) -> None:
    """Every problem of ``bench`` (its first ``limit``) with samples ``0..n-1`` (``n`` None: any
    one count per problem, without gaps), and no other problem."""
    problems = [p["problem_id"] for p in load_benchmark(bench)[:limit]]
    keys = sample_keys(samples)
    missing = [p for p in problems if p not in keys]
    if missing:
        raise FormatError(
            f"{samples}: incomplete: {len(missing)} of the {len(problems)} problems of {bench} "
            f"have no sample ({_named(missing)})"
        )
    extra = sorted(set(keys) - set(problems))
    if extra:
        raise FormatError(f"{samples}: {len(extra)} problems not in {bench} ({_named(extra)})")
    short = [p for p in problems if sorted(keys[p]) != list(range(n or len(keys[p])))]
    if short:
        want = f"samples 0..{n - 1}" if n else "sample indices 0..k-1 without gaps"
        raise FormatError(
            f"{samples}: incomplete against the protocol: {len(short)} problems lack {want} "
            f"({_named(short)})"
        )


def check_graded(graded: Path, samples: Path) -> None:
    """``graded`` holds exactly the (problem, sample) pairs of ``samples``."""
    want, got = sample_keys(samples), sample_keys(graded)
    missing = [p for p in want if sorted(got.get(p, [])) != sorted(want[p])]
    extra = [p for p in got if p not in want]
    if missing or extra:
        raise FormatError(
            f"{graded}: does not match {samples}: {len(missing)} problems with samples missing "
            f"or different ({_named(missing)}), {len(extra)} problems not sampled "
            f"({_named(extra)})"
        )
