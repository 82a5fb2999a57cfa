"""``python -m pacs.data``: prepare training data, benchmarks and the synthetic task.

Examples::

    python -m pacs.data prepare-train --source hf --out results/paper/data/train.parquet \\
        --tokenizer Qwen/Qwen3-8B --max-prompt-length 1024
    python -m pacs.data prepare-train --source local --path deepscaler.json --out train.parquet
    python -m pacs.data prepare-eval --benchmark aime24 --source hf --out data/eval/aime24.jsonl
    python -m pacs.data prepare-eval --benchmark gpqa --source local --path gpqa_diamond.csv \\
        --out data/eval/gpqa.jsonl
    python -m pacs.data prepare-eval --benchmark livecodebench --source local --path lcb.jsonl \\
        --all-dates --out data/eval/livecodebench.jsonl
    python -m pacs.data prepare-synthetic --out-dir data/synthetic --seed 1234 \\
        --n-sft 20000 --n-train 4000 --n-test 200

Exit status: 0 on success, 2 on bad data or arguments (the message names file, row and field).
"""

from __future__ import annotations

import argparse
import logging
import sys
from datetime import date

from pacs.data.benchmarks import ALL_BENCHMARKS
from pacs.data.errors import DataError
from pacs.data.livecodebench import PAPER_WINDOW

log = logging.getLogger("pacs.data")


def _add_source(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--source", choices=("hf", "local"), required=True, help="HF download or a local file"
    )
    p.add_argument("--path", help="local file (.jsonl/.json/.parquet/.csv) for --source local")
    p.add_argument("--revision", help="HF commit to download instead of the pinned one")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pacs.data", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("prepare-train", help="DeepScaleR -> verl parquet")
    _add_source(p)
    p.add_argument("--out", required=True, help="output .parquet")
    p.add_argument(
        "--tokenizer", help="tokenizer dir or hub id; drops prompts over --max-prompt-length"
    )
    p.add_argument("--max-prompt-length", type=int, default=1024, help="tokens (App. C: 1024)")
    p.add_argument(
        "--system-prompt", help="a system turn before every problem (config prompt.system_prompt)"
    )

    p = sub.add_parser("prepare-eval", help="one benchmark -> prepared JSONL + manifest")
    p.add_argument("--benchmark", choices=ALL_BENCHMARKS, required=True)
    _add_source(p)
    p.add_argument("--out", required=True, help="output .jsonl")
    p.add_argument(
        "--start-date",
        type=date.fromisoformat,
        default=PAPER_WINDOW[0],
        help=f"livecodebench: first contest_date kept (default {PAPER_WINDOW[0]})",
    )
    p.add_argument(
        "--end-date",
        type=date.fromisoformat,
        default=PAPER_WINDOW[1],
        help=f"livecodebench: contest_date kept if before this (default {PAPER_WINDOW[1]})",
    )
    p.add_argument(
        "--all-dates", action="store_true", help="livecodebench: keep every contest_date"
    )

    p = sub.add_parser("prepare-synthetic", help="synthetic task splits (tiny profile)")
    p.add_argument("--out-dir", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--n-sft", type=int, required=True)
    p.add_argument("--n-train", type=int, required=True)
    p.add_argument("--n-test", type=int, required=True)
    p.add_argument("--min-steps", type=int, default=2)
    p.add_argument("--max-steps", type=int, default=3)
    p.add_argument("--max-operand", type=int, default=50)
    p.add_argument(
        "--task",
        choices=("arithmetic", "paths"),
        default="arithmetic",
        help="arithmetic or paths (pacs.data.synthetic)",
    )
    p.add_argument("--min-terms", type=int, default=3, help="paths: fewest quantities")
    p.add_argument("--max-terms", type=int, default=3, help="paths: most quantities")
    return parser


def _run(args: argparse.Namespace) -> None:
    from pacs.data import prepare

    if args.command == "prepare-train":
        prepare.prepare_train(
            args.source,
            args.out,
            args.path,
            args.revision,
            args.tokenizer,
            args.max_prompt_length,
            args.system_prompt,
        )
    elif args.command == "prepare-eval":
        window = None if args.all_dates else (args.start_date, args.end_date)
        prepare.prepare_eval(
            args.benchmark, args.source, args.out, args.path, args.revision, window
        )
    else:
        from pacs.data.synthetic import task_module, write_task_splits

        knobs = {k: getattr(args, k) for k in task_module(args.task).DEFAULT_KNOBS}
        sizes = {"n_sft": args.n_sft, "n_train": args.n_train, "n_test": args.n_test}
        paths = write_task_splits(args.out_dir, args.task, seed=args.seed, **sizes, **knobs)
        log.info("wrote %s", ", ".join(str(p) for p in paths.values()))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        _run(args)
    except (DataError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
