"""Read every result file of one profile into tidy DataFrames, validating as we go.

Inputs (docs/formats.md, relative to ``results/<profile>/``), matched by these globs:

- ``eval/*/*/seed*/*/passk.json``       -> :func:`load_passk`  (model/run/seed<k>/benchmark)
- ``diversity/*/*.json``                -> :func:`load_diversity` (model/benchmark)
- ``diversity/*/*.pca.csv``             -> :func:`load_pca`
- ``train/*/*/seed*/metrics.jsonl``     -> :func:`load_metrics` (model/run/seed<k>)
- ``train/*/*/seed*/eval_curve.jsonl``  -> :func:`load_eval_curves` (tiny engine, held-out set)
- ``curve/*/*/seed*/step*/*/passk.json`` -> :func:`load_curve_passk` (paper scale: checkpoints
  every ``eval.curve_every`` steps, written by the pipeline's evaluate rules; pass@1 per benchmark)

Every malformed input raises :class:`pacs.evaluation.io.FormatError` naming the file and the
field (and the line for JSONL). The path's model/run/seed/benchmark must agree with the fields
inside the file, so a file copied into the wrong folder cannot be reported under a wrong name.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pacs import layout
from pacs.evaluation.io import FormatError, iter_jsonl
from pacs.layout import ANY
from pacs.metrics_log import TRAIN_FIELDS

_EVERY_RUN = layout.train_dir("", ANY, ANY, ANY)
GLOBS = {
    "passk": f"{layout.eval_dir('', ANY, ANY, ANY, ANY)}/passk.json",
    "diversity": layout.diversity_file("", ANY, ANY),
    "pca": layout.diversity_file("", ANY, ANY, ".pca.csv"),
    "metrics": f"{_EVERY_RUN}/metrics.jsonl",
    "eval_curve": f"{_EVERY_RUN}/eval_curve.jsonl",
    "curve_passk": f"{layout.curve_dir('', ANY, ANY, ANY, ANY, ANY)}/passk.json",
}
HELD_OUT = "held-out"  # benchmark name of eval_curve.jsonl rows that do not name one
METRIC_FIELDS = TRAIN_FIELDS  # metrics.jsonl fields, stated in pacs.metrics_log
PCA_COLUMNS = ("method", "problem_id", "sample_idx", "pc1", "pc2")
_SEED_DIR = re.compile(r"^seed(\d+)$")
_STEP_DIR = re.compile(r"^step(\d+)$")

PASSK_COLUMNS = [
    "model",
    "run",
    "seed",
    "benchmark",
    "metric",
    "k",
    "value",
    "ci_low",
    "ci_high",
    "n_problems",
    "n_min",
    "truncated_share",
    "file",
]
DIVERSITY_COLUMNS = [
    "model",
    "benchmark",
    "method",
    "D",
    "n_problems",
    "n_correct",
    "embedder",
    "file",
]
CURVE_COLUMNS = [
    "model",
    "run",
    "seed",
    "benchmark",
    "step",
    "pass_at_1",
    "n_problems",
    "n_samples",
    "source",
]


@dataclass
class Results:
    """All result tables of one profile, plus the files each was read from."""

    root: Path
    passk: pd.DataFrame
    diversity: pd.DataFrame
    pca: pd.DataFrame
    metrics: pd.DataFrame
    curves: pd.DataFrame
    files: dict[str, list[Path]] = field(default_factory=dict)


def load_results(root: str | Path) -> Results:
    """Glob and load every input under ``root`` (a ``results/<profile>`` folder)."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: results folder not found")
    files = {name: sorted(root.glob(pattern)) for name, pattern in GLOBS.items()}
    return Results(
        root=root,
        passk=load_passk(files["passk"], root),
        diversity=load_diversity(files["diversity"], root),
        pca=load_pca(files["pca"], root),
        metrics=load_metrics(files["metrics"], root),
        curves=_concat(
            [
                load_eval_curves(files["eval_curve"], root),
                load_curve_passk(files["curve_passk"], root),
            ],
            CURVE_COLUMNS,
        ),
        files=files,
    )


def _concat(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


# ---------------------------------------------------------------------------- small validators


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def need(obj: dict, key: str, kind: str, where: str, *, nullable: bool = False) -> Any:
    """``obj[key]`` checked against ``kind`` (str | int | number | rate | list | dict)."""
    if key not in obj:
        raise FormatError(f"{where}: missing field {key!r}")
    value = obj[key]
    if value is None and nullable:
        return None
    ok = {
        "str": isinstance(value, str),
        "int": isinstance(value, int) and not isinstance(value, bool),
        "number": _is_number(value),
        "rate": _is_number(value) and 0.0 <= value <= 1.0,
        "list": isinstance(value, list),
        "dict": isinstance(value, dict),
    }[kind]
    if not ok:
        expect = {
            "rate": "a number in [0, 1]",
            "number": "a finite number",
            "int": "an integer",
            "str": "a string",
            "list": "a list",
            "dict": "an object",
        }[kind]
        null = " or null" if nullable else ""
        raise FormatError(f"{where}: field {key!r} must be {expect}{null}, got {value!r:.80}")
    return value


def read_json(path: Path) -> dict:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise FormatError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from exc
    if not isinstance(obj, dict):
        raise FormatError(f"{path}: expected a JSON object, got {type(obj).__name__}")
    return obj


def seed_of(dirname: str, path: Path) -> int:
    match = _SEED_DIR.match(dirname)
    if not match:
        raise FormatError(f"{path}: folder {dirname!r} should be seed<k> (docs/formats.md)")
    return int(match.group(1))


def agree(path: Path, field_name: str, in_file: Any, in_path: Any) -> None:
    if in_file != in_path:
        raise FormatError(
            f"{path}: field {field_name!r} is {in_file!r} but the path says {in_path!r}"
        )


# ---------------------------------------------------------------------------- pass@k


def load_passk(paths: list[Path], root: Path) -> pd.DataFrame:
    """One row per (file, metric, k): pass@k and maj@k as fractions, with their bootstrap CI."""
    rows: list[dict[str, Any]] = []
    for path in paths:
        rows.extend(read_passk_file(path, root))
    return pd.DataFrame(rows, columns=PASSK_COLUMNS)


def read_passk_file(path: Path, root: Path) -> list[dict[str, Any]]:
    """Validate one ``passk.json`` (fields and path agreement) and return its tidy rows.

    Paths: ``eval/<model>/<run>/seed<k>/<benchmark>/passk.json`` or
    ``curve/<model>/<run>/seed<k>/step<N>/<benchmark>/passk.json`` (rows then carry ``step``).
    """
    rel = path.relative_to(root).parts
    model, run, seed_dir, benchmark = rel[1], rel[2], rel[3], rel[-2]
    seed = seed_of(seed_dir, path)
    obj = read_json(path)
    where = str(path)
    for key, expected in (("model", model), ("run", run), ("benchmark", benchmark)):
        agree(path, key, need(obj, key, "str", where), expected)
    agree(path, "seed", need(obj, "seed", "int", where), seed)
    n_problems = need(obj, "n_problems", "int", where)
    n_min = need(obj, "n_min", "int", where)
    # share of responses cut at the token budget; passk.json files older than the field have none
    truncated = need(obj, "truncated_share", "rate", where) if "truncated_share" in obj else None
    base = {
        "model": model,
        "run": run,
        "seed": seed,
        "benchmark": benchmark,
        "n_problems": n_problems,
        "n_min": n_min,
        "truncated_share": truncated,
        "file": str(path),
    }
    rows = []
    for metric, required in (("pass_at_k", True), ("maj_at_k", False)):
        if metric not in obj and not required:
            continue
        entries = need(obj, metric, "list", where)
        if required and not entries:
            raise FormatError(f"{path}: field {metric!r} is empty")
        seen: set[int] = set()
        for i, entry in enumerate(entries):
            rows.append(
                {**base, "metric": metric, **_passk_entry(entry, f"{metric}[{i}]", path, seen)}
            )
    return rows


def load_curve_passk(paths: list[Path], root: Path) -> pd.DataFrame:
    """pass@1 of training checkpoints (``curve/.../step<N>/<benchmark>/passk.json``)."""
    rows: list[dict[str, Any]] = []
    for path in paths:
        step_dir = path.relative_to(root).parts[4]
        match = _STEP_DIR.match(step_dir)
        if not match:
            raise FormatError(f"{path}: folder {step_dir!r} should be step<N>")
        entries = [
            r for r in read_passk_file(path, root) if r["metric"] == "pass_at_k" and r["k"] == 1
        ]
        if not entries:
            raise FormatError(f"{path}: field 'pass_at_k' has no entry with k = 1")
        e = entries[0]
        rows.append(
            {
                "model": e["model"],
                "run": e["run"],
                "seed": e["seed"],
                "benchmark": e["benchmark"],
                "step": int(match.group(1)),
                "pass_at_1": e["value"],
                "n_problems": e["n_problems"],
                "n_samples": e["n_min"],
                "source": "curve",
            }
        )
    return pd.DataFrame(rows, columns=CURVE_COLUMNS)


def _passk_entry(entry: Any, name: str, path: Path, seen: set[int]) -> dict[str, Any]:
    where = f"{path}: {name}"
    if not isinstance(entry, dict):
        raise FormatError(f"{where}: expected an object with k, value, ci_low, ci_high")
    k = need(entry, "k", "int", where)
    if k < 1:
        raise FormatError(f"{where}: field 'k' must be >= 1, got {k}")
    if k in seen:
        raise FormatError(f"{where}: field 'k' = {k} appears twice")
    seen.add(k)
    value = need(entry, "value", "rate", where)
    lo = need(entry, "ci_low", "rate", where, nullable=True) if "ci_low" in entry else None
    hi = need(entry, "ci_high", "rate", where, nullable=True) if "ci_high" in entry else None
    return {
        "k": k,
        "value": float(value),
        "ci_low": float("nan") if lo is None else float(lo),
        "ci_high": float("nan") if hi is None else float(hi),
    }


# ---------------------------------------------------------------------------- diversity


def load_diversity(paths: list[Path], root: Path) -> pd.DataFrame:
    """One row per (model, benchmark, method): the diversity score D (NaN when null)."""
    rows: list[dict[str, Any]] = []
    for path in paths:
        rel = path.relative_to(root).parts  # diversity/<model>/<benchmark>.json
        model, benchmark = rel[1], path.name[: -len(".json")]
        obj = read_json(path)
        agree(path, "benchmark", need(obj, "benchmark", "str", str(path)), benchmark)
        methods = need(obj, "methods", "dict", str(path))
        embedder = obj.get("embedder") if isinstance(obj.get("embedder"), str) else ""
        for method, entry in methods.items():
            where = f"{path}: methods.{method}"
            if not isinstance(entry, dict):
                raise FormatError(f"{where}: expected an object with D, n_problems, n_correct")
            d = need(entry, "D", "number", where, nullable=True)
            rows.append(
                {
                    "model": model,
                    "benchmark": benchmark,
                    "method": method,
                    "D": float("nan") if d is None else float(d),
                    "n_problems": need(entry, "n_problems", "int", where),
                    "n_correct": need(entry, "n_correct", "int", where),
                    "embedder": embedder,
                    "file": str(path),
                }
            )
    return pd.DataFrame(rows, columns=DIVERSITY_COLUMNS)


def load_pca(paths: list[Path], root: Path) -> pd.DataFrame:
    """The centred 2-D PCA points of correct responses, with model and benchmark added."""
    frames = []
    for path in paths:
        rel = path.relative_to(root).parts  # diversity/<model>/<benchmark>.pca.csv
        df = pd.read_csv(path, dtype={"method": str, "problem_id": str})
        missing = [c for c in PCA_COLUMNS if c not in df.columns]
        if missing:
            raise FormatError(f"{path}: missing column(s) {missing}; expected {list(PCA_COLUMNS)}")
        for col in ("pc1", "pc2"):
            values = pd.to_numeric(df[col], errors="coerce").astype(float)
            bad = ~np.isfinite(values.to_numpy())
            if bad.any():
                line = int(bad.nonzero()[0][0]) + 2  # 1-based, after the header
                raise FormatError(f"{path}:{line}: field {col!r} must be a finite number")
            df[col] = values.astype(float)
        df.insert(0, "benchmark", path.name[: -len(".pca.csv")])
        df.insert(0, "model", rel[1])
        frames.append(df.loc[:, ["model", "benchmark", *PCA_COLUMNS]])
    return _concat(frames, ["model", "benchmark", *PCA_COLUMNS])


# ---------------------------------------------------------------------------- training logs


def run_parts(path: Path, root: Path) -> tuple[str, str, int]:
    rel = path.relative_to(root).parts  # train/<model>/<run>/seed<k>/<file>
    return rel[1], rel[2], seed_of(rel[3], path)


def load_metrics(paths: list[Path], root: Path) -> pd.DataFrame:
    """One row per training step of every run; known numeric fields, NaN where absent/null."""
    rows: list[dict[str, Any]] = []
    for path in paths:
        model, run, seed = run_parts(path, root)
        for line, row in iter_jsonl(path, allow_truncated_tail=True):
            where = f"{path}:{line}"
            out = {
                "model": model,
                "run": run,
                "seed": seed,
                "step": need(row, "step", "int", where),
            }
            for key in METRIC_FIELDS:
                value = need(row, key, "number", where, nullable=True) if key in row else None
                out[key] = float("nan") if value is None else float(value)
            rows.append(out)
    return pd.DataFrame(rows, columns=["model", "run", "seed", "step", *METRIC_FIELDS])


def load_eval_curves(paths: list[Path], root: Path) -> pd.DataFrame:
    """Held-out pass@1 (fraction) against training step, for every run and seed."""
    rows: list[dict[str, Any]] = []
    for path in paths:
        model, run, seed = run_parts(path, root)
        for line, row in iter_jsonl(path, allow_truncated_tail=True):
            where = f"{path}:{line}"
            bench = need(row, "benchmark", "str", where) if "benchmark" in row else HELD_OUT
            rows.append(
                {
                    "model": model,
                    "run": run,
                    "seed": seed,
                    "benchmark": bench,
                    "step": need(row, "step", "int", where),
                    "pass_at_1": float(need(row, "pass_at_1", "rate", where)),
                    "n_problems": row.get("n_problems"),
                    "n_samples": row.get("n_samples"),
                    "source": "eval_curve.jsonl",
                }
            )
    return pd.DataFrame(rows, columns=CURVE_COLUMNS)
