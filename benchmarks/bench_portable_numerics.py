"""What portable numerics (pacs.numerics) change and cost: a 30-step SFT slice of the default tiny
model under each candidate setting, in its own process, side by side on one machine.

Each variant runs the same slice (the default profile's model built from seed 0 on its synthetic
data, ``run_sft`` at the profile's batch size and lr, on ``SFT_THREADS`` threads) in a child
process whose environment holds the variant's variables (they must be there before torch is
imported). Printed per variant: the ATen kernel set the child used, the sha256 of its weights
(equal hashes: the same arithmetic path), the last loss, and its CPU seconds (the child's user +
system time, the median over ``--repeats``; variants interleaved so load hits all alike).

    .venv/bin/python benchmarks/bench_portable_numerics.py --steps 30 --repeats 3
    .venv/bin/python benchmarks/bench_portable_numerics.py --stage rl --steps 3 \\
        --variants portable,"portable but mkl COMPATIBLE"
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pacs import numerics

REPO = Path(__file__).resolve().parents[1]
VARIANTS: dict[str, dict[str, str]] = {
    "native": {},
    "aten avx2": {"ATEN_CPU_CAPABILITY": "avx2"},
    "aten default": {"ATEN_CPU_CAPABILITY": "default"},
    "mkl_cbwr AVX2": {"MKL_CBWR": "AVX2"},
    "mkl_cbwr COMPATIBLE": {"MKL_CBWR": "COMPATIBLE"},
    "onednn AVX2": {"ONEDNN_MAX_CPU_ISA": "AVX2"},
    "portable": dict(numerics.PORTABLE_ENV),
    "portable but aten default": {**numerics.PORTABLE_ENV, "ATEN_CPU_CAPABILITY": "default"},
    "portable but mkl COMPATIBLE": {**numerics.PORTABLE_ENV, "MKL_CBWR": "COMPATIBLE"},
}
CHILD = """
import hashlib, json, sys, time, torch
from transformers import AutoTokenizer
from pacs.io import read_jsonl
from pacs.progress import load_causal_lm
from pacs.tiny.sft import run_sft
init, data = sys.argv[1], sys.argv[2]
steps, bs, lr = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
tok = AutoTokenizer.from_pretrained(init)
model = load_causal_lm(init, dtype=torch.float32)
rows, t0 = read_jsonl(data), time.process_time()
losses = run_sft(model, tok, rows, steps, bs, lr, 0)
loop_s = time.process_time() - t0
h = hashlib.sha256()
for k, v in sorted(model.state_dict().items()):
    h.update(k.encode()); h.update(v.contiguous().numpy().tobytes())
print(json.dumps({"cap": torch.backends.cpu.get_cpu_capability(), "sha": h.hexdigest(),
                  "loss": losses[-1], "loop_s": loop_s}))
"""
# --stage rl: GRPO steps of the default profile from the same init (threads_per_job: 1 thread;
# the held-out evaluation at step 0 cut to 8 problems x 2 samples).
CHILD_RL = """
import copy, hashlib, json, shutil, sys, tempfile, time, torch
from pathlib import Path
from pacs import numerics
from pacs.config import load_config, parse_profile
from pacs.io import read_jsonl
from pacs.tiny.state import Settings
from pacs.tiny.train import train
init, data, steps = sys.argv[1], Path(sys.argv[2]).parent, int(sys.argv[3])
torch.set_num_threads(1)
cfg = copy.deepcopy(load_config(sys.argv[6]))
cfg["train"].update(steps=steps, eval_every=1000, eval_problems=8, eval_samples=2, save_every=1000)
settings = Settings.from_profile(parse_profile(cfg), "grpo")
rows = read_jsonl(data / "train.jsonl"), read_jsonl(data / "test.jsonl")
with tempfile.TemporaryDirectory() as tmp:
    # the built init as a base of this child's setting (an RL run refuses a base of another)
    base = shutil.copytree(init, Path(tmp) / "base")
    (base / "sft_summary.json").write_text(json.dumps({"numerics": numerics.describe()}))
    t0 = time.process_time()
    state = train(settings, 0, base, *rows, Path(tmp) / "run", backends=())
    loop_s = time.process_time() - t0
h = hashlib.sha256()
for k, v in sorted(state.policy.state_dict().items()):
    h.update(k.encode()); h.update(v.contiguous().numpy().tobytes())
print(json.dumps({"cap": torch.backends.cpu.get_cpu_capability(), "sha": h.hexdigest(),
                  "loss": state.history[-1]["loss"], "loop_s": loop_s}))
"""


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def build(tmp: Path) -> tuple[Path, Path]:
    """The default profile's tiny model (seed 0) and its SFT split, built in ``tmp``."""
    from pacs.config import load_profile
    from pacs.data.synthetic.arithmetic import make_splits
    from pacs.io import write_jsonl
    from pacs.tiny.build import main as build_main

    syn = load_profile(REPO / "configs" / "default.yaml").data.synthetic
    splits = make_splits(
        syn.seed, syn.n_sft, syn.n_train, syn.n_test, syn.min_steps, syn.max_steps, syn.max_operand
    )
    for name, rows in splits.items():
        write_jsonl(tmp / f"{name}.jsonl", rows)
    build_main(
        [
            "--config",
            str(REPO / "configs/default.yaml"),
            "--data-dir",
            str(tmp),
            "--out",
            str(tmp / "init"),
        ]
    )
    return tmp / "init", tmp / "sft.jsonl"


def run_child(env: dict[str, str], args: list[str], script: str = CHILD) -> tuple[dict, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    full = {k: v for k, v in os.environ.items() if k not in numerics.PORTABLE_ENV} | env
    out = subprocess.run(
        [sys.executable, "-c", script, *args], env=full, capture_output=True, text=True, check=False
    )
    if out.returncode:
        raise SystemExit(f"a child failed ({env}):\n{out.stderr[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(out.stdout.strip().splitlines()[-1]), cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--wait-policy", default="PASSIVE", help="OMP_WAIT_POLICY of every child")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated names")
    parser.add_argument("--stage", choices=("sft", "rl"), default="sft", help="SFT or GRPO steps")
    args = parser.parse_args()
    names = args.variants.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        init, data = build(Path(tmp))
        config = str(REPO / "configs" / "default.yaml")
        child_args = [str(init), str(data), str(args.steps), "64", "3e-3", config]
        script = CHILD if args.stage == "sft" else CHILD_RL
        results: dict[str, list] = {n: [] for n in names}
        for _ in range(args.repeats):
            for name in names:
                env = {**VARIANTS[name], "OMP_WAIT_POLICY": args.wait_policy}
                results[name].append(run_child(env, child_args, script))
    print(
        f"CPU: {cpu_model()}; {os.cpu_count()} cores; OMP_WAIT_POLICY={args.wait_policy}; "
        f"{args.steps} {args.stage.upper()} steps, median of {args.repeats}"
    )
    print_table(results, names)


def print_table(results: dict[str, list], names: list[str]) -> None:
    """One row per variant: the job's CPU seconds (imports included) and the loop's alone."""

    def medians(name: str) -> tuple[float, float]:
        return (
            statistics.median(c for _, c in results[name]),
            statistics.median(r["loop_s"] for r, _ in results[name]),
        )

    job0, loop0 = medians(names[0])
    print(
        f"| variant | ATen kernels | weights sha256 | last loss | job CPU s | vs {names[0]} "
        f"| loop CPU s | vs {names[0]} |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for name in names:
        got, (job, loop) = results[name][0][0], medians(name)
        same = {r["sha"] for r, _ in results[name]}
        sha = got["sha"][:16] + ("" if len(same) == 1 else " (varies!)")
        print(
            f"| {name} | {got['cap']} | {sha} | {got['loss']:.10f} | {job:.1f} | "
            f"{job / job0:.2f} | {loop:.1f} | {loop / loop0:.2f} |"
        )


if __name__ == "__main__":
    main()
