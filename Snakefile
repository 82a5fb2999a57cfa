# PACS reproduction: one DAG, two scales.
#   snakemake --cores 2              tiny profile (configs/default.yaml) on a CPU
#   snakemake --profile slurm        paper profile (configs/paper.yaml) on a SLURM GPU cluster
#   snakemake --cores 2 --configfile configs/smoke.yaml    the CI-sized run
from snakemake.exceptions import WorkflowError
from snakemake.logging import logger
from snakemake.utils import min_version, update_config

from pacs import layout, numerics
from pacs.config import ConfigError, parse_profile, typed_cli_overrides, write_snapshot

min_version("9.0")

# Every rule's shell keeps Snakemake's own stdout as descriptor 3 before the rule sends its output
# to its log: the stages' progress lines (pacs.progress.ConsoleBar) reach the person who started
# the run there, with or without a terminal. Snakemake's default prefix is kept before it.
shell.prefix("set -euo pipefail; exec 3>&1; export PACS_CONSOLE_FD=3; ")


# The tiny profile is the default. A --configfile (or a profile's `configfile:`) REPLACES it:
# Snakemake would otherwise deep-merge the two, and the tiny model and runs would leak into the
# paper DAG.
if not workflow.overwrite_configfiles:

    configfile: "configs/default.yaml"


# A nested `--config` value reaches us as a string ('151'); typed as a top-level one would be.
update_config(config, typed_cli_overrides(workflow.config_settings.config))

# The config is validated once, into the typed spec every rule's parameters come from
# (pacs.config: a bad key or value fails here, naming the file and the key path).
try:
    SPEC = parse_profile(config, source=", ".join(map(str, workflow.configfiles)) or "config")
except ConfigError as err:
    raise WorkflowError(str(err)) from None
# The CPU engine's profiles compute on one arithmetic path on every x86-64 CPU with AVX2
# (pacs.numerics; PACS_PORTABLE_NUMERICS=0 turns it off) with OpenMP waiting passively: set here,
# before any job starts, so every job (local, or SLURM's, which re-reads this file) inherits it.
if SPEC.engine == "tiny":
    try:
        numerics.apply()
    except ValueError as err:
        raise WorkflowError(str(err)) from None
# The merged config (profile file + --config overrides), as the stages' --config file. Not an
# input (any edit would rerun everything): each rule's `settings` param records what it depends
# on. Written only when its content changes and never by a dry run, so a `-n` with other
# settings cannot change what running jobs read.
CONFIG_FILE = write_snapshot(
    config,
    layout.config_snapshot(layout.results_dir(SPEC.profile)),
    dry_run=workflow.output_settings.dryrun,
)


include: "workflow/rules/common.smk"
include: "workflow/rules/shards.smk"


# Paper scale through the SLURM executors (src/pacs/slurm_profile.py): the jobstep plugin's srun
# keeps SLURM_CONF; on a cluster without accounting, job states come from squeue (or we stop and
# say what to set); a cancelled or preempted job fails its rule (sacct's "CANCELLED by <uid>" is
# no state the executor knows); a job that waits for a reason other than its turn is named in the log.
from pacs.slurm_profile import (
    PendingWatch,
    check_status_command,
    keep_slurm_config_in_jobsteps,
    read_ended_states,
)

if workflow.remote_exec:
    keep_slurm_config_in_jobsteps()


onstart:
    if getattr(workflow.executor_plugin, "cli_prefix", None) == "slurm":
        check_status_command(workflow.executor_settings)
        read_ended_states(workflow.executor_settings)
        # a job that cannot start (a dead node...) is named with squeue's pending reason
        PendingWatch(os.getcwd(), logger.warning).start()


wildcard_constraints:
    model=r"[A-Za-z0-9_.-]+",
    run=r"[A-Za-z0-9_.-]+",
    seed=r"\d+",
    step=r"\d+",
    benchmark=r"[A-Za-z0-9_.-]+",


include: "workflow/rules/preflight.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/diversity.smk"
include: "workflow/rules/paths.smk"
include: "workflow/rules/report.smk"


localrules:
    all,
    prepare_synthetic,
    prepare_eval,
    passk,
    paths,
    report,


rule all:
    input:
        f"{FIG}/README.md",
