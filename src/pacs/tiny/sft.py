"""SFT warm-up: turn the freshly built tiny model into the "base model" RL starts from.

The target is a sampled pass@1 that leaves room for RL (≈ 0.3–0.5, docs/design.md#the-tiny-profile).
The loss is the next-token cross-entropy on the response tokens only (solution + ``<|im_end|>``);
the prompt is context. AdamW with a constant learning rate, gradient clipping at 1.0, batches drawn
from a seeded shuffle of the SFT split (reshuffled each epoch).

CLI::

    python -m pacs.tiny.sft --config configs/default.yaml --model tiny --init DIR \\
        --data sft.jsonl --eval-data test.jsonl --out DIR --threads 1

``--out`` is a model folder (``save_pretrained``) holding ``sft_summary.json``: the steps, the
final loss and the measured pass@1 at the config's eval settings (``eval: temperature/top_p``)
and at the RL sampling temperature 1.0. ``--eval-every K`` also records a pass@1 curve.
"""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import AutoTokenizer

from pacs import layout, numerics
from pacs.config import ConfigError, EvalSpec, Profile, load_profile
from pacs.fingerprint import code_commit, job_times
from pacs.io import read_jsonl
from pacs.progress import ConsoleBar, load_causal_lm
from pacs.tiny.build import save_pretrained
from pacs.tiny.common import encode_prompts, eval_pass_at_1, sft_batch, sft_loss

SUMMARY_NAME = layout.SFT_SUMMARY


def batch_indices(n_rows: int, batch_size: int, steps: int, seed: int) -> list[list[int]]:
    """Row indices of each step's batch: consecutive slices of per-epoch seeded permutations."""
    rng = random.Random(seed)
    order: list[int] = []
    batches = []
    for _ in range(steps):
        if len(order) < batch_size:
            perm = list(range(n_rows))
            rng.shuffle(perm)
            order.extend(perm)
        batches.append(order[:batch_size])
        del order[:batch_size]
    return batches


@dataclass(frozen=True)
class HeldOut:
    """The warm-up's held-out pass@1: the profile's ``eval:`` sampling on the first
    ``train.eval_problems`` problems, ``train.eval_samples`` samples each."""

    eval: EvalSpec
    n_problems: int
    n_samples: int

    @classmethod
    def from_profile(cls, profile: Profile) -> HeldOut:
        return cls(profile.eval, profile.train.eval_problems, profile.train.eval_samples)

    def pass_at_1(self, model, tokenizer, rows: list[dict], temperature: float) -> float:
        """At ``temperature``; top-p is the eval setting, except at T = 1.0 (plain sampling)."""
        return eval_pass_at_1(
            model,
            tokenizer,
            rows[: self.n_problems],
            self.n_samples,
            max_new_tokens=self.eval.max_new_tokens,
            temperature=temperature,
            top_p=self.eval.top_p if temperature != 1.0 else 1.0,
            seed=self.eval.seed,
        )

    def summary(self, model, tokenizer, rows: list[dict]) -> dict:
        """pass@1 at the eval temperature and at the RL sampling temperature 1.0."""
        return {
            "pass_at_1": self.pass_at_1(model, tokenizer, rows, self.eval.temperature),
            "pass_at_1_t1": self.pass_at_1(model, tokenizer, rows, 1.0),
        }


# torch's CPU kernels may round differently per thread count (measured on an avx512-fp16 Xeon with
# torch 2.13.0: 3 SFT steps on 1 and on 2 threads give different weights; an older machine gave
# equal ones). The SFT rule may get 1 to 8 threads (Snakemake lowers them to --cores), so the
# optimiser's arithmetic always uses this many: `make reproduce` (--cores 2) is unchanged.
SFT_THREADS = 2


def run_sft(
    model,
    tokenizer,
    rows: list[dict],
    steps: int,
    batch_size: int,
    lr: float,
    seed: int,
    on_step=None,
) -> list[float]:
    """Train in place for ``steps`` steps; ``on_step(step)`` runs after each step. Returns losses.

    The arithmetic runs on :data:`SFT_THREADS` threads whatever the caller set (restored after),
    so the base model does not depend on the cores a job was given (see :data:`SFT_THREADS`)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(SFT_THREADS)
    try:
        return _train_steps(model, tokenizer, rows, steps, batch_size, lr, seed, on_step)
    finally:
        torch.set_num_threads(previous)


def _train_steps(model, tokenizer, rows, steps, batch_size, lr, seed, on_step) -> list[float]:
    torch.manual_seed(seed)
    prompt_ids = encode_prompts(tokenizer, rows)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    losses = []
    batches = batch_indices(len(rows), batch_size, steps, seed)
    bar = ConsoleBar(batches, desc="SFT warm-up", unit="step")
    for step, idx in enumerate(bar, start=1):
        ids, mask, loss_mask = sft_batch(
            tokenizer, [prompt_ids[i] for i in idx], [rows[i]["solution"] for i in idx]
        )
        loss = sft_loss(model, ids, mask, loss_mask)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
        bar.set_postfix(loss=f"{losses[-1]:.3f}")
        if on_step is not None:
            on_step(step)
    return losses


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--model", default="tiny", help="key under models: in the config")
    parser.add_argument("--init", required=True, help="model folder written by pacs.tiny.build")
    parser.add_argument("--data", required=True, help="sft.jsonl (rows with prompt and solution)")
    parser.add_argument("--eval-data", required=True, help="test.jsonl for the held-out pass@1")
    parser.add_argument("--out", required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=None, help="override models.<model>.sft.steps")
    parser.add_argument(
        "--eval-every", type=int, default=0, help="also record a pass@1 curve (0: off)"
    )
    parser.add_argument("--eval-start", type=int, default=0, help="first step of that curve")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    job_started = time.time()  # the job's own start, for the runs table's wall time
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    try:
        numerics.check_in_effect()  # the summary records it (job_times), RL checks it
        profile = load_profile(args.config)
    except (ConfigError, RuntimeError) as err:
        raise SystemExit(f"error: {err}") from err
    sft_cfg = profile.models[args.model].sft
    steps = args.steps if args.steps is not None else sft_cfg.steps
    held_out = HeldOut.from_profile(profile)
    tokenizer = AutoTokenizer.from_pretrained(args.init)
    model = load_causal_lm(args.init, dtype=torch.float32)
    rows, eval_rows = read_jsonl(args.data), read_jsonl(args.eval_data)
    curve = []

    def record(step: int) -> None:
        if args.eval_every and step % args.eval_every == 0 and step >= args.eval_start:
            curve.append({"step": step, **held_out.summary(model, tokenizer, eval_rows)})
            ConsoleBar.write(str(curve[-1]))

    start = time.time()
    losses = run_sft(
        model, tokenizer, rows, steps, sft_cfg.batch_size, sft_cfg.lr, sft_cfg.seed, record
    )
    summary = {
        "steps": steps,
        "batch_size": sft_cfg.batch_size,
        "lr": sft_cfg.lr,
        "final_loss": sum(losses[-10:]) / max(len(losses[-10:]), 1),
        "train_seconds": round(time.time() - start, 2),
        "commit": code_commit(),  # the code that trained it (the report's runs table)
        "eval": {
            "n_problems": min(held_out.n_problems, len(eval_rows)),
            "n_samples": held_out.n_samples,
            "temperature": profile.eval.temperature,
            "top_p": profile.eval.top_p,
        },
        **held_out.summary(model, tokenizer, eval_rows),
        "curve": curve,
        **job_times(job_started),
    }
    save_pretrained(model, tokenizer, args.out, extra_json={SUMMARY_NAME: summary})
    print(
        f"sft: {steps} steps, loss {summary['final_loss']:.3f}, pass@1 {summary['pass_at_1']:.3f} "
        f"(T={profile.eval.temperature}), {summary['pass_at_1_t1']:.3f} (T=1.0) -> {Path(args.out)}"
    )


if __name__ == "__main__":
    main()
