"""The paper's own numbers (``paper_numbers.csv``) and how our runs map onto its rows.

``paper_numbers.csv`` is a long-format transcription of every table of the paper
(arXiv 2509.02522 v2): one row per number, with the table it came from in ``source``. Values
are percentages except ``diversity_D``. In the pass@k tables the k labels 4, 8, 16 and 32 are
inferred (the copy of the paper lost its column headers), so those rows carry
``k_inferred = True``. ``method`` uses our run names: ``base``, ``ppo``, ``grpo``, ``pacs``,
``pacs_noweight``, ``pacs_score_grpo``, ``pacs_score_drgrpo``; third-party models of Table 1
are ``released``. A test cross-checks this file, cell by cell, against a markdown transcription of
the paper's tables when one is available beside the repository, so transcription errors show.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from pacs.config import RunSpec
from pacs.evaluation.io import FormatError
from pacs.methods import (
    DapoSpec,
    GrpoSpec,
    MethodTable,
    PacsSpec,
    PpoSpec,
    RealSpec,
    spec_keys,
)

PAPER_CSV = Path(__file__).with_name("paper_numbers.csv")
COLUMNS = (
    "table",
    "model",
    "benchmark",
    "method",
    "k",
    "k_inferred",
    "metric",
    "value",
    "source",
    "paper_row",
)
METRICS = ("pass_at_k", "pass_at_k_gain", "diversity_D")
PAPER_MODELS = ("Qwen3-8B", "Qwen3-4B")  # preference order when we show a reference
PAPER_PACS = PacsSpec()  # the spec's defaults are the paper's settings (pacs.methods)


def load_paper_numbers(path: str | Path = PAPER_CSV) -> pd.DataFrame:
    """Read and validate ``paper_numbers.csv``; ``k`` is a nullable Int64, ``value`` a float."""
    path = Path(path)
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise FormatError(f"{path}: missing column(s) {missing}")
    for i, row in df.iterrows():
        _check_row(path, i + 2, row)
    out = df.loc[:, list(COLUMNS)].copy()
    out["value"] = out["value"].astype(float)
    out["k"] = pd.array([int(k) if k else None for k in df["k"]], dtype="Int64")
    out["k_inferred"] = df["k_inferred"] == "True"
    return out


def _check_row(path: Path, line: int, row: pd.Series) -> None:
    """Raise FormatError naming the line and field of a malformed paper_numbers.csv row."""
    try:
        float(row["value"])
    except ValueError:
        raise FormatError(
            f"{path}:{line}: field 'value' is not a number: {row['value']!r}"
        ) from None
    if row["k"] and not row["k"].isdigit():
        raise FormatError(f"{path}:{line}: field 'k' must be a positive integer or empty")
    if row["k_inferred"] not in ("True", "False"):
        raise FormatError(f"{path}:{line}: field 'k_inferred' must be True or False")
    if row["metric"] not in METRICS:
        raise FormatError(f"{path}:{line}: field 'metric' must be one of {METRICS}")
    if not row["source"].startswith("paper, "):
        raise FormatError(f"{path}:{line}: field 'source' must cite the paper ('paper, Table N')")


def paper_method_for_run(run: RunSpec | None) -> str | None:
    """The paper's row name for a run (None: the base model), or None when the paper has no such
    row (:data:`PAPER_ROWS`, one branch per method)."""
    if run is None:
        return "base"
    return PAPER_ROWS[run.method](run.method)


def _pacs_row(spec: PacsSpec) -> str | None:
    """PACS runs map by the one knob that differs from the paper's settings (``use_weight`` ->
    ``pacs_noweight``, ``score`` -> ``pacs_score_<score>``); a PACS run that differs in anything
    else (β, reference schedule, soft labels) has no row in the paper's tables."""
    diffs = {k for k in spec_keys(PacsSpec) if getattr(spec, k) != getattr(PAPER_PACS, k)}
    if not diffs:
        return "pacs"
    if diffs == {"use_weight"}:
        return "pacs_noweight"
    if diffs == {"score"}:
        return f"pacs_score_{spec.score}"
    return None


PAPER_ROWS = MethodTable(
    "pacs.report.paper.PAPER_ROWS",
    {
        PacsSpec: _pacs_row,
        GrpoSpec: lambda spec: "grpo",
        PpoSpec: lambda spec: "ppo",
        DapoSpec: lambda spec: None,  # not in the PACS paper (IN_PAPER)
        RealSpec: lambda spec: None,  # not in the PACS paper
    },
)
IN_PAPER = MethodTable(
    "pacs.report.paper.IN_PAPER",
    {PacsSpec: True, GrpoSpec: True, PpoSpec: True, DapoSpec: False, RealSpec: False},
)
"""Whether the PACS paper trains the method (else tables mark it 'not in the paper')."""


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def paper_model_for(cfg: dict[str, Any], model_key: str) -> str | None:
    """The paper model (``Qwen3-4B`` | ``Qwen3-8B``) that a config model key stands for, if any.

    Matches the key itself (``qwen3_8b``) or any string in its config entry (an HF id such as
    ``Qwen/Qwen3-8B``, a path ending in it).
    """
    entry = (cfg.get("models") or {}).get(model_key) or {}
    texts = [model_key, *_strings(entry)]
    for paper_model in PAPER_MODELS:
        target = _norm(paper_model)
        if any(_norm(t).endswith(target) for t in texts):
            return paper_model
    return None


def _strings(obj: Any) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in _strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in _strings(v)]
    return []


@dataclass(frozen=True)
class PaperRef:
    """Which paper model's numbers stand beside one of our models, and how to label them."""

    model: str | None  # paper model whose rows are shown; None: nothing to show
    same: bool  # True: our model is that paper model (a comparison); False: reference only

    def label(self, tables: list[str]) -> str:
        """Row label such as ``paper (Table 2)`` or ``paper (Qwen3-8B, reference only; Table
        2)``."""
        src = ", ".join(tables)
        if self.same:
            return f"paper ({src})" if src else "paper"
        return (
            f"paper ({self.model}, reference only; {src})"
            if src
            else f"paper ({self.model}, reference only)"
        )


def paper_ref(
    cfg: dict[str, Any], model_key: str, paper: pd.DataFrame, tables: list[str]
) -> PaperRef:
    """Pick the paper model to show beside ``model_key`` for a table drawn from ``tables``.

    In the paper profile a Qwen3 model is compared with itself. In the tiny profile (or for any
    model that is not one of the paper's), the paper's numbers are only a reference: the first of
    ``PAPER_MODELS`` that has rows in ``tables``.
    """
    mapped = paper_model_for(cfg, model_key)
    if mapped is not None and cfg.get("profile") != "tiny":
        return PaperRef(model=mapped, same=True)
    in_tables = set(paper.loc[paper["table"].isin(tables), "model"])
    for candidate in PAPER_MODELS:
        if candidate in in_tables:
            return PaperRef(model=candidate, same=False)
    return PaperRef(model=None, same=False)


def lookup(
    paper: pd.DataFrame,
    *,
    model: str | None,
    benchmark: str,
    method: str | None,
    k: int | None,
    tables: list[str],
    metric: str = "pass_at_k",
) -> dict[str, Any] | None:
    """The paper's number for one cell, from the first of ``tables`` that has it, else None.

    Returns ``{"value", "source", "table", "k_inferred"}``.
    """
    if model is None or method is None:
        return None
    sel = paper[
        (paper["model"] == model)
        & (paper["benchmark"] == benchmark)
        & (paper["method"] == method)
        & (paper["metric"] == metric)
    ]
    if k is None:
        sel = sel[sel["k"].isna()]
    else:
        sel = sel[sel["k"].notna() & (sel["k"] == k)]
    for table in tables:
        hit = sel[sel["table"] == table]
        if len(hit):
            row = hit.iloc[0]
            return {
                "value": float(row["value"]),
                "source": row["source"],
                "table": table,
                "k_inferred": bool(row["k_inferred"]),
            }
    return None
