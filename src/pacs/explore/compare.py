"""Method A against method B, problem by problem: wins, losses and ties, a sign test, a paired
bootstrap CI, and the accuracy scatter."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from pacs import layout
from pacs.evaluation.io import iter_jsonl
from pacs.explore.profile import Profile
from pacs.layout import ANY
from pacs.report.style import benchmark_label, new_figure


def problem_accuracy(root: Path, model: str, run: str, benchmark: str) -> pd.Series | None:
    """Per problem: the fraction of correct samples, pooled over every seed with graded samples
    (None when there are none)."""
    pattern = f"{layout.eval_dir('', model, run, ANY, benchmark)}/graded.jsonl"
    paths = sorted(Path(root).glob(pattern))
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
