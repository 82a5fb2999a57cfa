"""The grid every report table is drawn on: rows = runs (ours), each followed by a labelled
'paper' row where the paper has the same benchmark, method and k; the tidy CSV rows of a pass@k
grid; the per-model loop the tables share.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from .context import ReportContext, RunInfo, fmt_mean_std, seeds_text
from .paper import PaperRef
from .render import Section
from .style import INFERRED_MARK

PASSK_CSV_COLUMNS = [
    "model",
    "benchmark",
    "run",
    "label",
    "k",
    "mean_pct",
    "std_pct",
    "n_seeds",
    "seeds",
    "n_samples",
    "n_problems",
    "paper_pct",
    "paper_source",
    "paper_model",
    "paper_k_inferred",
    "paper_comparison",
]


# ============================================================================ generic grid


@dataclass
class Cell:
    mean: float
    std: float
    n_seeds: int


def grid_section(
    heading: str,
    runs: list[RunInfo],
    columns: list[tuple[object, str]],
    cells: dict[tuple[str, object], Cell],
    paper_cell: Callable[[RunInfo, object], dict | None],
    ref: PaperRef,
    *,
    digits: int = 2,
    with_seeds: bool = True,
) -> tuple[Section, dict]:
    """Rows = runs with data (ours), each followed by a 'paper' row when the paper has a match.

    ``columns`` are (key, header) pairs. Returns the section and the paper hits by (run, key).
    """
    header = ["Method", *(["seeds"] if with_seeds else []), *[h for _, h in columns]]
    rows, hits = [], {}
    for run in runs:
        ours = [cells.get((run.name, key)) for key, _ in columns]
        if not any(ours):
            continue
        seeds = [seeds_text([c.n_seeds for c in ours if c])] if with_seeds else []
        rows.append(
            [run.label, *seeds, *[fmt_mean_std(c.mean, c.std, digits) if c else "–" for c in ours]]
        )
        row_hits = {
            key: paper_cell(run, key) if cells.get((run.name, key)) else None for key, _ in columns
        }
        row_hits = {k: v for k, v in row_hits.items() if v}
        if row_hits:
            tables = sorted({h["table"] for h in row_hits.values()}, key=_table_order)
            rows.append(
                [
                    ref.label(tables),
                    *([""] if with_seeds else []),
                    *[_paper_text(row_hits.get(key), digits) for key, _ in columns],
                ]
            )
            hits.update({(run.name, k): v for k, v in row_hits.items()})
    return Section(heading, pd.DataFrame(rows, columns=header)), hits


def _table_order(name: str) -> tuple[int, int, str]:
    """Tables by number, then figures ("Table 2" < "Table 8" < "Figure 6")."""
    digits = "".join(ch for ch in name if ch.isdigit())
    return (name.startswith("Figure"), int(digits) if digits else 99, name)


def _paper_text(hit: dict | None, digits: int) -> str:
    if not hit:
        return "–"
    return f"{hit['value']:.{digits}f}" + (INFERRED_MARK if hit["k_inferred"] else "")


def cells_from_stats(stats: pd.DataFrame, col: str) -> dict[tuple[str, object], Cell]:
    return {
        (row["run"], row[col]): Cell(row["mean"], row["std"], int(row["n_seeds"]))
        for _, row in stats.iterrows()
    }


def sample_text(df: pd.DataFrame) -> str:
    n, p = sorted(set(df["n_min"])), sorted(set(df["n_problems"]))
    ns = f"{n[0]}" if len(n) == 1 else f"{n[0]}–{n[-1]}"
    ps = f"{p[0]}" if len(p) == 1 else f"{p[0]}–{p[-1]}"
    return f"n = {ns} samples per problem, {ps} problems"


def comparison(ref: PaperRef) -> str:
    return "" if ref.model is None else ("same model" if ref.same else "reference only")


def csv_rows(
    model: str,
    benchmark: str,
    stats: pd.DataFrame,
    seeds: pd.DataFrame,
    samples: pd.DataFrame,
    hits: dict,
    ref: PaperRef,
    ctx: ReportContext,
    k_col: str = "k",
) -> list[dict]:
    rows = []
    for _, s in stats.iterrows():
        key = s[k_col]
        hit = hits.get((s["run"], key))
        sel = seeds[(seeds["run"] == s["run"]) & (seeds[k_col] == key)]
        smp = samples[samples["run"] == s["run"]] if len(samples) else samples
        rows.append(
            {
                "model": model,
                "benchmark": benchmark if k_col == "k" else key,
                "run": s["run"],
                "label": ctx.label(s["run"]),
                "k": key if k_col == "k" else 1,
                "mean_pct": s["mean"],
                "std_pct": s["std"],
                "n_seeds": int(s["n_seeds"]),
                "seeds": ";".join(str(x) for x in sorted(sel["seed"])),
                "n_samples": ";".join(str(x) for x in sorted(set(smp["n_min"])))
                if len(smp)
                else "",
                "n_problems": ";".join(str(x) for x in sorted(set(smp["n_problems"])))
                if len(smp)
                else "",
                "paper_pct": hit["value"] if hit else None,
                "paper_source": hit["source"] if hit else "",
                "paper_model": ref.model if hit else "",
                "paper_k_inferred": hit["k_inferred"] if hit else "",
                "paper_comparison": comparison(ref) if hit else "",
            }
        )
    return rows


def add_reference_note(
    notes: list[str], ctx: ReportContext, ref: PaperRef, model: str, hits: dict
) -> None:
    """Append the note on the paper rows of ``model`` once, where a section shows any."""
    note = ctx.reference_note(ref, model) if hits else None
    if note and note not in notes:
        notes.append(note)


def per_model_sections(
    ctx: ReportContext,
    df: pd.DataFrame,
    paper_tables: list[str],
    build: Callable[[str, pd.DataFrame, PaperRef], tuple[Section, list[dict], dict]],
) -> tuple[list[Section], list[dict], list[str]]:
    """The loop of the per-model tables: for each model with rows in ``df`` (a ``model`` column),
    ``build(model, its rows, its paper reference)`` gives a section, its CSV rows and the paper
    hits. Returns the sections, all CSV rows and the notes on the paper rows shown."""
    sections: list[Section] = []
    rows: list[dict] = []
    notes: list[str] = []
    for model in ctx.models:
        sub = df[df["model"] == model]
        if sub.empty:
            continue
        ref = ctx.ref(model, paper_tables)
        section, model_rows, hits = build(model, sub, ref)
        sections.append(section)
        rows += model_rows
        add_reference_note(notes, ctx, ref, model, hits)
    return sections, rows, notes
