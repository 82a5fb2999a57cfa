"""pass@k as the paper reports it: per benchmark and method family, beside the paper's number
for the same method where it has one; the pass@1 table with seeds."""

from __future__ import annotations

import pandas as pd

from pacs.explore.panels import BAND_ALPHA, family_grid, figure_legend
from pacs.explore.profile import Profile, config_order, families
from pacs.report.context import BASE_RUN
from pacs.report.figures import PASSK_PAPER_TABLES
from pacs.report.paper import lookup
from pacs.report.style import benchmark_label
from pacs.report.tables import T1_TABLES


def passk_percent(profile: Profile, model: str) -> pd.DataFrame:
    """One model's pass@k rows per run, benchmark and k: mean over seeds (%), the envelope of
    the seeds' bootstrap CIs, and the number of seeds."""
    df = profile.results.passk
    df = df[(df.metric == "pass_at_k") & (df.model == model)]
    g = df.groupby(["run", "benchmark", "k"])
    out = g.agg(
        value=("value", "mean"),
        lo=("ci_low", "min"),
        hi=("ci_high", "max"),
        seeds=("seed", "nunique"),
    ).reset_index()
    out[["value", "lo", "hi"]] *= 100.0
    return out


def paper_value(
    profile: Profile, model: str, run: str, benchmark: str, k: int, tables=PASSK_PAPER_TABLES
) -> dict | None:
    """The paper's number for this cell (its model for ours, reference only in the tiny profile)."""
    info = profile.ctx.runs.get(run)
    ref = profile.ctx.ref(model, list(tables))
    if info is None or ref.model is None:
        return None
    return lookup(
        profile.ctx.paper,
        model=ref.model,
        benchmark=benchmark,
        method=info.paper_method,
        k=int(k),
        tables=list(tables),
    )


def passk_figure(profile: Profile, model: str):
    """Rows: benchmarks; columns: method families (base in the main one). Lines: ours with the CI
    band; crosses: the paper's pass@k for the same method where it has one."""
    df = passk_percent(profile, model)
    fams = families(profile, set(df.run))
    if df.empty or not fams:
        return None
    if BASE_RUN in set(df.run):
        fams[0] = (fams[0][0], [BASE_RUN, *fams[0][1]])
    benches = [b for b in profile.ctx.benchmarks if b in set(df.benchmark)]
    fig, axes = family_grid(fams, benches)
    pal, ref = profile.palette(), profile.ctx.ref(model, PASSK_PAPER_TABLES)
    drew_paper = False
    for i, bench in enumerate(benches):
        for j, (title, runs) in enumerate(fams):
            ax = axes[i, j]
            for run in runs:
                drew_paper |= _passk_line(ax, profile, model, df, run, bench, pal[run])
            ax.set_xscale("log", base=2)
            ks = sorted(df[df.benchmark == bench].k.unique())
            ax.set_xticks(ks, [str(k) for k in ks])
            ax.set_title(
                f"{title}\n{benchmark_label(bench)}" if i == 0 else benchmark_label(bench),
                fontsize=9,
            )
            ax.set(xlabel="k", ylabel="pass@k (%)" if j == 0 else "")
    figure_legend(fig, axes)
    who = (
        ""
        if not drew_paper
        else f"; ×: the paper's {ref.model}" + ("" if ref.same else ", reference only")
    )
    fig.suptitle(
        f"{model}: pass@k\nline: mean over seeds; band: bootstrap 95% CI{who}", fontsize=10
    )
    return fig


def _passk_line(
    ax, profile: Profile, model: str, df: pd.DataFrame, run: str, bench: str, color: str
) -> bool:
    """Our line and band, and the paper's crosses; True when the paper had numbers."""
    r = df[(df.run == run) & (df.benchmark == bench)].sort_values("k")
    if r.empty:
        return False
    (line,) = ax.plot(r.k, r.value, color=color, marker="o", ms=3, lw=1.5, label=profile.label(run))
    line.set_gid(run)
    if r.lo.notna().any():
        ax.fill_between(r.k, r.lo, r.hi, color=color, alpha=BAND_ALPHA, lw=0)
    hits = [(k, paper_value(profile, model, run, bench, k)) for k in r.k]
    hits = [(k, h["value"]) for k, h in hits if h]
    if hits:
        (mark,) = ax.plot(
            [k for k, _ in hits],
            [v for _, v in hits],
            ls="none",
            marker="x",
            ms=6,
            color=color,
            label="_paper",
        )
        mark.set_gid(f"paper:{run}")
    return bool(hits)


def pass1_table(profile: Profile, model: str) -> pd.DataFrame:
    """pass@1 (%) per run (rows) and benchmark (columns): ours as mean ± std over seeds, and the
    paper's number in brackets where it has one (Table 1, else Tables 2, 6-8)."""
    df = profile.results.passk
    df = df[(df.metric == "pass_at_k") & (df.k == 1) & (df.model == model)]
    rows = {}
    for run in config_order(profile, list(set(df.run))):
        cells = {}
        for bench, g in df[df.run == run].groupby("benchmark"):
            v = g.value * 100
            text = f"{v.mean():.1f}" + (f" ± {v.std():.1f}" if len(v) > 1 else "")
            hit = paper_value(profile, model, run, bench, 1, tables=T1_TABLES)
            cells[benchmark_label(bench)] = text + (f"  (paper {hit['value']:.1f})" if hit else "")
        n = df[df.run == run].seed.nunique()
        rows[f"{profile.label(run)} ({n} seed{'s' if n > 1 else ''})"] = cells
    return pd.DataFrame.from_dict(rows, orient="index").fillna("")
