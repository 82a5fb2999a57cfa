# Data: the synthetic task (tiny), benchmark files, the DeepScaleR training set (paper), and the
# hub snapshots compute jobs read. Every download is a local rule (common.smk, "downloads").


rule fetch:
    """`make fetch`: every download, nothing else (run on a host with internet)."""
    input:
        all_downloads(),
    localrule: True


rule fetch_hub:
    output:
        hub_marker("{name}"),
    params:
        args=fetch_args,
        out=output_dir,
    localrule: True
    conda:
        ENV_FILE
    log:
        f"{RES}/logs/data/fetch_{{name}}.log",
    benchmark:
        f"{RES}/benchmarks/data/fetch_{{name}}.tsv"
    shell:
        "python -m pacs.fetch {params.args} --out {params.out} > {log} 2>&1"


rule prepare_synthetic:
    output:
        sft=synthetic_file("sft"),
        train=synthetic_file("train"),
        test=synthetic_file("test"),
    params:
        args=synthetic_args,
        out_dir=output_dir,
    conda:
        ENV_FILE
    log:
        f"{RES}/logs/data/prepare_synthetic.log",
    benchmark:
        f"{RES}/benchmarks/data/prepare_synthetic.tsv"
    shell:
        "python -m pacs.data prepare-synthetic --out-dir {params.out_dir} {params.args} > {log} 2>&1"


# A checkpoint: the number of generate shards of a benchmark follows from its problem count
# (evaluate.smk, eval.shard); `make fetch` prepares every benchmark file before the GPU jobs.
checkpoint prepare_eval:
    output:
        benchmark_file("{benchmark}"),
    params:
        source=prepare_eval_source_args,
    conda:
        ENV_FILE
    log:
        f"{RES}/logs/data/prepare_eval_{{benchmark}}.log",
    benchmark:
        f"{RES}/benchmarks/data/prepare_eval_{{benchmark}}.tsv"
    shell:
        "python -m pacs.data prepare-eval --benchmark {wildcards.benchmark} {params.source} "
        "--out {output} > {log} 2>&1"
