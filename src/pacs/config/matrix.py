"""The experiment matrix of a profile: runs x seeds x models x checkpoints, every job the DAG builds
and the report expects (``Profile.matrix``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Protocol

from pacs.layout import SYNTHETIC

BASE_RUN = "base"  # the model before RL, evaluated as run "base", seed 0
RELEASED_RUN = "released"  # a third-party model of Table 1 (eval.released), evaluated as is
# Table 1's benchmarks: the released models are evaluated on those of the profile's benchmarks.
TABLE1_BENCHMARKS = ("math500", "amc23", "aime24", "aime25", "beyondaime")


class MatrixSource(Protocol):
    """What the matrix reads of a profile (:class:`pacs.config.profile.Profile` is one); a
    protocol, so this module does not import the profile that imports it."""

    runs: Mapping[str, Any]
    models: Mapping[str, Any]
    data: Any
    eval: Any
    train: Any
    study: Any
    engine: str

    def seeds_of(self, run: Any) -> Any: ...


@dataclasses.dataclass(frozen=True)
class Matrix:
    """The experiment matrix of a profile: every job the DAG builds and the report expects."""

    spec: MatrixSource

    def run_models(self, run: str) -> list[str]:
        """Models a run trains on: its ``models`` (in profile order), else every model."""
        allowed = self.spec.runs[run].models
        return [m for m in self.spec.models if allowed is None or m in allowed]

    @property
    def train_jobs(self) -> list[tuple[str, str, int]]:
        """(model, run, seed) of every training run: runs × their models × their seeds."""
        return [
            (model, run, seed)
            for run, run_spec in self.spec.runs.items()
            for model in self.run_models(run)
            for seed in self.spec.seeds_of(run_spec)
        ]

    @property
    def eval_jobs(self) -> list[tuple[str, str, int]]:
        """Every trained model plus each base model (run ``base``, seed 0)."""
        return [(model, BASE_RUN, 0) for model in self.spec.models] + self.train_jobs

    @property
    def released_jobs(self) -> list[tuple[str, str, int, str]]:
        """(key, ``released``, 0, benchmark) of every third-party model of ``eval.released`` on
        each of the profile's benchmarks that Table 1 reports."""
        benchmarks = [b for b in self.spec.data.benchmarks if b in TABLE1_BENCHMARKS]
        return [(key, RELEASED_RUN, 0, b) for key in self.spec.eval.released for b in benchmarks]

    def curve_steps(self, model: str) -> list[int]:
        """verl: checkpoint steps evaluated for Fig. 3 (every ``eval.curve_every`` steps)."""
        every = self.spec.eval.curve_every
        if self.spec.engine != "verl" or not every:
            return []
        return list(range(every, self.spec.models[model].steps + 1, every))

    @property
    def curve_jobs(self) -> list[tuple[str, str, int, int, str]]:
        """(model, run, seed, step, benchmark) of every checkpoint evaluation."""
        return [
            (m, r, s, step, b)
            for m, r, s in self.train_jobs
            for step in self.curve_steps(m)
            for b in self.spec.eval.curve_benchmarks
        ]

    @property
    def checkpoint_steps(self) -> list[int]:
        """tiny with ``study``: the saved steps whose policies are scored exactly (every
        ``train.save_every`` steps, and the last step); else none."""
        if self.spec.study is None:
            return []
        steps, every = self.spec.train.steps, self.spec.train.save_every
        return sorted({*range(every, steps + 1, every), steps})

    @property
    def exact_benchmarks(self) -> list[str]:
        """Benchmarks of the exact path distributions: the hard split, then the normal split."""
        study = self.spec.study
        return [] if study is None else [study.hard.benchmark, SYNTHETIC]

    @property
    def exact_jobs(self) -> list[tuple[str, str, int, str]]:
        """(model, run, seed, benchmark) of every exact path-distribution job: each evaluated
        model (base, every run) on each of :attr:`exact_benchmarks`."""
        return [(m, r, s, b) for m, r, s in self.eval_jobs for b in self.exact_benchmarks]

    def diversity_runs(self, model: str) -> list[tuple[str, int]]:
        """Base and the main runs (first seed each): Table 3 and the Fig. 5b PCA."""
        runs = [(BASE_RUN, 0)]
        for name, run in self.spec.runs.items():
            if run.ablation == "main" and model in self.run_models(name):
                runs.append((name, self.spec.seeds_of(run)[0]))
        return runs
