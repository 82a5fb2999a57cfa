"""Per-step cost of PACS, GRPO and PPO on the tiny engine, measured side by side in one process.

The methods' steps are interleaved (PACS, GRPO, PPO, PACS, ...) so that load on a shared machine
hits them alike; each starts from the same base model and seed. Reported: the median of each
timing component over the measured steps (after ``--warmup`` steps per method) and the ratios
PACS / GRPO (the paper's claim: PACS costs no more than GRPO; target ≤ 1.05) and PPO / PACS.

    python benchmarks/bench_step_cost.py --config configs/default.yaml --base results/tiny/models/tiny/base \\
        --train-data results/tiny/data/synthetic/train.jsonl --steps 10 --threads 1
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import torch
from tqdm import tqdm
from transformers import AutoTokenizer

from pacs.config import Profile, load_profile
from pacs.data.files import write_json
from pacs.tiny import train as tt
from pacs.tiny.common import encode_prompts, read_jsonl

METHODS = ("pacs", "grpo", "ppo")


def measure(
    profile: Profile, base: str, rows: list[dict], steps: int, warmup: int, seed: int
) -> dict[str, dict]:
    """Median step timings per method over ``steps`` interleaved steps after ``warmup``."""
    tokenizer = AutoTokenizer.from_pretrained(base)
    prompt_ids = encode_prompts(tokenizer, rows)
    runs = {}
    for method in METHODS:
        settings = tt.Settings.from_profile(profile, method)
        runs[method] = (settings, tt.init_state(settings, base, len(rows), seed))
    timings: dict[str, list[dict]] = {m: [] for m in METHODS}
    for i in tqdm(range(warmup + steps), desc="interleaved steps", unit="round"):
        for method, (settings, state) in runs.items():
            # Each method draws from its own RNG stream, as a separate run would.
            row, _ = tt.train_step(state, settings, tokenizer, rows, prompt_ids)
            if i >= warmup:
                timings[method].append(row)
    return {
        m: {k: statistics.median(r[k] for r in rs) for k in (*tt.TIME_KEYS, "response_len")}
        for m, rs in timings.items()
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="configs/default.yaml")
    parser.add_argument("--base", required=True, help="base model folder (SFT output)")
    parser.add_argument("--train-data", required=True)
    parser.add_argument("--steps", type=int, default=10, help="measured steps per method")
    parser.add_argument("--warmup", type=int, default=2, help="unmeasured steps per method first")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="benchmarks/out/step_cost.json")
    args = parser.parse_args(argv)

    torch.set_num_threads(args.threads)
    profile = load_profile(args.config)
    med = measure(profile, args.base, read_jsonl(args.train_data), args.steps, args.warmup, args.seed)
    ratios = {
        "pacs_over_grpo": med["pacs"]["time_total"] / med["grpo"]["time_total"],
        "ppo_over_pacs": med["ppo"]["time_total"] / med["pacs"]["time_total"],
        "pacs_over_grpo_update_plus_reference": (
            med["pacs"]["time_update"] + med["pacs"]["time_reference"]
        )
        / (med["grpo"]["time_update"] + med["grpo"]["time_reference"]),
    }
    print(f"{'method':6} " + " ".join(f"{k:>15}" for k in (*tt.TIME_KEYS, "response_len")))
    for m, t in med.items():
        print(f"{m:6} " + " ".join(f"{t[k]:15.3f}" for k in (*tt.TIME_KEYS, "response_len")))
    for name, value in ratios.items():
        print(f"{name}: {value:.3f}")
    write_json(
        Path(args.out),
        {
            "median_seconds": med,
            "ratios": ratios,
            "steps": args.steps,
            "warmup": args.warmup,
            "threads": args.threads,
            "config": args.config,
        },
    )


if __name__ == "__main__":
    main()
