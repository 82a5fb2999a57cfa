# Diversity (App. E): embeddings of correct responses, D per method, and the PCA of Fig. 5b (each method centred on its own mean).


rule diversity:
    input:
        graded=diversity_inputs,
        embedder=embedder_download,
    output:
        json=diversity_file("{model}", "{benchmark}"),
        pca=diversity_file("{model}", "{benchmark}", ".pca.csv"),
    params:
        labels=diversity_labels,
        embedder=embedder_arg,
        pca_sample=pca_sample_args,
    conda:
        ENV_FILE
    log:
        f"{RES}/logs/diversity/{{model}}/{{benchmark}}.log",
    benchmark:
        f"{RES}/benchmarks/diversity/{{model}}/{{benchmark}}.tsv"
    threads: THREADS
    shell:
        "python -m pacs.evaluation.diversity --graded {input.graded} --labels {params.labels} "
        "--benchmark {wildcards.benchmark} --embedder {params.embedder} --out-json {output.json} "
        "--out-pca {output.pca} {params.pca_sample} --threads {threads} > {log} 2>&1"
