"""The claims table: does each of the paper's claims hold at this scale?
(docs/design.md#the-science-profile)

For every claim and every pair of runs (A, the run the paper says is better; B, the other) the
table gives the metric, the paired difference A − B, its 95 % paired t-interval over seeds, the
smallest effect the run could have detected, a two-sided p-value and a verdict (Holm's correction
within each claim family): **holds** (A above B), **reversed** (A below B), or **not separable**.
The seed is the unit: per-problem metrics are averaged per seed first; their crossed seed ×
problem bootstrap is reported beside the t-interval (:mod:`pacs.report.claims_stats`).

*Paired* means the same seed gives both runs the same base model, data order and evaluation
samples, so differences are taken per (seed, problem) cell before anything is averaged.

Per-problem values come from ``eval/<model>/<run>/seed<k>/<benchmark>/paths.json``
(:mod:`pacs.evaluation.paths`, sampled responses) and, for a profile with a ``study:`` section,
from ``path_exact.json`` (:mod:`pacs.evaluation.path_exact`, exact path distributions at the final
checkpoint: C4); training curves from ``metrics.jsonl``, the in-loop held-out pass@1 from
``eval_curve.jsonl`` (C1-n). With a study, C4 is the exact path entropy and Gini-Simpson index
and the sampled path statistics are their own family, C4-s.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from pacs import layout
from pacs.config import ClaimsSpec
from pacs.evaluation.passk import pass_at_k
from pacs.evaluation.paths import DEFAULT_SUBSAMPLE, problem_stats
from pacs.layout import ANY

from .claims_families import (
    clip_lines,
    clip_shares,
    family_of,
    tost_lines,
    tost_margin_of,
    with_tost,
)
from .claims_stats import (  # noqa: F401  (the statistics, re-exported for callers and tests)
    ALPHA,
    BOOTSTRAP,
    NO_DATA,
    SEED_MEANS_T,
    SEED_T,
    Comparison,
    bootstrap_p,
    fmt,
    holm,
    holm_verdict,
    matrix_stats,
    paired_bootstrap,
    rules_out,
    seed_t_interval,
    t_mde,
    verdict,
    with_holm_verdicts,
)
from .context import ReportContext, RunInfo
from .loaders import read_json
from .outputs import OutputLog
from .study import hard_benchmark, load_path_exact, write_study_table

SEED_LEVEL = ("entropy", "heldout_pass_at_1")  # one value per seed
EXACT = {"exact_entropy": "entropy", "exact_gini_simpson": "gini_simpson"}  # path_exact fields
CLAIMS_COLUMNS = [
    "claim",
    "family",
    "statement",
    "metric",
    "run_a",
    "run_b",
    "seeds",
    "problems",
    "mean_a",
    "mean_b",
    "diff",
    "ci_low",
    "ci_high",
    "mde",
    "sd",
    "interval",
    "p",
    "p_holm",
    "verdict",
    "rules_out",
    "boot_low",
    "boot_high",
    "boot_p",
    "wilcoxon_p",
    "tost_margin",
    "tost_p",
    "equivalent",
]


# ----------------------------------------------------------------------------- per-cell data


def load_problem_tables(results: Path, benchmark: str) -> dict[tuple[str, int], dict]:
    """(run, seed) -> per_problem block of every ``paths.json`` of ``benchmark`` (first model)."""
    out: dict[tuple[str, int], dict] = {}
    pattern = f"{layout.eval_dir('', ANY, ANY, ANY, benchmark)}/paths.json"
    for path in sorted(Path(results).glob(pattern)):
        doc = read_json(path)
        out.setdefault((doc["run"], int(doc["seed"])), doc["per_problem"])
    return out


def problem_metric(per_problem: dict, metric: str, k: int = 1) -> pd.Series:
    """One value per problem: pass@k, or a path statistic (NaN where undefined)."""
    values = {}
    for pid, p in per_problem.items():
        if metric == "pass_at_k":
            values[pid] = pass_at_k(p["n"], p["c"], k)
        else:
            v = problem_stats([tuple(x.split("-")) for x in p["paths"]], DEFAULT_SUBSAMPLE).get(
                metric
            )
            values[pid] = np.nan if v is None else v
    return pd.Series(values, dtype=float)


def paired_matrix(tables: dict, run_a: str, run_b: str, metric: str, k: int = 1):
    """[seeds, problems] frames of A and of B (index seed, columns problem id) over the seeds
    and problems both have; (None, None) without a common seed."""
    seeds = sorted({s for r, s in tables if r == run_a} & {s for r, s in tables if r == run_b})
    if not seeds:
        return None, None
    a = pd.DataFrame({s: problem_metric(tables[run_a, s], metric, k) for s in seeds}).T
    b = pd.DataFrame({s: problem_metric(tables[run_b, s], metric, k) for s in seeds}).T
    cols = a.columns.intersection(b.columns)
    return a[cols], b[cols]


def late_entropy(metrics: pd.DataFrame, run: str, late_fraction: float, column: str) -> pd.Series:
    """Per seed: the mean of ``column`` over the last ``late_fraction`` of the training steps."""
    sub = metrics[(metrics["run"] == run) & metrics[column].notna()]
    if sub.empty:
        return pd.Series(dtype=float)
    first = sub["step"].max() * (1.0 - late_fraction)
    return sub[sub["step"] > first].groupby("seed")[column].mean()


# ----------------------------------------------------------------------------- the catalogue


@dataclass(frozen=True)
class ClaimRow:
    claim: str
    statement: str
    # pass_at_k | path_diversity | path_entropy | entropy | heldout_pass_at_1 | exact_entropy |
    # exact_gini_simpson
    metric: str
    run_a: str
    run_b: str
    k: int = 1


@dataclass(frozen=True)
class ClaimData:
    """What the comparisons read: per (run, seed) the per-problem blocks of ``paths.json``; the
    training metrics; the in-loop held-out curves; the exact per-problem path statistics of the
    final checkpoint on the hard split (index run, seed, problem; empty without a study)."""

    tables: dict
    metrics: pd.DataFrame
    curves: pd.DataFrame
    exact: pd.DataFrame


def _official_pacs(ctx: ReportContext) -> RunInfo | None:
    return next(iter(ctx.subject_runs()), None)


def claim_rows(ctx: ReportContext, k_max: int) -> list[ClaimRow]:
    """Every (claim, A, B) comparison the config's runs allow
    (docs/design.md#the-science-profile)."""
    pacs = _official_pacs(ctx)
    if pacs is None:
        return []
    study = ctx.spec.study is not None
    rows = []
    for b in ctx.baseline_runs():
        rows += _baseline_rows(pacs, b, _large_ks(ctx, k_max), study)
    for r in ctx.runs_in("ref"):
        rows += [
            ClaimRow("C3-ref", f"{r.label}: entropy above {b.label}", "entropy", r.name, b.name)
            for b in ctx.baseline_runs(entropy_baseline=True)
        ]
        rows.append(
            ClaimRow(
                "C3-ref", f"{r.label}: entropy above {pacs.label}", "entropy", r.name, pacs.name
            )
        )
        if study:  # what the longer-lived reference costs (no claim of the paper: checks)
            rows.append(
                ClaimRow(
                    "C3-ref-cost",
                    f"{pacs.label} pass@1 above {r.label}",
                    "pass_at_k",
                    pacs.name,
                    r.name,
                )
            )
            rows.append(
                ClaimRow(
                    "C3-ref-cost-n",
                    f"{pacs.label} held-out pass@1 above {r.label}",
                    "heldout_pass_at_1",
                    pacs.name,
                    r.name,
                )
            )
    for claim, ablation in (("C5", "score"), ("C6", "weight"), ("C7", "beta")):
        rows += [
            ClaimRow(claim, f"{pacs.label} pass@1 above {r.label}", "pass_at_k", pacs.name, r.name)
            for r in ctx.runs_in(ablation)
        ]
    for arm in ctx.subject_runs()[1:]:  # further arms of the subject (the unclipped PACS)
        rows += arm_rows(arm, pacs, ctx.baseline_runs(), _large_ks(ctx, k_max), study)
    return rows


def arm_rows(
    arm: RunInfo, pacs: RunInfo, baselines: list[RunInfo], ks: list[int], study: bool
) -> list[ClaimRow]:
    """A further arm's rows: C1-C4 against each baseline as ``<claim>@<arm>``, and against the
    first subject run ``arm@<arm>`` (hard-split pass@1) and ``arm-n@<arm>`` (in-loop)."""
    rows = []
    for b in baselines:
        rows += [
            ClaimRow(f"{r.claim}@{arm.name}", r.statement, r.metric, r.run_a, r.run_b, r.k)
            for r in _baseline_rows(arm, b, ks, study, who=arm.label)
        ]
    rows.append(
        ClaimRow(
            f"arm@{arm.name}",
            f"{arm.label} pass@1 vs {pacs.label}",
            "pass_at_k",
            arm.name,
            pacs.name,
        )
    )
    if study:
        rows.append(
            ClaimRow(
                f"arm-n@{arm.name}",
                f"{arm.label} held-out pass@1 vs {pacs.label}",
                "heldout_pass_at_1",
                arm.name,
                pacs.name,
            )
        )
    return rows


def _large_ks(ctx: ReportContext, k_max: int) -> list[int]:
    """C2's k: ``claims.large_k`` up to the evaluation's n, and that n."""
    wanted = ctx.spec.claims.large_k if ctx.spec.claims is not None else ()
    return sorted({k for k in wanted if k <= k_max} | {k_max})


def _baseline_rows(
    pacs: RunInfo, b: RunInfo, ks: list[int], study: bool, who: str = "PACS"
) -> list[ClaimRow]:
    """C1-C4 of PACS (``who``) against one baseline (with a study: C1-n, exact C4 and sampled
    C4-s)."""
    a, name = pacs.name, b.name
    rows = [ClaimRow("C1", f"{who} pass@1 above {b.label}", "pass_at_k", a, name)]
    if study:
        rows.append(
            ClaimRow("C1-n", f"{who} held-out pass@1 above {b.label}", "heldout_pass_at_1", a, name)
        )
    rows += [ClaimRow("C2", f"{who} pass@{k} above {b.label}", "pass_at_k", a, name, k) for k in ks]
    rows.append(
        ClaimRow("C3", f"{who} entropy above {b.label} late in training", "entropy", a, name)
    )
    if study:
        rows += [
            ClaimRow("C4", f"{who} exact path entropy above {b.label}", "exact_entropy", a, name),
            ClaimRow(
                "C4", f"{who} exact Gini-Simpson above {b.label}", "exact_gini_simpson", a, name
            ),
        ]
    sampled = "C4-s" if study else "C4"
    return rows + [
        ClaimRow(
            sampled,
            f"{who} correct responses more path-diverse than {b.label}",
            "path_diversity",
            a,
            name,
        ),
        ClaimRow(sampled, f"{who} path entropy above {b.label}", "path_entropy", a, name),
    ]


Matrices = tuple[pd.DataFrame, pd.DataFrame]  # A and B: index seed, columns problem id


def comparison_matrices(row: ClaimRow, data: ClaimData, settings: ClaimsSpec) -> Matrices | None:
    """The [seeds, problems] values of A and B that ``row`` compares, as the statistics use them
    (pass@k in percentage points; a seed-level metric: one column named ''), or None without a
    common seed."""
    if row.metric in SEED_LEVEL:
        a, b = (seed_values(row.metric, data, run, settings) for run in (row.run_a, row.run_b))
        seeds = a.index.intersection(b.index)
        return a[seeds].to_frame(""), b[seeds].to_frame("")
    if row.metric in EXACT:
        a, b = exact_matrix(data.exact, row.run_a, row.run_b, EXACT[row.metric])
    else:
        a, b = paired_matrix(data.tables, row.run_a, row.run_b, row.metric, row.k)
    if a is not None and row.metric == "pass_at_k":
        a, b = a * 100.0, b * 100.0  # percentage points
    return None if a is None else (a, b)


def seed_values(metric: str, data: ClaimData, run: str, settings: ClaimsSpec) -> pd.Series:
    """One value per seed: the late token entropy, or the in-loop held-out pass@1 (in
    percentage points), the mean over the run's last ``settings.heldout_checkpoints``
    evaluated steps (1: the last step)."""
    if metric == "entropy":
        return late_entropy(data.metrics, run, settings.late_fraction, "entropy")
    curves = data.curves[data.curves["run"] == run]
    if curves.empty:
        return pd.Series(dtype=float)
    steps = sorted(curves["step"].unique())[-settings.heldout_checkpoints :]
    last = curves[curves["step"].isin(steps)]
    per_step = last.groupby(["seed", "step"])["pass_at_1"].mean()
    return per_step.groupby("seed").mean() * 100.0


def final_exact(exact: pd.DataFrame, benchmark: str | None) -> pd.DataFrame:
    """The exact per-problem statistics of each run's last checkpoint on ``benchmark``."""
    if exact.empty or benchmark is None:
        return exact.iloc[0:0]
    sub = exact[exact["benchmark"] == benchmark]
    last = sub.groupby("run")["step"].transform("max")
    return sub[sub["step"] == last]


def exact_matrix(exact: pd.DataFrame, run_a: str, run_b: str, field: str):
    """[seeds, problems] frames of an exact path statistic of A and of B over the seeds and
    problems both have; (None, None) without a common seed."""
    wide = {
        run: exact[exact["run"] == run].pivot(index="seed", columns="problem", values=field)
        for run in (run_a, run_b)
    }
    seeds = wide[run_a].index.intersection(wide[run_b].index)
    if seeds.empty:
        return None, None
    cols = wide[run_a].columns.intersection(wide[run_b].columns)
    return wide[run_a].loc[seeds, cols], wide[run_b].loc[seeds, cols]


def row_head(row: ClaimRow, settings: ClaimsSpec) -> dict:
    """The columns naming a comparison: claim, statement, metric, run_a, run_b."""
    return {
        "claim": row.claim,
        "family": family_of(row.claim, settings),
        "statement": row.statement,
        "metric": metric_name(row, settings),
        "run_a": row.run_a,
        "run_b": row.run_b,
    }


def compare(row: ClaimRow, m: Matrices | None, settings: ClaimsSpec) -> dict:
    """One claims-table row as a dict (CLAIMS_COLUMNS) from its matrices; verdict NO_DATA when
    no seed has a value in both runs."""
    got = None
    if m is not None:
        got = matrix_stats(m[0].to_numpy(), m[1].to_numpy(), settings, row.metric in SEED_LEVEL)
    head = {**row_head(row, settings), "tost_margin": tost_margin_of(row.claim, settings)}
    return {**head, **(got or {"seeds": 0, "problems": 0, "verdict": NO_DATA})}


def metric_name(row: ClaimRow, settings: ClaimsSpec) -> str:
    if row.metric == "pass_at_k":
        return f"pass@{row.k} (%)"
    if row.metric == "entropy":
        return f"token entropy (nats), mean over the last {settings.late_fraction:.0%} of steps"
    return {
        "path_diversity": "path diversity (P[two correct differ])",
        "path_entropy": "path entropy (nats, plug-in)",
        "heldout_pass_at_1": "held-out pass@1 (%), normal split, in-loop, "
        + (
            "last step"
            if settings.heldout_checkpoints == 1
            else f"mean of the last {settings.heldout_checkpoints} checkpoints"
        ),
        "exact_entropy": "exact path entropy (nats), final checkpoint",
        "exact_gini_simpson": "exact path Gini-Simpson, final checkpoint",
    }[row.metric]


# ----------------------------------------------------------------------------- outputs


def claim_verdicts(table: pd.DataFrame) -> pd.DataFrame:
    """One line per claim: holds when every row holds, reversed when every row is reversed,
    mixed when rows disagree in sign, else not separable."""
    out = []
    for claim, rows in table.groupby("claim", sort=False):
        kinds = set(rows["verdict"]) - {NO_DATA}
        if not kinds:
            overall = NO_DATA
        elif kinds == {"holds"}:
            overall = "holds"
        elif kinds == {"reversed"}:
            overall = "reversed"
        elif {"holds", "reversed"} <= kinds:
            overall = "mixed"
        elif "holds" in kinds or "reversed" in kinds:
            overall = "partly: " + ", ".join(
                f"{v} {n}/{len(rows)}" for v, n in rows["verdict"].value_counts().items()
            )
        else:
            overall = "not separable"
        out.append({"claim": claim, "comparisons": len(rows), "verdict": overall})
    return pd.DataFrame(out)


def _p(v: float) -> str:
    return "–" if not np.isfinite(v) else f"{v:.3f}" if v >= 0.001 else "< 0.001"


def _boot_ci(lo: float, hi: float) -> str:
    return "–" if not np.isfinite(lo) else f"[{fmt(lo)}, {fmt(hi)}]"


def _comparison_row(r) -> str:
    """One row of claims.md's table of every comparison."""
    return (
        f"| {r.claim} | {r.family} | {r.statement} | {r.metric} | {r.seeds} | {r.problems} | "
        f"{r.mean_a:.3f} | {r.mean_b:.3f} | {fmt(r.diff)} | "
        f"[{fmt(r.ci_low)}, {fmt(r.ci_high)}] | {r.sd:.3f} | {r.mde:.3f} | "
        f"{_p(r.p)} | {_p(r.wilcoxon_p)} | {_p(r.p_holm)} | {r.verdict} | "
        f"{r.rules_out if r.rules_out else ''} | "
        f"{_boot_ci(r.boot_low, r.boot_high)} | {_p(r.boot_p)} |"
    )


CLAIMS_INTRO = (
    "Each row: A − B paired by seed (A = the run the paper says is better); the seed is "
    "the unit. 95 % CI: the paired t-interval over seeds (n − 1 df); a per-problem metric "
    "is averaged over the problems per seed first. MDE: the true difference a two-sided "
    "paired t-test at α = 0.05 detects with 80 % power (noncentral t, the observed SD of "
    "the per-seed differences, SD). p: the paired t-test's, two-sided; Wilcoxon p: the "
    "signed-rank test's on the same per-seed differences, beside it, not for the verdict; "
    "p (Holm): adjusted across the row's family (declared in the design's claims."
    "families; a claim in none is its own). Verdict from p (Holm) < 0.05: **holds** "
    "(A above B), **reversed** (A below B), else **not separable**, with the differences "
    "its CI still rules out. Beside it, for per-problem metrics: the crossed percentile "
    "bootstrap over seeds × problems ({n_boot_note}), its interval and p, not used for the "
    "verdict. pass@k in percentage points."
)  # claims.md's opening paragraph (format: n_boot_note)


def claims_markdown(
    table: pd.DataFrame, settings: ClaimsSpec, n_boot_note: str, shares: pd.DataFrame | None = None
) -> str:
    """``claims.md``: the per-claim verdicts, every comparison, the TOST lines and the
    clip-bound share of each arm (``shares``, :func:`clip_shares`)."""
    table = table.reindex(columns=CLAIMS_COLUMNS).astype(
        {"interval": object, "rules_out": object, "family": object}
    )
    table = table.fillna({"interval": SEED_T, "rules_out": ""})
    table["family"] = table["family"].where(table["family"].notna(), table["claim"])
    lines = [
        "# Claims of the paper, tested at this scale",
        "",
        CLAIMS_INTRO.format(n_boot_note=n_boot_note),
        "",
        "## Verdict per claim",
        "",
        "| claim | comparisons | verdict |",
        "|:---|---:|:---|",
    ]
    lines += [
        f"| {r.claim} | {r.comparisons} | {r.verdict} |" for r in claim_verdicts(table).itertuples()
    ]
    lines += [
        "",
        "## Every comparison",
        "",
        (
            "| claim | family | statement | metric | seeds | problems | A | B | A − B "
            "| 95 % CI (t) | SD | MDE | p | Wilcoxon p | p (Holm) | verdict | rules out "
            "| bootstrap CI | bootstrap p |"
        ),
        "|:---|:---|:---|:---|---:|---:|---:|---:|---:|:---|---:|---:|---:|---:|---:|:---|:---|:---|---:|",
    ]
    lines += [_comparison_row(r) for r in table[table["verdict"] != NO_DATA].itertuples()]
    missing = table[table["verdict"] == NO_DATA]
    if len(missing):
        lines += [
            "",
            "Not computed (no seed with a value in both runs): "
            + "; ".join(f"{r.claim} {r.statement} ({r.metric})" for r in missing.itertuples()),
        ]
    lines += tost_lines(table) + clip_lines(shares if shares is not None else pd.DataFrame())
    lines += [
        "",
        (
            "A claim that does not hold here says so: 'not separable' means this run cannot "
            "tell the two apart, 'reversed' that it measured the opposite of the paper's claim."
        ),
    ]
    return "\n".join(lines) + "\n"


def claim_matrices(
    ctx: ReportContext, settings: ClaimsSpec
) -> list[tuple[ClaimRow, Matrices | None]]:
    """Every comparison of the first configured benchmark with its A and B matrices (or None)."""
    bench = ctx.spec.data.benchmarks[0]
    tables = load_problem_tables(ctx.results.root, bench)
    n_min = min((p["n"] for per in tables.values() for p in per.values()), default=1)
    exact = load_path_exact(ctx.results.root) if ctx.spec.study is not None else pd.DataFrame()
    data = ClaimData(
        tables, ctx.results.metrics, ctx.results.curves, final_exact(exact, hard_benchmark(ctx))
    )
    return [(row, comparison_matrices(row, data, settings)) for row in claim_rows(ctx, n_min)]


def build_claims(
    ctx: ReportContext, settings: ClaimsSpec, matrices: list | None = None
) -> pd.DataFrame:
    """Every comparison's row (CLAIMS_COLUMNS), from ``claim_matrices`` (computed if not given)."""
    matrices = claim_matrices(ctx, settings) if matrices is None else matrices
    rows = [compare(row, m, settings) for row, m in matrices]
    return with_tost(with_holm_verdicts(pd.DataFrame(rows, columns=CLAIMS_COLUMNS)))


CELLS_COLUMNS = [
    "row", "claim", "family", "statement", "metric", "run_a", "run_b", "seed", "problem",
    "value_a", "value_b",
]  # fmt: skip


def claims_cells(matrices: list, settings: ClaimsSpec) -> pd.DataFrame:
    """The raw cells behind the claims table (CELLS_COLUMNS), one line per (comparison, seed,
    problem) in matrix order: ``row`` is the comparison's line in claims.csv (0-based), value_a
    and value_b as the statistics use them (NaN: undefined, left out), problem '' for a
    seed-level metric; a comparison without a common seed gets one line with no seed."""
    parts = []
    for i, (row, m) in enumerate(matrices):
        head = {"row": i, **row_head(row, settings)}
        if m is None or m[0].size == 0:
            parts.append(pd.DataFrame([{**head, "problem": ""}]))
            continue
        a, b = m
        s, q = a.shape
        cells = {
            "seed": np.repeat(a.index.to_numpy(), q),
            "problem": np.tile(a.columns.astype(str).to_numpy(), s),
            "value_a": a.to_numpy().ravel(),
            "value_b": b.to_numpy().ravel(),
        }
        parts.append(pd.DataFrame({**head, **cells}))
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    return out.reindex(columns=CELLS_COLUMNS).astype({"seed": "Int64"})


def write_claims(ctx: ReportContext, log: OutputLog, figures: bool = True) -> None:
    """``tables/claims.md`` and ``claims.csv`` (when the config has ``claims:``), and the curves."""
    settings = ctx.spec.claims
    if settings is None:
        return
    matrices = claim_matrices(ctx, settings)
    table = build_claims(ctx, settings, matrices)
    if table.empty or (table["verdict"] == NO_DATA).all():
        log.skip(
            "claims table", "no paths.json or metrics of PACS and a baseline with common seeds"
        )
        return
    log.write_text(
        "tables/claims.csv",
        table.to_csv(index=False, lineterminator="\n"),
        "Claims C1-C7: paired differences, t CIs over seeds, MDE, verdicts (tidy data, CSV)",
    )
    log.write_text(
        "tables/claims_cells.csv",
        claims_cells(matrices, settings).to_csv(index=False, lineterminator="\n"),
        "Claims C1-C7: every (comparison, seed, problem) value behind claims.csv (tidy, CSV)",
    )
    shares = clip_shares(
        ctx.results.metrics,
        {r.name: (r.label, r.spec.method.grad_clip) for r in ctx.runs.values() if r.spec},
    )
    log.write_text(
        "tables/claims_clip.csv",
        shares.to_csv(index=False, lineterminator="\n"),
        "Claims: the share of each arm's updates whose pre-clip norm exceeded its clip (CSV)",
    )
    log.write_text(
        "tables/claims.md",
        claims_markdown(table, settings, f"{settings.bootstrap} resamples", shares),
        "Claims C1-C7: verdict per claim and every paired comparison (Markdown)",
    )
    study = write_study_table(ctx, log)  # the checkpoints behind C1-C4 (profiles with study:)
    if figures:
        from .claims_figures import write_claim_curves  # matplotlib only when needed
        from .study_figures import write_study_figures

        write_claim_curves(ctx, log, settings)
        if study is not None:
            write_study_figures(ctx, log, study)
