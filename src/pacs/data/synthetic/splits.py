"""Splits of a synthetic task, filled and written the same way for every task.

Splits are deterministic in ``seed`` and disjoint by problem text. Each split draws from its own
random stream (seeded by the task's family name, ``seed`` and the split name) and the splits are
filled in the order test, train, sft, skipping any text already taken. So the test set depends
only on the seed, the knobs and ``n_test``: growing the SFT split never changes the held-out
problems. Rows are renumbered ``synthetic/<split>/<i>``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pacs.data.files import write_with_manifest
from pacs.io import write_jsonl

SPLITS = ("sft", "train", "test")
# Filling order: the held-out split first, so it never depends on the sizes of the others.
_FILL_ORDER = ("test", "train", "sft")


def _fill_split(
    make: Callable[..., dict[str, Any]],
    rng_key: str,
    split: str,
    n: int,
    seen: set[str],
    knobs: dict,
) -> list[dict[str, Any]]:
    rng = random.Random(rng_key)
    rows: list[dict[str, Any]] = []
    max_attempts = 50 * n + 1000
    for _ in range(max_attempts):
        if len(rows) == n:
            break
        row = make(rng, **knobs)
        if row["problem"] in seen:
            continue
        seen.add(row["problem"])
        row["problem_id"] = f"synthetic/{split}/{len(rows)}"
        rows.append(row)
    if len(rows) < n:
        raise ValueError(
            f"{rng_key.split(':')[0]} split {split!r}: only {len(rows)} of {n} distinct problems "
            f"after {max_attempts} draws with {knobs}; raise max_operand, or ask for fewer rows"
        )
    return rows


def fill_splits(
    make: Callable[..., dict[str, Any]], family: str, seed: int, sizes: dict[str, int], knobs: dict
) -> dict[str, list[dict[str, Any]]]:
    """Splits ``sizes`` (split -> rows) of problems ``make(rng, **knobs)``, disjoint by problem
    text, deterministic in ``seed``; ``family`` keys each split's RNG (``family:seed:split``).
    The test split is drawn first, so it does not depend on the sizes of the others."""
    for split, n in sizes.items():
        if n < 0:
            raise ValueError(f"n_{split} must be >= 0, got {n}")
    seen: set[str] = set()
    filled = {
        split: _fill_split(make, f"{family}:{seed}:{split}", split, sizes[split], seen, knobs)
        for split in _FILL_ORDER
    }
    return {split: filled[split] for split in SPLITS}


def write_splits(
    out_dir: str | Path, splits: dict[str, list[dict[str, Any]]], params: dict[str, Any]
) -> dict[str, Path]:
    """Write ``<split>.jsonl`` plus a ``<split>.manifest.json`` (its ``params`` recorded) for
    each split; return the data files' paths."""
    return {
        split: write_with_manifest(
            Path(out_dir) / f"{split}.jsonl",
            rows,
            write_jsonl,
            benchmark="synthetic",
            source="synthetic",
            extra={"split": split, "params": params},
        )
        for split, rows in splits.items()
    }
