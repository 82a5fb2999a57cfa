"""The paper matrix's GPU budget from cited throughput figures: ``python -m pacs.budget``.

    python -m pacs.budget [--config configs/paper.yaml] [--profile slurm] [--gpu h200]
        [--n 256 128] [--jobs]

Prints every GPU job of the paper DAG (training runs, generate shards of every evaluation, the
Fig. 3 checkpoint evaluations, Table 1's released models, the diversity embedding) with its
expected hours, its GPU-hours and its margin against its SLURM time limit, the total per model
and for the whole matrix, at each ``--n`` (samples per problem). A job whose margin is under
``MIN_MARGIN`` (25 %) is marked ``SPLIT``, with the shard size that would keep it; a training run
longer than its limit is resubmitted and resumes from its last checkpoint, and the table says
how many submissions that takes against the profile's ``retries``.

Every response is planned at ``max_new_tokens`` (the shard planner's worst case), so the hours are
an upper bound for generation. Throughput comes from one stated rule (:func:`decode_tokens_per_s`)
whose two constants are fitted to two published vLLM figures (:data:`FIGURES`); its third figure,
our own H200 measurement, is printed beside the rule's prediction as a check. Everything else
(training MFU, prompt length, start-up time) is an estimate and says so.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pacs.config import RELEASED_RUN, ConfigError, Profile, load_profile
from pacs.config.sections import SIZE_CLASSES
from pacs.evaluation.shards import plan_shard_size
from pacs.methods import traits
from pacs.preflight import find_profile, read_profile

MIN_MARGIN = 0.25  # the share of a job's time limit kept free (eval.shard.margin's default)


@dataclass(frozen=True)
class Gpu:
    """One GPU as vLLM sees it: memory torch reports, peak HBM bandwidth, dense bf16 peak."""

    name: str
    memory_gb: float
    bandwidth_tb_s: float
    bf16_tflops: float
    source: str


GPUS = {
    "h100": Gpu(
        "H100-80GB SXM",
        85.52,
        3.35,
        989.0,
        "NVIDIA H100 datasheet (SXM: 3.35 TB/s, 989 dense bf16 TFLOPS); 81,559 MiB visible",
    ),
    "h200": Gpu(
        "H200 SXM",
        149.3,
        4.8,
        989.0,
        "NVIDIA H200 datasheet (4.8 TB/s, 989 dense bf16 TFLOPS); 139 GiB visible "
        "(benchmarks/results/gpu_check.md)",
    ),
}


@dataclass(frozen=True)
class Shape:
    """What decoding reads per step: the weights (2 bytes a parameter, bf16) and the KV cache
    (2 bytes × K and V × layers × KV heads × head dim per token); from the models' config.json."""

    params_b: float
    layers: int
    kv_heads: int
    head_dim: int = 128

    @property
    def weight_bytes(self) -> float:
        return self.params_b * 1e9 * 2

    @property
    def kv_bytes_per_token(self) -> int:
        return 2 * 2 * self.layers * self.kv_heads * self.head_dim


# Hub ids of the paper's models, and one representative architecture per released size class
# (7b: Qwen2.5-7B, the base of Eurus-2-7B-PRIME, Marco-o1, OpenThinker3-7B, Sky-T1-7B; 8b:
# Llama-3.1-8B, Deepthought-8B's base; 14b: Qwen3-14B; 32b: Qwen2.5-32B, LIMO's base).
SHAPES = {
    "Qwen/Qwen3-4B": Shape(4.02, 36, 8),
    "Qwen/Qwen3-8B": Shape(8.19, 36, 8),
    "Qwen/Qwen2.5-7B": Shape(7.62, 28, 4),
}
SIZE_CLASS_SHAPES = {
    "7b": Shape(SIZE_CLASSES["7b"][0], 28, 4),
    "8b": Shape(SIZE_CLASSES["8b"][0], 32, 8),
    "14b": Shape(SIZE_CLASSES["14b"][0], 40, 8),
    "32b": Shape(SIZE_CLASSES["32b"][0], 64, 8),
}
EMBEDDER = Shape(0.6, 28, 8)  # Qwen3-Embedding-0.6B (diversity)


@dataclass(frozen=True)
class Figure:
    """A published generation throughput: output tokens/s of one GPU, with its setup."""

    tokens_per_s: float
    gpu: str
    model: str
    prompt_tokens: int
    output_tokens: int
    concurrency: int
    kv_cache_tokens: int
    memory_utilization: float
    setup: str
    source: str


SILYBENCH = (
    "tgarg01/silybench-data derived/csv/perf_points.csv (commit 93e4887), run "
    "20260924T125045Z_h100-80gbx1_qwen3-8b_bf16"
)
SILYBENCH_SETUP = (
    "vLLM 0.30.0 (vllm bench serve, random prompts), bf16, TP 1, gpu_memory_utilization 0.9, "
    "max_model_len 16384, KV cache 377,024 tokens, concurrency 512, thinking off"
)
FIGURES = {
    "long": Figure(
        3901.1,
        "h100",
        "Qwen/Qwen3-8B",
        2048,
        2048,
        512,
        377_024,
        0.9,
        SILYBENCH_SETUP,
        f"{SILYBENCH}, workload balanced-2048-2048",
    ),
    "short": Figure(
        13522.6,
        "h100",
        "Qwen/Qwen3-8B",
        128,
        1024,
        512,
        377_024,
        0.9,
        SILYBENCH_SETUP,
        f"{SILYBENCH}, workload decode-128-1024",
    ),
    "ours": Figure(
        17526.0,
        "h200",
        "Qwen/Qwen3-8B",
        128,
        1024,
        512,
        797_856,
        0.9,
        "vLLM 0.24.0 (LLM.generate, n = 256 per prompt, random weights of Qwen3-8B's "
        "shape), bf16, TP 1, gpu_memory_utilization 0.9, KV cache 797,856 tokens",
        "benchmarks/results/gpu_check.md (ours, 2026-11-26)",
    ),
}
# The official PACS training layout (as issue 48 reports the official script; not re-read here).
OFFICIAL_TRAINING = "64 GPUs (8 nodes x 8), rollout TP 2, gpu_memory_utilization 0.7"

# Estimates (no published figure behind them): stated here so the table can be re-derived.
PROMPT_TOKENS = 256  # estimate: a benchmark or DeepScaleR problem with its chat template
MAX_NUM_SEQS = 1024  # vLLM's default max_num_seqs for LLM() on a >= 70 GiB GPU
TRAIN_MFU = 0.30  # estimate: share of dense bf16 peak FSDP training reaches on long sequences
FLOPS_PER_PARAM_TOKEN = 10  # 6 (forward + backward) + 2 (checkpoint recompute) + 2 (old log-prob)
START_HOURS = {"generate": 5 / 60, "train": 0.25, "diversity": 5 / 60}  # estimates: load, compile
CHECKPOINT_HOURS = 0.05  # estimate: one FSDP checkpoint of an 8B run (~131 GB) to shared disk


@dataclass(frozen=True)
class Rule:
    """Decode as a sum of a memory term and a compute term per engine step:
    ``step_s = bytes_read / (bw_eff · peak_bw) + flops / (flops_eff · peak_flops)``, with
    ``bytes_read`` = weights + the batch's KV cache and ``flops`` = 2 · params · tokens the step
    produces, prefill included (× (1 + prompt/output)); the batch holds as many sequences as
    the KV cache fits at their mean context (prompt + output/2), at most ``MAX_NUM_SEQS`` or the
    benchmark's concurrency. ``bw_eff`` and ``flops_eff`` are fitted to :data:`FIGURES`' two
    published points (:func:`fit_rule`)."""

    bw_eff: float
    flops_eff: float
    reserve_gb: float


def kv_tokens(gpu: Gpu, shape: Shape, utilization: float, reserve_gb: float) -> float:
    """Tokens of KV cache vLLM allocates: its memory share less weights and a fixed reserve."""
    free = utilization * gpu.memory_gb * 1e9 - shape.weight_bytes - reserve_gb * 1e9
    if free <= 0:
        raise ValueError(f"{shape.params_b}B weights do not fit {gpu.name} at {utilization}")
    return free / shape.kv_bytes_per_token


def step_terms(
    shape: Shape, prompt: int, output: int, cache_tokens: float, max_seqs: int
) -> tuple[float, float, float]:
    """(batch, bytes read, FLOPs) of one decode step at steady state."""
    context = prompt + output / 2
    batch = min(max_seqs, cache_tokens / context)
    bytes_read = shape.weight_bytes + batch * context * shape.kv_bytes_per_token
    flops = 2 * shape.params_b * 1e9 * batch * (1 + prompt / output)
    return batch, bytes_read, flops


def decode_tokens_per_s(
    rule: Rule,
    gpu: Gpu,
    shape: Shape,
    output: int,
    *,
    prompt: int = PROMPT_TOKENS,
    utilization: float = 0.9,
    max_seqs: int = MAX_NUM_SEQS,
    cache_tokens: float | None = None,
) -> float:
    """Generated tokens/s of one GPU at TP 1 by the rule (see :class:`Rule`)."""
    if cache_tokens is None:
        cache_tokens = kv_tokens(gpu, shape, utilization, rule.reserve_gb)
    batch, bytes_read, flops = step_terms(shape, prompt, output, cache_tokens, max_seqs)
    step_s = bytes_read / (rule.bw_eff * gpu.bandwidth_tb_s * 1e12) + flops / (
        rule.flops_eff * gpu.bf16_tflops * 1e12
    )
    return batch / step_s


def fit_rule(long: Figure = FIGURES["long"], short: Figure = FIGURES["short"]) -> Rule:
    """The rule's two efficiencies solved from two figures on the same GPU (2 × 2 linear system
    in 1/bandwidth and 1/FLOPS); the KV reserve from the first figure's reported cache size."""
    gpu, shape = GPUS[long.gpu], SHAPES[long.model]
    rows = []
    for fig in (long, short):
        batch, bytes_read, flops = step_terms(
            shape, fig.prompt_tokens, fig.output_tokens, fig.kv_cache_tokens, fig.concurrency
        )
        rows.append((bytes_read, flops, batch / fig.tokens_per_s))
    (a1, b1, c1), (a2, b2, c2) = rows
    det = a1 * b2 - a2 * b1
    inv_bw, inv_flops = (c1 * b2 - c2 * b1) / det, (a1 * c2 - a2 * c1) / det
    if inv_bw <= 0 or inv_flops <= 0:
        raise ValueError("the two figures give no positive bandwidth and FLOPS; pick others")
    used = long.memory_utilization * gpu.memory_gb * 1e9
    reserve = (used - shape.weight_bytes - long.kv_cache_tokens * shape.kv_bytes_per_token) / 1e9
    return Rule(
        bw_eff=1 / inv_bw / (gpu.bandwidth_tb_s * 1e12),
        flops_eff=1 / inv_flops / (gpu.bf16_tflops * 1e12),
        reserve_gb=reserve,
    )


# ------------------------------------------------------------------ the jobs


@dataclass(frozen=True)
class Job:
    """One group of identical GPU jobs: ``count`` jobs of ``hours`` each on ``gpus`` GPUs."""

    kind: str
    model: str
    what: str
    count: int
    hours: float
    gpus: int
    limit_hours: float
    note: str = ""

    @property
    def gpu_hours(self) -> float:
        return self.count * self.hours * self.gpus

    @property
    def margin(self) -> float:
        return 1 - self.hours / self.limit_hours


@dataclass(frozen=True)
class Plan:
    """What the budget reads: the profile, its SLURM limits, the GPU and the fitted rule."""

    spec: Profile
    limits: dict[str, float]  # rule -> hours
    retries: int
    gpu: Gpu
    rule: Rule
    sizes: dict[str, int]


# The benchmark files' problem counts (as prepared by `python -m pacs.data prepare-eval`; the
# workflow tests use the same sizes).
BENCHMARK_SIZES = {
    "math500": 500,
    "amc23": 40,
    "aime24": 30,
    "aime25": 30,
    "beyondaime": 100,
    "livecodebench": 279,
    "gpqa": 198,
}


def model_shape(spec: Profile, model: str) -> Shape:
    """The shape of a trained model (by hub id) or a released one (by size class)."""
    if model in spec.models:
        hf_id = spec.models[model].hf_id or ""
        if hf_id not in SHAPES:
            raise ValueError(f"models.{model}: no shape known for {hf_id!r} (add it to SHAPES)")
        return SHAPES[hf_id]
    return SIZE_CLASS_SHAPES[spec.eval.released[model].size_class]


def split_note(hours: float, limit: float, per_problem: float) -> str:
    """For a job under the margin: the problems a shard may hold to keep it."""
    if 1 - hours / limit >= MIN_MARGIN:
        return ""
    keep = int((limit * (1 - MIN_MARGIN) - START_HOURS["generate"]) // per_problem)
    if keep < 1:
        return "; SPLIT: not even 1 problem fits: raise the generate runtime"
    return f"; SPLIT: <= {keep} problems a shard"


def generate_jobs(plan: Plan, model: str, kind: str, benchmarks: list[str], n: int, count: int):
    """Generate shards of ``count`` evaluations of ``model`` on each benchmark at ``n`` samples,
    sized as the DAG sizes them (``eval.shard``), timed at the rule's rate for this model."""
    spec, shard = plan.spec, plan.spec.eval.shard
    out_tokens = spec.eval.max_new_tokens
    rate = decode_tokens_per_s(
        plan.rule,
        plan.gpu,
        model_shape(spec, model),
        out_tokens,
        utilization=spec.eval.vllm.gpu_memory_utilization,
    )
    limit = plan.limits["generate"]
    jobs = []
    for bench in benchmarks:
        problems = plan.sizes[bench]
        size = problems
        if shard is not None:
            size = min(
                problems,
                plan_shard_size(n, out_tokens, shard.tokens_per_s, shard.job_minutes, shard.margin),
            )
        full, last = divmod(problems, size)
        per_problem = n * out_tokens / rate / 3600  # hours
        hours = START_HOURS["generate"] + size * per_problem
        note = f"{size} problems x {n} at {rate:,.0f} tok/s" + split_note(hours, limit, per_problem)
        jobs.append(Job(kind, model, f"{bench} n={n}", full * count, hours, 1, limit, note))
        if last:  # the last shard holds the rest: its own, shorter job
            rest = START_HOURS["generate"] + last * per_problem
            note = f"{last} problems" + split_note(rest, limit, per_problem)
            jobs.append(Job(kind, model, f"{bench} n={n} last shard", count, rest, 1, limit, note))
    return jobs


def train_hours(plan: Plan, model: str, method: str, gpus: int) -> float:
    """One training run: each step's rollout (every response at max_new_tokens, at the rule's
    rate with the rollout's memory share) plus its update (``FLOPS_PER_PARAM_TOKEN`` · params ·
    tokens at ``TRAIN_MFU``; twice with a critic), checkpoints and start-up."""
    spec, shape = plan.spec, model_shape(plan.spec, model)
    train, steps = spec.train, spec.models[model].steps
    responses = train.prompts_per_step * train.group_size
    rate = decode_tokens_per_s(
        plan.rule,
        plan.gpu,
        shape,
        train.max_new_tokens,
        utilization=spec.verl.rollout.gpu_memory_utilization,
    )
    rollout_s = responses * train.max_new_tokens / (rate * gpus)
    tokens = responses * (PROMPT_TOKENS + train.max_new_tokens)
    flops = FLOPS_PER_PARAM_TOKEN * shape.params_b * 1e9 * tokens
    flops *= 2 if traits(method).has_critic else 1
    update_s = flops / (TRAIN_MFU * plan.gpu.bf16_tflops * 1e12 * gpus)
    saves = math.ceil(steps / train.save_every)
    return START_HOURS["train"] + steps * (rollout_s + update_s) / 3600 + saves * CHECKPOINT_HOURS


def train_jobs(plan: Plan) -> list[Job]:
    spec, limit = plan.spec, plan.limits["train_verl"]
    jobs = []
    for model, run, _seed in spec.matrix.train_jobs:
        m = spec.models[model]
        gpus = (m.nnodes or 1) * (m.gpus_per_node or 1)
        hours = train_hours(plan, model, spec.runs[run].method.name, gpus)
        submissions = math.ceil(hours / (limit * (1 - MIN_MARGIN)))
        note = f"{gpus} GPUs"
        if submissions > 1:
            ok = "within" if submissions <= plan.retries + 1 else "MORE than"
            note += (
                f"; SPLIT: {submissions} submissions resuming from checkpoints, {ok} "
                f"retries + 1 = {plan.retries + 1}"
            )
        jobs.append(Job("train", model, run, 1, hours, gpus, limit, note))
    return jobs


def eval_jobs(plan: Plan, n: int) -> list[Job]:
    """Every evaluation's generate shards: base and trained models on every benchmark, the Fig. 3
    checkpoints on the curve benchmarks, the released models on Table 1's benchmarks."""
    spec, matrix = plan.spec, plan.spec.matrix
    per_model: dict[str, int] = defaultdict(int)
    for model, _run, _seed in matrix.eval_jobs:
        per_model[model] += 1
    jobs = []
    for model, count in per_model.items():
        jobs += generate_jobs(plan, model, "eval", list(spec.data.benchmarks), n, count)
    curves: dict[str, int] = defaultdict(int)
    for model, _run, _seed, _step, _bench in matrix.curve_jobs:
        curves[model] += 1
    for model, count in curves.items():
        per_bench = count // max(1, len(spec.eval.curve_benchmarks))
        jobs += generate_jobs(
            plan,
            model,
            "curve",
            list(spec.eval.curve_benchmarks),
            spec.eval.curve_samples,
            per_bench,
        )
    released: dict[str, list[str]] = defaultdict(list)
    for key, _run, _seed, bench in matrix.released_jobs:
        released[key].append(bench)
    for key, benches in released.items():
        jobs += generate_jobs(plan, key, RELEASED_RUN, benches, n, 1)
    return jobs


def diversity_jobs(plan: Plan, n: int) -> list[Job]:
    """Embedding every (worst case: every) response of base and main runs on each diversity
    benchmark with the 0.6B embedder: 2 · params · tokens at ``TRAIN_MFU``."""
    spec, limit = plan.spec, plan.limits["diversity"]
    jobs = []
    for model in spec.models:
        runs = len(spec.matrix.diversity_runs(model))
        for bench in spec.data.diversity_benchmarks:
            tokens = runs * plan.sizes[bench] * n * spec.eval.max_new_tokens
            seconds = (
                2 * EMBEDDER.params_b * 1e9 * tokens / (TRAIN_MFU * plan.gpu.bf16_tflops * 1e12)
            )
            hours = START_HOURS["diversity"] + seconds / 3600
            jobs.append(
                Job("diversity", model, f"{bench} n={n}", 1, hours, 1, limit, f"{runs} runs")
            )
    return jobs


def all_jobs(plan: Plan, n: int) -> list[Job]:
    spec = replace(plan.spec, eval=replace(plan.spec.eval, n_samples=n))
    plan = replace(plan, spec=spec)
    return [*train_jobs(plan), *eval_jobs(plan, n), *diversity_jobs(plan, n)]


# ------------------------------------------------------------------ the table


def profile_limits(profile: dict) -> tuple[dict[str, float], int]:
    """Each GPU rule's time limit in hours (its runtime, else the default), and ``retries``."""
    default = (profile.get("default-resources") or {}).get("runtime")
    rules = profile.get("set-resources") or {}
    limits = {}
    for rule in ("train_verl", "generate", "diversity"):
        runtime = (rules.get(rule) or {}).get("runtime", default)
        if runtime is None:
            raise ValueError(f"the profile sets no runtime for {rule} and no default runtime")
        limits[rule] = float(runtime) / 60
    return limits, int(profile.get("retries", 0))


def render(jobs: list[Job], n: int, detail: bool) -> str:
    lines = [f"## n = {n}", ""]
    if detail:
        lines += [
            "| kind | model | job | jobs | h each | GPUs | GPU-h | limit h | margin | note |",
            "| :-- | :-- | :-- | --: | --: | --: | --: | --: | --: | :-- |",
        ]
        for j in jobs:
            flag = "" if j.margin >= MIN_MARGIN else " !"
            lines.append(
                f"| {j.kind} | {j.model} | {j.what} | {j.count} | {j.hours:.2f} | {j.gpus} | "
                f"{j.gpu_hours:,.0f} | {j.limit_hours:.0f} | {j.margin:.0%}{flag} | {j.note} |"
            )
        lines.append("")
    totals: dict[tuple[str, str], float] = defaultdict(float)
    for j in jobs:
        totals[(j.model, j.kind)] += j.gpu_hours
    head = "| model | train | eval | curve | released | diversity | total GPU-h |"
    lines += [head, "| :-- | --: | --: | --: | --: | --: | --: |"]
    kinds = ("train", "eval", "curve", RELEASED_RUN, "diversity")
    for model in dict.fromkeys(j.model for j in jobs):
        cells = [totals[(model, k)] for k in kinds]
        lines.append(
            f"| {model} | " + " | ".join(f"{c:,.0f}" for c in cells) + f" | {sum(cells):,.0f} |"
        )
    grand = [sum(v for (_, k), v in totals.items() if k == kind) for kind in kinds]
    lines.append(
        "| **matrix** | " + " | ".join(f"{c:,.0f}" for c in grand) + f" | **{sum(grand):,.0f}** |"
    )
    short = [f"{j.kind} {j.model} {j.what}" for j in jobs if j.margin < MIN_MARGIN]
    lines.append("")
    lines.append(
        f"{len(short)} job group(s) under the {MIN_MARGIN:.0%} margin (SPLIT; --jobs says how)"
        + (": " + ", ".join(short) if short else "")
    )
    lines.append("")
    return "\n".join(lines)


def sources(plan: Plan) -> str:
    """The figures, the fitted rule and its check against our own H200 measurement."""
    rule, ours = plan.rule, FIGURES["ours"]
    check = decode_tokens_per_s(
        rule,
        GPUS[ours.gpu],
        SHAPES[ours.model],
        ours.output_tokens,
        prompt=ours.prompt_tokens,
        max_seqs=ours.concurrency,
        cache_tokens=ours.kv_cache_tokens,
    )
    spec = plan.spec
    rate8k = {
        m: decode_tokens_per_s(rule, plan.gpu, model_shape(spec, m), spec.eval.max_new_tokens)
        for m in spec.models
    }
    lines = [f"# Paper budget on {plan.gpu.name} ({plan.gpu.source})", "", "Figures:"]
    for key, fig in FIGURES.items():
        lines.append(
            f"- {key}: {fig.tokens_per_s:,.0f} output tok/s, {fig.model} on one "
            f"{GPUS[fig.gpu].name}, {fig.prompt_tokens} in / {fig.output_tokens} out; "
            f"{fig.setup}; {fig.source}"
        )
    lines += [
        f"- official PACS training layout: {OFFICIAL_TRAINING}; by the rule below, one "
        + ", ".join(
            f"{m} PACS run on 64 GPUs takes {train_hours(plan, m, 'pacs', 64):.0f} h"
            for m in spec.models
        ),
        "",
        (
            f"Rule (fitted on 'long' and 'short'): memory at {rule.bw_eff:.0%} of peak "
            f"bandwidth, compute at {rule.flops_eff:.0%} of peak bf16, {rule.reserve_gb:.1f} GB "
            f"reserve. Check on 'ours': predicts {check:,.0f} tok/s, measured "
            f"{ours.tokens_per_s:,.0f}."
        ),
        "At max_new_tokens = " + f"{spec.eval.max_new_tokens}, prompt {PROMPT_TOKENS} "
        "(estimate): "
        + ", ".join(f"{m} {r:,.0f} tok/s" for m, r in rate8k.items())
        + f"; config eval.shard.tokens_per_s = "
        f"{spec.eval.shard.tokens_per_s if spec.eval.shard else 'unset'} (sizes the shards).",
        (
            f"Estimates: training MFU {TRAIN_MFU:.0%}, {FLOPS_PER_PARAM_TOKEN} FLOPs per "
            "parameter and token, start-up 5 min (generate, diversity) and 15 min (train), "
            "every response at max_new_tokens (an upper bound)."
        ),
        "",
    ]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m pacs.budget", description=__doc__.split("\n")[0])
    p.add_argument("--config", type=Path, default=Path("configs/paper.yaml"))
    p.add_argument(
        "--profile",
        default="workflow/profiles/slurm/config.yaml",
        help="a SLURM profile (name, folder or file): the jobs' time limits",
    )
    p.add_argument("--gpu", choices=sorted(GPUS), default="h200")
    p.add_argument("--n", type=int, nargs="+", default=[256, 128], help="samples per problem")
    p.add_argument("--jobs", action="store_true", help="one row per job group, with its margin")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        spec = load_profile(args.config)
        limits, retries = profile_limits(read_profile(find_profile(args.profile)))
        plan = Plan(spec, limits, retries, GPUS[args.gpu], fit_rule(), dict(BENCHMARK_SIZES))
        missing = [b for b in spec.data.benchmarks if b not in plan.sizes]
        if missing:
            raise ValueError(f"{args.config}: no problem count known for benchmarks {missing}")
        out = [sources(plan)] + [render(all_jobs(plan, n), n, args.jobs) for n in args.n]
    except (ConfigError, OSError, ValueError) as err:
        print(f"pacs.budget: error: {err}", file=sys.stderr)
        return 2
    print("\n".join(out), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
