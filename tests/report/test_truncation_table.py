"""Table 1 shows how often the token budget cut a response (``truncated_share`` of each
passk.json), per run and benchmark, mean over seeds: hand-computed on the report tests' tree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pacs.config import load_profile
from pacs.report.context import ReportContext
from pacs.report.loaders import FormatError, load_results
from pacs.report.paper import load_paper_numbers
from pacs.report.style import benchmark_label
from pacs.report.tables import table1

from .conftest import MODEL

# (run, seed, benchmark) -> truncated_share written into that passk.json
SHARES = {
    ("pacs", 0, "synthetic"): 0.10,
    ("pacs", 1, "synthetic"): 0.20,  # mean 15.0 %
    ("pacs", 0, "aime24"): 0.50,
    ("pacs", 1, "aime24"): 0.25,  # mean 37.5 %
    ("grpo", 0, "synthetic"): 0.0,
    ("grpo", 1, "synthetic"): 0.0,
}


def _passk(results: Path, run: str, seed: int, bench: str) -> Path:
    return results / "eval" / MODEL / run / f"seed{seed}" / bench / "passk.json"


def _with_shares(results: Path) -> Path:
    for (run, seed, bench), share in SHARES.items():
        path = _passk(results, run, seed, bench)
        path.write_text(json.dumps({**json.loads(path.read_text()), "truncated_share": share}))
    return results


def _table1(tmp_path: Path, config: dict, results: Path):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return table1(ReportContext(load_profile(path), load_results(results), load_paper_numbers()))


def _cut_section(doc):
    cut = [s for s in doc.sections if "cut at the token budget" in s.heading]
    assert len(cut) <= 1
    return cut[0] if cut else None


def test_table1_shows_the_cut_share_per_run_and_benchmark(tmp_path, config_dict, results_builder):
    results = _with_shares(results_builder(tmp_path / "results"))
    section = _cut_section(_table1(tmp_path, config_dict, results))
    rows = {row[0]: list(row[1:]) for row in section.frame.itertuples(index=False)}
    assert list(section.frame.columns) == [
        "Method",
        benchmark_label("synthetic"),
        benchmark_label("aime24"),
    ]
    pacs = next(label for label in rows if label.startswith("PACS"))
    assert rows[pacs] == ["15.0", "37.5"]  # (10 + 20) / 2 and (50 + 25) / 2
    grpo = next(label for label in rows if label.startswith("GRPO"))
    assert rows[grpo] == ["0.0", "–"]  # aime24's passk.json files record no share


def test_files_without_the_field_give_no_section(tmp_path, config_dict, results_builder):
    results = results_builder(tmp_path / "results")  # passk.json as older passk versions wrote
    assert _cut_section(_table1(tmp_path, config_dict, results)) is None


def test_a_share_outside_0_1_is_named_with_its_file(tmp_path, results_builder):
    results = results_builder(tmp_path / "results")
    path = _passk(results, "pacs", 0, "synthetic")
    path.write_text(json.dumps({**json.loads(path.read_text()), "truncated_share": 1.5}))
    with pytest.raises(FormatError, match=r"passk\.json: field 'truncated_share' must be a number"):
        load_results(results)
