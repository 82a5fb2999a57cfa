"""The smoke profile end to end (slow; CI runs it): every stage, table and figure, on the
session's one smoke DAG run (tests/conftest.py's smoke_dag, a fresh-clone copy)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest
import yaml
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[2]
SMOKE_CONFIG = REPO / "configs" / "smoke.yaml"
VENV_BIN = str(Path(sys.executable).parent)
ENV = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}", "HF_HUB_OFFLINE": "1"}

pytestmark = pytest.mark.slow


def snakemake(cwd: Path, *args: str, timeout: int = 1800) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--cores",
            "2",
            "--configfile",
            "configs/smoke.yaml",
            *args,
        ],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def smoke(smoke_dag) -> Path:
    """The session's smoke DAG run (tests/conftest.py): a fresh-clone copy of the workflow
    after `snakemake --cores 2 --configfile configs/smoke.yaml`."""
    return smoke_dag


def test_every_table_and_figure_exists_and_is_not_empty(smoke):
    out = smoke / "paper_figures" / "smoke"
    readme = (out / "README.md").read_text()
    expected = [
        f"tables/{t}.{ext}"
        for t in (
            "table1_pass1",
            "table2_6_passk",
            "table9_13_score_ablation",
            "table_beta_ablation",
            "table3_diversity",
            "table_runtime",
        )
        for ext in ("csv", "md", "tex")
    ]
    expected += [
        f"figures/{f}.{ext}"
        for f in (
            "fig3_eval_curve",
            "fig4_beta_ablation",
            "fig5a_entropy",
            "fig5b_pca_tiny_synthetic",
            "fig6_ood",
            "passk_curves_tiny",
        )
        for ext in ("png", "pdf")
    ]
    for rel in expected:
        path = out / rel
        assert path.is_file() and path.stat().st_size > 0, rel
        assert rel in readme, f"README does not list {rel}"
    written = {
        str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and p.name != "README.md"
    }
    assert all(rel in readme for rel in written)


def test_passk_table_equals_the_json_it_came_from(smoke):
    table = pd.read_csv(smoke / "paper_figures" / "smoke" / "tables" / "table2_6_passk.csv")
    checked = 0
    for path in (smoke / "results" / "smoke" / "eval").glob("*/*/seed*/*/passk.json"):
        data = json.loads(path.read_text())
        for entry in data["pass_at_k"]:
            rows = table[
                (table.model == data["model"])
                & (table.run == data["run"])
                & (table.benchmark == data["benchmark"])
                & (table.k == entry["k"])
            ]
            if rows.empty:
                continue
            assert rows.mean_pct.iloc[0] == pytest.approx(100 * entry["value"], abs=1e-6)
            checked += 1
    assert checked >= 4 * 3  # base, pacs, grpo, ppo at k = 1, 2, 4 at least


def test_second_run_has_nothing_to_do(smoke):
    result = snakemake(smoke, "-n")
    assert result.returncode == 0, result.stderr
    assert "Nothing to be done" in result.stdout + result.stderr


def test_editing_one_setting_reruns_exactly_what_depends_on_it(smoke):
    """Stages read the config file; the per-rule `settings` params make Snakemake notice edits."""
    steps = yaml.safe_load(SMOKE_CONFIG.read_text())["models"]["tiny"]["sft"]["steps"]
    result = snakemake(smoke, "-n", "--config", f"models={{tiny: {{sft: {{steps: {steps + 1}}}}}}}")
    assert result.returncode == 0, result.stderr
    rules = set(re.findall(r"^rule (\S+):", result.stdout, re.MULTILINE))
    assert {"sft_tiny_base", "train_tiny", "generate", "report"} <= rules
    assert not {"prepare_synthetic", "build_tiny_model"} & rules
    # A dry run never rewrites the config that the existing outputs were made from.
    assert f"steps: {steps}\n" in (smoke / "results" / "smoke" / "config.yaml").read_text()


def test_notebook_executes_on_smoke_results(smoke):
    """The notebook on real smoke results: the A-vs-B statement and the response browser's first
    page (cards of real graded samples), read from the kernel after the notebook ran."""
    nb = nbformat.read(REPO / "notebooks" / "explore_results.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("print(browser.page_html.value)"))
    os.environ["PACS_RESULTS"] = str(smoke / "results" / "smoke")
    try:
        NotebookClient(
            nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(smoke)}}
        ).execute()
    finally:
        os.environ.pop("PACS_RESULTS")
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs)
    assert "tiny / synthetic: pacs better on" in text and "sign test p =" in text
    assert "tiny · synthetic · pacs seed 0 — page 1 of" in text
    graded = (
        smoke
        / "results"
        / "smoke"
        / "eval"
        / "tiny"
        / "pacs"
        / "seed0"
        / "synthetic"
        / "graded.jsonl"
    )
    rows = [json.loads(line) for line in graded.read_text().splitlines()]
    first = min(rows, key=lambda r: (r["problem_id"], r["sample_idx"]))  # the browser's order
    assert f"<b>{first['problem_id']}</b> · sample {first['sample_idx']} · " in text
