"""Table 1 as the paper prints it (gain rows, third-party rows), Tables 4-5 and Fig. 4's panels."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from pacs.config import parse_profile
from pacs.report.context import ReportContext
from pacs.report.figures import fig4
from pacs.report.loaders import load_results
from pacs.report.outputs import OutputLog
from pacs.report.paper import load_paper_numbers
from pacs.report.settings_table import table4_5
from pacs.report.style import figure_style


def section_frame(md: str, heading: str) -> list[str]:
    """The pipe-table lines under ``## heading`` of a generated Markdown table."""
    block = md.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    return [line for line in block.splitlines() if line.startswith("| ")]


def test_table1_has_gain_rows_computed_from_our_means(report_run) -> None:
    md = (report_run["out"] / "tables" / "table1_pass1.md").read_text()
    rows = {line.split(" | ")[0].strip("| "): line for line in section_frame(md, "tiny")}
    data = pd.read_csv(report_run["out"] / "tables" / "table1_pass1.csv")
    for run, label in (("pacs", "PACS"), ("grpo", "GRPO"), ("ppo", "PPO")):
        gain = []
        for bench in ("synthetic", "aime24"):
            mean = data[(data.run == run) & (data.benchmark == bench)].mean_pct.iloc[0]
            base = data[(data.run == "base") & (data.benchmark == bench)].mean_pct.iloc[0]
            gain.append(f"{mean - base:+.2f}")
        cells = [c.strip() for c in rows[f"{label} − Base"].strip("|").split("|")]
        assert cells[2:4] == gain, label
    # The paper's gain row sits under PACS's (Qwen3-8B, AIME24: +10.6), reference only.
    (paper_gain,) = [line for name, line in rows.items() if name.endswith("Table 1): gain")]
    assert "+10.60" in paper_gain and "reference only" in paper_gain


def test_table1_shows_the_papers_whole_table(report_run) -> None:
    md = (report_run["out"] / "tables" / "table1_pass1.md").read_text()
    lines = section_frame(md, "The paper's Table 1")
    names = [line.split(" | ")[0].strip("| ") for line in lines[2:]]
    assert names[:2] == ["Claude Opus 4.1", "Gemini 2.5 pro"]
    assert {"Qwen3-14B", "LIMO", "Sky-T1-7B", "PACS-8B (gain over base)"} <= set(names)
    paper = load_paper_numbers()
    t1 = paper[paper.table == "Table 1"]
    assert len(names) == t1.paper_row.nunique()
    gemini = lines[2 + names.index("Gemini 2.5 pro")]
    assert "| 96.70 | 100.00 | 88.70 | 86.70 | 58.80 | 86.18 |" in gemini
    claude = lines[2 + names.index("Claude Opus 4.1")]
    assert claude.count("–") == 4  # the paper gives only AMC23 and AIME25
    gain8 = lines[2 + names.index("PACS-8B (gain over base)")]
    assert gain8.endswith("| +5.15 | +6.95 | +10.60 | +12.55 | +12.58 | +9.57 |")


def _ctx(cfg: dict, results) -> ReportContext:
    return ReportContext(
        parse_profile(cfg), load_results(results), load_paper_numbers(), config_path="cfg.yaml"
    )


def test_table4_5_puts_our_config_beside_app_c(config_dict, fake_results) -> None:
    cfg = config_dict
    cfg["train"].update({"prompts_per_step": 16, "lr": 1.0e-4})
    cfg["eval"].update({"n_samples": 16, "temperature": 0.6, "top_p": 0.95, "backend": "hf"})
    cfg["models"]["qwen3_8b"] = {**cfg["models"]["tiny"], "hf_id": "Qwen/Qwen3-8B", "steps": 320}
    doc = table4_5(_ctx(cfg, fake_results))
    data = doc.data.set_index("setting")
    assert data.loc["prompts per step (train batch)", ["ours", "paper"]].tolist() == ["16", "1024"]
    assert data.loc["actor learning rate", ["ours", "paper"]].tolist() == ["0.0001", "1e-06"]
    assert data.loc["updates per rollout", ["ours", "paper"]].tolist() == ["4", "4"]
    assert data.loc["max response length (tokens)", "ours"] == "32"
    assert data.loc["engine", ["ours", "paper"]].tolist() == ["hf", "vllm"]
    assert data.loc["training steps, tiny", ["config_key", "ours", "paper"]].tolist() == [
        "train.steps",
        "10",
        "–",
    ]
    assert data.loc["training steps, qwen3_8b", ["config_key", "ours", "paper"]].tolist() == [
        "models.qwen3_8b.steps",
        "320",
        "320",
    ]
    assert [s.heading for s in doc.sections] == ["training settings", "evaluation settings"]


def test_table4_5_is_written_for_the_paper_config(report_run) -> None:
    md = (report_run["out"] / "tables" / "table4_5_settings.md").read_text()
    assert "| responses per prompt (rollout n) | 8 | 8 | App. C |" in md


@pytest.fixture
def two_benchmark_curves(config_dict, results_builder, tmp_path):
    root = results_builder(tmp_path / "res")
    for path in root.glob("train/*/*/seed*/eval_curve.jsonl"):
        rows = [json.loads(t) for t in path.read_text().splitlines()]
        out = [{**r, "benchmark": b} for b in ("amc23", "aime25") for r in rows]
        path.write_text("".join(json.dumps(r) + "\n" for r in out))
    return _ctx(config_dict, root)


def test_fig4_has_one_curve_panel_per_benchmark_titled_by_it(two_benchmark_curves, tmp_path):
    saved = {}

    class Log(OutputLog):
        def save_figure(self, fig, stem, description):
            saved[stem] = fig

    with figure_style():
        assert fig4(two_benchmark_curves, Log(tmp_path / "out")) is None
    axes = [ax for ax in saved["fig4_beta_ablation"].axes if ax.get_visible()]
    titles = [ax.get_title() for ax in axes]
    assert titles[0] == "tiny: pass@k vs β"
    assert titles[1].endswith("AIME25") and titles[2].endswith("AMC23")
    for ax in axes[1:]:
        # One line per β (no benchmark style mixing two benchmarks in one panel).
        assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == ["β = 1", "β = 2"]
