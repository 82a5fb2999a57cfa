"""The science study's raw data, compact enough to commit beside its report (docs/science.md).

``claims_cells.csv`` holds the values the claims statistics used; this is what those values are
computed from, so that token entropy (C3), the exact path statistics (C4), the sampled path
statistics (C4-s), the in-loop pass@1 (C1-n) and ψ during training recompute from the repository
alone (``tests/report/test_science_data.py`` does it with its own arithmetic). The report of a
profile with a ``study:`` section writes them to its ``data/`` folder (:func:`write_raw_data`);
for an existing results tree::

    python -m pacs.report.science_data --results results/science --out DIR

writes four gzipped CSV files, one tidy row each:

- ``metrics.csv.gz``: every training step of every run × seed, every ``metrics.jsonl`` field
  (token entropy, ψ and the pre-clip gradient norm per mini-batch, reward, times, ...);
- ``eval_curve.csv.gz``: the in-loop held-out pass@1 at every checkpoint;
- ``paths.csv.gz``: per run × seed × benchmark × problem of every ``paths.json``: samples ``n``,
  correct ``c`` and the parsed paths of the correct responses in sample order (space-separated);
- ``path_logp.csv.gz``: per run × seed × benchmark × problem × canonical path, log p of the path's
  text at each run's **last** checkpoint (and the base model's, step 0), from ``path_exact.json``;
  every checkpoint's means are ``tables/study_checkpoints.csv`` in the report.

Floats are written with 17 significant digits, so recomputed values equal the report's exactly.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from pacs import layout
from pacs.io import atomic_dir, iter_jsonl
from pacs.layout import ANY

from .loaders import GLOBS, Results, load_results, need, read_json, run_parts, seed_of
from .outputs import OutputLog

FLOAT = "%.17g"
STRING_COLUMNS = ("model", "run", "benchmark", "problem", "paths", "path")
PATHS_COLUMNS = ["model", "run", "seed", "benchmark", "problem", "n", "c", "paths"]
LOGP_COLUMNS = ["model", "run", "seed", "benchmark", "step", "problem", "path", "logp"]
DESCRIPTIONS = {
    "metrics.csv.gz": "raw data: every training step of every run and seed (metrics.jsonl)",
    "eval_curve.csv.gz": "raw data: the in-loop held-out pass@1 at every checkpoint",
    "paths.csv.gz": "raw data: per problem, samples, correct ones and their parsed paths",
    "path_logp.csv.gz": "raw data: log p of each canonical path at each run's last checkpoint",
}


def _parts(path: Path, root: Path) -> tuple[str, str, int, str]:
    rel = path.relative_to(root).parts  # eval/<model>/<run>/seed<k>/<benchmark>/<file>
    return rel[1], rel[2], seed_of(rel[3], path), rel[4]


def _eval_files(root: Path, name: str) -> list[Path]:
    return sorted(root.glob(f"{layout.eval_dir('', ANY, ANY, ANY, ANY)}/{name}"))


def metrics_frame(root: Path) -> pd.DataFrame:
    """Every ``metrics.jsonl`` row under ``root`` with all its fields, the per-mini-batch ones
    included (the report's own metrics table keeps only the fields it plots)."""
    rows = []
    for path in sorted(root.glob(GLOBS["metrics"])):  # the report loader's own pattern
        model, run, seed = run_parts(path, root)
        for _, row in iter_jsonl(path, allow_truncated_tail=True):
            rows.append({"model": model, "run": run, "seed": seed, **row})
    return pd.DataFrame(rows)


def paths_frame(root: Path) -> pd.DataFrame:
    """Every ``paths.json`` under ``root`` as one row per problem (PATHS_COLUMNS)."""
    rows = []
    for path in _eval_files(root, "paths.json"):
        model, run, seed, benchmark = _parts(path, root)
        doc = read_json(path)
        for pid, rec in need(doc, "per_problem", "dict", str(path)).items():
            where = f"{path}: per_problem.{pid}"
            paths = need(rec, "paths", "list", where)
            row = (model, run, seed, benchmark, pid, need(rec, "n", "int", where))
            rows.append((*row, need(rec, "c", "int", where), " ".join(paths)))
    return pd.DataFrame(rows, columns=PATHS_COLUMNS)


def last_checkpoint_logp(root: Path) -> pd.DataFrame:
    """The per-path log-probs of each ``path_exact.json``'s last step (LOGP_COLUMNS)."""
    rows = []
    for path in _eval_files(root, "path_exact.json"):
        model, run, seed, benchmark = _parts(path, root)
        steps = need(read_json(path), "steps", "dict", str(path))
        if not steps:
            continue
        last = max(steps, key=int)
        where = f"{path}: steps.{last}"
        for pid, rec in need(steps[last], "per_problem", "dict", where).items():
            for order, logp in need(rec, "logp", "dict", f"{where}.per_problem.{pid}").items():
                value = -math.inf if logp is None else float(logp)
                rows.append((model, run, seed, benchmark, int(last), pid, order, value))
    return pd.DataFrame(rows, columns=LOGP_COLUMNS)


def export(results: str | Path, out: str | Path, loaded: Results | None = None) -> dict[str, int]:
    """Write the four files of the module doc for ``results`` (a ``results/<profile>`` folder;
    ``loaded``: its tables if already read) into ``out`` (replaced as a whole, never left
    half-written); rows per file, 0 for a file not written because it would be empty."""
    root = Path(results)
    loaded = load_results(root) if loaded is None else loaded
    frames = {
        "metrics.csv.gz": metrics_frame(root),
        "eval_curve.csv.gz": loaded.curves,
        "paths.csv.gz": paths_frame(root),
        "path_logp.csv.gz": last_checkpoint_logp(root),
    }
    if all(frame.empty for frame in frames.values()):
        raise FileNotFoundError(f"{root}: no metrics, curves, paths.json or path_exact.json")
    with atomic_dir(out) as tmp:
        for name, frame in frames.items():
            if frame.empty:  # e.g. a run without path_exact.json: that file is absent, not empty
                continue
            # mtime=0: the same data give byte-identical files
            frame.to_csv(
                tmp / name,
                index=False,
                float_format=FLOAT,
                compression={"method": "gzip", "mtime": 0},
            )
    return {name: len(frame) for name, frame in frames.items()}


def write_raw_data(results: Results, log: OutputLog) -> None:
    """The report's ``data/`` folder (a study profile's report), listed in its README."""
    try:
        counts = export(results.root, log.out / "data", loaded=results)
    except FileNotFoundError as err:
        log.skip("raw data (data/)", str(err))
        return
    for name, rows in counts.items():
        if rows:
            log.written.append((f"data/{name}", f"{DESCRIPTIONS[name]}, {rows} rows (gzipped CSV)"))
        else:
            log.skip(f"data/{name}", "no such results under the results folder")


def read(data: str | Path, name: str) -> pd.DataFrame:
    """One exported file back as a frame (problem ids and paths as strings; an empty numeric
    cell, e.g. a ψ column in a GRPO row, is NaN, an empty ``paths`` stays "")."""
    path = Path(data) / name
    columns = pd.read_csv(path, nrows=0).columns
    return pd.read_csv(
        path,
        dtype={c: str for c in STRING_COLUMNS if c in columns},
        keep_default_na=False,
        na_values={c: [""] for c in columns if c not in STRING_COLUMNS},
    )


def main(argv: Sequence[str] | None = None) -> dict[str, int]:
    parser = argparse.ArgumentParser(prog="python -m pacs.report.science_data", description=__doc__)
    parser.add_argument("--results", required=True, help="a results/<profile> folder")
    parser.add_argument("--out", required=True, help="the folder to write (replaced)")
    args = parser.parse_args(argv)
    counts = export(args.results, args.out)
    for name, rows in counts.items():
        print(f"{Path(args.out) / name}: {rows} rows")
    return counts


if __name__ == "__main__":
    main()
