"""Figure titles and captions say what the data drawn can show: seed counts, what was sampled,
and why our bars are missing, each read from the results, never from what a profile usually has."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from matplotlib.collections import PolyCollection

from pacs.config import load_profile
from pacs.report.context import ReportContext
from pacs.report.figures import fig3, fig4, fig5a, fig6, passk_band_text, range_text, seed_band_text
from pacs.report.loaders import load_results
from pacs.report.outputs import OutputLog
from pacs.report.paper import load_paper_numbers
from pacs.report.style import figure_style


class KeptFigures(OutputLog):
    """An OutputLog that keeps each figure's title, caption and drawn bands instead of files."""

    def __init__(self, out: Path) -> None:
        super().__init__(out)
        self.figures: dict[str, dict] = {}

    def save_figure(self, fig, stem: str, description: str) -> None:
        import matplotlib.pyplot as plt

        bands = sum(isinstance(c, PolyCollection) for ax in fig.axes for c in ax.collections)
        title = fig._suptitle.get_text() if fig._suptitle else ""
        self.figures[stem] = {"title": title, "caption": description, "bands": bands}
        plt.close(fig)


def draw(tmp_path: Path, config: dict, results: Path, *figures) -> dict[str, dict]:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    ctx = ReportContext(load_profile(path), load_results(results), load_paper_numbers())
    log = KeptFigures(tmp_path / "out")
    with figure_style():
        for figure in figures:
            assert figure(ctx, log) is None
    return log.figures


@pytest.fixture
def one_seed(tmp_path, config_dict, results_builder) -> tuple[dict, Path]:
    """The report tests' tree cut to seed 0 everywhere, and its config saying so."""
    results = results_builder(tmp_path / "results")
    for folder in sorted(results.rglob("seed1"), reverse=True):
        shutil.rmtree(folder)
    return {**config_dict, "seeds": {"main": [0], "ablation": [0]}}, results


def test_seed_band_text_follows_the_seed_counts() -> None:
    assert seed_band_text({"pacs": 1, "grpo": 1}) == "one seed per run: no band"
    assert seed_band_text({"pacs": 3, "grpo": 3}) == (
        "line: mean over 3 seeds; band: ±1 std across seeds"
    )
    assert "runs with one seed: no band" in seed_band_text({"pacs": 3, "grpo": 1})
    assert passk_band_text({"pacs": 1}).startswith("line: one seed per run")
    assert "envelope" in passk_band_text({"pacs": 2})


def test_range_text() -> None:
    assert range_text([100, 100]) == "100"
    assert range_text([50, 100, float("nan")]) == "50–100"
    assert range_text([None]) == "?"


def test_one_seed_curves_say_so_and_draw_no_band(tmp_path, one_seed) -> None:
    config, results = one_seed
    figures = draw(tmp_path, config, results, fig3, fig5a, fig4)
    for stem in ("fig3_eval_curve", "fig5a_entropy", "fig4_beta_ablation"):
        fig = figures[stem]
        assert "one seed per run: no band" in fig["title"], stem
        assert "std across seeds" not in fig["title"] + fig["caption"], stem
        assert fig["bands"] == 0, stem
    # No development notes in Fig. 4's title.
    assert "legible" not in figures["fig4_beta_ablation"]["title"]
    assert "mini_batches" not in figures["fig4_beta_ablation"]["title"]


def test_fig3_says_what_each_point_sampled_beside_table_1(
    tmp_path, config_dict, results_builder
) -> None:
    # The fake tree: curves of 50 problems x 8 samples; passk.json of 50 problems x 16 samples.
    figures = draw(tmp_path, config_dict, results_builder(tmp_path / "results"), fig3)
    fig = figures["fig3_eval_curve"]
    assert "each point: 50 problems × 8 samples" in fig["title"]
    assert "(Table 1, after training: 50 problems × 16 samples)" in fig["title"]
    assert "line: mean over 2 seeds; band: ±1 std across seeds" in fig["title"]
    assert fig["bands"] > 0  # two seeds: the band is drawn
    assert "50 problems × 8 samples" in fig["caption"] and "\n" not in fig["caption"]


def test_fig6_says_why_ours_are_absent(tmp_path, config_dict, results_builder) -> None:
    figures = draw(tmp_path, config_dict, results_builder(tmp_path / "results"), fig6)
    fig = figures["fig6_ood"]
    reason = "ours are absent: not evaluated in this profile (data.benchmarks: Synthetic, AIME24)"
    assert reason in fig["title"] and reason in fig["caption"]


def test_fig6_draws_ours_beside_the_papers_when_they_exist(
    tmp_path, config_dict, results_builder
) -> None:
    import json

    results = results_builder(tmp_path / "results")
    for path in results.glob("eval/tiny/*/seed*/aime24/passk.json"):  # aime24 renamed gpqa
        doc = json.loads(path.read_text())
        target = path.parent.parent / "gpqa" / "passk.json"
        target.parent.mkdir()
        target.write_text(json.dumps({**doc, "benchmark": "gpqa"}))
    config = {**config_dict, "data": {**config_dict["data"], "benchmarks": ["synthetic", "gpqa"]}}
    fig = draw(tmp_path, config, results, fig6)["fig6_ood"]
    assert "ours are absent" not in fig["title"]
    assert "bar: mean over 2 seeds; error bar: ±1 std across seeds" in fig["title"]
    assert "ours beside the paper's" in fig["caption"]
