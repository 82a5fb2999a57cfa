# Helpers of the paper path's rules (no rules here: snakemake --lint keeps functions apart).
# Evaluation shards (evaluate.smk) and the compute-node preflight (preflight.smk).
# Generation is scattered over shards of consecutive problems and gathered into samples.jsonl
# (pacs.evaluation.shards): with eval.shard set, a shard holds as many problems as fit the
# generate job's time limit; without it, one shard holds every problem. The Fig. 3 checkpoints
# sample eval.curve_n_samples per problem (pass@1 only).
from pacs.evaluation.generate import DEFAULT_BATCH
from pacs.evaluation.shards import plan_shard_size, shard_count

SHARD = dataclasses.asdict(EVAL.shard) if EVAL.shard else None


def tree_n(tree) -> int:
    """Samples per problem of an eval/... or curve/... folder."""
    return EVAL.curve_samples if layout.parse_tree(tree)["kind"] == layout.CURVE else EVAL.n_samples


def shard_size(n) -> int | None:
    """Problems per generate shard at n samples each (hf: whole chunks, its seed is per chunk)."""
    if SHARD is None:
        return None
    align = max(1, DEFAULT_BATCH["hf"] // n) if EVAL.backend == "hf" else 1
    return plan_shard_size(n, EVAL.max_new_tokens, align=align, **SHARD)


def benchmark_problems(benchmark) -> int:
    """Problems evaluated in a benchmark; reads the prepared file (a checkpoint's output)."""
    if benchmark == SYNTHETIC:
        count = DATA.synthetic.n_test
    else:
        path = checkpoints.prepare_eval.get(benchmark=benchmark).output[0]
        with open(path, encoding="utf-8") as fh:
            count = sum(1 for line in fh if line.strip())
    return min(count, EVAL.limit) if EVAL.limit else count


def shard_files(wildcards) -> list[str]:
    size = shard_size(tree_n(wildcards.tree))
    shards = 1 if size is None else shard_count(benchmark_problems(Path(wildcards.tree).name), size)
    return [f"{RES}/{wildcards.tree}/shards/{k}.jsonl" for k in range(shards)]


def shard_args(wildcards) -> str:
    size = shard_size(tree_n(wildcards.tree))
    return f"--shard-index {wildcards.shard}" + (f" --shard-size {size}" if size else "")


def tree_generate_args(wildcards) -> str:
    return generate_args(wildcards, n=tree_n(wildcards.tree))


def gather_args(wildcards) -> str:
    n = tree_n(wildcards.tree)
    size = shard_size(n)
    limit = f" --limit {EVAL.limit}" if EVAL.limit else ""
    return f"--n {n}" + (f" --shard-size {size}" if size else "") + limit


import json as _json

from pacs.slurm_profile import active_resources

PREFLIGHT = layout.preflight_file(RES)
# What this Snakemake submits jobs with: the profile it was started with and the command line's
# --default-resources / --set-resources, as Snakemake merged them (pacs.slurm_profile).
ACTIVE_RESOURCES = active_resources(workflow.resource_settings)


def _train_node_resources() -> dict:
    """The per-node request of train_verl (gres, CPUs, memory) in the active settings."""
    train = ACTIVE_RESOURCES["set-resources"].get("train_verl") or {}
    return {k: train[k] for k in ("gres", "cpus_per_task", "mem_mb") if k in train}


def network_interface_default(wildcards) -> str:
    """train_verl's network interface when the profile names none: RAY_NETWORK_INTERFACE of the
    environment Snakemake runs in, else "" (Ray and NCCL choose)."""
    return os.environ.get("RAY_NETWORK_INTERFACE", "")


def ray_start_wait_default(wildcards) -> str:
    """train_verl's Ray start-up wait (s) when the profile sets no ray_start_wait_s:
    PACS_RAY_START_WAIT_S of the environment Snakemake runs in, else "" (the launcher's 300 s)."""
    return os.environ.get("PACS_RAY_START_WAIT_S", "")


def verl_device_default(wildcards) -> str:
    """train_verl's --device when the profile sets no verl_device: cuda where torch sees a GPU."""
    return "auto"


def preflight_resources_arg(wildcards) -> str:
    """The active resources as one JSON argument of `python -m pacs.preflight --resources`."""
    return _json.dumps(ACTIVE_RESOURCES, sort_keys=True)
