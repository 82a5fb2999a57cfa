"""The ψ-per-mini-batch figure: written for the PACS runs that logged ``<stat>/mb<i>``, each line
the mean over seeds of its mini-batch's values, computed here by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pacs.config import load_profile
from pacs.evaluation.io import FormatError
from pacs.report.context import ReportContext
from pacs.report.loaders import load_results
from pacs.report.outputs import OutputLog
from pacs.report.paper import load_paper_numbers
from pacs.report.psi_figure import psi_minibatch
from pacs.report.style import figure_style

STEPS = range(1, 11)  # the conftest tree's metrics.jsonl steps
MINI_BATCHES = range(4)


def planted(stat: str, seed: int, step: int, mb: int) -> float:
    """ψ stats 0 on mini-batch 0 and growing with the index; norms 10^mb (+ seed)."""
    if stat == "grad_norm":
        return 10.0**mb + seed
    return mb * (step + seed) / 10 * {"psi_abs_mean": 1.0, "psi_std": 2.0, "sigma_std": 0.5}[stat]


def add_minibatch_columns(metrics: Path, seed: int) -> None:
    rows = [json.loads(line) for line in metrics.read_text().splitlines()]
    for row in rows:
        for stat in ("psi_abs_mean", "psi_std", "sigma_std", "grad_norm"):
            for mb in MINI_BATCHES:
                row[f"{stat}/mb{mb}"] = planted(stat, seed, row["step"], mb)
    metrics.write_text("".join(json.dumps(r) + "\n" for r in rows))


class KeptPanels(OutputLog):
    """An OutputLog that writes the figure and also keeps every panel's drawn lines."""

    def __init__(self, out: Path) -> None:
        super().__init__(out)
        self.panels: dict[tuple[str, str], dict] = {}
        self.title = ""

    def save_figure(self, fig, stem: str, description: str) -> None:
        self.title = fig._suptitle.get_text()
        for ax in fig.axes:
            lines = {
                ln.get_label(): (list(ln.get_xdata()), list(ln.get_ydata())) for ln in ax.lines
            }
            self.panels[ax.get_title(), ax.get_ylabel()] = {
                "lines": lines,
                "scale": ax.get_yscale(),
            }
        super().save_figure(fig, stem, description)


def draw(tmp_path: Path, config: dict, results: Path) -> tuple[KeptPanels, str | None]:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    ctx = ReportContext(load_profile(path), load_results(results), load_paper_numbers())
    log = KeptPanels(tmp_path / "out")
    with figure_style():
        reason = psi_minibatch(ctx, log)
    return log, reason


@pytest.fixture
def tree(tmp_path, results_builder) -> Path:
    """The report tests' tree with per-mini-batch columns in PACS (seeds 0 and 1) and PACS
    (GRPO score) (seed 0) only; GRPO, PPO and the other PACS runs have none."""
    results = results_builder(tmp_path / "results")
    for run, seeds in (("pacs", (0, 1)), ("pacs_score_grpo", (0,))):
        for seed in seeds:
            add_minibatch_columns(results / f"train/tiny/{run}/seed{seed}/metrics.jsonl", seed)
    return results


def test_lines_are_the_seed_means_of_each_minibatch(tmp_path, config_dict, tree) -> None:
    log, reason = draw(tmp_path, config_dict, tree)
    assert reason is None
    assert {title for title, _ in log.panels} == {"PACS", "PACS (GRPO score)"}
    steps = list(STEPS)
    for label in ("mean |ψ|", "std ψ", "std σ(ψ)"):
        lines = log.panels["PACS", label]["lines"]
        assert set(lines) == {"mb 0", "mb 1", "mb 2", "mb 3"}
        assert lines["mb 0"] == (steps, [0.0] * 10)
    # mean |ψ| of mini-batch 2 over seeds 0 and 1: 2·(t + 0.5)/10
    x, y = log.panels["PACS", "mean |ψ|"]["lines"]["mb 2"]
    assert x == steps and y == pytest.approx([2 * (t + 0.5) / 10 for t in steps])
    _, y = log.panels["PACS", "std ψ"]["lines"]["mb 3"]
    assert y == pytest.approx([2 * 3 * (t + 0.5) / 10 for t in steps])
    _, y = log.panels["PACS", "std σ(ψ)"]["lines"]["mb 1"]
    assert y == pytest.approx([0.5 * (t + 0.5) / 10 for t in steps])
    norms = log.panels["PACS", "pre-clip grad norm"]
    assert norms["scale"] == "log"
    assert norms["lines"]["mb 3"][1] == pytest.approx([1000.5] * 10)  # (1000 + 1001) / 2
    # one seed: the line is that seed's values
    _, y = log.panels["PACS (GRPO score)", "mean |ψ|"]["lines"]["mb 1"]
    assert y == pytest.approx([t / 10 for t in steps])


def test_title_names_the_runs_drawn_and_their_seeds(tmp_path, config_dict, tree) -> None:
    log, _ = draw(tmp_path, config_dict, tree)
    assert "PACS (2 seeds), PACS (GRPO score) (1 seed)" in log.title
    for absent in ("PACS w/o weight", "PACS beta=2", "GRPO (2 seeds)", "PPO"):
        assert absent not in log.title
    for ext in ("png", "pdf"):
        assert (tmp_path / "out" / "figures" / f"psi_minibatch_tiny.{ext}").stat().st_size > 0


def test_no_minibatch_columns_no_figure(tmp_path, config_dict, results_builder) -> None:
    _, reason = draw(tmp_path, config_dict, results_builder(tmp_path / "results"))
    assert reason == "no <stat>/mb<i> columns in metrics.jsonl of the PACS runs"
    assert not (tmp_path / "out" / "figures").exists()


def test_a_non_number_is_refused_with_its_file_and_line(tmp_path, config_dict, tree) -> None:
    metrics = tree / "train/tiny/pacs/seed0/metrics.jsonl"
    rows = metrics.read_text().splitlines()
    rows[2] = json.dumps({**json.loads(rows[2]), "psi_std/mb1": "0.3"})
    metrics.write_text("\n".join(rows) + "\n")
    with pytest.raises(FormatError, match=r"seed0/metrics.jsonl:3: field 'psi_std/mb1'"):
        draw(tmp_path, config_dict, tree)
