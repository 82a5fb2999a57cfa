"""Solution-path statistics of correct responses on the paths task
(docs/design.md#the-science-profile).

``python -m pacs.evaluation.paths --graded graded.jsonl --benchmark-file test.jsonl --out paths.json
--model tiny --run pacs --seed 0 [--subsample 4]``

On :mod:`pacs.data.synthetic.paths` every correct response adds the problem's quantities in
some order, its *path* (:func:`pacs.data.synthetic.paths.parse_path`). For each problem this
stage counts the paths of its correct responses and reports, over problems:

- ``path_diversity``: the probability that two distinct correct responses of a problem take
  different paths, ``1 - sum_i c_i (c_i - 1) / (m (m - 1))`` over the m parsed correct responses
  with path counts c_i. It is App. E's D with the discrete distance 1[path differs] instead of
  1 - cos, and an UNBIASED estimate of the Gini-Simpson index ``1 - sum_i p_i^2`` of the path
  distribution for any m >= 2, so methods with different accuracies compare fairly.
- ``path_entropy``: the plug-in (maximum-likelihood) entropy in nats of those m paths. It is
  biased low, by about (K - 1) / (2m) for K paths with mass (Miller-Madow); the exact bias is
  :func:`expected_plugin_entropy` minus the true entropy.
- ``path_entropy_sub``: the plug-in entropy of the FIRST ``subsample`` parsed correct responses
  (by sample_idx) of problems that have that many: a fixed sample size, so its bias is the same
  function of the path distribution for every method.

A correct response whose equations do not form a path is counted in ``unparsed_correct``.
Problems with fewer than 2 (or ``subsample``) parsed correct responses do not enter the means.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pacs.data.synthetic.path_stats import DEFAULT_SUBSAMPLE, mean_of, problem_stats
from pacs.data.synthetic.paths import parse_path
from pacs.evaluation.io import FormatError, iter_jsonl, require
from pacs.io import write_json
from pacs.rewards.result import is_correct

# ----------------------------------------------------------------------------- stage


def load_quantities(path: str | Path) -> dict[str, list[int]]:
    """problem_id -> quantities of a paths-task benchmark file (FormatError if a row lacks them)."""
    out = {}
    for line, row in iter_jsonl(path):
        pid = require(row, "problem_id", str, path, line)
        values = require(row, "quantities", list, path, line)
        if not values or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise FormatError(
                f"{path}:{line}: field 'quantities' must be a non-empty list of integers"
            )
        out[pid] = values
    return out


def collect(graded: str | Path, quantities: dict[str, list[int]]) -> dict[str, dict[str, Any]]:
    """Per problem: samples n, correct c, parsed correct paths (by sample_idx), unparsed count."""
    rows: dict[str, list[tuple[int, bool, str]]] = {}
    for line, row in iter_jsonl(graded):
        pid = require(row, "problem_id", str, graded, line)
        if pid not in quantities:
            raise FormatError(
                f"{graded}:{line}: field 'problem_id' {pid!r} is not in the benchmark file"
            )
        score = require(row, "score", (int, float), graded, line)
        rows.setdefault(pid, []).append(
            (
                require(row, "sample_idx", int, graded, line),
                is_correct(score),
                require(row, "response", str, graded, line),
            )
        )
    out = {}
    for pid, samples in rows.items():
        samples.sort()
        paths = [parse_path(text, quantities[pid]) for _, ok, text in samples if ok]
        out[pid] = {
            "n": len(samples),
            "c": len(paths),
            "paths": ["-".join(map(str, p)) for p in paths if p is not None],
            "unparsed_correct": sum(p is None for p in paths),
        }
    return out


def summarize(per_problem: dict[str, dict[str, Any]], subsample: int) -> dict[str, Any]:
    """The summary block of paths.json (means over problems, with how many problems entered)."""
    stats = {pid: problem_stats(p["paths"], subsample) for pid, p in per_problem.items()}
    out: dict[str, Any] = {"subsample": subsample}
    for key in ("path_diversity", "path_entropy", "path_entropy_sub"):
        out[key], out[f"{key}_problems"] = mean_of([s[key] for s in stats.values()])
    correct = sum(p["c"] for p in per_problem.values())
    unparsed = sum(p["unparsed_correct"] for p in per_problem.values())
    out["n_correct"], out["unparsed_correct"] = correct, unparsed
    return out


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m pacs.evaluation.paths", description=__doc__.split("\n")[0]
    )
    p.add_argument("--graded", required=True, type=Path)
    p.add_argument(
        "--benchmark-file", required=True, type=Path, help="paths-task rows with quantities"
    )
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--benchmark", default="synthetic")
    p.add_argument("--model", required=True)
    p.add_argument("--run", required=True)
    p.add_argument("--seed", required=True, type=int)
    p.add_argument(
        "--subsample",
        type=int,
        default=DEFAULT_SUBSAMPLE,
        help="sample size of path_entropy_sub (first this many parsed correct)",
    )
    args = p.parse_args(argv)
    if args.subsample < 2:
        p.error(f"--subsample must be >= 2, got {args.subsample}")
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    per_problem = collect(args.graded, load_quantities(args.benchmark_file))
    doc = {
        "benchmark": args.benchmark,
        "model": args.model,
        "run": args.run,
        "seed": args.seed,
        "n_problems": len(per_problem),
        **summarize(per_problem, args.subsample),
        "per_problem": per_problem,
    }
    write_json(args.out, doc)
    print(
        f"paths: {args.run} seed {args.seed}: diversity {doc['path_diversity']}, "
        f"entropy {doc['path_entropy']} over {doc['path_diversity_problems']} problems -> "
        f"{args.out}"
    )
    return doc


if __name__ == "__main__":
    main()
