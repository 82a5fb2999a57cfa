"""Split one evaluation (a model × a benchmark) into generation jobs that fit a job time limit.

At n = 256 samples of up to 8192 tokens, MATH500 alone is about 576 M generated tokens: 20–27 h for
Qwen3-8B on one H200, beyond a 12 h job. The DAG therefore scatters ``generate`` over shards of
consecutive problems and gathers them (``python -m pacs.evaluation.shards gather``).

Sizing (``plan_shard_size``), from the config's ``eval.shard`` (docs: README "Paper scale"):
every response is assumed to run to ``max_new_tokens`` (the worst case), generated at
``tokens_per_s`` on one GPU; a shard holds as many problems as fit into ``job_minutes`` less the
``margin`` fraction kept free (model load, slower nodes, longer prompts). Shard k holds problems
[k·S, (k+1)·S) of the benchmark (after ``eval.limit``), in benchmark order, so the gathered file
is the unsharded run's file: the vllm backend seeds each problem by its index, and for the hf
backend, whose seed is per chunk of problems, S is a multiple of the chunk size.

``python -m pacs.evaluation.shards gather --benchmark-file B --n N [--limit K] [--shard-size S]
--out samples.jsonl SHARD...`` checks that shard k holds exactly its problems with all N samples
each, and writes their rows in order (to a temporary file, then renamed).
"""

from __future__ import annotations

import argparse
import logging
import math
from collections.abc import Sequence
from pathlib import Path

from pacs.evaluation.io import FormatError, iter_jsonl, load_benchmark
from pacs.io import write_jsonl

log = logging.getLogger(__name__)


def plan_shard_size(
    n_samples: int,
    max_new_tokens: int,
    tokens_per_s: float,
    job_minutes: float,
    margin: float,
    align: int = 1,
) -> int:
    """Problems per shard: the worst-case generation time of a shard stays within
    ``job_minutes · (1 − margin)``. Rounded down to a multiple of ``align``; raise when not even
    ``align`` problems fit."""
    if not 0 <= margin < 1 or tokens_per_s <= 0 or job_minutes <= 0 or align < 1:
        raise ValueError(
            f"eval.shard needs 0 <= margin < 1, tokens_per_s > 0, job_minutes > 0 (got margin="
            f"{margin}, tokens_per_s={tokens_per_s}, job_minutes={job_minutes}); align={align}"
        )
    budget_s = job_minutes * 60 * (1 - margin)
    per_problem_s = n_samples * max_new_tokens / tokens_per_s
    size = int(budget_s // per_problem_s) // align * align
    if size < align:
        raise ValueError(
            f"one shard of {align} problem(s) × {n_samples} samples × {max_new_tokens} tokens at "
            f"{tokens_per_s} tokens/s needs {align * per_problem_s / 60:.0f} min, more than the "
            f"{budget_s / 60:.0f} min a shard may use (eval.shard.job_minutes × (1 − margin))"
        )
    return size


def shard_minutes(size: int, n_samples: int, max_new_tokens: int, tokens_per_s: float) -> float:
    """Worst-case generation minutes of a shard of ``size`` problems."""
    return size * n_samples * max_new_tokens / tokens_per_s / 60


def shard_count(n_problems: int, shard_size: int | None) -> int:
    """Shards covering ``n_problems`` (one when unsharded, also for an empty benchmark)."""
    if not shard_size or n_problems <= shard_size:
        return 1
    return math.ceil(n_problems / shard_size)


def shard_range(index: int, shard_size: int | None, n_problems: int) -> range:
    """Benchmark positions of shard ``index`` (all of them when unsharded)."""
    if not shard_size:
        if index != 0:
            raise ValueError(f"unsharded generation has only shard 0, got {index}")
        return range(n_problems)
    start = index * shard_size
    return range(min(start, n_problems), min(start + shard_size, n_problems))


def read_shard(path: Path, pids: Sequence[str], n: int) -> list[dict]:
    """The rows of one shard file; raise unless they are exactly ``pids`` × samples 0..n-1, in
    order."""
    rows = [row for _, row in iter_jsonl(path)]
    expected = [(pid, j) for pid in pids for j in range(n)]
    got = [(row.get("problem_id"), row.get("sample_idx")) for row in rows]
    if got != expected:
        bad = next(
            (i for i, (a, b) in enumerate(zip(got, expected)) if a != b),
            min(len(got), len(expected)),
        )
        found = got[bad] if bad < len(got) else "end of file"
        want = expected[bad] if bad < len(expected) else "end of file"
        raise FormatError(
            f"{path}:{bad + 1}: fields 'problem_id', 'sample_idx' are {found}, expected {want}: "
            f"the shard does not hold its {len(pids)} problems × {n} samples (was it made with "
            "other settings? delete it and rerun)"
        )
    return rows


def gather(
    shards: Sequence[Path],
    benchmark_file: Path,
    n: int,
    out: Path,
    shard_size: int | None = None,
    limit: int | None = None,
) -> Path:
    """Check every shard against its share of the benchmark and write their rows to ``out``."""
    pids = [row["problem_id"] for row in load_benchmark(benchmark_file)[:limit]]
    expected = shard_count(len(pids), shard_size)
    if len(shards) != expected:
        raise ValueError(
            f"{out}: {len(pids)} problems in shards of {shard_size} make {expected} shard(s), "
            f"got {len(shards)} files; rerun snakemake so that it plans the shards again"
        )
    rows = []
    for index, path in enumerate(shards):
        part = shard_range(index, shard_size, len(pids))
        rows += read_shard(Path(path), [pids[i] for i in part], n)
    write_jsonl(out, rows)
    log.info("%s: %d problems × %d samples from %d shard(s)", out, len(pids), n, len(shards))
    return out


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m pacs.evaluation.shards")
    sub = p.add_subparsers(dest="command", required=True)
    g = sub.add_parser("gather", help="merge generate's shard files into samples.jsonl")
    g.add_argument("shards", nargs="+", type=Path, help="shard files, shard 0 first")
    g.add_argument("--benchmark-file", required=True, type=Path)
    g.add_argument("--n", required=True, type=int, help="samples per problem")
    g.add_argument("--out", required=True, type=Path)
    g.add_argument("--shard-size", type=int, default=None, help="problems per shard")
    g.add_argument("--limit", type=int, default=None, help="only the first K problems")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> Path:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    return gather(args.shards, args.benchmark_file, args.n, args.out, args.shard_size, args.limit)


if __name__ == "__main__":
    main()
