"""PACS with the GRPO score: which mini-batch makes its pre-clip gradient norm explode, and what
clipping that gradient changes (docs/design.md#the-grpo-scores-gradient).

With ``ref: rollout`` the reference is the rollout policy, so on each step's first mini-batch every
reward proxy x = β·Σ_t log(π/π_ref) is 0 and the GRPO score (x − mean)/(std + 1e-6) divides by
1e-6. This runs PACS on one profile (the science profile's paths task) in four arms, GRPO and RLOO
score each with ``train.grad_clip`` 1.0 and with no clipping (null, as the official actor), from
one base model and the same seeds, and prints:

1. per arm and mini-batch index: the pre-clip gradient norm (median and max over steps and
   seeds), the within-group std of x (unbiased, the GRPO score's denominator; mean over groups),
   the std of ψ, and what AdamW then did: the norm of the parameter update and its cosine with
   the mini-batch's own descent direction −g and with that of the step's first mini-batch;
2. the held-out pass@1 before and after training per seed, and each arm's mean.

x and the update are read by wrapping ``core_algos.pacs_loss`` and ``train.clip_and_step`` in
this process: the method itself is unchanged (the wrappers only copy tensors). Metrics rows,
eval curves and the table's numbers are written under ``--out`` (``psi_grad_norm.json``).

    OMP_NUM_THREADS=1 python benchmarks/psi_grad_norm.py --config configs/science.yaml \\
        --base BASE --train-data DATA/train.jsonl --eval-data DATA/test.jsonl --out OUT \\
        --seeds 0 1 2 --steps 32 --eval-problems 100 --eval-samples 8
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import shutil
import statistics
from collections import defaultdict
from pathlib import Path

import torch

from pacs import core_algos
from pacs.config import load_config, parse_profile
from pacs.io import read_jsonl
from pacs.tiny import train as tt

# arm -> (score, train.grad_clip); None = no clipping (docs/design.md#gradient-clipping)
ARMS = {
    "grpo_clip1": ("grpo", 1.0),
    "grpo_noclip": ("grpo", None),
    "rloo_clip1": ("rloo", 1.0),
    "rloo_noclip": ("rloo", None),
}


class Probe:
    """Per optimizer update (one per mini-batch, in order): the within-group std of x, and the
    gradient and parameter update of the policy."""

    def __init__(self, group_size: int):
        self.group_size = group_size
        self.x_std: list[float] = []
        self.updates: list[dict] = []
        self.first_grad: torch.Tensor | None = None

    def pacs_loss(self, original):
        def wrapped(logp, ref_logp, mask, labels, group_size, *, beta=1.0, **kwargs):
            with torch.no_grad():
                x = beta * ((logp - ref_logp) * mask).sum(-1)
                groups = x.reshape(-1, self.group_size)
                self.x_std.append(groups.std(dim=1, unbiased=True).mean().item())
            return original(logp, ref_logp, mask, labels, group_size, beta=beta, **kwargs)

        return wrapped

    def clip_and_step(self, original, mini_batches: int):
        def wrapped(params, optimizer, grad_clip):
            params = list(params)
            grad = flat([p.grad if p.grad is not None else torch.zeros_like(p) for p in params])
            before = flat([p.detach() for p in params])
            norm = original(params, optimizer, grad_clip)
            delta = flat([p.detach() for p in params]) - before
            if len(self.updates) % mini_batches == 0:
                self.first_grad = grad
            self.updates.append(
                {
                    "update_norm": delta.norm().item(),
                    "cos_own": cosine(delta, -grad),
                    "cos_first": cosine(delta, -self.first_grad),
                }
            )
            return norm

        return wrapped


def flat(tensors) -> torch.Tensor:
    return torch.cat([t.reshape(-1).double() for t in tensors]).clone()


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    denom = a.norm() * b.norm()
    return float((a @ b) / denom) if denom > 0 else float("nan")


def settings_for(cfg: dict, arm: str, args) -> tt.Settings:
    score, clip = ARMS[arm]
    cfg = copy.deepcopy(cfg)
    cfg["train"].update(
        grad_clip=clip,
        eval_every=args.steps,  # held-out pass@1 at step 0 and at the end only
        eval_problems=args.eval_problems,
        eval_samples=args.eval_samples,
        save_every=args.steps,
    )
    cfg["runs"] = {arm: {"method": "pacs", "score": score, "ablation": "score", "label": arm}}
    return tt.Settings.from_profile(parse_profile(cfg), arm, args.steps)


def run_arm(cfg: dict, arm: str, seed: int, args, rows, eval_rows) -> list[dict]:
    """Train one arm and seed from scratch; its metrics rows joined with the probe's values."""
    settings = settings_for(cfg, arm, args)
    probe = Probe(settings.group_size)
    out = Path(args.out) / arm / f"seed{seed}"
    shutil.rmtree(out, ignore_errors=True)  # a fresh run, never a resumed one
    saved = core_algos.pacs_loss, tt.clip_and_step
    core_algos.pacs_loss = probe.pacs_loss(saved[0])
    tt.clip_and_step = probe.clip_and_step(saved[1], settings.mini_batches)
    try:
        state = tt.train(settings, seed, args.base, rows, eval_rows, out, backends=())
    finally:
        core_algos.pacs_loss, tt.clip_and_step = saved
    records = []
    for k, (x_std, update) in enumerate(zip(probe.x_std, probe.updates, strict=True)):
        step, mb = k // settings.mini_batches + 1, k % settings.mini_batches
        row = state.history[step - 1]
        records.append(
            {
                "arm": arm,
                "seed": seed,
                "step": step,
                "mb": mb,
                "grad_norm": row[f"grad_norm/mb{mb}"],
                "psi_std": row[f"psi_std/mb{mb}"],
                "x_std": x_std,
                **update,
            }
        )
    curve = state.eval_curve
    records.append(
        {
            "arm": arm,
            "seed": seed,
            "pass_before": curve[0]["pass_at_1"],
            "pass_after": curve[-1]["pass_at_1"],
        }
    )
    return records


def per_minibatch_table(records: list[dict]) -> list[str]:
    cells = defaultdict(list)
    for r in records:
        if "mb" in r:
            cells[r["arm"], r["mb"]].append(r)
    lines = [
        (
            "| arm | mb | grad norm median | grad norm max | std x (mean) | std ψ (mean) "
            "| update norm median | cos(update, −g own) | cos(update, −g mb0) |"
        ),
        "|:---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (arm, mb), rs in cells.items():
        norms = [r["grad_norm"] for r in rs]
        lines.append(
            f"| {arm} | {mb} | {statistics.median(norms):.3g} | {max(norms):.3g} "
            f"| {statistics.fmean(r['x_std'] for r in rs):.3g} "
            f"| {statistics.fmean(r['psi_std'] for r in rs):.3g} "
            f"| {statistics.median(r['update_norm'] for r in rs):.3g} "
            f"| {nanmean(r['cos_own'] for r in rs):.3f} | "
            f"{nanmean(r['cos_first'] for r in rs):.3f} |"
        )
    return lines


def nanmean(values) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return statistics.fmean(kept) if kept else float("nan")


def pass_table(records: list[dict], seeds: list[int]) -> list[str]:
    finals = {(r["arm"], r["seed"]): r for r in records if "pass_after" in r}
    head = " | ".join(f"seed {s}" for s in seeds)
    lines = [f"| arm | {head} | mean |", "|:---|" + "---:|" * (len(seeds) + 1)]
    for arm in dict.fromkeys(a for a, _ in finals):
        after = [finals[arm, s]["pass_after"] for s in seeds if (arm, s) in finals]
        cells = " | ".join(
            f"{finals[arm, s]['pass_after']:.3f}" for s in seeds if (arm, s) in finals
        )
        lines.append(f"| {arm} | {cells} | {statistics.fmean(after):.3f} |")
    before = {s: finals[a, s]["pass_before"] for a, s in finals}
    lines.append(f"| base (step 0) | {' | '.join(f'{before[s]:.3f}' for s in seeds)} | |")
    return lines


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True)
    p.add_argument("--base", required=True, help="SFT base model folder")
    p.add_argument("--train-data", required=True)
    p.add_argument("--eval-data", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--steps", type=int, default=32)
    p.add_argument("--eval-problems", type=int, default=100)
    p.add_argument("--eval-samples", type=int, default=8)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    cfg = load_config(args.config)
    rows, eval_rows = read_jsonl(args.train_data), read_jsonl(args.eval_data)
    records = []
    for seed in args.seeds:  # seed-major: a cut-short run still has every arm of its seeds
        for arm in args.arms:
            records += run_arm(cfg, arm, seed, args, rows, eval_rows)
            print(f"done: {arm} seed {seed}", flush=True)
    lines = [
        (
            f"{args.steps} steps, seeds {args.seeds}, held-out pass@1 on {args.eval_problems} "
            f"problems x {args.eval_samples} samples"
        ),
        "",
        *per_minibatch_table(records),
        "",
        *pass_table(records, args.seeds),
    ]
    print("\n".join(lines))
    Path(args.out, "psi_grad_norm.json").write_text(json.dumps(records, indent=1) + "\n")


if __name__ == "__main__":
    main()
