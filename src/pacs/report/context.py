"""What every table and figure needs to know: config runs, models, benchmarks, paper, results.

Runs are identified by their config name; ``base`` (the model before RL, evaluated as run
``base`` seed 0) is added in front. Results for run names that the config does not define are
not reported (their meaning is unknown) and are listed in the README instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pacs.config import BASE_RUN, ClaimsSpec, Profile, RunSpec
from pacs.methods import MethodTraits, traits

from .loaders import HELD_OUT, Results
from .paper import PaperRef, paper_method_for_run, paper_model_for, paper_ref
from .style import OOD_BENCHMARKS


@dataclass(frozen=True)
class RunInfo:
    name: str
    label: str
    method: str  # the method's name, or "base"
    ablation: str  # main | beta | score | weight | ref
    spec: RunSpec | None  # None for the base model
    paper_method: str | None  # the paper's row for this run, if it has one
    traits: MethodTraits | None = None  # its method's traits (pacs.methods); None for the base


class ReportContext:
    """Spec + results + paper numbers, with the orderings and labels shared by all outputs.

    ``spec`` is the validated profile (:mod:`pacs.config`); ``cfg`` is the same as plain data
    (defaults filled in) for the tables that look settings up by key path."""

    def __init__(
        self,
        spec: Profile,
        results: Results,
        paper: pd.DataFrame,
        *,
        config_path: str | Path = "",
        results_path: str | Path = "",
    ):
        self.spec = spec
        self.cfg: dict[str, Any] = spec.to_dict()
        self.matrix = spec.matrix
        self.results = results
        self.paper = paper
        self.config_path = str(config_path)
        self.results_path = str(results_path)
        self.profile = spec.profile
        self.runs = self._run_catalogue()
        self.unknown_runs = self._unknown_runs()
        found = [m for m in self._found("model") if m not in spec.eval.released]  # own table
        self.models = self._ordered(list(spec.models), found)
        data = spec.data
        self.benchmarks = self._ordered(
            [*data.benchmarks, *data.diversity_benchmarks], self._found("benchmark")
        )

    # ------------------------------------------------------------------ catalogue
    def _run_catalogue(self) -> dict[str, RunInfo]:
        runs = {BASE_RUN: RunInfo(BASE_RUN, "Base", "base", "main", None, "base")}
        for name, run in self.spec.runs.items():
            runs[name] = RunInfo(
                name,
                run.label,
                run.method.name,
                run.ablation,
                run,
                paper_method_for_run(run),
                traits(run.method),
            )
        return runs

    def missing_results(self) -> list[str]:
        """Evaluations the experiment matrix expects (``pacs.config.Matrix``) with no pass@k."""
        found = set(
            zip(
                self.results.passk.get("model", []),
                self.results.passk.get("run", []),
                self.results.passk.get("seed", []),
                self.results.passk.get("benchmark", []),
            )
        )
        found = {(str(m), str(r), int(s), str(b)) for m, r, s, b in found}
        return [
            f"{m}/{r}/seed{s}/{b}"
            for m, r, s in self.matrix.eval_jobs
            for b in self.spec.data.benchmarks
            if (m, r, s, b) not in found
        ]

    def _found(self, column: str) -> list[str]:
        values: set[str] = set()
        r = self.results
        for frame in (r.passk, r.diversity, r.pca, r.metrics, r.curves):
            if column in frame.columns:
                values.update(frame[column].dropna().astype(str))
        return sorted(values - {HELD_OUT})

    def _unknown_runs(self) -> list[str]:
        r = self.results
        found = set(r.passk["run"]) | set(r.metrics["run"]) | set(r.curves["run"])
        found |= set(r.diversity["method"]) | set(r.pca["method"])
        return sorted(found - set(self.runs))

    @staticmethod
    def _ordered(preferred: list[str], found: list[str]) -> list[str]:
        out: list[str] = []
        for name in [*preferred, *found]:
            if name not in out:
                out.append(name)
        return out

    # ------------------------------------------------------------------ selections
    def runs_in(self, *ablations: str, include_base: bool = False) -> list[RunInfo]:
        """Runs of the given ablation groups in config order (``base`` first when asked)."""
        return [
            info
            for name, info in self.runs.items()
            if (name == BASE_RUN and include_base)
            or (name != BASE_RUN and info.ablation in ablations)
        ]

    @property
    def choices(self) -> ClaimsSpec:
        """The study's choices of methods: the subject and its baselines (``claims:``)."""
        return self.spec.claims or ClaimsSpec()

    def is_subject(self, run: RunInfo) -> bool:
        """Whether ``run`` trains the method the study studies (``claims.subject``)."""
        return run.spec is not None and run.spec.method.name == self.choices.subject

    def subject_runs(self) -> list[RunInfo]:
        """Main runs of the method the study studies (``claims.subject``)."""
        return [r for r in self.runs_in("main") if self.is_subject(r)]

    def baseline_runs(self, *, entropy_baseline: bool = False) -> list[RunInfo]:
        """Main runs of the claims' baselines (``claims.baselines``), or with
        ``entropy_baseline`` those C3-ref compares entropy with (``claims.entropy_baselines``)."""
        names = self.choices.entropy_baselines if entropy_baseline else self.choices.baselines
        return [r for r in self.runs_in("main") if r.spec.method.name in names]

    def label(self, run: str) -> str:
        return self.runs[run].label if run in self.runs else run

    def model_label(self, model: str) -> str:
        mapped = paper_model_for(self.cfg, model)
        return f"{model} ({mapped})" if mapped and mapped != model else model

    def in_domain(self, benchmarks: list[str]) -> list[str]:
        return [b for b in benchmarks if b not in OOD_BENCHMARKS]

    def ref(self, model: str, tables: list[str]) -> PaperRef:
        return paper_ref(self.cfg, model, self.paper, tables)

    def passk_pct(self, metric: str = "pass_at_k") -> pd.DataFrame:
        """Our pass@k rows of known runs, values and CIs in percent."""
        df = self.results.passk
        df = df[(df["metric"] == metric) & df["run"].isin(self.runs)].copy()
        for col in ("value", "ci_low", "ci_high"):
            df[col] = df[col] * 100.0
        return df

    # ------------------------------------------------------------------ notes
    def reference_note(self, ref: PaperRef, model: str) -> str | None:
        if ref.model is None:
            return None
        if ref.same:
            return (
                f"Rows labelled 'paper' hold the paper's own numbers for {ref.model}, shown "
                f"beside ours where benchmark, method and k match (source in the label; "
                f"all from src/pacs/report/paper_numbers.csv)."
            )
        return (
            f"Reference only: rows labelled 'paper ({ref.model}, reference only)' hold the "
            f"paper's numbers for {ref.model} (trained on DeepScaleR, n = 256 samples per "
            f"problem), shown where benchmark, method and k match. Our model '{model}' in "
            f"profile '{self.profile}' is a different model and setup, so this is not a "
            f"comparison of equal things."
        )

    def ablation_note(self, runs: list[RunInfo]) -> str:
        """The docs/design.md#when-the-ablations-are-no-ops note: when beta/score ablations are
        no-ops, and what this config does."""
        mini = self.spec.train.mini_batches
        pacs = [r.spec.method for r in runs if self.is_subject(r)]
        resets = sorted({str(m.reference.every) for m in pacs})
        refs = sorted({m.reference.mode for m in pacs})
        head = (
            "docs/design.md#when-the-ablations-are-no-ops: with ref: rollout and ONE update per "
            "rollout every log-ratio is 0, so ψ ≡ 0 and the loss ≡ mean(w)·ln 2; β then only "
            "scales the gradient (undone by Adam and clipping) and the score function has "
            "nothing to act on, so β and score-function ablations are no-ops (measured: "
            "bit-identical curves). The paper does 4 mini-batch updates per rollout (1024 "
            "prompts / mini-batch 256)."
        )
        body = (
            f" This config sets train.mini_batches = {mini} update(s) per rollout "
            f"(ref: {', '.join(refs) or 'n/a'}; ref_reset_every: {', '.join(resets) or 'n/a'})."
        )
        meaningful = (
            int(mini) > 1 or any(s != "1" for s in resets) or any(r != "rollout" for r in refs)
        )
        tail = (
            " After the first mini-batch ψ ≠ 0, so the ablation is meaningful."
            if meaningful
            else " WARNING: with one update per rollout and a reset every step these ablation "
            "runs are no-ops; any difference from PACS is noise."
        )
        return head + body + tail


def seed_stats(df: pd.DataFrame, keys: list[str], value: str = "value") -> pd.DataFrame:
    """Mean, sample std (ddof=1; NaN for one seed) and number of seeds of ``value`` per ``keys``.

    ``df`` must hold one row per seed and key; the std is across seeds.
    """
    if df.empty:
        return pd.DataFrame(columns=[*keys, "mean", "std", "n_seeds"])
    grouped = df.groupby(keys, sort=False, dropna=False)[value]
    out = grouped.agg(
        mean="mean",
        std=lambda s: float(np.std(s, ddof=1)) if len(s) > 1 else np.nan,
        n_seeds="count",
    ).reset_index()
    return out


def fmt_mean_std(mean: float, std: float, digits: int = 2) -> str:
    """``88.12 ± 0.31`` (several seeds), ``88.12`` (one seed), ``–`` (missing)."""
    if mean is None or pd.isna(mean):
        return "–"
    if std is None or pd.isna(std):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def seeds_text(counts: list[int]) -> str:
    """``3`` when all cells of a row have 3 seeds, ``1–3`` when they differ."""
    counts = [int(c) for c in counts if not pd.isna(c)]
    if not counts:
        return "–"
    lo, hi = min(counts), max(counts)
    return str(lo) if lo == hi else f"{lo}–{hi}"
