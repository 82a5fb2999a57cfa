"""A claims table's raw cells (``tables/claims_cells.csv``) recomputed from the study's exported
raw data (``python -m pacs.report.science_data``) with this file's own arithmetic: pass@k from
(n, c), the late token entropy and the in-loop pass@1 from the per-step rows, the exact path
entropy and Gini-Simpson index from the paths' log-probs, the sampled path statistics from the
parsed paths. Nothing here calls the report's code; only the files are read with
``pacs.report.science_data.read``. Used by tests/report/test_science_data.py (the committed
report) and tests/pipeline/test_science.py (a shrunken run).
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from pacs.report.science_data import read


def _pass_at_k(n: int, c: int, k: int) -> float:
    return 100.0 * (1.0 - math.comb(n - c, k) / math.comb(n, k))


def _exact(logps: pd.Series) -> tuple[float, float]:
    """(entropy, Gini-Simpson) of the paths' distribution given that one of them is written."""
    values = logps.to_numpy(dtype=float)
    if np.isneginf(values).all():
        return math.nan, math.nan
    p = np.exp(values - values.max())
    p /= p.sum()
    return float(-sum(x * math.log(x) for x in p if x > 0)), float(1.0 - (p**2).sum())


def _sampled(paths: str) -> tuple[float, float]:
    """(pairwise disagreement, plug-in entropy) of a problem's parsed correct paths (m >= 2)."""
    counts = list(Counter(paths.split()).values())
    m = sum(counts)
    if m < 2:
        return math.nan, math.nan
    disagree = 1.0 - sum(c * (c - 1) for c in counts) / (m * (m - 1))
    return disagree, -sum(c / m * math.log(c / m) for c in counts)


class RawData:
    """The four exported files, and each claim metric's per-(seed, problem) values of a run."""

    def __init__(self, data: Path, late_fraction: float, heldout_checkpoints: int):
        self.metrics = read(data, "metrics.csv.gz")
        self.curves = read(data, "eval_curve.csv.gz")
        self.paths = read(data, "paths.csv.gz")
        self.logp = read(data, "path_logp.csv.gz")
        self.late_fraction = late_fraction
        self.heldout_checkpoints = heldout_checkpoints

    def values(self, metric: str, run: str, benchmark: str) -> dict[tuple[int, str], float]:
        if metric.startswith("pass@"):
            k = int(metric.split()[0][len("pass@") :])
            rows = self._paths(run, benchmark)
            return {(r.seed, r.problem): _pass_at_k(r.n, r.c, k) for r in rows.itertuples()}
        if metric.startswith("held-out pass@1"):
            return self._heldout(run)
        if metric.startswith("token entropy"):
            return self._late_entropy(run)
        if metric.startswith("exact path"):
            which = 0 if metric.startswith("exact path entropy") else 1
            sub = self.logp[(self.logp["run"] == run) & (self.logp["benchmark"] == benchmark)]
            return {
                (seed, pid): _exact(g["logp"])[which]
                for (seed, pid), g in sub.groupby(["seed", "problem"])
            }
        which = {"path diversity": 0, "path entropy": 1}[metric.split(" (")[0]]
        rows = self._paths(run, benchmark)
        return {(r.seed, r.problem): _sampled(r.paths)[which] for r in rows.itertuples()}

    def _paths(self, run: str, benchmark: str) -> pd.DataFrame:
        return self.paths[(self.paths["run"] == run) & (self.paths["benchmark"] == benchmark)]

    def _heldout(self, run: str) -> dict[tuple[int, str], float]:
        sub = self.curves[self.curves["run"] == run]
        steps = sorted(sub["step"].unique())[-self.heldout_checkpoints :]
        last = sub[sub["step"].isin(steps)]
        per_seed = last.groupby(["seed", "step"])["pass_at_1"].mean().groupby("seed").mean()
        return {(seed, ""): 100.0 * value for seed, value in per_seed.items()}

    def _late_entropy(self, run: str) -> dict[tuple[int, str], float]:
        sub = self.metrics[(self.metrics["run"] == run) & self.metrics["entropy"].notna()]
        first = sub["step"].max() * (1.0 - self.late_fraction)
        per_seed = sub[sub["step"] > first].groupby("seed")["entropy"].mean()
        return {(seed, ""): value for seed, value in per_seed.items()}


def check_cells(cells: pd.DataFrame, raw: RawData, benchmark: str) -> Counter:
    """Assert every value of ``cells`` (claims_cells.csv as read) equals its recomputation from
    ``raw``; returns how many cells each claim had."""
    checked: Counter = Counter()
    for (claim, metric, run_a, run_b), group in cells.groupby(
        ["claim", "metric", "run_a", "run_b"], sort=False
    ):
        for side, run in (("value_a", run_a), ("value_b", run_b)):
            expected = raw.values(metric, run, benchmark)
            for seed, problem, got in zip(group["seed"], group["problem"], group[side]):
                want = expected[(int(seed), problem)]
                assert (math.isnan(got) and math.isnan(want)) or math.isclose(
                    got, want, rel_tol=1e-12, abs_tol=1e-12
                ), (claim, metric, run, seed, problem, got, want)
        checked[claim] += len(group)
    return checked


def read_cells(path: Path) -> pd.DataFrame:
    return pd.read_csv(
        path, dtype={"problem": str}, keep_default_na=False,
        na_values={"seed": [""], "value_a": [""], "value_b": [""]},
    )  # fmt: skip
