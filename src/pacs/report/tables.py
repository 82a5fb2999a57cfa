"""The report's pass@k tables: Table 1, Tables 2 & 6, 7-8, 9-13 and the β and reference
ablations; the list of every table the report writes (the grid: :mod:`.grid`; Table 3:
:mod:`.diversity_table`; Tables 4-5: :mod:`.settings_table`; run time: :mod:`.runtime_table`).

Each table is a :class:`~pacs.report.render.TableDoc`: display sections (rows = runs, with the
paper's numbers in a clearly labelled row under ours where benchmark, method and k match) and a
tidy CSV with one row per number of ours. All pass@k values are percentages; with several seeds
a cell is ``mean ± std`` (sample std across seeds) and the ``seeds`` column says how many.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from .context import BASE_RUN, ReportContext, RunInfo, seed_stats
from .diversity_table import table3
from .grid import (
    PASSK_CSV_COLUMNS,
    add_reference_note,
    cells_from_stats,
    csv_rows,
    grid_section,
    per_model_sections,
    sample_text,
)
from .outputs import OutputLog
from .paper import IN_PAPER, PaperRef, lookup
from .render import Section, TableDoc
from .runtime_table import table_runtime
from .settings_table import table4_5
from .style import INFERRED_MARK, benchmark_label

PAPER_BENCHMARKS = (
    "math500",
    "amc23",
    "aime24",
    "aime25",
    "beyondaime",
)  # Table 1's Avg. is over these
T1_TABLES = ["Table 1", "Table 2", "Table 6", "Table 7", "Table 8", "Figure 6"]
T26_TABLES = ["Table 2", "Table 6"]
T78_TABLES = ["Table 7", "Table 8"]
SCORE_TABLES = [f"Table {i}" for i in range(9, 14)]
KINF_NOTE = (
    f"{INFERRED_MARK} the paper's k label is inferred: its copy lost the column headers; "
    "columns are read as k = 1, 4, 8, 16, 32, 64 with 4..32 inferred "
    "(see src/pacs/report/paper_numbers.csv)."
)


# ============================================================================ pass@k tables


def passk_table(
    ctx: ReportContext,
    *,
    stem: str,
    title: str,
    description: str,
    runs: list[RunInfo],
    benchmarks: list[str],
    paper_tables: list[str],
    extra_notes: list[str],
    require: list[RunInfo] | None = None,
) -> TableDoc | None:
    """Rows = runs, columns = k; one section per (model, benchmark).

    None when there is no data, or none for any run of ``require`` (an ablation table needs at
    least one ablation run, not only the main PACS run).
    """
    df = ctx.passk_pct()
    df = df[df["run"].isin([r.name for r in runs]) & df["benchmark"].isin(benchmarks)]
    if df.empty or (require is not None and not df["run"].isin([r.name for r in require]).any()):
        return None
    sections, long_rows, notes = [], [], []
    for model in ctx.models:
        ref = ctx.ref(model, paper_tables)
        for bench in benchmarks:
            sub = df[(df["model"] == model) & (df["benchmark"] == bench)]
            if sub.empty:
                continue
            section, rows, hits = _passk_section(ctx, model, bench, sub, runs, ref, paper_tables)
            sections.append(section)
            long_rows += rows
            add_reference_note(notes, ctx, ref, model, hits)
    if not sections:
        return None
    if any(r["paper_k_inferred"] is True for r in long_rows):
        notes.append(KINF_NOTE)
    caption = (
        "pass@k in % (unbiased estimator), mean ± sample std across seeds; "
        "'seeds' = number of seeds per row; '–' = not available."
    )
    return TableDoc(
        stem,
        title,
        caption,
        sections,
        pd.DataFrame(long_rows, columns=PASSK_CSV_COLUMNS),
        notes + extra_notes,
        description,
    )


def _passk_section(
    ctx: ReportContext,
    model: str,
    bench: str,
    sub: pd.DataFrame,
    runs: list[RunInfo],
    ref: PaperRef,
    paper_tables: list[str],
) -> tuple[Section, list[dict], dict]:
    """One (model, benchmark) section of a pass@k table, its CSV rows and the paper hits."""
    stats = seed_stats(sub, ["run", "k"])
    ks = sorted(int(k) for k in stats["k"].unique())

    def paper_cell(run: RunInfo, k):
        return lookup(
            ctx.paper,
            model=ref.model,
            benchmark=bench,
            method=run.paper_method,
            k=int(k),
            tables=paper_tables,
        )

    section, hits = grid_section(
        f"{ctx.model_label(model)} — {benchmark_label(bench)} ({sample_text(sub)})",
        runs,
        [(k, f"k={k}") for k in ks],
        cells_from_stats(stats, "k"),
        paper_cell,
        ref,
    )
    rows = csv_rows(model, bench, stats, sub, sub.drop_duplicates(["run", "seed"]), hits, ref, ctx)
    return section, rows, hits


TABLE1_NOTES = [
    (
        "Avg. = mean over the in-domain benchmarks of each seed (a seed counts only when it "
        "has all of them), then mean ± std across seeds; the paper's Avg. is shown only "
        "when our benchmarks are its five (MATH500, AMC23, AIME24, AIME25, BeyondAIME)."
    ),
    (
        "'<method> − Base' rows: the method's mean pass@1 minus the base model's, in points; "
        "the paper's Table 1 prints this gain under each PACS row."
    ),
]


def table1(ctx: ReportContext) -> TableDoc | None:
    """Table 1: pass@1 per benchmark and Avg. (in-domain benchmarks), base and main runs."""
    runs = ctx.runs_in("main", include_base=True)
    df = ctx.passk_pct()
    df = df[(df["k"] == 1) & df["run"].isin([r.name for r in runs])]
    if df.empty:
        return None
    sections, long_rows, notes = per_model_sections(
        ctx,
        df,
        T1_TABLES,
        lambda model, sub, ref: _table1_section(ctx, model, sub, runs, ref),
    )
    if not sections:
        return None
    notes.extend(TABLE1_NOTES)
    notes.extend(not_in_paper_note(runs))
    cut = [truncation_section(ctx, model, df[df["model"] == model], runs) for model in ctx.models]
    sections.extend(section for section in cut if section is not None)
    paper_t1 = _paper_table1(ctx)
    if paper_t1 is not None:
        sections.append(paper_t1)
    caption = "pass@1 in %, mean ± sample std across seeds; 'seeds' = number of seeds per row."
    return TableDoc(
        "table1_pass1",
        "Table 1: pass@1 per benchmark",
        caption,
        sections,
        pd.DataFrame(long_rows, columns=PASSK_CSV_COLUMNS),
        notes,
        "Table 1: pass@1 per benchmark and Avg., base vs methods, paper beside ours",
    )


def truncation_section(
    ctx: ReportContext, model: str, sub: pd.DataFrame, runs: list[RunInfo]
) -> Section | None:
    """The share of responses cut at the token budget (``finish_reason`` = length), in %, per
    run and benchmark, mean over seeds: a pass@1 lost to the cut is not a wrong answer, and a
    reader must see how often it happened. None when no passk.json of ``model`` records it."""
    sub = sub.dropna(subset=["truncated_share"])
    if sub.empty:
        return None
    share = sub.groupby(["run", "benchmark"])["truncated_share"].mean() * 100.0
    benches = [b for b in ctx.benchmarks if b in set(sub["benchmark"])]
    rows = [
        [run.label, *[_percent(share.get((run.name, b))) for b in benches]]
        for run in runs
        if run.name in set(sub["run"])
    ]
    header = ["Method", *[benchmark_label(b) for b in benches]]
    heading = f"{ctx.model_label(model)}: responses cut at the token budget (%, mean over seeds)"
    return Section(heading, pd.DataFrame(rows, columns=header))


def _percent(value: float | None) -> str:
    return "–" if value is None or pd.isna(value) else f"{value:.1f}"


def not_in_paper_note(runs: list[RunInfo]) -> list[str]:
    """A note naming the runs of methods the PACS paper does not train (:data:`.paper.IN_PAPER`
    false: DAPO, REAL), which have no paper row."""
    extra = [r for r in runs if r.spec is not None and not IN_PAPER[r.spec.method]]
    if not extra:
        return []
    methods = ", ".join(dict.fromkeys(r.traits.label for r in extra))
    note = (
        f"Not in the paper: {methods} ({', '.join(r.name for r in extra)}), later baselines on "
        "the same harness (docs/design.md#dapo-and-real); the paper has no row for them."
    )
    return [note]


def _table1_section(
    ctx: ReportContext, model: str, sub: pd.DataFrame, runs: list[RunInfo], ref: PaperRef
) -> tuple[Section, list[dict], dict]:
    """One model's Table 1 section (pass@1 per benchmark, Avg., gain rows), CSV rows and hits."""
    benches = [b for b in ctx.benchmarks if b in set(sub["benchmark"])]
    per_seed = sub.loc[:, ["run", "seed", "benchmark", "value"]]
    avg_over = ctx.in_domain(benches)
    if len(avg_over) >= 2:
        per_seed = pd.concat([per_seed, _seed_average(sub, avg_over)], ignore_index=True)
    stats = seed_stats(per_seed, ["run", "benchmark"])
    columns = [(b, benchmark_label(b)) for b in benches]
    if len(avg_over) >= 2:
        columns.append(("avg", f"Avg. ({len(avg_over)})"))
    paper_avg_ok = sorted(avg_over) == sorted(PAPER_BENCHMARKS)

    def paper_cell(run: RunInfo, bench):
        if bench == "avg" and not paper_avg_ok:
            return None
        return lookup(
            ctx.paper,
            model=ref.model,
            benchmark=bench,
            method=run.paper_method,
            k=1,
            tables=T1_TABLES,
        )

    section, hits = grid_section(
        f"{ctx.model_label(model)} ({sample_text(sub)})",
        runs,
        columns,
        cells_from_stats(stats, "benchmark"),
        paper_cell,
        ref,
    )
    gains = _gain_rows(ctx, runs, columns, stats, ref, paper_avg_ok)
    section.frame = pd.concat([section.frame, gains], ignore_index=True)
    samples = sub.drop_duplicates(["run", "seed", "benchmark"])
    rows = csv_rows(model, "", stats, per_seed, samples, hits, ref, ctx, k_col="benchmark")
    return section, rows, hits


def _gain_rows(
    ctx: ReportContext,
    runs: list[RunInfo],
    columns: list[tuple[object, str]],
    stats: pd.DataFrame,
    ref: PaperRef,
    paper_avg_ok: bool,
) -> pd.DataFrame:
    """Per RL run: its mean pass@1 minus the base model's per column, then the paper's gain row."""
    means = {(r["run"], r["benchmark"]): r["mean"] for _, r in stats.iterrows()}
    rows = []
    for run in runs:
        if run.name == BASE_RUN:
            continue
        ours = [_gain(means.get((run.name, key)), means.get((BASE_RUN, key))) for key, _ in columns]
        if all(g is None for g in ours):
            continue
        rows.append([f"{run.label} − Base", "", *[_signed(g) for g in ours]])
        paper = [
            None
            if key == "avg" and not paper_avg_ok
            else lookup(
                ctx.paper,
                model=ref.model,
                benchmark=key,
                method=run.paper_method,
                k=1,
                tables=["Table 1"],
                metric="pass_at_k_gain",
            )
            for key, _ in columns
        ]
        if any(paper):
            rows.append(
                [
                    f"{ref.label(['Table 1'])}: gain",
                    "",
                    *[_signed(h["value"]) if h else "–" for h in paper],
                ]
            )
    return pd.DataFrame(rows, columns=["Method", "seeds", *[h for _, h in columns]])


def _gain(run_mean: float | None, base_mean: float | None) -> float | None:
    if run_mean is None or base_mean is None or pd.isna(run_mean) or pd.isna(base_mean):
        return None
    return float(run_mean - base_mean)


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.2f}"


def _paper_table1(ctx: ReportContext) -> Section | None:
    """The paper's whole Table 1 (every model, in its order), so ours can be read against it."""
    t1 = ctx.paper[ctx.paper["table"] == "Table 1"]
    if t1.empty:
        return None
    rows = []
    for name, part in t1.groupby("paper_row", sort=False):
        values = {r["benchmark"]: r["value"] for _, r in part.iterrows()}
        gain = (part["metric"] == "pass_at_k_gain").all()
        fmt = _signed if gain else (lambda v: f"{v:.2f}")
        rows.append(
            [name, *[fmt(values[b]) if b in values else "–" for b in (*PAPER_BENCHMARKS, "avg")]]
        )
    header = ["Model (paper)", *[benchmark_label(b) for b in PAPER_BENCHMARKS], "Avg."]
    return Section(
        "The paper's Table 1, every row (third-party models are the paper's numbers, not run here)",
        pd.DataFrame(rows, columns=header),
    )


def _seed_average(sub: pd.DataFrame, benches: list[str]) -> pd.DataFrame:
    """Per (run, seed): mean pass@1 over ``benches``, only for seeds that have all of them."""
    part = sub[sub["benchmark"].isin(benches)]
    grouped = part.groupby(["run", "seed"])["value"].agg(["mean", "count"]).reset_index()
    grouped = grouped[grouped["count"] == len(benches)]
    return pd.DataFrame(
        {
            "run": grouped["run"],
            "seed": grouped["seed"],
            "benchmark": "avg",
            "value": grouped["mean"],
        }
    )


def table2_6(ctx: ReportContext) -> TableDoc | None:
    runs = ctx.runs_in("main", "weight", include_base=True)
    benches = [b for b in ctx.benchmarks if b != "math500"]
    return passk_table(
        ctx,
        stem="table2_6_passk",
        title="Tables 2 & 6: pass@k per benchmark",
        description="Tables 2 & 6: pass@k per benchmark and method (paper: Table 2 "
        "Qwen3-8B, Table 6 Qwen3-4B)",
        runs=runs,
        benchmarks=benches,
        paper_tables=T26_TABLES,
        extra_notes=[],
    )


def table7_8(ctx: ReportContext) -> TableDoc | None:
    runs = ctx.runs_in("main", "weight", include_base=True)
    return passk_table(
        ctx,
        stem="table7_8_math500_passk",
        title="Tables 7 & 8: MATH500 pass@k",
        description="Tables 7 & 8: MATH500 pass@k (paper: Table 7 Qwen3-4B, Table 8 Qwen3-8B)",
        runs=runs,
        benchmarks=["math500"],
        paper_tables=T78_TABLES,
        extra_notes=[],
    )


def _main_pacs(ctx: ReportContext) -> list[RunInfo]:
    return ctx.subject_runs()


def table9_13(ctx: ReportContext) -> TableDoc | None:
    runs = _main_pacs(ctx) + ctx.runs_in("score")
    note = (
        "The paper reports this ablation for Qwen3-4B only (Tables 9-13: MATH500, AMC23, "
        "AIME24, AIME25, BeyondAIME)."
    )
    return passk_table(
        ctx,
        stem="table9_13_score_ablation",
        title="Tables 9-13: score-function ablation, pass@k",
        description="Tables 9-13: score-function ablation (RLOO = PACS, GRPO, Dr. GRPO), pass@k",
        runs=runs,
        benchmarks=ctx.benchmarks,
        paper_tables=SCORE_TABLES,
        extra_notes=[ctx.ablation_note(runs), note],
        require=ctx.runs_in("score"),
    )


def table_beta(ctx: ReportContext) -> TableDoc | None:
    runs = _main_pacs(ctx) + ctx.runs_in("beta")
    runs = sorted(runs, key=lambda r: r.spec.method.beta)
    note = (
        "The paper shows the β sweep only as a figure (Fig. 4) whose values are not legible "
        "in our copy, so no paper numbers are shown; the paper picks β = 1."
    )
    return passk_table(
        ctx,
        stem="table_beta_ablation",
        title="β ablation (Fig. 4): pass@k",
        description="β ablation (paper Fig. 4) as a table: pass@k per β",
        runs=runs,
        benchmarks=ctx.benchmarks,
        paper_tables=[],
        extra_notes=[ctx.ablation_note(runs), note],
        require=ctx.runs_in("beta"),
    )


def table_ref(ctx: ReportContext) -> TableDoc | None:
    """pass@k of the main PACS run beside its reference-schedule variants (not in the paper)."""
    runs = _main_pacs(ctx) + ctx.runs_in("ref")
    note = (
        "Not in the paper: the official code resets the reference to the rollout policy every "
        "step (docs/design.md#the-reference-model); these runs keep it longer. Paired differences "
        "with CIs are in "
        "tables/claims.md (C3-ref, C3-ref-cost) where the profile compares them."
    )
    return passk_table(
        ctx,
        stem="table_ref_ablation",
        title="Reference ablation (not in the paper): pass@k",
        description="Reference ablation (not in the paper): pass@k per reference schedule",
        runs=runs,
        benchmarks=ctx.benchmarks,
        paper_tables=[],
        extra_notes=[note],
        require=ctx.runs_in("ref"),
    )


TABLES: list[tuple[str, Callable[[ReportContext], TableDoc | None], str]] = [
    (
        "Table 1 (table1_pass1)",
        table1,
        "no pass@1 results for base or main runs (eval/*/*/seed*/*/passk.json)",
    ),
    (
        "Tables 2 & 6 (table2_6_passk)",
        table2_6,
        "no pass@k results for base/main/weight runs on a non-MATH500 benchmark",
    ),
    (
        "Tables 7 & 8 (table7_8_math500_passk)",
        table7_8,
        "no MATH500 pass@k results in this profile",
    ),
    (
        "Tables 9-13 (table9_13_score_ablation)",
        table9_13,
        "no pass@k results for the score-ablation runs (ablation: score) and the main PACS run",
    ),
    (
        "β ablation table (table_beta_ablation)",
        table_beta,
        "no pass@k results for the β-ablation runs (ablation: beta) and the main PACS run",
    ),
    (
        "reference ablation table (table_ref_ablation)",
        table_ref,
        "no pass@k results for the reference-ablation runs (ablation: ref) and the main PACS run",
    ),
    (
        "Table 3 (table3_diversity)",
        table3,
        "no diversity results (diversity/*/*.json) for runs of this config",
    ),
    ("Tables 4-5 (table4_5_settings)", table4_5, "never skipped: it reads only the config"),
    (
        "run-time table (table_runtime)",
        table_runtime,
        "no metrics.jsonl with time_total (train/*/*/seed*/metrics.jsonl)",
    ),
]


def write_tables(ctx: ReportContext, log: OutputLog) -> None:
    for name, build, reason in TABLES:
        doc = build(ctx)
        if doc is None:
            log.skip(name, reason)
        else:
            log.write_table(doc)


__all__ = [
    "table1",
    "table2_6",
    "table3",
    "table4_5",
    "table7_8",
    "table9_13",
    "table_beta",
    "table_ref",
    "table_runtime",
    "write_tables",
]
