# Evaluation: generate -> grade -> pass@k, for every trained model and each base model, on every
# configured benchmark. At paper scale, checkpoints every eval.curve_every steps too (Fig. 3).


# Generation is scattered over shards and gathered (helpers: shards.smk).


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
