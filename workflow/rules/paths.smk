# Solution paths of correct responses on the paths task (docs/design.md §10), and the claims
# table's per-problem input. Only when data.synthetic.task is `paths`.
PATHS_TASK = DATA.synthetic is not None and DATA.synthetic.task == "paths"


def all_paths() -> list[str]:
    """paths.json of every evaluated run on the synthetic benchmark (none for other tasks)."""
    if not PATHS_TASK or SYNTHETIC not in BENCHMARKS:
        return []
    return [f"{eval_dir(m, r, s, SYNTHETIC)}/paths.json" for m, r, s in MATRIX.eval_jobs]


def paths_benchmark_input(wildcards) -> str:
    return benchmark_file(wildcards.benchmark)


rule paths:
    input:
        graded=f"{RES}/eval/{{model}}/{{run}}/seed{{seed}}/{{benchmark}}/graded.jsonl",
        benchmark=paths_benchmark_input,
    output:
        f"{RES}/eval/{{model}}/{{run}}/seed{{seed}}/{{benchmark}}/paths.json",
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
