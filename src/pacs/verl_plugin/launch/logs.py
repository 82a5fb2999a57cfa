"""Convert verl's file-logger JSONL into the project's ``metrics.jsonl`` (docs/formats.md).

verl 0.9.1's ``FileLogger`` (verl/utils/tracking.py, backend "file") writes one line per
``Tracking.log`` call: ``{"step": int, "data": {metric: value}}`` to ``$VERL_FILE_LOGGER_PATH``,
opening the file with mode "wb" — a restarted job would erase its predecessor's log, so the
launcher gives every attempt its own file (``verl_logs/attempt-NNN.jsonl``) and this converter
merges them in attempt order; the last row written for a step wins.

Usage: python -m pacs.verl_plugin.launch.logs --log-dir RUN/verl_logs --out RUN/metrics.jsonl
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Iterable
from pathlib import Path

from pacs.io import iter_jsonl, read_jsonl, write_jsonl
from pacs.metrics_log import TRAIN_FIELDS, TRAIN_METRICS, mini_batch_column

ATTEMPT_RE = re.compile(r"attempt-(\d+)\.jsonl$")

# metrics.jsonl field -> verl metric keys, first present wins; fields that add up several verl
# timers (absent timers count 0; all absent -> null). Stated once in pacs.metrics_log.
FIELD_KEYS: dict[str, tuple[str, ...]] = {
    m.name: m.verl_keys for m in TRAIN_METRICS if not m.summed
}
SUMMED_FIELDS: dict[str, tuple[str, ...]] = {m.name: m.verl_keys for m in TRAIN_METRICS if m.summed}
ROW_ORDER = ("step", *TRAIN_FIELDS)
# The worker's per-update keys (pacs.verl_plugin.worker.per_update_metrics), written after the
# stated fields as the tiny engine's columns: actor/pacs_psi_std/mb1 -> psi_std/mb1,
# actor/grad_norm/mb1 -> grad_norm/mb1.
PER_UPDATE_KEY = re.compile(r"actor/(?:pacs_)?(?P<stat>\w+)/mb(?P<index>\d+)")


def attempt_files(log_dir: Path) -> list[Path]:
    """The attempt logs in attempt order."""
    found = [
        (int(m.group(1)), p)
        for p in Path(log_dir).glob("attempt-*.jsonl")
        if (m := ATTEMPT_RE.search(p.name))
    ]
    return [p for _, p in sorted(found)]


def next_attempt_path(log_dir: Path) -> Path:
    files = attempt_files(log_dir)
    last = int(ATTEMPT_RE.search(files[-1].name).group(1)) if files else 0
    return Path(log_dir) / f"attempt-{last + 1:03d}.jsonl"


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return None if math.isnan(value) else float(value)


def read_records(paths: Iterable[Path]) -> dict[int, dict]:
    """step -> merged metrics over all files (later files and later lines win per key).

    A torn last line (the job was killed mid-write) is skipped; any other bad line raises.
    """
    merged: dict[int, dict] = {}
    for path in paths:
        for lineno, record in iter_jsonl(path, allow_truncated_tail=True):
            if "step" not in record or not isinstance(record.get("data"), dict):
                raise ValueError(f"{path}:{lineno}: expected {{'step': int, 'data': {{...}}}}")
            merged.setdefault(int(record["step"]), {}).update(record["data"])
    return merged


def to_row(step: int, data: dict) -> dict:
    """One metrics.jsonl row; fields verl did not log are null; per-update columns, when
    logged, follow the stated fields."""
    row: dict = {"step": step}
    for field, keys in FIELD_KEYS.items():
        row[field] = next(
            (_number(data[k]) for k in keys if k in data and _number(data[k]) is not None), None
        )
    for field, keys in SUMMED_FIELDS.items():
        values = [_number(data[k]) for k in keys if k in data and _number(data[k]) is not None]
        row[field] = sum(values) if values else None
    return {**{key: row[key] for key in ROW_ORDER}, **per_update_columns(data)}


def per_update_columns(data: dict) -> dict:
    """``<stat>/mb<i>`` columns from the ``PER_UPDATE_KEY`` keys of ``data``, ordered as the tiny
    engine orders them: by stat (in the order verl logged them), then by update."""
    found = [
        (m, _number(value)) for key, value in data.items() if (m := PER_UPDATE_KEY.fullmatch(key))
    ]
    stats = list(dict.fromkeys(m["stat"] for m, _ in found))
    found.sort(key=lambda item: (stats.index(item[0]["stat"]), int(item[0]["index"])))
    return {mini_batch_column(m["stat"], int(m["index"])): value for m, value in found}


def is_training_step(data: dict) -> bool:
    """Validation-only rows (e.g. the one before training) carry no step timer."""
    return "timing_s/step" in data


def convert(log_dir: Path, out: Path) -> int:
    """Write ``out`` (atomically) from every attempt log in ``log_dir``; return the row count."""
    files = attempt_files(log_dir)
    if not files:
        raise FileNotFoundError(f"no verl file-logger output (attempt-*.jsonl) in {log_dir}")
    records = read_records(files)
    rows = [to_row(step, data) for step, data in sorted(records.items()) if is_training_step(data)]
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(out, rows)
    return len(rows)


def step_wall_times(metrics_path: Path) -> list[tuple[int, float | None]]:
    """(step, seconds) per row of a ``metrics.jsonl`` (verl's ``timing_s/step``)."""
    rows = read_jsonl(metrics_path)
    return [(int(row["step"]), row.get("time_total")) for row in rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--log-dir", type=Path, required=True, help="folder with verl's attempt-*.jsonl"
    )
    parser.add_argument("--out", type=Path, required=True, help="metrics.jsonl to write")
    args = parser.parse_args(argv)
    n = convert(args.log_dir, args.out)
    print(f"wrote {n} steps to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
