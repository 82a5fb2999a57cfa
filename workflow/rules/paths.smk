# Solution paths of correct responses on the paths task (docs/design.md §10), and the claims
# table's per-problem input. Only when data.synthetic.task is `paths`.


rule paths:
    input:
        graded=f"{EVAL_DIR}/graded.jsonl",
        benchmark=paths_benchmark_input,
    output:
        f"{EVAL_DIR}/paths.json",
    conda:
        ENV_FILE
    log:
        f"{RES}/logs/eval/{{model}}/{{run}}/seed{{seed}}/{{benchmark}}/paths.log",
    benchmark:
        f"{RES}/benchmarks/eval/{{model}}/{{run}}/seed{{seed}}/{{benchmark}}/paths.tsv"
    shell:
        "python -m pacs.evaluation.paths --graded {input.graded} --benchmark-file {input.benchmark} "
        "--out {output} --benchmark {wildcards.benchmark} --model {wildcards.model} "
        "--run {wildcards.run} --seed {wildcards.seed} > {log} 2>&1"
