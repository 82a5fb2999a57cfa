"""Recording a tiny run (plumbing :mod:`pacs.tiny.train` calls; a first reading may skip it):
one ``metrics.jsonl`` row per step, the held-out pass@1 points, checkpoints on their cadence and
the run's ``summary.json``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pacs import core_algos
from pacs.data.synthetic.path_stats import rollout_path_stats
from pacs.fingerprint import code_commit
from pacs.io import write_jsonl
from pacs.metrics_log import EVAL_METRICS, MetricsLog, mini_batch_column
from pacs.tiny.checkpoint import save_checkpoint
from pacs.tiny.common import Rollout, eval_pass_at_1
from pacs.tiny.state import Settings, State

TIME_KEYS = ("time_generate", "time_reward", "time_reference", "time_update", "time_total")


def path_metrics(texts: list[str], scores: list[float], rows: list[dict], n: int) -> dict:
    """Paths task (rows with ``quantities``): path diversity/entropy of each group's correct
    responses, averaged over groups (docs/design.md#the-science-profile); nothing for other
    tasks."""
    if not rows or "quantities" not in rows[0]:
        return {}
    return rollout_path_stats(texts, scores, [r["quantities"] for r in rows for _ in range(n)], n)


def metrics_row(
    step,
    scores,
    labels,
    roll: Rollout,
    mb_results: list[dict],
    times,
    n,
    paths: dict,
    per_mini_batch: Sequence[str] = (),
) -> dict:
    """One metrics.jsonl row: rewards, the mini-batches' means, the ``per_mini_batch`` stats of
    each mini-batch (:func:`mini_batch_column`), the paths task's path statistics (``paths``,
    empty for other tasks) and the phase times."""
    t0, t1, t2, t3, t4 = times
    return {
        "step": step,
        "reward_mean": scores.mean().item(),
        "mixed_frac": core_algos.mixed_group_fraction(labels, n),
        "response_len": roll.response_mask.sum(-1).float().mean().item(),
        **{k: float(np.mean([r[k] for r in mb_results])) for k in mb_results[0]},
        **{
            mini_batch_column(k, i): float(r[k])
            for k in per_mini_batch
            for i, r in enumerate(mb_results)
        },
        **paths,
        "time_generate": t1 - t0,
        "time_reward": t2 - t1,
        "time_reference": t3 - t2,
        "time_update": t4 - t3,
        "time_total": t4 - t0,
    }


def evaluate(state: State, settings: Settings, tokenizer, eval_rows: Sequence[dict]) -> dict:
    rows = list(eval_rows[: settings.eval_problems])
    p1 = eval_pass_at_1(
        state.policy,
        tokenizer,
        rows,
        settings.eval_samples,
        settings.eval_max_new_tokens,
        settings.eval_temperature,
        settings.eval_top_p,
        settings.eval_seed,
    )
    return {
        "step": state.step,
        "pass_at_1": p1,
        "n_problems": len(rows),
        "n_samples": settings.eval_samples,
    }


@dataclass
class Recorder:
    """Writes one run's rows, held-out points and checkpoints on their cadence."""

    state: State
    settings: Settings
    tokenizer: Any
    eval_rows: Sequence[dict]
    out: Path
    run_fp: dict
    log: MetricsLog

    def record(self, row: dict) -> None:
        """Log the step's row (``metrics.jsonl``, rewritten whole, and the :class:`MetricsLog`);
        evaluate and checkpoint when due."""
        state, settings, out = self.state, self.settings, self.out
        state.history.append(row)
        write_jsonl(out / "metrics.jsonl", state.history)
        self.log.log(row)
        if settings.is_eval_step(state.step):
            self.record_eval()
        if state.step % settings.save_every == 0 or state.step == settings.steps:
            save_checkpoint(state, out, self.run_fp)

    def record_eval(self) -> None:
        """Add a held-out pass@1 point to ``eval_curve.jsonl`` and the :class:`MetricsLog`."""
        state = self.state
        point = evaluate(state, self.settings, self.tokenizer, self.eval_rows)
        state.eval_curve.append(point)
        write_jsonl(self.out / "eval_curve.jsonl", state.eval_curve)
        self.log.log(point, EVAL_METRICS)


def summarize(state: State, settings: Settings, seed: int, wall: float, resumed: bool) -> dict:
    hist = state.history
    mean_time = {k: float(np.mean([r[k] for r in hist])) for k in TIME_KEYS} if hist else {}
    return {
        "run": settings.run.name,
        "method": settings.method.name,
        "seed": seed,
        "steps": state.step,
        "base_pass_at_1": state.eval_curve[0]["pass_at_1"],
        "final_pass_at_1": state.eval_curve[-1]["pass_at_1"],
        "reward_mean_last10": float(np.mean([r["reward_mean"] for r in hist[-10:]]))
        if hist
        else math.nan,
        "mean_step_times": mean_time,
        "wall_seconds_this_process": round(wall, 2),
        "resumed": resumed,
        "commit": code_commit(),  # the code that trained it (the report's runs table)
        "settings": settings.as_dict(),
        "objective": settings.objective.as_dict(),  # the report's runs table
    }
