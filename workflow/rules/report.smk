# Report: every table and figure of the paper, with the paper's numbers beside ours.


rule report:
    input:
        passk=all_passk(),
        train=all_train_summaries(),
        diversity=all_diversity(),
        paths=all_paths(),
        path_exact=all_path_exact(),
    output:
        f"{FIG}/README.md",
    params:
        config=CONFIG_FILE,
        results=results_root,
        out=output_dir,
        settings=report_settings,
    conda:
        ENV_FILE
    log:
        f"{RES}/logs/report.log",
    benchmark:
        f"{RES}/benchmarks/report.tsv"
    shell:
        "python -m pacs.report --config {params.config} --results {params.results} --out {params.out} "
        "> {log} 2>&1"
