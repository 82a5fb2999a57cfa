# Preflight (verl engine only): `python -m pacs.preflight` as the first job on a compute node,
# with the resources of a training job, so a missing package, snapshot, partition setting, GPU,
# disk or sandbox layer fails in minutes instead of after a queue wait. Every training job
# depends on it. `make preflight` runs the same checks on the login node.
import yaml as _yaml

PREFLIGHT = f"{RES}/preflight/compute_node.txt"
SLURM_PROFILE = str(Path(workflow.current_basedir).parent / "profiles" / "slurm" / "config.yaml")


def _train_node_resources() -> dict:
    """The SLURM profile's per-node request of train_verl (gres, CPUs, memory)."""
    with open(SLURM_PROFILE) as fh:
        train = ((_yaml.safe_load(fh) or {}).get("set-resources") or {}).get("train_verl") or {}
    return {k: train[k] for k in ("gres", "cpus_per_task", "mem_mb") if k in train}


if ENGINE == "verl":

    rule preflight:
        output:
            PREFLIGHT,
        params:
            config=CONFIG_FILE,
            profile=SLURM_PROFILE,
            results=RES,
        conda:
            ENV_FILE
        log:
            f"{RES}/logs/preflight.log",
        resources:
            runtime=30,
            **_train_node_resources(),
        shell:
            "python -m pacs.preflight --config {params.config} --profile {params.profile} "
            "--results {params.results} --out {output} > {log} 2>&1"
