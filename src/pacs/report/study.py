"""The checkpoint study's data (docs/design.md#the-study-design): one row per run × seed ×
checkpoint.

Inputs, relative to ``results/<profile>/``:

- ``eval/<model>/<run>/seed<k>/<benchmark>/path_exact.json`` (:mod:`pacs.evaluation.path_exact`):
  per checkpoint step and problem, the exact path entropy, Gini-Simpson index and mass on the
  canonical solutions; the base model is run ``base``, seed 0, step 0;
- ``train/.../eval_curve.jsonl``: the in-loop held-out pass@1 (the normal split) at each
  checkpoint (``ctx.results.curves``);
- ``train/.../metrics.jsonl``: the token entropy of the training rollouts, averaged over the steps
  since the previous checkpoint (the window that checkpoint's policy finished).

:func:`checkpoint_table` joins them; the base model's row (step 0) is given to every run and seed,
since every run starts from it. ``tables/study_checkpoints.csv`` is that table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pacs import layout
from pacs.config import BASE_RUN
from pacs.evaluation.io import FormatError
from pacs.layout import ANY, SYNTHETIC

from .context import ReportContext
from .loaders import agree, need, read_json, seed_of
from .outputs import OutputLog

EXACT_METRICS = ("entropy", "gini_simpson", "mass")
EXACT_COLUMNS = ["model", "run", "seed", "benchmark", "step", "problem", *EXACT_METRICS]


def load_path_exact(root: str | Path) -> pd.DataFrame:
    """Every ``path_exact.json`` under ``root`` as one tidy frame (EXACT_COLUMNS); a file whose
    fields are missing or disagree with its folder is a FormatError naming file and field."""
    root = Path(root)
    pattern = f"{layout.eval_dir('', ANY, ANY, ANY, ANY)}/path_exact.json"
    rows: list[dict[str, Any]] = []
    for path in sorted(root.glob(pattern)):
        rows.extend(read_path_exact(path, root))
    return pd.DataFrame(rows, columns=EXACT_COLUMNS)


def read_path_exact(path: Path, root: Path) -> list[dict[str, Any]]:
    rel = path.relative_to(root).parts  # eval/<model>/<run>/seed<k>/<benchmark>/path_exact.json
    model, run, seed, benchmark = rel[1], rel[2], seed_of(rel[3], path), rel[4]
    doc, where = read_json(path), str(path)
    for key, expected in (("model", model), ("run", run), ("benchmark", benchmark)):
        agree(path, key, need(doc, key, "str", where), expected)
    agree(path, "seed", need(doc, "seed", "int", where), seed)
    out = []
    for step, block in need(doc, "steps", "dict", where).items():
        if not step.isdigit():
            raise FormatError(f"{path}: steps.{step}: a step must be a non-negative integer")
        at = f"{where}: steps.{step}"
        for pid, rec in need(block, "per_problem", "dict", at).items():
            values = {
                m: need(rec, m, "number", f"{at}.per_problem.{pid}", nullable=True)
                for m in EXACT_METRICS
            }
            head = {"model": model, "run": run, "seed": seed, "benchmark": benchmark}
            out.append({**head, "step": int(step), "problem": pid, **_nan(values)})
    return out


def _nan(values: dict) -> dict:
    return {k: np.nan if v is None else float(v) for k, v in values.items()}


def exact_means(exact: pd.DataFrame) -> pd.DataFrame:
    """Per (run, seed, benchmark, step): the means over problems of EXACT_METRICS."""
    if exact.empty:
        return pd.DataFrame(columns=["run", "seed", "benchmark", "step", *EXACT_METRICS])
    keys = ["run", "seed", "benchmark", "step"]
    return exact.groupby(keys, as_index=False)[list(EXACT_METRICS)].mean()


def window_entropy(metrics: pd.DataFrame, steps: list[int]) -> pd.DataFrame:
    """Per (run, seed, checkpoint): the mean token entropy of the rollouts of the steps after
    the previous checkpoint up to this one (none at step 0)."""
    if metrics.empty or "entropy" not in metrics.columns or not steps:
        return pd.DataFrame(columns=["run", "seed", "step", "token_entropy"])
    edges = [0, *sorted(s for s in steps if s > 0)]
    m = metrics[metrics["entropy"].notna() & (metrics["step"] > 0)].copy()
    m = m[m["step"] <= edges[-1]]
    m["checkpoint"] = pd.cut(m["step"], edges, labels=edges[1:], right=True).astype(int)
    out = m.groupby(["run", "seed", "checkpoint"], as_index=False)["entropy"].mean()
    return out.rename(columns={"checkpoint": "step", "entropy": "token_entropy"})


def checkpoint_table(ctx: ReportContext, exact: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (run, seed, checkpoint step) of the trained runs, the base's step 0 row given
    to each: pass@1 (in-loop, normal split), the window's token entropy, and the exact path
    statistics on each benchmark (columns ``<metric>_<benchmark>``)."""
    exact = load_path_exact(ctx.results.root) if exact is None else exact
    steps = [0, *ctx.matrix.checkpoint_steps]
    runs = [r for r in ctx.spec.runs]
    curves = ctx.results.curves
    curves = curves[curves["run"].isin(runs) & curves["step"].isin(steps)]
    table = curves[["run", "seed", "step", "pass_at_1"]].astype({"seed": int, "step": int})
    entropy = window_entropy(ctx.results.metrics, steps)
    table = table.merge(entropy, on=["run", "seed", "step"], how="outer")
    wide = _exact_wide(exact_means(exact), runs, table)
    if not wide.empty:
        table = table.merge(wide, on=["run", "seed", "step"], how="outer")
    return table.sort_values(["run", "seed", "step"], ignore_index=True)


def _exact_wide(means: pd.DataFrame, runs: list[str], table: pd.DataFrame) -> pd.DataFrame:
    """The exact means as columns per benchmark, the base's step 0 copied to every run × seed
    that the table (or the exact files) has."""
    if means.empty:
        return pd.DataFrame()
    base = means[means["run"] == BASE_RUN]
    own = means[means["run"].isin(runs)]
    pairs = pd.concat([own[["run", "seed"]], table[["run", "seed"]]]).drop_duplicates()
    copies = [base.assign(run=r, seed=s) for r, s in pairs.itertuples(index=False)]
    both = pd.concat([own, *copies], ignore_index=True) if copies else own
    wide = both.pivot_table(
        index=["run", "seed", "step"], columns="benchmark", values=list(EXACT_METRICS)
    )
    wide.columns = [f"{m}_{b}" for m, b in wide.columns]
    return wide.reset_index().astype({"seed": int, "step": int})


def exact_column(metric: str, benchmark: str) -> str:
    return f"{metric}_{benchmark}"


def hard_benchmark(ctx: ReportContext) -> str | None:
    study = ctx.spec.study
    return None if study is None else study.hard.benchmark


def write_study_table(ctx: ReportContext, log: OutputLog) -> pd.DataFrame | None:
    """``tables/study_checkpoints.csv`` (only for profiles with a ``study:`` section); returns
    the table for the figures (:mod:`pacs.report.study_figures`), None when there is none."""
    if ctx.spec.study is None:
        return None
    table = checkpoint_table(ctx)
    if table.empty:
        log.skip("checkpoint study", "no eval_curve.jsonl, metrics.jsonl or path_exact.json")
        return None
    log.write_text(
        "tables/study_checkpoints.csv",
        table.to_csv(index=False, lineterminator="\n"),
        "Checkpoint study: pass@1, token entropy and exact path statistics per run, seed and "
        f"step (normal split: {SYNTHETIC}; hard split: {hard_benchmark(ctx)}) (tidy, CSV)",
    )
    return table
