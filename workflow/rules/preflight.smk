# Preflight (verl engine only): `python -m pacs.preflight` as the first job on a compute node,
# with the resources of a training job, so a missing package, snapshot, partition setting, GPU,
# disk or sandbox layer fails in minutes instead of after a queue wait. Every training job
# depends on it. It checks the resources this Snakemake submits with (the active profile and
# --set-resources, not a profile file). `make preflight` runs the same checks on the login node.
# Helpers: shards.smk.
if ENGINE == "verl":

    rule preflight:
        output:
            PREFLIGHT,
        params:
            config=CONFIG_FILE,
            resources=preflight_resources_arg,
            results=RES,
        conda:
            ENV_FILE
        log:
            f"{RES}/logs/preflight.log",
        resources:
            runtime=30,
            **_train_node_resources(),
        shell:
            "python -m pacs.preflight --config {params.config} --resources {params.resources:q} "
            "--results {params.results} --out {output} > {log} 2>&1"
