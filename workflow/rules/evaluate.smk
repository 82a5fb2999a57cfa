# Evaluation: generate -> grade -> pass@k, for every trained model and each base model, on every
# configured benchmark, and for Table 1's released models (eval.released, run `released`: their
# hub snapshot, their documented prompt format) on its math benchmarks; at paper scale, checkpoints
# every eval.curve_every steps too (Fig. 3). One rule per stage serves all: the `tree` wildcard is
# eval/<model>/<run>/seed<s>/<benchmark> or curve/<model>/<run>/seed<s>/step<k>/<benchmark>
# (common.smk, tree_job).


# Generation is scattered over shards of problems and gathered into samples.jsonl (helpers:
# shards.smk): eval.shard sizes a shard to fit the generate jobs' time limit; unset, one shard.
rule generate:
    input:
        model=eval_model_input,
        benchmark=tree_benchmark_input,
    output:
        f"{RES}/{{tree}}/shards/{{shard}}.jsonl",
    params:
        model=eval_model_arg,
        args=tree_generate_args,
        prompt=released_prompt_args,
        shard=shard_args,
    conda:
        ENV_FILE
    log:
        f"{RES}/logs/{{tree}}/generate_{{shard}}.log",
    benchmark:
        f"{RES}/benchmarks/{{tree}}/generate_{{shard}}.tsv"
    wildcard_constraints:
        tree=r"(eval|curve)/.+",
        shard=r"\d+",
    threads: THREADS
    shell:
        "python -m pacs.evaluation.generate --model {params.model} --benchmark-file {input.benchmark} "
        "--out {output} {params.args}{params.prompt} {params.shard} --threads {threads} > {log} 2>&1"


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
        f"{RES}/{{tree}}/graded.jsonl",
    output:
        json=f"{RES}/{{tree}}/passk.json",
        csv=f"{RES}/{{tree}}/passk.csv",
    params:
        args=passk_args,
    conda:
        ENV_FILE
    log:
        f"{RES}/logs/{{tree}}/passk.log",
    benchmark:
        f"{RES}/benchmarks/{{tree}}/passk.tsv"
    wildcard_constraints:
        tree=r"(eval|curve)/.+",
    shell:
        "python -m pacs.evaluation.passk --graded {input} --out-json {output.json} "
        "--out-csv {output.csv} {params.args} > {log} 2>&1"
