"""Table 3: the diversity D of correct responses per method and benchmark, paper beside ours."""

from __future__ import annotations

import pandas as pd

from .context import ReportContext, RunInfo
from .grid import Cell, comparison, grid_section, per_model_sections
from .paper import PaperRef, lookup
from .render import Section, TableDoc
from .style import benchmark_label

DIVERSITY_CSV_COLUMNS = [
    "model",
    "benchmark",
    "run",
    "label",
    "D",
    "n_problems",
    "n_correct",
    "embedder",
    "paper_D",
    "paper_source",
    "paper_model",
    "paper_comparison",
]


def table3(ctx: ReportContext) -> TableDoc | None:
    div = ctx.results.diversity
    div = div[div["method"].isin(ctx.runs)]
    if div.empty:
        return None
    sections, long_rows, notes = per_model_sections(
        ctx,
        div,
        ["Table 3"],
        lambda model, sub, ref: _diversity_section(ctx, model, sub, ref),
    )
    if not sections:
        return None
    return TableDoc(
        "table3_diversity",
        "Table 3: diversity of correct responses (one seed per run)",
        _diversity_caption(div),
        sections,
        pd.DataFrame(long_rows, columns=DIVERSITY_CSV_COLUMNS),
        notes,
        "Table 3: diversity score D per method and benchmark",
    )


def _diversity_section(
    ctx: ReportContext, model: str, sub: pd.DataFrame, ref: PaperRef
) -> tuple[Section, list[dict], dict]:
    """One model's Table 3 section (D per run and benchmark), its CSV rows and the paper hits."""
    runs = [ctx.runs[m] for m in ctx.runs if m in set(sub["method"])]
    benches = [b for b in ctx.benchmarks if b in set(sub["benchmark"])]
    cells = {
        (r["method"], r["benchmark"]): Cell(r["D"], float("nan"), 1) for _, r in sub.iterrows()
    }

    def paper_cell(run: RunInfo, bench):
        return lookup(
            ctx.paper,
            model=ref.model,
            benchmark=bench,
            method=run.paper_method,
            k=None,
            tables=["Table 3"],
            metric="diversity_D",
        )

    section, hits = grid_section(
        ctx.model_label(model),
        runs,
        [(b, benchmark_label(b)) for b in benches],
        cells,
        paper_cell,
        ref,
        digits=4,
        with_seeds=False,
    )
    return section, _diversity_rows(ctx, model, sub, hits, ref), hits


def _diversity_rows(
    ctx: ReportContext, model: str, sub: pd.DataFrame, hits: dict, ref: PaperRef
) -> list[dict]:
    """Table 3's CSV rows of one model: one per (run, benchmark) D of ours."""
    rows = []
    for _, r in sub.iterrows():
        hit = hits.get((r["method"], r["benchmark"]))
        rows.append(
            {
                "model": model,
                "benchmark": r["benchmark"],
                "run": r["method"],
                "label": ctx.label(r["method"]),
                "D": r["D"],
                "n_problems": r["n_problems"],
                "n_correct": r["n_correct"],
                "embedder": r["embedder"],
                "paper_D": hit["value"] if hit else None,
                "paper_source": hit["source"] if hit else "",
                "paper_model": ref.model if hit else "",
                "paper_comparison": comparison(ref) if hit else "",
            }
        )
    return rows


def _diversity_caption(div: pd.DataFrame) -> str:
    embedders = sorted({e for e in div["embedder"] if e})
    return (
        "Diversity D = mean pairwise cosine distance of correct responses (problems with at "
        "least two correct), as computed by the diversity stage, on one seed per run (each run's "
        "first: the diversity stage embeds no other), so no spread across seeds; '–' = D undefined "
        f"(no problem with two correct responses). Embedder: {', '.join(embedders) or 'not stated'}"
        " (paper: Qwen3-Embedding-0.6B)."
    )


# ============================================================================ all tables
