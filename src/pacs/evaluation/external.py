"""Generations made elsewhere (another harness, the official scripts' output), checked and put in
our ``samples.jsonl`` form, so that our grader and pass@k score them (docs/formats.md, "Bring your
own generations"; ``python -m pacs.model_eval --generations FILE --benchmarks B``).

One JSON object per line: ``problem_id`` (str, one of the benchmark file's), ``sample_idx`` (int,
0..n-1 within its problem), ``response`` (str, the text after the prompt); optional
``finish_reason`` (``stop`` | ``length`` | ``unknown``; absent: ``unknown``, which the report shows
as such, never as 0 % cut) and ``n_tokens`` (int or null). Other
fields are ignored. Refused, naming file, row (line, from 1) and field: a missing or mistyped field,
a problem id that is not in the benchmark file (or one of another benchmark), a repeated
(problem_id, sample_idx), a gap in a problem's sample indices, a sample the engine failed on, and
a file that leaves benchmark problems out.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pacs.evaluation.backends import GRADABLE_FINISH_REASONS, UNKNOWN_FINISH
from pacs.evaluation.io import FormatError, iter_jsonl, load_benchmark, require
from pacs.io import write_jsonl

REQUIRED = {"problem_id": str, "sample_idx": int, "response": str}
SHOWN_MISSING = 5  # problem ids named when a file leaves problems out


def _check_row(row: dict, path: Path, line: int, known: dict[str, int], bench: Path) -> dict:
    """One foreign row in our samples form; refused with file, row and field."""
    for name, kind in REQUIRED.items():
        require(row, name, kind, path, line)
    pid, idx = row["problem_id"], row["sample_idx"]
    if pid not in known:
        raise FormatError(
            f"{path}:{line}: field 'problem_id' {pid!r} {_stranger(pid, known, bench)}"
        )
    if idx < 0:
        raise FormatError(f"{path}:{line}: field 'sample_idx' must be >= 0, got {idx}")
    reason = row.get("finish_reason", UNKNOWN_FINISH)
    if reason not in GRADABLE_FINISH_REASONS:
        raise FormatError(
            f"{path}:{line}: field 'finish_reason' is {reason!r}: not an answer (one of "
            f"{GRADABLE_FINISH_REASONS} expected; a sample the engine failed on must be generated "
            "again)"
        )
    n_tokens = (
        require(row, "n_tokens", (int, type(None)), path, line) if "n_tokens" in row else None
    )
    return {
        "problem_id": pid,
        "sample_idx": idx,
        "response": row["response"],
        "finish_reason": reason,
        "n_tokens": n_tokens,
    }


def _stranger(pid: str, known: dict[str, int], bench: Path) -> str:
    """Why an id is not ours: another benchmark's (its prefix differs), or just unknown."""
    ours = {k.split("/", 1)[0] for k in known}
    prefix = pid.split("/", 1)[0]
    if "/" in pid and prefix not in ours:
        return (
            f"belongs to benchmark {prefix!r}, not to {sorted(ours)} of {bench}: "
            "are the problem ids mixed up?"
        )
    return f"is not in benchmark file {bench}"


def read_foreign(path: Path, bench: Path, limit: int | None = None) -> list[dict]:
    """Every row of a foreign generations file, checked, in benchmark then sample order."""
    problems = load_benchmark(bench)[:limit]
    known = {p["problem_id"]: i for i, p in enumerate(problems)}
    rows, seen = [], {}
    for line, raw in iter_jsonl(path):
        row = _check_row(raw, path, line, known, bench)
        key = (row["problem_id"], row["sample_idx"])
        if key in seen:
            raise FormatError(
                f"{path}:{line}: fields 'problem_id', 'sample_idx' {key} repeat row {seen[key]}: "
                "duplicate sample"
            )
        seen[key] = line
        rows.append(row)
    if not rows:
        raise FormatError(f"{path}: no generations in the file")
    _check_complete(path, bench, rows, list(known), seen)
    return sorted(rows, key=lambda r: (known[r["problem_id"]], r["sample_idx"]))


def _check_complete(
    path: Path, bench: Path, rows: list[dict], pids: Sequence[str], seen: dict
) -> None:
    """Every benchmark problem answered, each with sample indices 0..n-1 (no gaps)."""
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["problem_id"]] = counts.get(r["problem_id"], 0) + 1
    missing = [p for p in pids if p not in counts]
    if missing:
        shown = ", ".join(missing[:SHOWN_MISSING]) + (
            ", ..." if len(missing) > SHOWN_MISSING else ""
        )
        raise FormatError(
            f"{path}: field 'problem_id': {len(missing)} of the {len(pids)} problems of {bench} "
            f"have no generation ({shown}); pass@k over a subset is not the benchmark's"
        )
    for pid, n in counts.items():
        gap = next((i for i in range(n) if (pid, i) not in seen), None)
        if gap is not None:
            raise FormatError(
                f"{path}: field 'sample_idx': problem {pid!r} has {n} samples but no sample_idx "
                f"{gap} (indices must run 0..n-1)"
            )


def convert(path: Path, bench: Path, out: Path, limit: int | None = None) -> Path:
    """Check ``path`` against the benchmark file and write it as our ``samples.jsonl``."""
    if not Path(path).is_file():
        raise FormatError(f"{path}: no such generations file")
    return write_jsonl(out, read_foreign(Path(path), Path(bench), limit))
