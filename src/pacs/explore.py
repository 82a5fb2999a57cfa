"""The analysis behind ``notebooks/explore_results.ipynb``: one profile's results read as the paper
reads them.

- runs are grouped into method families (PACS vs GRPO vs PPO, and each ablation against PACS), one
  small panel per family, so a panel holds at most a handful of lines;
- training curves are smoothed (TensorBoard's debiased EMA) with the raw values faint behind and a
  band over seeds; the loss is drawn per objective (PACS's BCE apart from the clipped surrogates);
- the paper's number stands beside ours where it has one (``pacs.report.paper``);
- two methods are compared problem by problem, with a sign test;
- :mod:`pacs.explore_browser` pages through the graded responses.

Every figure is per model; nothing is averaged across models. The metric names and labels are
those of :mod:`pacs.metrics_log`.
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pacs.config import Profile as Spec
from pacs.config import load_config, parse_profile
from pacs.evaluation.io import iter_jsonl
from pacs.methods import METHOD_NAMES
from pacs.metrics_log import BY_NAME
from pacs.report.context import BASE_RUN, ReportContext
from pacs.report.figures import PASSK_PAPER_TABLES
from pacs.report.loaders import load_results
from pacs.report.paper import load_paper_numbers, lookup
from pacs.report.style import benchmark_label, new_figure, run_palette
from pacs.report.tables import T1_TABLES

REPO = Path(__file__).resolve().parents[2]
# What an inferred config (a tree with no config of its own) takes its non-run sections from.
TEMPLATE_CONFIG = REPO / "configs" / "default.yaml"
SMOOTHING = 0.8  # TensorBoard's slider: weight of the running average (0 = raw values)
TRAINING_PANELS = ("reward_mean", "entropy", "response_len", "grad_norm")
FAMILY_TITLES = {
    "main": "PACS vs GRPO vs PPO",
    "weight": "class weights (PACS ablation)",
    "score": "score function (PACS ablation)",
    "beta": "β (PACS ablation)",
    "ref": "reference schedule (PACS ablation)",
}
RAW_ALPHA, BAND_ALPHA = 0.25, 0.12


# ------------------------------------------------------------------------------------ profile


@dataclass
class Profile:
    """One ``results/<profile>`` folder with its config, results tables and the paper's numbers."""

    root: Path
    ctx: ReportContext
    config_source: str

    @property
    def results(self):
        return self.ctx.results

    def models(self) -> list[str]:
        r = self.results
        found = set(r.passk.model) | set(r.metrics.model) | set(r.curves.model)
        return [m for m in self.ctx.models if m in found]

    def label(self, run: str) -> str:
        return self.ctx.label(run)

    def palette(self) -> dict[str, str]:
        return run_palette(self.ctx.runs)


def open_profile(root: str | Path) -> Profile:
    """Load ``root`` (a ``results/<profile>`` folder) with the config that made it."""
    root = Path(root)
    results = load_results(root)
    spec, source = find_config(root, results)
    ctx = ReportContext(spec, results, load_paper_numbers(), config_path=source, results_path=root)
    return Profile(root, ctx, source)


def find_config(root: Path, results) -> tuple[Spec, str]:
    """The pipeline's copy ``root/config.yaml``, else the ``configs/*.yaml`` of that profile, else a
    config inferred from the run names found (fabricated or copied trees)."""
    candidates = [root / "config.yaml", *sorted((REPO / "configs").glob("*.yaml"))]
    for path in candidates:
        if path.is_file():
            raw = load_config(path)
            if raw.get("profile") == root.name and raw.get("runs"):
                return parse_profile(raw, str(path)), str(path)
    source = "inferred from the run folders"
    return parse_profile(inferred_config(root.name, results), source), source


def inferred_config(profile: str, results) -> dict[str, Any]:
    """A config naming every run found (method from the name's prefix, ablation from its suffix)
    and every model found, its other sections those of :data:`TEMPLATE_CONFIG`."""
    tables = (results.passk, results.metrics, results.curves)
    names = sorted(set().union(*(set(t.get("run", [])) for t in tables)) - {BASE_RUN})
    runs = {}
    for name in names:
        method = next((m for m in METHOD_NAMES if name == m or name.startswith(f"{m}_")), None)
        if method is None:
            continue
        ablation = next((k for k in ("weight", "score", "beta", "ref") if k in name), "main")
        runs[name] = {"method": method, "ablation": ablation, "label": name}
    cfg = copy.deepcopy(load_config(TEMPLATE_CONFIG))
    model = next(iter(cfg["models"].values()))
    models = sorted(set().union(*(set(t.get("model", [])) for t in tables)))
    cfg["models"] = {m: copy.deepcopy(model) for m in models} or cfg["models"]
    return {**cfg, "profile": profile, "runs": runs}


def families(profile: Profile, runs_with_data: set[str]) -> list[tuple[str, list[str]]]:
    """(title, run names) per method family: the main comparison, then each ablation beside the
    main PACS run. Only runs with data, and only families with something to show."""
    out = []
    for ablation, title in FAMILY_TITLES.items():
        runs = [r.name for r in profile.ctx.runs_in(ablation)]
        if ablation != "main" and "pacs" in profile.ctx.runs:
            runs = ["pacs", *runs]
        runs = [r for r in runs if r in runs_with_data]
        if runs and (ablation == "main" or len(runs) > 1):
            out.append((title, runs))
    return out


# ------------------------------------------------------------------------------------ curves


def smooth(values: np.ndarray, weight: float = SMOOTHING) -> np.ndarray:
    """TensorBoard's scalar smoothing: an EMA debiased for its start; NaNs stay NaN."""
    out, last, n = np.full(len(values), np.nan), 0.0, 0
    for i, v in enumerate(np.asarray(values, dtype=float)):
        if math.isnan(v):
            continue
        last, n = last * weight + (1 - weight) * v, n + 1
        out[i] = last / (1 - weight**n) if weight > 0 else v
    return out


def seed_curves(frame: pd.DataFrame, y: str, weight: float = SMOOTHING) -> pd.DataFrame:
    """Per (run, step): the mean over seeds of each seed's smoothed ``y`` and its min and max.
    ``frame``: one model's rows with columns run, seed, step and ``y``."""
    parts = []
    for (run, seed), g in frame.dropna(subset=[y]).sort_values("step").groupby(["run", "seed"]):
        parts.append(
            pd.DataFrame(
                {
                    "run": run,
                    "seed": seed,
                    "step": g["step"].to_numpy(),
                    "smooth": smooth(g[y].to_numpy(), weight),
                }
            )
        )
    if not parts:
        return pd.DataFrame(columns=["run", "step", "mean", "low", "high", "seeds"])
    s = pd.concat(parts).groupby(["run", "step"])["smooth"]
    return s.agg(mean="mean", low="min", high="max", seeds="count").reset_index()


def draw_runs(
    ax,
    frame: pd.DataFrame,
    y: str,
    runs: list[str],
    profile: Profile,
    weight: float = SMOOTHING,
    marker: str | None = None,
) -> None:
    """Raw per-seed values faint, the smoothed mean bold, a band over seeds (min-max of the smoothed
    seeds). ``frame``: one model's rows. The bold line's gid is the run name (tests read it)."""
    pal = profile.palette()
    curves = seed_curves(frame[frame.run.isin(runs)], y, weight)
    for run in runs:
        raw, c = frame[frame.run == run].sort_values("step"), curves[curves.run == run]
        if c.empty:
            continue
        for _, seed_rows in raw.groupby("seed"):
            ax.plot(seed_rows.step, seed_rows[y], color=pal[run], alpha=RAW_ALPHA, lw=0.7)
        (line,) = ax.plot(
            c.step, c["mean"], color=pal[run], lw=1.8, label=profile.label(run), marker=marker, ms=3
        )
        line.set_gid(run)
        if c.seeds.max() > 1:
            ax.fill_between(c.step, c.low, c.high, color=pal[run], alpha=BAND_ALPHA, lw=0)


def wide_scale(ax, values: pd.Series) -> None:
    """A symlog y axis when the largest value is over 1000 times the median (the GRPO score's
    1/ε gradient norms, docs/design.md §2.9), so the other runs do not sit flat at 0."""
    positive = values[values > 0]
    if len(positive) and positive.max() / positive.median() > 1e3:
        ax.set_yscale("symlog", linthresh=float(positive.median()))


def panels_width(columns: int) -> float:
    """Figure width for ``columns`` panels; never too narrow for the two-line title."""
    return max(6.5, 3.6 * columns + 0.6)


def step_axis(ax) -> None:
    """Whole training steps on the x axis (a 3-step smoke run would show 0.5 steps otherwise)."""
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def figure_legend(fig, axes) -> None:
    """One legend for the whole figure, outside the panels (runs keep one colour everywhere)."""
    seen: dict[str, Any] = {}
    for ax in np.ravel(axes):
        for handle, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(label, handle)
    if seen:
        fig.legend(
            list(seen.values()),
            list(seen),
            loc="outside lower center",
            frameon=False,
            ncols=min(4, len(seen)),
        )


def training_figure(
    profile: Profile, model: str, columns=TRAINING_PANELS, weight: float = SMOOTHING
):
    """Rows: training metrics; columns: method families. None when the model has no logs."""
    m = profile.results.metrics[profile.results.metrics.model == model]
    fams = families(profile, set(m.run))
    if m.empty or not fams:
        return None
    fig, axes = new_figure(
        ncols=len(fams),
        nrows=len(columns),
        width=panels_width(len(fams)),
        height=2.3 * len(columns) + 0.8,
    )
    for j, (title, runs) in enumerate(fams):
        for i, column in enumerate(columns):
            ax = axes[i, j]
            draw_runs(ax, m, column, runs, profile, weight)
            if column == "grad_norm":
                wide_scale(ax, m[m.run.isin(runs)][column])
            ax.set(
                title=title if i == 0 else "",
                xlabel="training step" if i == len(columns) - 1 else "",
                ylabel=BY_NAME[column].tag if j == 0 else "",
            )
            step_axis(ax)
    figure_legend(fig, axes)
    fig.suptitle(
        f"{model}: training curves (TensorBoard tags)\nbold: smoothed mean over seeds "
        f"(EMA {weight}); faint: raw, per seed; band: seed min-max",
        fontsize=10,
    )
    return fig


def loss_figure(profile: Profile, model: str, weight: float = SMOOTHING):
    """The loss per objective: PACS's class-balanced BCE (ln 2 at ψ = 0) apart from the GRPO/PPO
    clipped surrogate, whose scale is unrelated."""
    m = profile.results.metrics[profile.results.metrics.model == model]
    method = {name: info.method for name, info in profile.ctx.runs.items()}
    groups = [
        ("PACS: class-balanced BCE", [r for r in sorted(set(m.run)) if method.get(r) == "pacs"]),
        (
            "GRPO / PPO: clipped surrogate",
            [r for r in sorted(set(m.run)) if method.get(r) in ("grpo", "ppo")],
        ),
    ]
    groups = [(t, _config_order(profile, runs)) for t, runs in groups if runs]
    if not groups:
        return None
    fig, axes = new_figure(ncols=len(groups), width=max(6.5, 4.6 * len(groups) + 0.6), height=3.6)
    for ax, (title, runs) in zip(axes[0], groups):
        draw_runs(ax, m, "loss", runs, profile, weight)
        if title.startswith("PACS"):
            ax.axhline(math.log(2), color="grey", ls=":", lw=1)
            ax.annotate(
                "ln 2",
                (1.0, math.log(2)),
                xycoords=("axes fraction", "data"),
                ha="right",
                va="bottom",
                fontsize=7,
                color="grey",
            )
        ax.set(title=title, xlabel="training step", ylabel="train/loss")
        step_axis(ax)
    figure_legend(fig, axes)
    fig.suptitle(f"{model}: training loss, one panel per objective", fontsize=10)
    return fig


def _config_order(profile: Profile, runs: list[str]) -> list[str]:
    order = list(profile.ctx.runs)
    return sorted(runs, key=lambda r: (order.index(r) if r in order else len(order), r))


# ------------------------------------------------------------------------------------ pass@k


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


def family_grid(fams: list, benches: list):
    """One panel per method family (columns) and benchmark (rows), rows sharing their y axis."""
    return new_figure(
        ncols=len(fams),
        nrows=len(benches),
        width=panels_width(len(fams)),
        height=2.6 * len(benches) + 0.8,
        sharey="row",
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
    for run in _config_order(profile, list(set(df.run))):
        cells = {}
        for bench, g in df[df.run == run].groupby("benchmark"):
            v = g.value * 100
            text = f"{v.mean():.1f}" + (f" ± {v.std():.1f}" if len(v) > 1 else "")
            hit = paper_value(profile, model, run, bench, 1, tables=T1_TABLES)
            cells[benchmark_label(bench)] = text + (f"  (paper {hit['value']:.1f})" if hit else "")
        n = df[df.run == run].seed.nunique()
        rows[f"{profile.label(run)} ({n} seed{'s' if n > 1 else ''})"] = cells
    return pd.DataFrame.from_dict(rows, orient="index").fillna("")


def curve_figure(profile: Profile, model: str):
    """pass@1 during training (the paper's Fig. 3): rows benchmarks, columns method families."""
    c = profile.results.curves
    c = c[c.model == model].assign(pass_at_1=lambda f: f.pass_at_1 * 100)
    fams = families(profile, set(c.run))
    if c.empty or not fams:
        return None
    benches = sorted(c.benchmark.unique())
    fig, axes = family_grid(fams, benches)
    for i, bench in enumerate(benches):
        for j, (title, runs) in enumerate(fams):
            ax = axes[i, j]
            draw_runs(ax, c[c.benchmark == bench], "pass_at_1", runs, profile, 0.0, marker="o")
            ax.set_title(
                f"{title}\n{benchmark_label(bench)}" if i == 0 else benchmark_label(bench),
                fontsize=9,
            )
            ax.set(xlabel="training step", ylabel="pass@1 (%)" if j == 0 else "")
            step_axis(ax)
    figure_legend(fig, axes)
    fig.suptitle(
        f"{model}: held-out pass@1 during training (the paper's Fig. 3)\n"
        "mean over seeds; faint: per seed; band: seed min-max",
        fontsize=10,
    )
    return fig


# ------------------------------------------------------------------------------------ A vs B


def graded_path(root: Path, model: str, run: str, benchmark: str, seed: int) -> Path:
    return Path(root) / "eval" / model / run / f"seed{seed}" / benchmark / "graded.jsonl"


def problem_accuracy(root: Path, model: str, run: str, benchmark: str) -> pd.Series | None:
    """Per problem: the fraction of correct samples, pooled over every seed with graded samples
    (None when there are none)."""
    paths = sorted(Path(root).glob(f"eval/{model}/{run}/seed*/{benchmark}/graded.jsonl"))
    rows = [row for path in paths for _, row in iter_jsonl(path)]
    if not rows:
        return None
    frame = pd.DataFrame(rows)
    return (frame.score >= 0.5).groupby(frame.problem_id).mean()


@dataclass(frozen=True)
class Comparison:
    """Method A against method B on one benchmark, problem by problem."""

    a: str
    b: str
    per_problem: pd.DataFrame  # index problem_id; columns a, b (accuracy)
    wins: int  # problems where A's accuracy is higher
    losses: int
    ties: int
    p_value: float  # two-sided sign test over the non-tied problems
    mean_diff: float  # mean over problems of acc(A) - acc(B), in points
    ci: tuple[float, float]  # paired bootstrap 95% CI of mean_diff (problems resampled)

    def statement(self, alpha: float = 0.05) -> str:
        verdict = (
            f"{self.a} is significantly better"
            if self.p_value < alpha and self.wins > self.losses
            else f"{self.b} is significantly better"
            if self.p_value < alpha
            else "no significant difference"
        )
        return (
            f"{self.a} better on {self.wins} problems, {self.b} better on {self.losses}, "
            f"tied on {self.ties}; sign test p = {self.p_value:.3g} ({verdict} at α = {alpha}); "
            f"mean per-problem difference {self.mean_diff:+.1f} points "
            f"(95% CI {self.ci[0]:+.1f} to {self.ci[1]:+.1f})"
        )


def compare(
    acc_a: pd.Series, acc_b: pd.Series, a: str, b: str, n_boot: int = 2000, seed: int = 0
) -> Comparison:
    """Wins, losses and ties over the problems both have, a two-sided sign test and a paired
    bootstrap CI of the mean accuracy difference."""
    from scipy.stats import binomtest

    both = pd.DataFrame({a: acc_a, b: acc_b}).dropna()
    diff = (both[a] - both[b]).to_numpy() * 100
    wins, losses = int((diff > 0).sum()), int((diff < 0).sum())
    p = binomtest(wins, wins + losses, 0.5).pvalue if wins + losses else 1.0
    rng = np.random.default_rng(seed)
    boots = diff[rng.integers(0, len(diff), (n_boot, len(diff)))].mean(axis=1) if len(diff) else [0]
    ci = (float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5)))
    return Comparison(
        a,
        b,
        both,
        wins,
        losses,
        len(diff) - wins - losses,
        float(p),
        float(diff.mean()) if len(diff) else 0.0,
        ci,
    )


def wins_figure(profile: Profile, comparisons: dict[str, Comparison]):
    """One panel per benchmark: accuracy of A against B per problem (area: number of problems)."""
    if not comparisons:
        return None
    fig, axes = new_figure(ncols=len(comparisons), width=3.4 * len(comparisons) + 0.6, height=3.6)
    for ax, (bench, cmp) in zip(axes[0], comparisons.items()):
        counts = cmp.per_problem.groupby([cmp.b, cmp.a]).size().reset_index(name="n")
        side = np.sign(counts[cmp.a] - counts[cmp.b])
        colors = side.map(
            {
                1: profile.palette().get(cmp.a, "C0"),
                -1: profile.palette().get(cmp.b, "C3"),
                0: "#999999",
            }
        )
        ax.scatter(counts[cmp.b], counts[cmp.a], s=18 + 30 * counts.n, c=list(colors), alpha=0.7)
        ax.plot([0, 1], [0, 1], color="grey", lw=1, ls="--")
        ax.set(
            xlim=(-0.05, 1.05),
            ylim=(-0.05, 1.05),
            xlabel=f"{profile.label(cmp.b)} accuracy",
            ylabel=f"{profile.label(cmp.a)} accuracy",
            title=f"{benchmark_label(bench)}: {cmp.a} higher on {cmp.wins}, {cmp.b} on "
            f"{cmp.losses}, tied {cmp.ties}\nsign test p = {cmp.p_value:.2g} (area: problems)",
        )
        ax.title.set_size(9)
    return fig


# ------------------------------------------------------------------------------------ answers

BOXED = re.compile(r"\\boxed\{")


def box_content(text: str, start: int) -> str | None:
    """The content of the box opened just before ``start`` (braces balanced), or None."""
    depth = 1
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i]
    return None


def last_box(text: str | None) -> str | None:
    """The content of the last ``\\boxed{...}`` in ``text`` (braces balanced), or None."""
    starts = [m.end() for m in BOXED.finditer(text or "")]
    return box_content(text, starts[-1]) if starts else None


def benchmark_file(root: Path, benchmark: str) -> Path:
    """The benchmark's problem file in a results tree (workflow/rules/common.smk's layout)."""
    if benchmark == "synthetic":
        return Path(root) / "data" / "synthetic" / "test.jsonl"
    return Path(root) / "data" / "eval" / f"{benchmark}.jsonl"


def _seed_list(seeds: pd.Series) -> str:
    """``seed 0`` / ``seeds 0, 1, 2`` / ``—``: a bare "0" read as "no seeds"."""
    ids = sorted(set(int(s) for s in seeds))
    if not ids:
        return "—"
    return ("seed " if len(ids) == 1 else "seeds ") + ", ".join(map(str, ids))


def overview(profile: Profile) -> pd.DataFrame:
    """Per model and run: the seeds evaluated and trained, the steps logged, the benchmarks."""
    r = profile.results
    rows = []
    for model in profile.models():
        runs = set(r.passk[r.passk.model == model].run) | set(
            r.metrics[r.metrics.model == model].run
        )
        for run in _config_order(profile, list(runs)):
            ev = r.passk[(r.passk.model == model) & (r.passk.run == run)]
            tr = r.metrics[(r.metrics.model == model) & (r.metrics.run == run)]
            rows.append(
                {
                    "model": model,
                    "run": run,
                    "label": profile.label(run),
                    "evaluated": _seed_list(ev.seed),
                    "trained": _seed_list(tr.seed),
                    "steps": str(int(tr.step.max())) if len(tr) else "",
                    "benchmarks": ", ".join(sorted(set(ev.benchmark))),
                }
            )
    return pd.DataFrame(rows).set_index(["model", "run"]) if rows else pd.DataFrame()
