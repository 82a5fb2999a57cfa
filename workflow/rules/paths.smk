# The paths task (docs/design.md#the-science-profile): solution paths of correct responses, per evaluated run
# (the claims table's per-problem input); and, for the science profile's checkpoint study
# (`study:`), the hard held-out split and the exact path distributions of every scored policy.


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


if SPEC.study is not None:

    # The hard split is a file under data/eval/ like a downloaded benchmark, made here instead.
    ruleorder: prepare_hard_split > prepare_eval

    rule prepare_hard_split:
        input:
            sft=synthetic_file("sft"),
            train=synthetic_file("train"),
            test=synthetic_file("test"),
        output:
            benchmark_file(SPEC.study.hard.benchmark),
        params:
            args=hard_split_args,
            splits=input_dir,
        conda:
            ENV_FILE
        log:
            f"{RES}/logs/data/prepare_hard_split.log",
        benchmark:
            f"{RES}/benchmarks/data/prepare_hard_split.tsv"
        shell:
            "python -m pacs.data.synthetic.hard_split --splits-dir {params.splits} --out {output} "
            "{params.args} > {log} 2>&1"

    # One job per policy set (the base, or a run and seed) scores both splits: a job's imports
    # cost more than its scoring at the tiny scale.
    rule path_exact:
        input:
            model=path_exact_model_input,
            benchmarks=[benchmark_file(b) for b in MATRIX.exact_benchmarks],
        output:
            path_exact_outputs(),
        params:
            base=path_exact_base_arg,
            checkpoints=path_exact_checkpoint_args,
            splits=path_exact_split_args,
            args=path_exact_args,
            settings=path_exact_settings,
        conda:
            ENV_FILE
        log:
            f"{RES}/logs/eval/{{model}}/{{run}}/seed{{seed}}/path_exact.log",
        benchmark:
            f"{RES}/benchmarks/eval/{{model}}/{{run}}/seed{{seed}}/path_exact.tsv"
        threads: THREADS
        shell:
            "python -m pacs.evaluation.path_exact --model {params.base} {params.checkpoints} "
            "{params.splits} --model-name {wildcards.model} --run {wildcards.run} "
            "--seed {wildcards.seed} {params.args} --threads {threads} > {log} 2>&1"
