"""One model's Table-1-style row from its ``passk.json`` files, beside the paper's numbers.

Used by ``python -m pacs.model_eval`` (``make eval``: any checkpoint on the paper's
protocol) and by the report's released-models table (Table 1's open models, evaluated by the DAG):
both read the passk.json documents the same generate → grade → pass@k stages wrote.

A row holds, per benchmark, pass@1 and pass@k at the largest k (the benchmark's n) with their 95 %
bootstrap CIs (over problems, from passk.json), and Avg. = the mean pass@1 over Table 1's five math
benchmarks when all five are present. The Avg.'s CI treats the benchmarks as independent and each
CI as normal: half-width = sqrt(Σ half-width_b²) / 5 (the per-problem resamples are not in
passk.json). Where the paper has the model (Table 1, row ``base`` or ``released``), its pass@1
stands beside ours with the difference ours − paper and its CI (ours' CI shifted by the paper's
number, which the paper gives without one).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import pandas as pd

from .paper import lookup
from .style import benchmark_label

TABLE1_BENCHMARKS = ("math500", "amc23", "aime24", "aime25", "beyondaime")  # its Avg. is over these
PAPER_ROW_METHODS = ("base", "released")  # Table 1's rows of a model evaluated as released
ROW_CSV_COLUMNS = [
    "model",
    "label",
    "benchmark",
    "metric",
    "k",
    "value_pct",
    "ci_low_pct",
    "ci_high_pct",
    "n_samples",
    "n_problems",
    "truncated_pct",
    "finish_unknown",  # the generations recorded no finish reason: the cut share is unknown
    "paper_model",
    "paper_pct",
    "paper_source",
    "diff_pct",
    "diff_ci_low_pct",
    "diff_ci_high_pct",
]


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def paper_model_of(model: str, paper: pd.DataFrame) -> str | None:
    """The Table 1 model a hub id or folder name stands for: its last path part, compared without
    case and punctuation (``Qwen/Qwen3-8B`` -> ``Qwen3-8B``, ``GAIR/LIMO`` -> ``LIMO``); None
    when Table 1 has no such row."""
    name = _norm(model.rstrip("/").rsplit("/", 1)[-1])
    for candidate in paper.loc[paper["table"] == "Table 1", "model"].unique():
        if _norm(candidate) == name:
            return str(candidate)
    return None


def paper_pass1(paper: pd.DataFrame, paper_model: str | None, benchmark: str) -> dict | None:
    """The paper's Table 1 pass@1 of ``paper_model`` on ``benchmark`` (or ``avg``), if any."""
    for method in PAPER_ROW_METHODS:
        hit = lookup(
            paper, model=paper_model, benchmark=benchmark, method=method, k=1, tables=["Table 1"]
        )
        if hit:
            return hit
    return None


def _entry(doc: dict, k: int | None) -> dict:
    """The pass@k entry of a passk.json document at ``k`` (None: the largest k)."""
    entries = doc["pass_at_k"]
    return entries[-1] if k is None else next(e for e in entries if e["k"] == k)


def _pct(value: float | None) -> float | None:
    return None if value is None else 100.0 * value


def _record(model, label, benchmark, metric, k, value, lo, hi, doc, paper_model, hit) -> dict:
    """One CSV record (percentages), with the paper's number and the difference where known."""
    rec = dict.fromkeys(ROW_CSV_COLUMNS, None)
    rec.update(model=model, label=label, benchmark=benchmark, metric=metric, k=k)
    rec.update(value_pct=value, ci_low_pct=lo, ci_high_pct=hi)
    if doc is not None:
        rec.update(n_samples=doc["n_min"], n_problems=doc["n_problems"])
        rec.update(truncated_pct=_pct(doc.get("truncated_share")))  # older passk.json: none
        rec.update(finish_unknown=bool(doc.get("finish_counts", {}).get("unknown")))
    if hit is not None:
        diff = value - hit["value"]
        rec.update(paper_model=paper_model, paper_pct=hit["value"], paper_source=hit["source"])
        rec.update(diff_pct=diff)
        if lo is not None and hi is not None:
            rec.update(diff_ci_low_pct=lo - hit["value"], diff_ci_high_pct=hi - hit["value"])
    return rec


def row_records(
    docs: Sequence[dict], paper: pd.DataFrame, *, model: str, label: str, paper_model: str | None
) -> list[dict]:
    """CSV records of one model: pass@1 and pass@k(max) per benchmark, then Avg. pass@1."""
    records = []
    for doc in docs:
        bench = doc["benchmark"]
        one, top = _entry(doc, 1), _entry(doc, None)
        hit = paper_pass1(paper, paper_model, bench)
        args = (_pct(one["value"]), _pct(one["ci_low"]), _pct(one["ci_high"]), doc)
        records.append(_record(model, label, bench, "pass@1", 1, *args, paper_model, hit))
        if top["k"] > 1:
            args = (_pct(top["value"]), _pct(top["ci_low"]), _pct(top["ci_high"]), doc)
            records.append(
                _record(model, label, bench, f"pass@{top['k']}", top["k"], *args, None, None)
            )
    avg = _average(records)
    if avg is not None:
        hit = paper_pass1(paper, paper_model, "avg")
        records.append(_record(model, label, "avg", "pass@1", 1, *avg, None, paper_model, hit))
    return records


def _average(records: list[dict]) -> tuple[float, float | None, float | None] | None:
    """Mean pass@1 over Table 1's five benchmarks and its approximate CI; None unless all five."""
    ones = {r["benchmark"]: r for r in records if r["metric"] == "pass@1"}
    if not all(b in ones for b in TABLE1_BENCHMARKS):
        return None
    parts = [ones[b] for b in TABLE1_BENCHMARKS]
    mean = sum(r["value_pct"] for r in parts) / len(parts)
    if any(r["ci_low_pct"] is None or r["ci_high_pct"] is None for r in parts):
        return mean, None, None
    half = math.sqrt(sum(((r["ci_high_pct"] - r["ci_low_pct"]) / 2) ** 2 for r in parts))
    half /= len(parts)
    return mean, mean - half, mean + half


def _cell(value: float | None, lo: float | None, hi: float | None, signed: bool = False) -> str:
    if value is None:
        return "–"
    fmt = "+.2f" if signed else ".2f"
    text = format(value, fmt)
    if lo is None or hi is None:
        return text
    return f"{text} [{format(lo, fmt)}, {format(hi, fmt)}]"


def display_rows(records: list[dict]) -> pd.DataFrame:
    """The row as displayed: ours (pass@1, pass@k), the paper's pass@1 and ours − paper."""
    benches = list(dict.fromkeys(r["benchmark"] for r in records))
    header = ["Row", *[("Avg." if b == "avg" else benchmark_label(b)) for b in benches]]
    by = {(r["benchmark"], r["metric"] == "pass@1"): r for r in records}
    label = records[0]["label"] if records else ""
    rows = [[f"{label}: pass@1 [95% CI]", *[_ours(by.get((b, True))) for b in benches]]]
    if any(not is_one for _, is_one in by):
        rows.append(
            [f"{label}: pass@n [95% CI]", *[_ours(by.get((b, False)), n=True) for b in benches]]
        )
    ones = [by.get((b, True)) for b in benches]
    rows.append([f"{label}: cut at the token budget (%)", *[_truncated(r) for r in ones]])
    hits = ones
    if any(h and h["paper_pct"] is not None for h in hits):
        paper_model = next(h["paper_model"] for h in hits if h and h["paper_pct"] is not None)
        rows.append([f"paper ({paper_model}, Table 1): pass@1", *[_paper(h) for h in hits]])
        rows.append(["ours − paper [95% CI]", *[_diff(h) for h in hits]])
    return pd.DataFrame(rows, columns=header)


def _ours(rec: dict | None, n: bool = False) -> str:
    if rec is None:
        return "–"
    cell = _cell(rec["value_pct"], rec["ci_low_pct"], rec["ci_high_pct"])
    return f"{cell} (k={rec['k']})" if n else cell


def _truncated(rec: dict | None) -> str:
    """The share of responses with finish_reason "length" ('–': Avg., or not recorded;
    'unknown': generations made elsewhere that record no finish reason)."""
    if rec is not None and rec.get("finish_unknown"):
        return "unknown"
    if rec is None or rec.get("truncated_pct") is None:
        return "–"
    return f"{rec['truncated_pct']:.1f}"


def _paper(rec: dict | None) -> str:
    return "–" if rec is None or rec["paper_pct"] is None else f"{rec['paper_pct']:.2f}"


def _diff(rec: dict | None) -> str:
    if rec is None or rec["diff_pct"] is None:
        return "–"
    return _cell(rec["diff_pct"], rec["diff_ci_low_pct"], rec["diff_ci_high_pct"], signed=True)


def records_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(records, columns=ROW_CSV_COLUMNS)
