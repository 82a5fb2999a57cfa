"""The stage that writes the paths task's hard held-out split
(docs/design.md#the-paths-task-and-its-hard-split).

``python -m pacs.data.synthetic.hard_split --splits-dir data/synthetic --out
data/eval/synthetic_hard.jsonl
--seed 1234 --n 88 --terms 3 --min-operand 36 --max-operand 50 --min-carries 3``

The rows are :func:`pacs.data.synthetic.paths.make_hard_split`'s, none with the problem text of a
row of the sft/train/test splits in ``--splits-dir``; written with a manifest
(:func:`pacs.data.files.write_with_manifest`, atomically).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from pacs.data.errors import DataError
from pacs.data.files import write_with_manifest
from pacs.data.synthetic.paths import HARD_BENCHMARK, HARD_KNOBS, make_hard_split
from pacs.io import read_jsonl, write_jsonl


def split_texts(splits_dir: str | Path) -> set[str]:
    """Problem texts of the sft/train/test splits in ``splits_dir`` (what the hard split avoids);
    a missing split file or a row without a ``problem`` is an error naming file and row."""
    texts: set[str] = set()
    for split in ("sft", "train", "test"):
        path = Path(splits_dir) / f"{split}.jsonl"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: split file not found (prepare the splits first)")
        for index, row in enumerate(read_jsonl(path)):
            if not isinstance(row.get("problem"), str):
                raise DataError(path, "must be a string", index, "problem")
            texts.add(row["problem"])
    return texts


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m pacs.data.synthetic.hard_split",
        description="Write the paths task's hard held-out split "
        "(docs/design.md#the-paths-task-and-its-hard-split).",
    )
    p.add_argument("--splits-dir", required=True, type=Path, help="folder of sft/train/test.jsonl")
    p.add_argument("--out", required=True, type=Path, help="the hard split's .jsonl")
    p.add_argument("--seed", required=True, type=int)
    p.add_argument("--n", required=True, type=int, help="problems")
    for key, value in HARD_KNOBS.items():
        p.add_argument(f"--{key.replace('_', '-')}", type=int, default=value)
    args = p.parse_args(argv)
    if args.n < 1:
        p.error(f"--n must be >= 1, got {args.n}")
    return args


def main(argv: Sequence[str] | None = None) -> Path:
    args = parse_args(argv)
    knobs = {k: getattr(args, k) for k in HARD_KNOBS}
    rows = make_hard_split(args.seed, args.n, split_texts(args.splits_dir), **knobs)
    out = write_with_manifest(
        args.out,
        rows,
        write_jsonl,
        benchmark=HARD_BENCHMARK,
        source="synthetic",
        extra={"split": "hard", "params": {"task": "paths", "seed": args.seed, **knobs}},
    )
    print(f"hard split: {len(rows)} problems ({knobs}) -> {out}")
    return out


if __name__ == "__main__":
    main()
