"""Table 1's open third-party models (config ``eval.released``), evaluated by the DAG as run
``released``: one Table-1-style row each (:mod:`pacs.report.model_row`), our pass@1 with its CI
beside the paper's, the difference and its CI (``tables/table1_released.{csv,md,tex}``)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from pacs import layout
from pacs.config import RELEASED_RUN, TABLE1_BENCHMARKS

from .context import ReportContext
from .model_row import display_rows, records_frame, row_records
from .outputs import OutputLog
from .render import Section, TableDoc

NOTES = [
    (
        "Each model is evaluated as released (no training) on the profile's protocol (eval: n, "
        "temperature, top-p, max tokens), the user turn being the paper's prompt for every model, "
        "with the system prompt its card documents (configs/paper.yaml, eval.released, each cited)."
    ),
    (
        "CIs: 95 % bootstrap over problems (passk.json); Avg.'s from the five benchmarks' CIs "
        "taken "
        "as independent normals; ours − paper: our CI shifted by the paper's number (the paper "
        "gives none). pass@n is pass@k at k = the samples per problem."
    ),
]


def released_passk(root: str | Path, key: str) -> list[dict]:
    """The passk.json documents of one released model, in Table 1's benchmark order."""
    docs = []
    for bench in TABLE1_BENCHMARKS:
        path = Path(layout.eval_dir(root, key, RELEASED_RUN, 0, bench)) / "passk.json"
        if path.is_file():
            docs.append(json.loads(path.read_text(encoding="utf-8")))
    return docs


def _heading(model) -> str:
    pin = f"@{model.revision[:12]}" if model.revision else " (unpinned)"
    system = "its system prompt" if model.system_prompt else "no system prompt"
    return f"{model.paper_name} — {model.hf_id}{pin}, {system}"


def table1_released(ctx: ReportContext) -> TableDoc | None:
    """One section per released model with results; None when none has any."""
    sections, records = [], []
    for key, model in ctx.spec.eval.released.items():
        docs = released_passk(ctx.results_path, key)
        if not docs:
            continue
        rows = row_records(
            docs, ctx.paper, model=key, label=model.paper_name, paper_model=model.paper_name
        )
        sections.append(Section(_heading(model), display_rows(rows)))
        records += rows
    if not sections:
        return None
    return TableDoc(
        "table1_released",
        "Table 1: the paper's open models, evaluated here",
        "pass@1 (and pass@n) in % with 95 % CIs; the paper's Table 1 pass@1 and ours − paper.",
        sections,
        records_frame(records) if records else pd.DataFrame(),
        NOTES,
        "Table 1's open third-party models evaluated by our DAG, beside the paper's numbers",
    )


def write_released(ctx: ReportContext, log: OutputLog) -> None:
    if not ctx.spec.eval.released:
        return
    doc = table1_released(ctx)
    if doc is None:
        log.skip(
            "Table 1's open models (table1_released)",
            "no passk.json under eval/<model>/released/seed0/ for the models of eval.released",
        )
    else:
        log.write_table(doc)
    missing = [
        f"{key}/{bench}"
        for key, _, _, bench in ctx.matrix.released_jobs
        if not (
            Path(layout.eval_dir(ctx.results_path, key, RELEASED_RUN, 0, bench)) / "passk.json"
        ).is_file()
    ]
    if doc is not None and missing:
        shown = ", ".join(missing[:4]) + (", ..." if len(missing) > 4 else "")
        log.skip(
            f"pass@k of {len(missing)} released-model evaluation(s) ({shown})",
            "no passk.json under eval/<model>/released/seed0/<benchmark>/",
        )
