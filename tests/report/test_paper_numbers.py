"""paper_numbers.csv must hold exactly the numbers of the paper, each in its place.

The reference is a markdown transcription of the paper's tables that the maintainers keep outside
the repository, beside the real data copies; like the data tests, these skip when it is absent.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from pacs.report.paper import PAPER_CSV, load_paper_numbers

BENCH = {
    "math500": "math500",
    "amc23": "amc23",
    "aime2024": "aime24",
    "aime2025": "aime25",
    "beyondaime": "beyondaime",
    "avg": "avg",
    "livecodebench": "livecodebench",
    "gpqa": "gpqa",
}
ROW_METHOD = {
    "base": "base",
    "ppo": "ppo",
    "grpo": "grpo",
    "pacs": "pacs",
    "- w/o weight": "pacs_noweight",
}
SCORE_METHOD = {"pacs": "pacs", "- grpo": "pacs_score_grpo", "- dr. grpo": "pacs_score_drgrpo"}
KS = (1, 4, 8, 16, 32, 64)
NUMBER = re.compile(r"^\d+(\.\d+)?$")


@pytest.fixture(scope="module")
def markdown(repo_root: Path) -> str:
    path = repo_root.parent / "shared" / "paper_numbers.md"
    if not path.is_file():
        pytest.skip(
            f"{path} not found (../shared beside the repo root); cannot cross-check the CSV"
        )
    return path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def paper() -> pd.DataFrame:
    return load_paper_numbers()


def _bench(text: str) -> str:
    key = re.sub(r"[\s().]", "", text).lower()
    key = "livecodebench" if key.startswith("livecodebench") else key
    return BENCH[key]


def _sections(md: str) -> dict[str, list[list[str]]]:
    """Heading -> its table rows, each a list of stripped cells (outer pipes removed)."""
    out: dict[str, list[list[str]]] = {}
    current = None
    for line in md.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            out[current] = []
        elif current and line.startswith("|"):
            cells = [c.strip() for c in line.strip()[1:-1].split("|")]
            if not all(set(c) <= set("-") for c in cells):  # skip |---| rules
                out[current].append(cells)
    return out


def _section(sections: dict, prefix: str) -> list[list[str]]:
    (name,) = [s for s in sections if s.startswith(prefix)]
    return sections[name]


def _table1(rows: list[list[str]]) -> dict:
    benches = [_bench(c) for c in rows[0][1:]]
    cells, last = {}, None
    for row in rows[1:]:
        name, values = row[0], row[1:]
        if NUMBER.match(name):  # the gain row under a PACS row: six numbers, no name
            model = {"PACS-4B": "Qwen3-4B", "PACS-8B": "Qwen3-8B"}[last]
            for b, v in zip(benches, row):
                cells[("Table 1", model, b, "pacs", 1, "pass_at_k_gain")] = v
            continue
        if not any(NUMBER.match(v) for v in values):
            continue  # group headers ("Closed-source Models")
        last = name
        if name.startswith("PACS-"):
            model, method = "Qwen3-" + name.split("-")[1], "pacs"
        else:
            model, method = name, "base" if name in ("Qwen3-4B", "Qwen3-8B") else "released"
        for b, v in zip(benches, values):
            if NUMBER.match(v):
                cells[("Table 1", model, b, method, 1, "pass_at_k")] = v
    return cells


def _passk(rows: list[list[str]], model: str, table_of, methods: dict) -> dict:
    cells, benches = {}, []
    for row in rows:
        if any("()" in c for c in row):
            benches = [_bench(c.replace("()", "")) for c in row if "()" in c]
            continue
        if row[0] == "Model":
            continue
        method = methods[row[0].lower()]
        numbers = [c for c in row[1:] if c]
        assert len(numbers) == 6 * len(benches), row
        for i, b in enumerate(benches):
            for j, k in enumerate(KS):
                cells[(table_of(b), model, b, method, k, "pass_at_k")] = numbers[6 * i + j]
    return cells


def _table3(rows: list[list[str]]) -> dict:
    cells, model = {}, None
    benches = [_bench(c) for c in rows[0][2:]]
    for row in rows[1:]:
        if row[0].startswith("Qwen3"):
            model, row = row[0], row[1:]
        for b, v in zip(benches, row[1:]):
            cells[("Table 3", model, b, row[0].lower(), None, "diversity_D")] = v
    return cells


def _fig6(rows: list[list[str]]) -> dict:
    methods = {"Vanilla": "base", "PPO": "ppo", "GRPO": "grpo", "PACS": "pacs"}
    heads = rows[0][1:]
    cells = {}
    for row in rows[1:]:
        for h, v in zip(heads, row[1:]):
            if NUMBER.match(v):
                cells[("Figure 6", "Qwen3-8B", _bench(row[0]), methods[h], 1, "pass_at_k")] = v
    return cells


def parse_markdown(md: str) -> dict:
    s = _sections(md)
    order = ["math500", "amc23", "aime24", "aime25", "beyondaime"]
    cells = _table1(_section(s, "Table 1:"))
    cells |= _passk(_section(s, "Table 2:"), "Qwen3-8B", lambda b: "Table 2", ROW_METHOD)
    cells |= _passk(_section(s, "Table 6:"), "Qwen3-4B", lambda b: "Table 6", ROW_METHOD)
    cells |= _passk(_section(s, "Table 7:"), "Qwen3-4B", lambda b: "Table 7", ROW_METHOD)
    cells |= _passk(_section(s, "Table 8:"), "Qwen3-8B", lambda b: "Table 8", ROW_METHOD)
    cells |= _passk(
        _section(s, "Tables 9-13"),
        "Qwen3-4B",
        lambda b: f"Table {9 + order.index(b)}",
        SCORE_METHOD,
    )
    cells |= _table3(_section(s, "Table 3:"))
    cells |= _fig6(_section(s, "Figure 6:"))
    return cells


def _csv_cells() -> dict:
    raw = pd.read_csv(PAPER_CSV, dtype=str, keep_default_na=False)
    return {
        (r.table, r.model, r.benchmark, r.method, int(r.k) if r.k else None, r.metric): r.value
        for r in raw.itertuples()
    }


def test_csv_equals_every_cell_of_the_markdown(markdown: str) -> None:
    expected, got = parse_markdown(markdown), _csv_cells()
    missing = sorted(set(expected) - set(got), key=str)
    extra = sorted(set(got) - set(expected), key=str)
    wrong = {
        k: (got[k], expected[k]) for k in expected.keys() & got.keys() if got[k] != expected[k]
    }
    assert not missing and not extra and not wrong, (
        missing[:5],
        extra[:5],
        list(wrong.items())[:5],
    )


def test_every_number_in_the_markdown_tables_is_in_the_csv(markdown: str) -> None:
    """Independent of the parser: the multiset of numeric cells in table rows equals the CSV's."""
    numbers = Counter()
    for line in markdown.splitlines():
        if line.startswith("|"):
            numbers.update(
                c.strip() for c in line.split("|") if re.fullmatch(r"\d+\.\d+", c.strip())
            )
    values = Counter(pd.read_csv(PAPER_CSV, dtype=str)["value"])
    assert numbers == values
    assert sum(values.values()) == 491


@pytest.mark.parametrize(
    "table, model, bench, method, k, value",
    [
        ("Table 2", "Qwen3-8B", "beyondaime", "pacs", 64, 64.02),  # the text: "64.02% at pass@64"
        ("Table 6", "Qwen3-4B", "aime25", "grpo", 64, 77.34),
        ("Table 8", "Qwen3-8B", "math500", "pacs_noweight", 1, 95.32),
        ("Table 13", "Qwen3-4B", "beyondaime", "pacs_score_drgrpo", 1, 26.67),
        ("Table 1", "Qwen3-8B", "aime24", "base", 1, 46.98),
        ("Figure 6", "Qwen3-8B", "gpqa", "pacs", 1, 52.46),
    ],
)
def test_spot_cells_read_by_hand(paper, table, model, bench, method, k, value) -> None:
    hit = paper[
        (paper["table"] == table)
        & (paper["model"] == model)
        & (paper["benchmark"] == bench)
        & (paper["method"] == method)
        & (paper["k"] == k)
        & (paper["metric"] == "pass_at_k")
    ]
    assert list(hit["value"]) == [value]
    assert hit["source"].iloc[0] == "paper, " + table.replace("Figure", "Fig.")


def test_inferred_k_flags_and_absent_cells(paper) -> None:
    passk = paper[paper["table"].isin(["Table 2", "Table 6", "Table 7", "Table 8"])]
    assert set(passk.loc[passk["k_inferred"], "k"]) == {4, 8, 16, 32}
    assert set(passk.loc[~passk["k_inferred"], "k"]) == {1, 64}
    assert not paper.loc[
        paper["table"].isin(["Table 1", "Table 3", "Figure 6"]), "k_inferred"
    ].any()
    gpqa = paper[(paper["table"] == "Figure 6") & (paper["benchmark"] == "gpqa")]
    assert "base" not in set(gpqa["method"])  # "not stated in text": no number invented
    d = paper[paper["metric"] == "diversity_D"]
    assert d["k"].isna().all() and len(d) == 8
