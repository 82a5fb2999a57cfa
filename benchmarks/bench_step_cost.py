"""Per-step cost of PACS, GRPO and PPO on the tiny engine, and the speed-up of the current engine
over the one before (06a7e00), measured side by side in one process.

For each method two runs start from the same base model and seed: ``before`` samples with HF
``generate`` (the sampler of 06a7e00, kept below) and always runs the reference forward pass;
``after`` is the current engine. Both draw the same tokens and compute the same log-probs, so
their metrics must agree step for step, which the benchmark checks (a speed-up that changed the
method would stop it). Steps are interleaved (PACS before, PACS after, GRPO before, ...) so load
on a shared machine hits all runs alike. Reported: the median of each timing component over the
measured steps (after ``--warmup`` steps per run), the process CPU seconds per step (a figure
that other processes' load inflates far less than wall time), the ratios before / after, and
PACS / GRPO (the paper's claim: PACS costs no more than GRPO; target ≤ 1.05) and PPO / PACS.
Then the in-loop held-out evaluation (``eval_pass_at_1``: train.eval_problems × eval_samples),
before and after, interleaved the same way.

    python benchmarks/bench_step_cost.py --config configs/default.yaml --base
    results/tiny/models/tiny/base \\
        --train-data results/tiny/data/synthetic/train.jsonl --eval-data
        results/tiny/data/synthetic/test.jsonl \\
        --steps 10 --threads 1
"""

from __future__ import annotations

import argparse
import statistics
import time
from contextlib import contextmanager
from pathlib import Path

import torch
from tqdm import tqdm
from transformers import AutoModelForCausalLM, AutoTokenizer

from pacs.config import Profile, load_profile
from pacs.data.files import write_json
from pacs.io import read_jsonl
from pacs.tiny import collect, common
from pacs.tiny import train as tt
from pacs.tiny.common import encode_prompts
from pacs.tiny.record import TIME_KEYS

METHODS = ("pacs", "grpo", "ppo")
ARMS = ("before", "after")
KEYS = (*TIME_KEYS, "cpu_total", "response_len")


@torch.no_grad()
def generate_sample(model, tokenizer, prompt_ids, n, max_new_tokens, temperature=1.0, top_p=1.0):
    """The sampler of 06a7e00: HF ``generate`` on every prompt repeated ``n`` times."""
    ids, mask = common.left_pad(
        [list(p) for p in prompt_ids for _ in range(n)], tokenizer.pad_token_id
    )
    was_training = model.training
    model.eval()
    out = model.generate(
        input_ids=ids,
        attention_mask=mask,
        do_sample=True,
        temperature=temperature,
        top_k=0,
        top_p=top_p,
        max_new_tokens=max_new_tokens,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model.train(was_training)
    response = out[:, ids.shape[1] :]
    response_mask = common.response_mask_from_ids(response, tokenizer.eos_token_id)
    texts = [
        tokenizer.decode(row[m.bool()].tolist(), skip_special_tokens=True)
        for row, m in zip(response, response_mask)
    ]
    return common.Rollout(
        torch.cat([ids, response], 1), torch.cat([mask, response_mask], 1), response_mask, texts
    )


@contextmanager
def engine(arm: str):
    """``before``: the 06a7e00 sampler and no skipped reference pass; ``after``: as the code is."""
    if arm == "after":
        yield
        return
    saved = (common.sample, collect.sample, tt.reference_is_policy)
    common.sample = collect.sample = generate_sample
    tt.reference_is_policy = lambda state, settings: False
    try:
        yield
    finally:
        common.sample, collect.sample, tt.reference_is_policy = saved


def timed_step(state, settings, tokenizer, rows, prompt_ids) -> dict:
    cpu = time.process_time()
    row, _ = tt.train_step(state, settings, tokenizer, rows, prompt_ids)
    return {**row, "cpu_total": time.process_time() - cpu}


def same_method(a: dict, b: dict) -> bool:
    """Two metrics rows agree on everything but timings."""
    return {k: v for k, v in a.items() if "time" not in k and k != "cpu_total"} == {
        k: v for k, v in b.items() if "time" not in k and k != "cpu_total"
    }


def measure_steps(
    profile: Profile, base: str, rows: list[dict], steps: int, warmup: int, seed: int
):
    """Median step timings per (method, arm) over ``steps`` interleaved steps after ``warmup``."""
    tokenizer = AutoTokenizer.from_pretrained(base)
    prompt_ids = encode_prompts(tokenizer, rows)
    runs, rng = {}, {}
    for method in METHODS:
        settings = tt.Settings.from_profile(profile, method)
        for arm in ARMS:
            runs[method, arm] = (settings, tt.init_state(settings, base, len(rows), seed))
            rng[method, arm] = torch.get_rng_state()  # seeded by init_state
    timings: dict[tuple[str, str], list[dict]] = {key: [] for key in runs}
    for i in tqdm(range(warmup + steps), desc="interleaved steps", unit="round"):
        for method in METHODS:
            for arm in ARMS:
                settings, state = runs[method, arm]
                # Each run draws from its own RNG stream, as a separate run would.
                with engine(arm), torch.random.fork_rng(devices=[]):
                    torch.set_rng_state(rng[method, arm])
                    row = timed_step(state, settings, tokenizer, rows, prompt_ids)
                    rng[method, arm] = torch.get_rng_state()
                timings[method, arm].append(row)
            before, after = timings[method, "before"][-1], timings[method, "after"][-1]
            if not same_method(before, after):
                raise SystemExit(
                    f"{method} step {i + 1}: before and after differ: {before} vs {after}"
                )
    return {
        key: {k: statistics.median(r[k] for r in rs[warmup:]) for k in KEYS}
        for key, rs in timings.items()
    }


def measure_eval(profile: Profile, base: str, rows: list[dict], repeats: int) -> dict[str, dict]:
    """Median wall and CPU seconds of one in-loop evaluation per arm (interleaved)."""
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    t, ev = profile.train, profile.eval
    args = (t.eval_samples, ev.max_new_tokens, ev.temperature, ev.top_p, 0)
    out: dict[str, dict[str, list]] = {
        arm: {"wall": [], "cpu": [], "pass_at_1": []} for arm in ARMS
    }
    for _ in tqdm(range(repeats), desc="interleaved evaluations", unit="round"):
        for arm in ARMS:
            with engine(arm):
                wall, cpu = time.perf_counter(), time.process_time()
                p1 = common.eval_pass_at_1(model, tokenizer, rows[: t.eval_problems], *args)
                out[arm]["wall"].append(time.perf_counter() - wall)
                out[arm]["cpu"].append(time.process_time() - cpu)
                out[arm]["pass_at_1"].append(p1)
    if out["before"]["pass_at_1"] != out["after"]["pass_at_1"]:
        raise SystemExit(
            f"in-loop pass@1 differs: {out['before']['pass_at_1']} vs {out['after']['pass_at_1']}"
        )
    return {arm: {k: statistics.median(v) for k, v in d.items()} for arm, d in out.items()}


def ratios(med: dict, evals: dict) -> dict[str, float]:
    out: dict[str, float] = {}
    for method in METHODS:
        b, a = med[method, "before"], med[method, "after"]
        for key in ("time_total", "cpu_total", "time_generate", "time_reference", "time_update"):
            out[f"{method}_{key}_before_over_after"] = b[key] / a[key]
    after = {m: med[m, "after"] for m in METHODS}
    out["pacs_over_grpo"] = after["pacs"]["time_total"] / after["grpo"]["time_total"]
    out["ppo_over_pacs"] = after["ppo"]["time_total"] / after["pacs"]["time_total"]
    out["eval_wall_before_over_after"] = evals["before"]["wall"] / evals["after"]["wall"]
    out["eval_cpu_before_over_after"] = evals["before"]["cpu"] / evals["after"]["cpu"]
    return out


def report(med: dict, evals: dict, ratio: dict[str, float], out: Path, meta: dict) -> None:
    print(f"{'method':6} {'arm':6} " + " ".join(f"{k:>14}" for k in KEYS))
    for (m, arm), t in med.items():
        print(f"{m:6} {arm:6} " + " ".join(f"{t[k]:14.3f}" for k in KEYS))
    for arm, e in evals.items():
        print(
            f"in-loop eval {arm:6}: {e['wall']:.3f} s wall, {e['cpu']:.3f} s CPU, pass@1 "
            f"{e['pass_at_1']:.3f}"
        )
    for name, value in ratio.items():
        print(f"{name}: {value:.3f}")
    write_json(
        out,
        {
            "median_seconds": {f"{m}/{arm}": t for (m, arm), t in med.items()},
            "in_loop_eval_seconds": evals,
            "ratios": ratio,
            **meta,
        },
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="configs/default.yaml")
    parser.add_argument("--base", required=True, help="base model folder (SFT output)")
    parser.add_argument("--train-data", required=True)
    parser.add_argument("--eval-data", required=True, help="held-out rows for the in-loop eval")
    parser.add_argument("--steps", type=int, default=10, help="measured steps per run")
    parser.add_argument("--warmup", type=int, default=2, help="unmeasured steps per run first")
    parser.add_argument("--eval-repeats", type=int, default=3, help="in-loop evaluations per arm")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="benchmarks/out/step_cost.json")
    args = parser.parse_args(argv)

    torch.set_num_threads(args.threads)
    profile = load_profile(args.config)
    med = measure_steps(
        profile, args.base, read_jsonl(args.train_data), args.steps, args.warmup, args.seed
    )
    evals = measure_eval(profile, args.base, read_jsonl(args.eval_data), args.eval_repeats)
    meta = {k: getattr(args, k) for k in ("steps", "warmup", "eval_repeats", "threads", "config")}
    report(med, evals, ratios(med, evals), Path(args.out), meta)


if __name__ == "__main__":
    main()
