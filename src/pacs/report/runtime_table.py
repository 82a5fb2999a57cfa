"""The report's run-time table (not in the paper): wall time per training step and its split."""

from __future__ import annotations

import pandas as pd

from .context import ReportContext, RunInfo, fmt_mean_std, seeds_text
from .render import Section, TableDoc

TIME_PARTS = ("time_generate", "time_reward", "time_reference", "time_update")


def table_runtime(ctx: ReportContext) -> TableDoc | None:
    """Wall time per training step per run: time_total and its split, mean ± std across seeds."""
    m = ctx.results.metrics
    m = m[m["run"].isin(ctx.runs) & m["time_total"].notna()]
    if m.empty:
        return None
    per_seed = _per_seed_times(m)
    sections, long_rows = [], []
    for model in ctx.models:
        sub = per_seed[per_seed["model"] == model]
        if sub.empty:
            continue
        rows = []
        for run in [r for r in ctx.runs.values() if r.name in set(sub["run"])]:
            row, rec = _runtime_row(model, run, sub[sub["run"] == run.name])
            rows.append(row)
            long_rows.append(rec)
        sections.append(Section(ctx.model_label(model), pd.DataFrame(rows)))
    caption = (
        "Wall time per training step in seconds (metrics.jsonl), mean over steps per seed, then "
        "mean ± std across seeds; in brackets the share of time_total. Not in the paper."
    )
    notes = [
        (
            "Parts: generate = rollouts, reward = verifier, reference = reference/old log-probs, "
            "update = optimiser steps; time_total may include work outside these parts."
        ),
        *dynamic_sampling_notes(ctx, m),
    ]
    return TableDoc(
        "table_runtime",
        "Run time per training step",
        caption,
        sections,
        pd.DataFrame(long_rows),
        notes,
        "Run time per training step per method: time_total and its split (beyond the paper)",
    )


def dynamic_sampling_notes(ctx: ReportContext, m: pd.DataFrame) -> list[str]:
    """Per run with DAPO's dynamic sampling (``ds_rounds`` logged): its generate and reward times
    include every round; the mean rounds per step and the steps that hit the cap."""
    if "ds_rounds" not in m.columns:
        return []
    notes = []
    for run, sub in m[m["ds_rounds"].notna()].groupby("run", sort=False):
        capped = int((sub["ds_cap_hit"] > 0).sum())
        notes.append(
            f"{ctx.label(run)}: generate and reward include every dynamic-sampling round "
            f"(docs/design.md#dapo-and-real): {sub['ds_rounds'].mean():.2f} rounds per step on "
            "average; "
            f"{capped} of {len(sub)} steps hit the cap on rounds and were topped up with "
            "all-correct/all-wrong groups."
        )
    return notes


def _per_seed_times(m: pd.DataFrame) -> pd.DataFrame:
    """Per (model, run, seed): mean time per step of each field, steps, and wall minutes."""
    fields = ["time_total", *TIME_PARTS]
    per_seed = m.groupby(["model", "run", "seed"])[fields].mean()
    per_seed["steps"] = m.groupby(["model", "run", "seed"])["step"].count()
    per_seed["wall_min"] = m.groupby(["model", "run", "seed"])["time_total"].sum() / 60.0
    return per_seed.reset_index()


def _runtime_row(model: str, run: RunInfo, srun: pd.DataFrame) -> tuple[dict, dict]:
    """One run's display row and CSV record of the run-time table (``srun``: one row a seed)."""
    total = srun["time_total"].mean()
    row = {
        "Method": run.label,
        "seeds": str(len(srun)),
        "steps": seeds_text(list(srun["steps"])),
        "s / step": fmt_mean_std(total, _std(srun["time_total"]), 3),
    }
    rec = {
        "model": model,
        "run": run.name,
        "label": run.label,
        "n_seeds": len(srun),
        "steps_mean": srun["steps"].mean(),
        "time_total_mean_s": total,
        "time_total_std_s": _std(srun["time_total"]),
    }
    for part in TIME_PARTS:
        mean = srun[part].mean()
        share = f" ({100 * mean / total:.0f}%)" if pd.notna(mean) and total > 0 else ""
        row[part.removeprefix("time_")] = fmt_mean_std(mean, _std(srun[part]), 3) + share
        rec[f"{part}_mean_s"], rec[f"{part}_std_s"] = mean, _std(srun[part])
    row["run total (min)"] = fmt_mean_std(srun["wall_min"].mean(), _std(srun["wall_min"]), 2)
    rec["wall_min_mean"], rec["wall_min_std"] = srun["wall_min"].mean(), _std(srun["wall_min"])
    return row, rec


def _std(series: pd.Series) -> float:
    s = series.dropna()
    return float(s.std(ddof=1)) if len(s) > 1 else float("nan")
