"""Grade sampled responses against a prepared benchmark: ``graded.jsonl`` (docs/formats.md).

``python -m pacs.evaluation.grade --samples samples.jsonl --benchmark-file B.jsonl
--out graded.jsonl [--workers 2] [--chunk-size 2048]``

Each samples row gets ``task, score, extracted, status`` from :func:`pacs.rewards.grade_rows`
(math / gpqa / code by the benchmark row's ``task``); code rows also get ``tests_status``. The
counts of each status are logged, so that a grader that silently fails (e.g. every answer timing
out) is visible.
"""

from __future__ import annotations

import argparse
import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pacs.evaluation.io import FormatError, iter_jsonl, load_benchmark, require
from pacs.io import write_jsonl
from pacs.progress import ConsoleBar

log = logging.getLogger(__name__)

STATUSES = ("ok", "no_answer", "timeout", "error")


def load_samples(
    path: str | Path, bench_path: str | Path, bench: dict[str, dict]
) -> list[tuple[dict, dict]]:
    """(samples row, benchmark row) pairs; every problem_id must be in the benchmark file."""
    pairs = []
    seen: dict[tuple[str, int], int] = {}
    for line, row in iter_jsonl(path):
        pid = require(row, "problem_id", str, path, line)
        idx = require(row, "sample_idx", int, path, line)
        require(row, "response", str, path, line)
        _check_answer(row, path, line)
        if pid not in bench:
            raise FormatError(
                f"{path}:{line}: field 'problem_id' {pid!r} is not in benchmark file {bench_path}"
            )
        if (pid, idx) in seen:
            raise FormatError(
                f"{path}:{line}: field 'sample_idx' {idx} of problem {pid!r} "
                f"duplicates line {seen[pid, idx]}"
            )
        seen[pid, idx] = line
        pairs.append((row, bench[pid]))
    if not pairs:
        raise FormatError(f"{path}: samples file has no rows")
    return pairs


def _check_answer(row: dict, path: str | Path, line: int) -> None:
    """Refuse a sample the engine failed on (vLLM "abort"/"error"/unfinished): it is no answer."""
    from pacs.evaluation.backends import GRADABLE_FINISH_REASONS

    reason = row.get("finish_reason", "stop")
    if reason not in GRADABLE_FINISH_REASONS:
        raise FormatError(
            f"{path}:{line}: field 'finish_reason' is {reason!r}: the generation engine failed on "
            f"this sample, so it is not an answer to grade (expected one of "
            f"{GRADABLE_FINISH_REASONS}); generate this file again"
        )


def graded_row(sample: dict, bench_row: dict, result: Any) -> dict:
    """A samples row plus the grader's verdict."""
    if result.status not in STATUSES:
        raise ValueError(
            f"grader returned status {result.status!r} for problem {sample['problem_id']!r}, "
            f"sample {sample['sample_idx']}; expected one of {STATUSES}"
        )
    row = {
        **sample,
        "task": bench_row["task"],
        "score": float(result.score),
        "extracted": result.extracted,
        "status": result.status,
    }
    if bench_row["task"] == "code":
        row["tests_status"] = (result.details or {}).get("tests_status")
    return row


def grade_pairs(
    pairs: Sequence[tuple[dict, dict]],
    workers: int = 2,
    chunk_size: int = 2048,
    progress: bool = True,
) -> list[dict]:
    """Grade in chunks (for the progress bar) through :func:`pacs.rewards.grade_rows`."""
    from pacs.rewards import grade_rows

    out: list[dict] = []
    with ConsoleBar(total=len(pairs), unit="sample", desc="grade", disable=not progress) as bar:
        for start in range(0, len(pairs), chunk_size):
            chunk = pairs[start : start + chunk_size]
            bench_rows = [_public(b) for _, b in chunk]
            results = grade_rows(bench_rows, [s["response"] for s, _ in chunk], workers=workers)
            if len(results) != len(chunk):
                raise RuntimeError(
                    f"grade_rows returned {len(results)} results for {len(chunk)} responses"
                )
            out.extend(graded_row(s, b, r) for (s, b), r in zip(chunk, results))
            bar.update(len(chunk))
    return out


def _public(bench_row: dict) -> dict:
    """The benchmark row without loader bookkeeping (keys starting with '_')."""
    return {k: v for k, v in bench_row.items() if not k.startswith("_")}


def status_counts(rows: Sequence[dict]) -> dict[str, int]:
    counts = Counter(r["status"] for r in rows)
    return {s: counts.get(s, 0) for s in STATUSES}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m pacs.evaluation.grade", description="Grade samples.jsonl."
    )
    p.add_argument("--samples", required=True, type=Path)
    p.add_argument("--benchmark-file", required=True, type=Path)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--workers", type=int, default=2, help="grader processes")
    p.add_argument("--chunk-size", type=int, default=2048, help="responses per grade_rows call")
    args = p.parse_args(argv)
    if args.workers < 1 or args.chunk_size < 1:
        p.error("--workers and --chunk-size must be >= 1")
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, int]:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    bench = {r["problem_id"]: r for r in load_benchmark(args.benchmark_file)}
    pairs = load_samples(args.samples, args.benchmark_file, bench)
    rows = grade_pairs(pairs, workers=args.workers, chunk_size=args.chunk_size)
    write_jsonl(args.out, rows)
    counts = status_counts(rows)
    mean = sum(r["score"] for r in rows) / len(rows)
    msg = f"{args.out}: {len(rows)} graded, mean score {mean:.4f}, status counts {counts}"
    log.info(msg)
    print(msg)
    if counts["timeout"] or counts["error"]:
        log.warning(
            "%s: %d timeouts and %d errors while grading",
            args.out,
            counts["timeout"],
            counts["error"],
        )
    return counts


if __name__ == "__main__":
    main()
