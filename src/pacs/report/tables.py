"""The report's tables: Table 1, Tables 2 & 6, 7-8, 9-13, 3 and the beta ablation; the list of
every table the report writes (Tables 4-5: :mod:`.settings_table`; run time: :mod:`.runtime_table`).

Each table is a :class:`~pacs.report.render.TableDoc`: display sections (rows = runs, with the
paper's numbers in a clearly labelled row under ours where benchmark, method and k match) and a
tidy CSV with one row per number of ours. All pass@k values are percentages; with several seeds
a cell is ``mean ± std`` (sample std across seeds) and the ``seeds`` column says how many.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from .context import BASE_RUN, ReportContext, RunInfo, fmt_mean_std, seed_stats, seeds_text
from .outputs import OutputLog
from .paper import PaperRef, lookup
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


def _sample_text(df: pd.DataFrame) -> str:
    n, p = sorted(set(df["n_min"])), sorted(set(df["n_problems"]))
    ns = f"{n[0]}" if len(n) == 1 else f"{n[0]}–{n[-1]}"
    ps = f"{p[0]}" if len(p) == 1 else f"{p[0]}–{p[-1]}"
    return f"n = {ns} samples per problem, {ps} problems"


def _comparison(ref: PaperRef) -> str:
    return "" if ref.model is None else ("same model" if ref.same else "reference only")


def _long_rows(
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
                "paper_comparison": _comparison(ref) if hit else "",
            }
        )
    return rows


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
            _add_reference_note(notes, ctx, ref, model, hits)
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
        f"{ctx.model_label(model)} — {benchmark_label(bench)} ({_sample_text(sub)})",
        runs,
        [(k, f"k={k}") for k in ks],
        cells_from_stats(stats, "k"),
        paper_cell,
        ref,
    )
    rows = _long_rows(
        model, bench, stats, sub, sub.drop_duplicates(["run", "seed"]), hits, ref, ctx
    )
    return section, rows, hits


def _add_reference_note(
    notes: list[str], ctx: ReportContext, ref: PaperRef, model: str, hits: dict
) -> None:
    """Append the note on the paper rows of ``model`` once, where a section shows any."""
    note = ctx.reference_note(ref, model) if hits else None
    if note and note not in notes:
        notes.append(note)


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
    sections, long_rows, notes = [], [], []
    for model in ctx.models:
        sub = df[df["model"] == model]
        if sub.empty:
            continue
        ref = ctx.ref(model, T1_TABLES)
        section, rows, hits = _table1_section(ctx, model, sub, runs, ref)
        sections.append(section)
        long_rows += rows
        _add_reference_note(notes, ctx, ref, model, hits)
    if not sections:
        return None
    notes.extend(TABLE1_NOTES)
    notes.extend(not_in_paper_note(runs))
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


def not_in_paper_note(runs: list[RunInfo]) -> list[str]:
    """A note naming the runs of methods the PACS paper does not train (``MethodTraits.in_paper``
    false: DAPO, REAL), which have no paper row."""
    extra = [r for r in runs if r.traits is not None and not r.traits.in_paper]
    if not extra:
        return []
    methods = ", ".join(dict.fromkeys(r.traits.label for r in extra))
    note = (
        f"Not in the paper: {methods} ({', '.join(r.name for r in extra)}), later baselines on "
        "the same harness (docs/design.md §2.11); the paper has no row for them."
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
        f"{ctx.model_label(model)} ({_sample_text(sub)})",
        runs,
        columns,
        cells_from_stats(stats, "benchmark"),
        paper_cell,
        ref,
    )
    gains = _gain_rows(ctx, runs, columns, stats, ref, paper_avg_ok)
    section.frame = pd.concat([section.frame, gains], ignore_index=True)
    samples = sub.drop_duplicates(["run", "seed", "benchmark"])
    rows = _long_rows(model, "", stats, per_seed, samples, hits, ref, ctx, k_col="benchmark")
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
        "step (design §2.5); these runs keep it longer. Paired differences with CIs are in "
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


# ============================================================================ Table 3: diversity

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
    sections, long_rows, notes = [], [], []
    for model in ctx.models:
        sub = div[div["model"] == model]
        if sub.empty:
            continue
        ref = ctx.ref(model, ["Table 3"])
        section, hits = _diversity_section(ctx, model, sub, ref)
        sections.append(section)
        long_rows += _diversity_rows(ctx, model, sub, hits, ref)
        _add_reference_note(notes, ctx, ref, model, hits)
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
) -> tuple[Section, dict]:
    """One model's Table 3 section (D per run and benchmark) and the paper hits."""
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

    return grid_section(
        ctx.model_label(model),
        runs,
        [(b, benchmark_label(b)) for b in benches],
        cells,
        paper_cell,
        ref,
        digits=4,
        with_seeds=False,
    )


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
                "paper_comparison": _comparison(ref) if hit else "",
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
