# Evaluation: generate -> grade -> pass@k, for every trained model and each base model, on every
# configured benchmark. At paper scale, checkpoints every eval.curve_every steps too (Fig. 3).


# Generation is scattered over shards of consecutive problems and gathered into samples.jsonl
# (pacs.evaluation.shards): with eval.shard set, a shard holds as many problems as fit the
# generate job's time limit; without it, one shard holds every problem. The Fig. 3 checkpoints
# sample eval.curve_n_samples per problem (pass@1 only).
from pacs.config import curve_n_samples, eval_shard
from pacs.evaluation.generate import DEFAULT_BATCH
from pacs.evaluation.shards import plan_shard_size, shard_count

CURVE_N = curve_n_samples(config)
SHARD = eval_shard(config)


def tree_n(tree) -> int:
    """Samples per problem of an eval/... or curve/... folder."""
    return CURVE_N if tree.startswith("curve/") else int(EVAL["n_samples"])


def shard_size(n) -> int | None:
    """Problems per generate shard at n samples each (hf: whole chunks, its seed is per chunk)."""
    if SHARD is None:
        return None
    align = max(1, DEFAULT_BATCH["hf"] // n) if EVAL["backend"] == "hf" else 1
    return plan_shard_size(n, int(EVAL["max_new_tokens"]), align=align, **SHARD)


def benchmark_problems(benchmark) -> int:
    """Problems evaluated in a benchmark; reads the prepared file (a checkpoint's output)."""
    if benchmark == SYNTHETIC:
        count = int(DATA["synthetic"]["n_test"])
    else:
        path = checkpoints.prepare_eval.get(benchmark=benchmark).output[0]
        with open(path, encoding="utf-8") as fh:
            count = sum(1 for line in fh if line.strip())
    return min(count, EVAL["limit"]) if EVAL.get("limit") else count


def shard_files(wildcards) -> list[str]:
    size = shard_size(tree_n(wildcards.tree))
    shards = 1 if size is None else shard_count(benchmark_problems(Path(wildcards.tree).name), size)
    return [f"{RES}/{wildcards.tree}/shards/{k}.jsonl" for k in range(shards)]


def shard_args(wildcards) -> str:
    size = shard_size(int(EVAL["n_samples"]))
    return f"--shard-index {wildcards.shard}" + (f" --shard-size {size}" if size else "")


def curve_shard_args(wildcards) -> str:
    size = shard_size(CURVE_N)
    return f"--shard-index {wildcards.shard}" + (f" --shard-size {size}" if size else "")


def curve_generate_args(wildcards) -> str:
    return generate_args(wildcards, n=CURVE_N)


def gather_args(wildcards) -> str:
    n = tree_n(wildcards.tree)
    size = shard_size(n)
    limit = f" --limit {EVAL['limit']}" if EVAL.get("limit") else ""
    return f"--n {n}" + (f" --shard-size {size}" if size else "") + limit


rule generate:
    input:
        model=eval_model_input,
        benchmark=benchmark_input,
    output:
        f"{RES}/eval/{{model}}/{{run}}/seed{{seed}}/{{benchmark}}/shards/{{shard}}.jsonl",
    params:
        model=eval_model_arg,
        args=generate_args,
        shard=shard_args,
    conda:
        ENV_FILE
    log:
        f"{RES}/logs/eval/{{model}}/{{run}}/seed{{seed}}/{{benchmark}}/generate_{{shard}}.log",
    benchmark:
        f"{RES}/benchmarks/eval/{{model}}/{{run}}/seed{{seed}}/{{benchmark}}/generate_{{shard}}.tsv"
    wildcard_constraints:
        shard=r"\d+",
    threads: THREADS
    shell:
        "python -m pacs.evaluation.generate --model {params.model} --benchmark-file {input.benchmark} "
        "--out {output} {params.args} {params.shard} --threads {threads} > {log} 2>&1"


rule generate_checkpoint:
    input:
        model=f"{RES}/train/{{model}}/{{run}}/seed{{seed}}/step{{step}}/hf/config.json",
        benchmark=benchmark_input,
    output:
        f"{RES}/curve/{{model}}/{{run}}/seed{{seed}}/step{{step}}/{{benchmark}}/shards/{{shard}}.jsonl",
    params:
        model=curve_model_arg,
        args=curve_generate_args,
        shard=curve_shard_args,
    conda:
        ENV_FILE
    log:
        f"{RES}/logs/curve/{{model}}/{{run}}/seed{{seed}}/step{{step}}/{{benchmark}}/generate_{{shard}}.log",
    benchmark:
        f"{RES}/benchmarks/curve/{{model}}/{{run}}/seed{{seed}}/step{{step}}/{{benchmark}}/generate_{{shard}}.tsv"
    wildcard_constraints:
        shard=r"\d+",
    threads: THREADS
    shell:
        "python -m pacs.evaluation.generate --model {params.model} --benchmark-file {input.benchmark} "
        "--out {output} {params.args} {params.shard} --threads {threads} > {log} 2>&1"


rule gather_samples:
    input:
        shards=shard_files,
        benchmark=tree_benchmark_input,
    output:
        f"{RES}/{{tree}}/samples.jsonl",
    params:
        args=gather_args,
    conda:
        ENV_FILE
    log:
        f"{RES}/logs/{{tree}}/gather.log",
    benchmark:
        f"{RES}/benchmarks/{{tree}}/gather.tsv"
    wildcard_constraints:
        tree=r"(eval|curve)/.+",
    shell:
        "python -m pacs.evaluation.shards gather {input.shards} --benchmark-file {input.benchmark} "
        "{params.args} --out {output} > {log} 2>&1"


rule grade:
    input:
        samples=f"{RES}/{{tree}}/samples.jsonl",
        benchmark=tree_benchmark_input,
    output:
        f"{RES}/{{tree}}/graded.jsonl",
    conda:
        ENV_FILE
    log:
        f"{RES}/logs/{{tree}}/grade.log",
    benchmark:
        f"{RES}/benchmarks/{{tree}}/grade.tsv"
    wildcard_constraints:
        tree=r"(eval|curve)/.+",
    threads: THREADS
    shell:
        "python -m pacs.evaluation.grade --samples {input.samples} --benchmark-file {input.benchmark} "
        "--out {output} --workers {threads} > {log} 2>&1"


rule passk:
    input:
        f"{RES}/eval/{{model}}/{{run}}/seed{{seed}}/{{benchmark}}/graded.jsonl",
    output:
        json=f"{RES}/eval/{{model}}/{{run}}/seed{{seed}}/{{benchmark}}/passk.json",
        csv=f"{RES}/eval/{{model}}/{{run}}/seed{{seed}}/{{benchmark}}/passk.csv",
    params:
        args=passk_args,
    conda:
        ENV_FILE
    log:
        f"{RES}/logs/eval/{{model}}/{{run}}/seed{{seed}}/{{benchmark}}/passk.log",
    benchmark:
        f"{RES}/benchmarks/eval/{{model}}/{{run}}/seed{{seed}}/{{benchmark}}/passk.tsv"
    shell:
        "python -m pacs.evaluation.passk --graded {input} --out-json {output.json} "
        "--out-csv {output.csv} {params.args} > {log} 2>&1"


rule passk_checkpoint:
    input:
        f"{RES}/curve/{{model}}/{{run}}/seed{{seed}}/step{{step}}/{{benchmark}}/graded.jsonl",
    output:
        json=f"{RES}/curve/{{model}}/{{run}}/seed{{seed}}/step{{step}}/{{benchmark}}/passk.json",
        csv=f"{RES}/curve/{{model}}/{{run}}/seed{{seed}}/step{{step}}/{{benchmark}}/passk.csv",
    params:
        args=passk_args,
    conda:
        ENV_FILE
    log:
        f"{RES}/logs/curve/{{model}}/{{run}}/seed{{seed}}/step{{step}}/{{benchmark}}/passk.log",
    benchmark:
        f"{RES}/benchmarks/curve/{{model}}/{{run}}/seed{{seed}}/step{{step}}/{{benchmark}}/passk.tsv"
    shell:
        "python -m pacs.evaluation.passk --graded {input} --out-json {output.json} "
        "--out-csv {output.csv} {params.args} > {log} 2>&1"
