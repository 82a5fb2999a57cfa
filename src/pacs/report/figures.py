"""The report's figures (PNG and PDF): Fig. 3, 4, 5a, 5b, 6 and pass@k curves.

All figures use :mod:`pacs.report.style` (colours fixed per run, fonts, dpi). Seeds are drawn
as bands (±1 sample std across seeds) where a run has several; every title says how many seeds
and what was sampled, from the data drawn, never from what a profile usually holds. Nothing is
drawn for us that did not come from a result file; the paper's numbers, where shown, are
labelled as the paper's.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D

from .context import BASE_RUN, ReportContext, RunInfo
from .outputs import OutputLog
from .paper import lookup
from .psi_figure import psi_minibatch
from .style import (
    BENCHMARK_PALETTE,
    OOD_BENCHMARKS,
    PANEL_SIZE,
    PAPER_COLOR,
    benchmark_label,
    figure_style,
    new_figure,
    run_palette,
)

MIN_KDE_POINTS = 10  # below this (or with a degenerate spread) Fig. 5b draws points only
PASSK_PAPER_TABLES = ["Table 2", "Table 6", "Table 7", "Table 8"]


def _palette(ctx: ReportContext) -> dict[str, str]:
    return run_palette(ctx.runs)


def _seed_counts(df: pd.DataFrame) -> dict[str, int]:
    return df.groupby("run")["seed"].nunique().to_dict()


def _with_seed_labels(df: pd.DataFrame, ctx: ReportContext) -> tuple[pd.DataFrame, dict[str, str]]:
    """Add ``series`` = 'Label (n seeds)' and return the colour map keyed by it."""
    counts = _seed_counts(df)
    pal = _palette(ctx)
    names = {run: f"{ctx.label(run)} ({n} seed{'s' if n > 1 else ''})" for run, n in counts.items()}
    df = df.assign(series=df["run"].map(names))
    return df, {names[r]: pal[r] for r in names}


def seed_band_text(counts: dict[str, int]) -> str:
    """What a line and its band mean, from the number of seeds of each run drawn."""
    if not counts:
        return ""
    lo, hi = min(counts.values()), max(counts.values())
    if hi == 1:
        return "one seed per run: no band"
    if lo == hi:
        return f"line: mean over {hi} seeds; band: ±1 std across seeds"
    return "line: mean over seeds; band: ±1 std across seeds; runs with one seed: no band"


def range_text(values) -> str:
    """``100`` when every value is 100, ``50–100`` when they differ, ``?`` when none is known."""
    known = sorted({int(v) for v in values if not pd.isna(v)})
    if not known:
        return "?"
    return str(known[0]) if len(known) == 1 else f"{known[0]}–{known[-1]}"


def _band(df: pd.DataFrame) -> str | None:
    """seaborn's ``errorbar``: ±1 std across seeds where a run has several, else no band."""
    return "sd" if df.groupby("run")["seed"].nunique().max() > 1 else None


def _hue_order(ctx: ReportContext, df: pd.DataFrame) -> list[str]:
    present = set(df["run"])
    order = [r for r in ctx.runs if r in present]
    return list(dict.fromkeys(df.set_index("run").loc[order, "series"]))


# ============================================================================ Fig. 3 and 5a


def _ncols(panels: int) -> int:
    """Columns of a facet grid: at most 3, and 2 for 4 panels (a 2 x 2 grid)."""
    return 2 if panels == 4 else min(3, panels)


def _line_over_steps(
    ctx: ReportContext,
    df: pd.DataFrame,
    y: str,
    ylabel: str,
    title: str,
    base_lines: dict | None = None,
):
    """One panel per model (and per benchmark when ``df`` has that column); hue = run. The title
    gains a line saying what the line and band are, from the seeds in ``df``."""
    keys = ["model", "benchmark"] if "benchmark" in df.columns else ["model"]
    panels = list(df[keys].drop_duplicates().itertuples(index=False, name=None))
    order = {m: i for i, m in enumerate(ctx.models)}
    panels.sort(key=lambda k: (order.get(k[0], 99), str(k)))
    ncols = _ncols(len(panels))
    fig, axes = new_figure(ncols=ncols, nrows=-(-len(panels) // ncols))
    for ax, key in zip(axes.flat, panels):
        sel = df
        for col, val in zip(keys, key):
            sel = sel[sel[col] == val]
        sub, colors = _with_seed_labels(sel, ctx)
        sns.lineplot(
            data=sub,
            x="step",
            y=y,
            hue="series",
            hue_order=_hue_order(ctx, sub),
            palette=colors,
            errorbar=_band(sub),
            estimator="mean",
            marker="o",
            markersize=3,
            linewidth=1.4,
            ax=ax,
        )
        base = (base_lines or {}).get(key)
        if base is not None:
            ax.axhline(
                base, color=_palette(ctx)[BASE_RUN], ls="--", lw=1, label="Base model (before RL)"
            )
        name = ctx.model_label(key[0]) + (f" — {benchmark_label(key[1])}" if len(key) > 1 else "")
        ax.set(title=name, xlabel="training step", ylabel=ylabel)
        ax.legend(title=None)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    fig.suptitle(f"{title}\n({seed_band_text(_seed_counts(df))})")
    return fig


def fig3(ctx: ReportContext, log: OutputLog) -> str | None:
    runs = [r.name for r in ctx.runs_in("main")]
    df = ctx.results.curves
    df = df[df["run"].isin(runs)].assign(pass_at_1=lambda d: d["pass_at_1"] * 100.0)
    if df.empty:
        return (
            "no pass@1 curves for the main runs (train/*/*/seed*/eval_curve.jsonl or "
            "curve/*/*/seed*/step*/*/passk.json)"
        )
    base = ctx.passk_pct()
    base = base[(base["run"] == BASE_RUN) & (base["k"] == 1)]
    base_lines = {
        (m, b): v for (m, b), v in base.groupby(["model", "benchmark"])["value"].mean().items()
    }
    sampled = curve_sample_text(ctx, df)
    fig = _line_over_steps(
        ctx, df, "pass_at_1", "pass@1 (%)", f"Fig. 3: pass@1 during training\n{sampled}", base_lines
    )
    log.save_figure(
        fig,
        "fig3_eval_curve",
        "Fig. 3: pass@1 versus training step per method; "
        f"{sampled.replace(chr(10), ' ')}; {seed_band_text(_seed_counts(df))}",
    )
    return None


def curve_sample_text(ctx: ReportContext, curves: pd.DataFrame) -> str:
    """What each point of a pass@1 curve sampled, and on a second line what the final evaluation
    (Table 1) sampled: a smaller in-training evaluation gives other numbers than the table."""
    text = (
        f"each point: {range_text(curves['n_problems'])} problems × "
        f"{range_text(curves['n_samples'])} samples"
    )
    final = ctx.results.passk
    final = final[final["run"].isin(set(curves["run"]))]
    if final.empty:
        return text
    return (
        f"{text}\n(Table 1, after training: {range_text(final['n_problems'])} problems × "
        f"{range_text(final['n_min'])} samples)"
    )


def fig5a(ctx: ReportContext, log: OutputLog) -> str | None:
    runs = [r.name for r in ctx.runs_in("main")]
    df = ctx.results.metrics
    df = df[df["run"].isin(runs) & df["entropy"].notna()]
    if df.empty:
        return "no `entropy` in metrics.jsonl of the main runs (train/*/*/seed*/metrics.jsonl)"
    fig = _line_over_steps(
        ctx,
        df,
        "entropy",
        "policy entropy (nats / token)",
        "Fig. 5a: policy entropy during training\n"
        "mean token entropy of each step's training rollouts",
    )
    log.save_figure(
        fig,
        "fig5a_entropy",
        "Fig. 5a: policy entropy of the training rollouts "
        f"versus training step per method; {seed_band_text(_seed_counts(df))}",
    )
    return None


# ============================================================================ Fig. 4: beta


def _beta_of(run: RunInfo) -> float:
    return run.spec.method.beta


def fig4(ctx: ReportContext, log: OutputLog) -> str | None:
    beta_runs = ctx.runs_in("beta")
    runs = ctx.subject_runs() + beta_runs
    names = {r.name: r for r in runs}
    passk = ctx.passk_pct()
    passk = passk[passk["run"].isin(names)]
    curves = ctx.results.curves
    curves = curves[curves["run"].isin(names)]
    have_beta = set(passk["run"]) | set(curves["run"])
    if not have_beta & {r.name for r in beta_runs}:
        return "no pass@k or eval-curve results for the β-ablation runs (ablation: beta)"
    models = [m for m in ctx.models if m in set(passk["model"]) | set(curves["model"])]
    curve_benches = {
        m: sorted(curves.loc[curves["model"] == m, "benchmark"].unique()) or [None] for m in models
    }
    ncols = 1 + max(len(b) for b in curve_benches.values())
    fig, axes = new_figure(ncols=ncols, nrows=len(models))
    for row, model in zip(axes, models):
        _beta_points(ctx, row[0], passk[passk["model"] == model], names)
        row[0].set_title(f"{ctx.model_label(model)}: pass@k vs β")
        mc = curves[curves["model"] == model]
        for ax, bench in zip(row[1:], curve_benches[model]):
            _beta_curves(ctx, ax, mc[mc["benchmark"] == bench] if bench else mc, names)
            where = f"\n{benchmark_label(bench)}" if bench else ""
            ax.set_title(f"{ctx.model_label(model)}: pass@1 during training{where}")
        for ax in row[1 + len(curve_benches[model]) :]:
            ax.set_visible(False)
    counts = _seed_counts(pd.concat([passk[["run", "seed"]], curves[["run", "seed"]]]))
    # No no-op warning: the config refuses a β ablation that cannot act
    # (docs/design.md#when-the-ablations-are-no-ops).
    fig.suptitle(f"Fig. 4: β ablation of PACS\n({seed_band_text(counts)})")
    log.save_figure(
        fig,
        "fig4_beta_ablation",
        f"Fig. 4: β ablation, pass@k versus β and pass@1 curves per β; {seed_band_text(counts)}",
    )
    return None


def _beta_points(ctx: ReportContext, ax, passk: pd.DataFrame, names: dict[str, RunInfo]) -> None:
    if passk.empty:
        ax.text(0.5, 0.5, "no pass@k results", ha="center", va="center", transform=ax.transAxes)
        return
    kmax = int(passk.groupby("run")["k"].max().min())
    sel = passk[passk["k"].isin({1, kmax})].copy()
    sel["beta"] = sel["run"].map(lambda r: _beta_of(names[r]))
    sel["benchmark"] = sel["benchmark"].map(benchmark_label)
    sel["metric"] = sel["k"].map(lambda k: f"pass@{k}")
    sns.lineplot(
        data=sel,
        x="beta",
        y="value",
        hue="benchmark",
        style="metric",
        palette=BENCHMARK_PALETTE,
        errorbar=_band(sel),
        marker="o",
        ax=ax,
    )
    ax.set_xscale("log", base=2)
    betas = sorted(sel["beta"].unique())
    ax.set_xticks(betas, [f"{b:g}" for b in betas])
    ax.set(xlabel="β", ylabel="pass@k (%)")
    # Below the panel, never over the points (one entry per benchmark and per k).
    sns.move_legend(ax, "upper center", bbox_to_anchor=(0.5, -0.22), ncols=2, title=None)


def _beta_curves(ctx: ReportContext, ax, curves: pd.DataFrame, names: dict[str, RunInfo]) -> None:
    if curves.empty:
        ax.text(0.5, 0.5, "no pass@1 curves", ha="center", va="center", transform=ax.transAxes)
        return
    df = curves.assign(pass_at_1=curves["pass_at_1"] * 100.0)
    df["series"] = df["run"].map(lambda r: f"β = {_beta_of(names[r]):g}")
    order = sorted(df["series"].unique(), key=lambda s: float(s.split("=")[1]))
    sns.lineplot(
        data=df,
        x="step",
        y="pass_at_1",
        hue="series",
        hue_order=order,
        palette=sns.color_palette("Blues_d", len(order)),
        errorbar=_band(df),
        marker="o",
        markersize=3,
        ax=ax,
    )
    ax.set(xlabel="training step", ylabel="pass@1 (%)")
    sns.move_legend(
        ax, "upper center", bbox_to_anchor=(0.5, -0.22), ncols=min(3, len(order)), title=None
    )


# ============================================================================ Fig. 5b: PCA


def fig5b(ctx: ReportContext, log: OutputLog) -> str | None:
    methods = list((ctx.cfg.get("diversity") or {}).get("pca_methods") or [])
    pca = ctx.results.pca
    pca = pca[pca["method"].isin(methods)]
    if not methods:
        return "config diversity.pca_methods is empty"
    if pca.empty:
        return f"no PCA points for {methods} (diversity/*/*.pca.csv)"
    for (model, bench), sub in pca.groupby(["model", "benchmark"], sort=False):
        fig = _pca_figure(ctx, sub, [m for m in methods if m in set(sub["method"])], model, bench)
        log.save_figure(
            fig,
            f"fig5b_pca_{model}_{bench}",
            f"Fig. 5b: centred PCA with KDE contours of correct responses, {model}, {bench}",
        )
    return None


def _kde_ok(points: pd.DataFrame) -> bool:
    """Enough points, and a spread in both directions (a KDE needs a non-singular covariance)."""
    if len(points) < MIN_KDE_POINTS:
        return False
    cov = np.cov(points[["pc1", "pc2"]].to_numpy().T)
    return bool(np.all(np.isfinite(cov)) and np.linalg.matrix_rank(cov) == 2)


def _pca_figure(ctx: ReportContext, sub: pd.DataFrame, methods: list[str], model: str, bench: str):
    pal = _palette(ctx)
    fig, axes = new_figure(width=4.8, height=4.2)
    ax = axes[0][0]
    skipped = []
    for method in methods:
        pts = sub[sub["method"] == method]
        color = pal.get(method, PAPER_COLOR)
        label = f"{ctx.label(method)} ({len(pts)} responses)"
        ax.scatter(pts["pc1"], pts["pc2"], s=6, alpha=0.35, color=color, label=label, linewidths=0)
        if _kde_ok(pts):
            sns.kdeplot(data=pts, x="pc1", y="pc2", levels=6, color=color, linewidths=1.1, ax=ax)
        else:
            skipped.append(f"{ctx.label(method)}: {len(pts)} pts")
    ax.axhline(0, color="0.7", lw=0.6, zorder=0)
    ax.axvline(0, color="0.7", lw=0.6, zorder=0)
    ax.set(xlabel="PC 1", ylabel="PC 2")
    ax.legend(loc="best", markerscale=3)
    title = f"Fig. 5b: correct responses, {ctx.model_label(model)}, {benchmark_label(bench)}"
    if skipped:
        title += f"\ntoo few points for a KDE ({'; '.join(skipped)}): scatter only"
    ax.set_title(title)
    return fig


# ============================================================================ Fig. 6: OOD


def fig6(ctx: ReportContext, log: OutputLog) -> str | None:
    runs = ctx.runs_in("main", include_base=True)
    ours = ctx.passk_pct()
    ours = ours[
        (ours["k"] == 1)
        & ours["benchmark"].isin(OOD_BENCHMARKS)
        & ours["run"].isin([r.name for r in runs])
    ]
    paper = ctx.paper[ctx.paper["table"] == "Figure 6"]
    fig, axes = new_figure(ncols=len(OOD_BENCHMARKS), width=8.4, height=3.8)
    models = [m for m in ctx.models if m in set(ours["model"])]
    for ax, bench in zip(axes[0], OOD_BENCHMARKS):
        _ood_panel(ctx, ax, bench, runs, ours[ours["benchmark"] == bench], paper, models)
    if ours.empty:
        why = ood_absence(ctx)
        fig.suptitle(
            "Fig. 6: out-of-domain pass@1, the paper's bars only\nhatched: the paper's "
            f"Qwen3-8B (trained on DeepScaleR), reference only\nours are absent: {why}",
            color="#b00000",
        )
        desc = f"Fig. 6: the paper's OOD bars only, as a reference; ours are absent: {why}"
    else:
        seeds = (
            seed_band_text(_seed_counts(ours))
            .replace("line: mean", "bar: mean")
            .replace("band", "error bar")
        )
        fig.suptitle(
            f"Fig. 6: out-of-domain pass@1\nsolid: ours ({', '.join(models)} left to "
            f"right; {seeds})\nhatched: the paper's Qwen3-8B"
        )
        desc = (
            f"Fig. 6: OOD pass@1 (LiveCodeBench, GPQA) per method, ours beside the paper's; {seeds}"
        )
    log.save_figure(fig, "fig6_ood", desc)
    return None


def ood_absence(ctx: ReportContext) -> str:
    """Why a profile has no OOD pass@1: not evaluated at all, or its results are missing."""
    evaluated = [b for b in ctx.spec.data.benchmarks if b in OOD_BENCHMARKS]
    if not evaluated:
        listed = ", ".join(benchmark_label(b) for b in ctx.spec.data.benchmarks) or "none"
        return f"not evaluated in this profile (data.benchmarks: {listed})"
    return (
        f"no pass@1 results yet for {', '.join(benchmark_label(b) for b in evaluated)} "
        "(eval/*/*/seed*/<benchmark>/passk.json)"
    )


def _ood_panel(
    ctx: ReportContext,
    ax,
    bench: str,
    runs: list[RunInfo],
    ours: pd.DataFrame,
    paper: pd.DataFrame,
    models: list[str],
) -> None:
    """Bars per method: ours solid per model (±1 std across seeds), the paper's hatched."""
    pal = _palette(ctx)
    groups = [(m, ours[ours["model"] == m]) for m in models] + [("paper", None)]
    width = 0.8 / len(groups)
    for x, run in enumerate(runs):
        for g, (_, sub) in enumerate(groups):
            pos = x - 0.4 + width * (g + 0.5)
            if sub is None:
                value = _paper_ood_bar(ax, pos, width, pal[run.name], paper, bench, run)
            else:
                value = _our_ood_bar(ax, pos, width, pal[run.name], sub, run)
            if value is None:
                continue
            ax.text(
                pos,
                value + 1,
                f"{value:.2f}",
                ha="center",
                va="bottom",
                fontsize=7,
                rotation=90 if len(groups) > 2 else 0,
            )
    ax.set_xticks(range(len(runs)), [r.label for r in runs], rotation=20)
    ax.set(title=benchmark_label(bench), ylabel="pass@1 (%)", ylim=(0, 100))
    if ours.empty:
        ax.text(
            0.5,
            0.93,
            f"ours: no {benchmark_label(bench)} results",
            transform=ax.transAxes,
            ha="center",
            va="top",
            fontsize=10,
            color="#b00000",
            fontweight="bold",
        )


def _paper_ood_bar(
    ax, pos: float, width: float, color, paper: pd.DataFrame, bench: str, run: RunInfo
) -> float | None:
    """The paper's hatched bar for ``run`` on ``bench``; None (and a note) where it states none."""
    hit = paper[(paper["benchmark"] == bench) & (paper["method"] == run.paper_method)]
    if hit.empty:
        ax.text(pos, 2, "not stated\nin paper", ha="center", va="bottom", fontsize=7)
        return None
    value = float(hit["value"].iloc[0])
    ax.bar(pos, value, width, color=color, alpha=0.45, hatch="///", edgecolor="white")
    return value


def _our_ood_bar(
    ax, pos: float, width: float, color, sub: pd.DataFrame, run: RunInfo
) -> float | None:
    """Our solid bar for ``run`` (mean, ±1 std across seeds); None where it has no results."""
    vals = sub.loc[sub["run"] == run.name, "value"]
    if vals.empty:
        return None
    value = float(vals.mean())
    ax.bar(
        pos,
        value,
        width,
        yerr=vals.std(ddof=1) if len(vals) > 1 else None,
        color=color,
        capsize=2,
    )
    return value


# ============================================================================ pass@k curves


def passk_curves(ctx: ReportContext, log: OutputLog) -> str | None:
    runs = ctx.runs_in("main", "weight", include_base=True)
    df = ctx.passk_pct()
    df = df[df["run"].isin([r.name for r in runs])]
    if df.empty:
        return "no pass@k results (eval/*/*/seed*/*/passk.json)"
    for model in [m for m in ctx.models if m in set(df["model"])]:
        fig = _passk_model_figure(ctx, df[df["model"] == model], runs, model)
        log.save_figure(
            fig,
            f"passk_curves_{model}",
            f"pass@k versus k (log2) per benchmark and method with CI bands, {model}",
        )
    return None


def _passk_model_figure(ctx: ReportContext, df: pd.DataFrame, runs: list[RunInfo], model: str):
    benches = [b for b in ctx.benchmarks if b in set(df["benchmark"])]
    ncols = _ncols(len(benches))
    nrows = -(-len(benches) // ncols)
    fig, axes = new_figure(ncols=ncols, nrows=nrows, height=PANEL_SIZE[1] * nrows + 1.0)
    ref = ctx.ref(model, PASSK_PAPER_TABLES)
    pal = _palette(ctx)
    any_paper = False
    for ax, bench in zip(axes.flat, benches):
        sub = df[df["benchmark"] == bench]
        drew_paper = False
        for run in runs:
            r = sub[sub["run"] == run.name]
            if r.empty:
                continue
            g = (
                r.groupby("k")
                .agg(
                    mean=("value", "mean"),
                    lo=("ci_low", "min"),
                    hi=("ci_high", "max"),
                    n=("seed", "nunique"),
                )
                .reset_index()
            )
            n = int(g["n"].max())
            sns.lineplot(
                x=g["k"],
                y=g["mean"],
                color=pal[run.name],
                marker="o",
                markersize=3,
                label=f"{run.label} ({n} seed{'s' if n > 1 else ''})",
                legend=False,
                ax=ax,
            )
            if g["lo"].notna().any():
                ax.fill_between(
                    g["k"], g["lo"], g["hi"], color=pal[run.name], alpha=0.15, linewidth=0
                )
            drew_paper |= _paper_curve(ctx, ax, ref, run, bench, list(g["k"]), pal[run.name])
        ax.set_xscale("log", base=2)
        ks = sorted(sub["k"].unique())
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.set(title=benchmark_label(bench), xlabel="k", ylabel="pass@k (%)")
        any_paper |= drew_paper
    for ax in list(axes.flat)[len(benches) :]:
        ax.set_visible(False)
    handles, labels = _legend_entries(axes)
    if any_paper:
        handles.append(Line2D([], [], ls="--", marker="x", color=PAPER_COLOR))
        who = f"paper ({ref.model})" if ref.same else ref.label([])
        labels.append(f"dashed: {who};\nits k = 4..32 labels are inferred")
    fig.legend(handles, labels, loc="outside lower center", ncols=min(3, len(labels)))
    # Short lines: one long line is clipped by a single-panel figure's width.
    fig.suptitle(f"pass@k, {ctx.model_label(model)}\n{passk_band_text(_seed_counts(df))}")
    return fig


def passk_band_text(counts: dict[str, int]) -> str:
    """What a pass@k line and band are, from the number of seeds of each run drawn."""
    if max(counts.values(), default=1) == 1:
        return "line: one seed per run; band: its bootstrap 95% CI over problems"
    return (
        "line: mean over seeds; band: bootstrap 95% CI over problems\n"
        "(several seeds: the envelope of the seeds' CIs)"
    )


def _legend_entries(axes) -> tuple[list, list[str]]:
    """Unique (handle, label) pairs over all panels, in drawing order."""
    seen: dict[str, object] = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(label, handle)
    return list(seen.values()), list(seen)


def _paper_curve(
    ctx: ReportContext, ax, ref, run: RunInfo, bench: str, ks: list[int], color
) -> bool:
    hits = [
        (
            k,
            lookup(
                ctx.paper,
                model=ref.model,
                benchmark=bench,
                method=run.paper_method,
                k=int(k),
                tables=PASSK_PAPER_TABLES,
            ),
        )
        for k in ks
    ]
    hits = [(k, h["value"]) for k, h in hits if h]
    if not hits:
        return False
    ax.plot(
        [k for k, _ in hits],
        [v for _, v in hits],
        ls="--",
        marker="x",
        color=color,
        alpha=0.7,
        linewidth=1.0,
    )
    return True


# ============================================================================ all figures

FIGURES: list[tuple[str, Callable[[ReportContext, OutputLog], str | None]]] = [
    ("Fig. 3 (fig3_eval_curve)", fig3),
    ("Fig. 4 (fig4_beta_ablation)", fig4),
    ("Fig. 5a (fig5a_entropy)", fig5a),
    ("Fig. 5b (fig5b_pca_<model>_<benchmark>)", fig5b),
    ("Fig. 6 (fig6_ood)", fig6),
    ("pass@k curves (passk_curves_<model>)", passk_curves),
    ("ψ per mini-batch (psi_minibatch_<model>)", psi_minibatch),
]


def write_figures(ctx: ReportContext, log: OutputLog) -> None:
    with figure_style():
        for name, draw in FIGURES:
            reason = draw(ctx, log)
            if reason:
                log.skip(name, reason)


__all__ = ["fig3", "fig4", "fig5a", "fig5b", "fig6", "passk_curves", "write_figures"]
