"""Prepare one output file (+ its manifest) from HF or a local file: the CLI's three commands.

Everything is read and converted in memory first; files are written only when every row is
valid, each atomically, the data file before its manifest (a failed manifest removes the data
file again). So a failure leaves no new output behind.
"""

from __future__ import annotations

import logging
from datetime import date
from pathlib import Path
from typing import Any

from pacs.data.benchmarks import (
    ALL_BENCHMARKS,
    MATH_BENCHMARKS,
    check_unique_ids,
    convert_math,
    with_system_prompt,
)
from pacs.data.errors import DataError
from pacs.data.files import write_with_manifest
from pacs.data.livecodebench import PAPER_WINDOW, check_nonempty, convert_records
from pacs.data.readers import read_records
from pacs.data.sources import SOURCES, download_hf_files, load_hf_records, resolve_revision
from pacs.io import write_jsonl

log = logging.getLogger(__name__)


def _provenance(
    name: str, source: str, path: str | Path | None, revision: str | None
) -> dict[str, Any]:
    """Manifest fields saying where the data came from; checks the --source/--path combination."""
    if source == "local":
        if path is None:
            raise DataError(name, "--source local needs --path FILE")
        return {
            "source": "local",
            "dataset_id": None,
            "revision": None,
            "local_path": str(Path(path).resolve()),
        }
    if source != "hf":
        raise DataError(name, f"unknown source {source!r}; expected 'hf' or 'local'")
    if path is not None:
        raise DataError(name, "--path is only for --source local")
    return {
        "source": "hf",
        "dataset_id": SOURCES[name].dataset_id,
        "revision": resolve_revision(name, revision),
    }


def _livecodebench(
    prov: dict[str, Any], path: Any, window: tuple[date, date] | None
) -> tuple[list, int]:
    files = (
        [Path(path)]
        if prov["source"] == "local"
        else download_hf_files("livecodebench", prov["revision"])
    )
    rows, dropped, label = [], 0, " + ".join(map(str, files))
    seen_rows: list[tuple[str, int]] = []
    for file in files:
        file_rows, kept, file_dropped = convert_records(read_records(file), file, window)
        rows += file_rows
        seen_rows += [(str(file), i) for i in kept]
        dropped += file_dropped
    check_nonempty(label, rows, window, dropped)
    check_unique_ids(label, rows, seen_rows)
    return rows, dropped


def _gpqa(prov: dict[str, Any], path: Any) -> list[dict[str, Any]]:
    from pacs.data.gpqa import convert_gpqa

    csv_path = (
        Path(path) if prov["source"] == "local" else download_hf_files("gpqa", prov["revision"])[0]
    )
    return convert_gpqa(csv_path)


def prepare_eval(
    benchmark: str,
    source: str,
    out: str | Path,
    path: str | Path | None = None,
    revision: str | None = None,
    window: tuple[date, date] | None = PAPER_WINDOW,
) -> Path:
    """Write ``out`` (prepared-benchmark JSONL) and ``<stem>.manifest.json``; return ``out``."""
    if benchmark not in ALL_BENCHMARKS:
        raise DataError(benchmark, f"unknown benchmark; expected one of {ALL_BENCHMARKS}")
    prov = _provenance(benchmark, source, path, revision)
    dropped, extra = 0, {}
    if benchmark in MATH_BENCHMARKS:
        if prov["source"] == "local":
            rows = convert_math(benchmark, read_records(path), path)
        else:
            label = SOURCES[benchmark].label(prov["revision"])
            rows = convert_math(benchmark, load_hf_records(benchmark, prov["revision"]), label)
    elif benchmark == "livecodebench":
        rows, dropped = _livecodebench(prov, path, window)
        extra["contest_date_window"] = [str(d) for d in window] if window else None
    else:
        rows = _gpqa(prov, path)
    return write_with_manifest(
        Path(out), rows, write_jsonl, benchmark=benchmark, dropped=dropped, extra=extra, **prov
    )


def prepare_train(
    source: str,
    out: str | Path,
    path: str | Path | None = None,
    revision: str | None = None,
    tokenizer: str | Path | None = None,
    max_prompt_length: int = 1024,
    system_prompt: str | None = None,
) -> Path:
    """Write DeepScaleR as verl parquet ``out`` and ``<stem>.manifest.json``; return ``out``.
    ``system_prompt``: a system turn put before every problem (counted in the prompt length)."""
    from pacs.data.train import convert_deepscaler, drop_duplicates, filter_overlong, write_parquet

    prov = _provenance("deepscaler", source, path, revision)
    if prov["source"] == "local":
        rows = convert_deepscaler(read_records(path), path)
    else:
        label = SOURCES["deepscaler"].label(prov["revision"])
        rows = convert_deepscaler(load_hf_records("deepscaler", prov["revision"]), label)
    rows, duplicates, conflicting = drop_duplicates(rows)
    rows = [{**row, "prompt": with_system_prompt(row["prompt"], system_prompt)} for row in rows]
    dropped = 0
    if tokenizer is not None:
        from transformers import AutoTokenizer

        rows, dropped = filter_overlong(
            rows, AutoTokenizer.from_pretrained(str(tokenizer)), max_prompt_length
        )
    else:
        log.warning("no --tokenizer given: overlong prompts are NOT filtered")
    if not rows:
        raise DataError(out, f"every prompt is longer than {max_prompt_length} tokens")
    extra = {
        "tokenizer": str(tokenizer) if tokenizer is not None else None,
        "max_prompt_length": max_prompt_length if tokenizer is not None else None,
        "system_prompt": system_prompt,
        "duplicates_dropped": duplicates,
        "conflicting_duplicates": conflicting,
    }
    return write_with_manifest(
        Path(out), rows, write_parquet, benchmark="deepscaler", dropped=dropped, extra=extra, **prov
    )
