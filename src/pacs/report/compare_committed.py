"""A user's first check: do this run's tables match the committed report?

``make reproduce`` ends here. Every ``tables/*.csv`` of the committed report (``docs/tiny_report``)
is compared with this run's (``paper_figures/tiny``), cell by cell, leaving out the columns that
differ on every run (times, dates, commit, fingerprint: :func:`excluded`); the ``.md`` and ``.tex``
tables render the same values. Printed: ``identical``, or per table how many cells differ, the
largest difference, and the first few cells (committed -> yours, difference), beside the spread
a pass@1 has from the RL seed alone (:func:`seed_spread`) and what to look at first: the SFT
base's pass@1, which no RL seed touches (``first_look``).

    python -m pacs.report.compare_committed --ours paper_figures/tiny --committed docs/tiny_report

Exit status 0 whatever it finds (``--strict``: 1 when a table differs).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import math
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

# Columns that differ on every run whatever it computed.
EXCLUDED = re.compile(r"time|wall|seconds|_at$|^commit$|^fingerprint$|gpu_hours")
SPREAD_SOURCE = Path("docs/science_report/data/eval_curve.csv.gz")
SHOWN = 6  # differing cells spelled out per table
BASE_TABLE, BASE_KEYS, BASE_VALUE = "table1_pass1.csv", {"run": "base", "k": "1"}, "mean_pct"


def excluded(column: str) -> bool:
    """Whether a column is left out of the comparison (times, dates, commit, fingerprint)."""
    return bool(EXCLUDED.search(column))


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isnan(value) else value


@dataclass
class TableDiff:
    """What differs in one table: cells (row label, column, committed, yours) and row sets."""

    name: str
    cells: list[tuple[str, str, str, str]] = field(default_factory=list)
    missing: str | None = None  # a whole table or column set absent or changed
    only_committed: list[str] = field(default_factory=list)
    only_ours: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not (self.cells or self.missing or self.only_committed or self.only_ours)

    def largest(self) -> float | None:
        """The largest absolute difference among numeric cells (None: none numeric)."""
        diffs = [
            abs(b - a)
            for _, _, x, y in self.cells
            if (a := _number(x)) is not None and (b := _number(y)) is not None
        ]
        return max(diffs) if diffs else None


def read_table(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def _same(a: str, b: str) -> bool:
    if a == b:
        return True
    x, y = _number(a), _number(b)
    return x is not None and y is not None and math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)


def _key_columns(columns: list[str], rows: list[dict[str, str]]) -> list[str]:
    """The columns that name a row: compared ones holding text (not numbers) in some row."""
    text = [c for c in columns if any(r[c] and _number(r[c]) is None for r in rows)]
    return [c for c in text if not excluded(c)] or columns[:1]


def _label(row: dict[str, str], keys: list[str], extra: list[str]) -> str:
    return " ".join(f"{k}={row[k]}" for k in keys + extra if row.get(k))


def compare_table(name: str, committed: Path, ours: Path) -> TableDiff:
    """Cell-by-cell differences of one CSV table (rows matched by their text columns)."""
    diff = TableDiff(name)
    if not ours.is_file():
        diff.missing = f"absent from this run ({ours})"
        return diff
    cols_c, rows_c = read_table(committed)
    cols_o, rows_o = read_table(ours)
    if cols_c != cols_o:
        gone, new = set(cols_c) - set(cols_o), set(cols_o) - set(cols_c)
        diff.missing = f"other columns (only committed: {sorted(gone)}; only yours: {sorted(new)})"
        return diff
    keys = _key_columns(cols_c, rows_c + rows_o)
    compared = [c for c in cols_c if not excluded(c) and c not in keys]
    # a row is labelled by the text columns that vary (model=tiny on every row says nothing)
    shown = [k for k in keys if len({r[k] for r in rows_c + rows_o}) > 1] or keys
    # rows with equal text columns are told apart by their order (k = 1, 2, ...: numeric keys)
    index_o: dict[tuple, list[dict[str, str]]] = {}
    for row in rows_o:
        index_o.setdefault(tuple(row[k] for k in keys), []).append(row)
    for row in rows_c:
        key = tuple(row[k] for k in keys)
        if not index_o.get(key):
            diff.only_committed.append(_label(row, shown, []))
            continue
        mine = index_o[key].pop(0)
        numeric_keys = [c for c in ("k", "step", "seed") if c in compared]
        for col in compared:
            if not _same(row[col], mine[col]):
                diff.cells.append((_label(row, shown, numeric_keys), col, row[col], mine[col]))
    diff.only_ours = [_label(r, shown, []) for rows in index_o.values() for r in rows]
    return diff


def compare_reports(committed: Path, ours: Path) -> list[TableDiff]:
    """Every committed ``tables/*.csv`` against this run's."""
    tables = sorted((committed / "tables").glob("*.csv"))
    if not tables:
        raise SystemExit(f"error: no tables/*.csv under {committed}")
    return [compare_table(t.name, t, ours / "tables" / t.name) for t in tables]


def seed_spread(path: Path = SPREAD_SOURCE) -> tuple[float, float, int] | None:
    """(smallest, largest) sample std in pass@1 points across seeds of the runs' last held-out
    pass@1, and the seed count, from a report's ``eval_curve.csv.gz`` (None: no such file)."""
    if not path.is_file():
        return None
    with gzip.open(path, "rt", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    last: dict[str, int] = {}
    for r in rows:
        last[r["run"]] = max(last.get(r["run"], 0), int(r["step"]))
    finals: dict[str, list[float]] = {}
    for r in rows:
        if int(r["step"]) == last[r["run"]]:
            finals.setdefault(r["run"], []).append(100 * float(r["pass_at_1"]))
    stds = [statistics.stdev(v) for v in finals.values() if len(v) >= 8]
    if not stds:
        return None
    return min(stds), max(stds), max(len(v) for v in finals.values())


def base_pass1(report: Path) -> str | None:
    """The SFT base's pass@1 (%) in a report's Table 1 (None: no such row)."""
    path = report / "tables" / BASE_TABLE
    if not path.is_file():
        return None
    _, rows = read_table(path)
    for row in rows:
        if all(row.get(k) == v for k, v in BASE_KEYS.items()):
            return row.get(BASE_VALUE)
    return None


def _fmt(text: str) -> str:
    value = _number(text)
    return text if value is None else f"{value:.4g}" if abs(value) < 1 else f"{value:.2f}"


def table_lines(diff: TableDiff) -> list[str]:
    """The lines that say how one table differs ([] when it does not)."""
    if diff.identical:
        return []
    if diff.missing:
        return [f"  {diff.name}: {diff.missing}"]
    largest = diff.largest()
    n = len(diff.cells)
    head = f"  {diff.name}: {n} {'cell differs' if n == 1 else 'cells differ'}"
    head += f", largest difference {largest:.4g}" if largest is not None else ""
    lines = [head]
    for label, col, old, new in diff.cells[:SHOWN]:
        a, b = _number(old), _number(new)
        delta = f" ({b - a:+.2f})" if a is not None and b is not None else ""
        lines.append(f"    {label} {col}: {_fmt(old)} -> {_fmt(new)}{delta}")
    if len(diff.cells) > SHOWN:
        lines.append(f"    ... and {len(diff.cells) - SHOWN} more")
    for what, rows in (("only committed", diff.only_committed), ("only yours", diff.only_ours)):
        if rows:
            lines.append(f"    rows {what}: {'; '.join(rows[:SHOWN])}")
    return lines


def spread_lines(spread: tuple[float, float, int] | None, source: Path) -> list[str]:
    if spread is None:
        return [f"Spread from the seed alone: unknown here ({source} not found)."]
    low, high, n = spread
    return [
        (
            f"Spread from the RL seed alone: a run's final pass@1 has a sample std of "
            f"{low:.1f}-{high:.1f} points across {n} seeds ({source}: the science profile, "
            f"200 problems x 16 samples); one seed against another differs by about "
            f"{low * math.sqrt(2):.1f}-{high * math.sqrt(2):.1f} points (std of a difference); "
            f"a pass@1 difference beyond about {2 * low * math.sqrt(2):.0f}-"
            f"{2 * high * math.sqrt(2):.0f} points (twice that) is unlikely from the seed alone."
        )
    ]


def base_lines(committed: Path, ours: Path, results: Path) -> list[str]:
    """What to look at first: the SFT base's pass@1, and the setting the base was made with."""
    old, new = base_pass1(committed), base_pass1(ours)
    if old is None or new is None:
        return [f"First look: the SFT base's pass@1 ({BASE_TABLE}, run=base) is absent."]
    where = f"({BASE_TABLE}, run=base, k=1)"
    if _same(old, new):
        return [
            (
                f"First look: the SFT base's pass@1 {where} matches ({_fmt(old)}): your base model "
                "is the committed one's, so differences start after it (RL runs, evaluation)."
            )
        ]
    lines = [
        (
            f"First look: the SFT base's pass@1 {where} differs: committed {_fmt(old)}, yours "
            f"{_fmt(new)}. No RL seed touches it: your base model was computed on another "
            "arithmetic path or install, and every run trained from it differs with it."
        ),
        (
            "  Check: numerics.setting 'portable' and aten_kernels 'AVX2' in the base's "
            "sft_summary.json (PACS_PORTABLE_NUMERICS=0, or a CPU without AVX2, takes another "
            "path), and a .venv from `make setup` (envs/cpu/requirements.lock, torch 2.13.0)."
        ),
    ]
    for summary in sorted(results.glob("models/*/base/sft_summary.json")):
        numerics = json.loads(summary.read_text()).get("numerics")
        lines.append(f"  {summary}: numerics {numerics if numerics else 'not recorded'}")
    return lines


def report_lines(diffs: list[TableDiff], committed: Path, ours: Path) -> list[str]:
    same = [d for d in diffs if d.identical]
    head = (
        f"Your tables ({ours}/tables) against the committed ones ({committed}/tables), "
        "times, dates, commit and fingerprint left out:"
    )
    if len(same) == len(diffs):
        return [head, f"identical: all {len(diffs)} tables."]
    lines = [head, f"{len(diffs) - len(same)} of {len(diffs)} tables differ:"]
    for diff in diffs:
        lines += table_lines(diff)
    if same:
        lines.append(f"  identical: {', '.join(d.name for d in same)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ours", required=True, help="this run's report (paper_figures/tiny)")
    parser.add_argument("--committed", required=True, help="the committed one (docs/tiny_report)")
    parser.add_argument("--results", default="results/tiny", help="this run's results folder")
    parser.add_argument(
        "--spread",
        default=str(SPREAD_SOURCE),
        help="eval_curve.csv.gz of a many-seed report (the seed's spread)",
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 when a table differs")
    args = parser.parse_args(argv)
    committed, ours = Path(args.committed), Path(args.ours)
    diffs = compare_reports(committed, ours)
    lines = report_lines(diffs, committed, ours)
    if not all(d.identical for d in diffs):
        lines += spread_lines(seed_spread(Path(args.spread)), Path(args.spread))
        lines += base_lines(committed, ours, Path(args.results))
    print("\n".join(lines))
    return 1 if args.strict and not all(d.identical for d in diffs) else 0


if __name__ == "__main__":
    raise SystemExit(main())
