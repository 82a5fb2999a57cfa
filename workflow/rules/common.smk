# Paths and parameters of the rules, all read from SPEC (the validated pacs.config.Profile that the
# Snakefile built) and MATRIX (its experiment matrix, which the report reads too). Rules get every
# value from these functions (no lambdas); stages get every value as a command-line argument.
import dataclasses
import json
import os
import shlex
from pathlib import Path

from snakemake.logging import logger

from pacs import layout, numerics
from pacs.config import BASE_RUN, OFFLINE_ENV, RELEASED_RUN
from pacs.evaluation.protocol import generate_cli_args
from pacs.layout import EMBEDDER, SYNTHETIC

MATRIX = SPEC.matrix
ENGINE = SPEC.engine
# Every path below comes from pacs.layout, bound here to this profile's results folder.
RES = layout.results_dir(SPEC.profile)
FIG = layout.report_dir(SPEC.profile)
THREADS = SPEC.threads_per_job
EVAL = SPEC.eval
DATA = SPEC.data
MODELS = list(SPEC.models)
RELEASED = dict(EVAL.released)  # Table 1's third-party models: evaluated, never trained
if set(RELEASED) & set(MODELS):  # both name folders under eval/<model>/ and hub/<model>/
    raise WorkflowError(f"eval.released and models share the keys {sorted(set(RELEASED) & set(MODELS))}")
BENCHMARKS = list(DATA.benchmarks)
DIVERSITY_BENCHMARKS = list(DATA.diversity_benchmarks)
# Software environment of every rule (the cluster env; the tiny profile runs in .venv without
# --use-conda, which ignores this).
ENV_FILE = "../../environment.yml"
# The container image every rule runs in under `--sdm apptainer` (envs/gpu/pacs.def, built as
# pacs-gpu.sif at the repo root; PACS_IMAGE names another); without --sdm apptainer it is ignored.
IMAGE = os.environ.get("PACS_IMAGE", "pacs-gpu.sif")


container: IMAGE


# ------------------------------------------------------------------ downloads and offline mode
# Compute nodes may have no internet. Every download happens in a local rule, on the host that
# runs snakemake: benchmark files (prepare_eval), the training set (prepare_train), and each hub
# snapshot a compute job reads (fetch_hub, into RES/hub/<name>): a verl model without a local
# `path`, and a hub embedder. Compute jobs read those folders and run with the hub switched off
# (OFFLINE_ENV), so a forgotten download fails at once instead of hanging. `make fetch` runs
# just the downloads.


def hub_dir(name) -> str:
    return layout.hub_dir(RES, name)


def hub_marker(name) -> str:
    return f"{hub_dir(name)}/fetch.json"


def hub_downloads() -> dict:
    """name -> {repo_id, revision} of every hub snapshot a compute job reads."""
    found = {}
    if ENGINE == "verl":
        for name, model in SPEC.models.items():
            if not model.path:
                found[name] = {"repo_id": model.source, "revision": model.revision}
    for name, model in RELEASED.items():
        if not model.path:
            found[name] = {"repo_id": model.hf_id, "revision": model.revision}
    div = SPEC.diversity
    if DIVERSITY_BENCHMARKS and "/" in div.embedder and not Path(div.embedder).is_dir():
        found[EMBEDDER] = {"repo_id": div.embedder, "revision": div.embedder_revision}
    return found


HUB = hub_downloads()

if workflow.remote_exec:  # a job on a compute node (the slurm executor's sbatch/srun)
    os.environ.update(OFFLINE_ENV)
    logger.info(f"compute job: hub access off ({' '.join(f'{k}={v}' for k, v in OFFLINE_ENV.items())})")


def fetch_args(wildcards) -> str:
    spec = HUB[wildcards.name]
    return f"--repo-id {spec['repo_id']}" + (f" --revision {spec['revision']}" if spec["revision"] else "")


def model_download(wildcards) -> list[str]:
    """The fetch marker of the job's model, when that model comes from the hub."""
    return [hub_marker(wildcards.model)] if wildcards.model in HUB else []


def embedder_download(wildcards=None) -> list[str]:
    return [hub_marker(EMBEDDER)] if EMBEDDER in HUB else []


def embedder_arg(wildcards=None) -> str:
    return hub_dir(EMBEDDER) if EMBEDDER in HUB else SPEC.diversity.embedder


def model_weights(model) -> str:
    """Where a paper-scale or released model's weights are read: its fetched folder, else its
    source."""
    if model in HUB:
        return hub_dir(model)
    return RELEASED[model].source if model in RELEASED else SPEC.models[model].source


def model_path_arg(wildcards) -> str:
    return model_weights(wildcards.model)


def all_downloads() -> list[str]:
    """Everything `make fetch` prepares: hub snapshots, the training set, the benchmark files."""
    files = [hub_marker(name) for name in HUB]
    if ENGINE == "verl":
        files.append(TRAIN_PARQUET)
    return files + [benchmark_file(b) for b in BENCHMARKS]


# ------------------------------------------------------------------ the experiment matrix


def train_dir(model, run, seed) -> str:
    return layout.train_dir(RES, model, run, seed)


def checkpoint_dir(model, run, seed, step) -> str:
    return layout.checkpoint_dir(RES, model, run, seed, step)


def eval_dir(model, run, seed, benchmark) -> str:
    return layout.eval_dir(RES, model, run, seed, benchmark)


def curve_dir(model, run, seed, step, benchmark) -> str:
    return layout.curve_dir(RES, model, run, seed, step, benchmark)


# The rules' wildcard patterns of those folders.
TRAIN_DIR = train_dir("{model}", "{run}", "{seed}")
CHECKPOINT_DIR = checkpoint_dir("{model}", "{run}", "{seed}", "{step}")
EVAL_DIR = eval_dir("{model}", "{run}", "{seed}", "{benchmark}")


def all_passk() -> list[str]:
    files = [f"{eval_dir(m, r, s, b)}/passk.json" for m, r, s in MATRIX.eval_jobs for b in BENCHMARKS]
    files += [f"{eval_dir(*job)}/passk.json" for job in MATRIX.released_jobs]
    return files + [f"{curve_dir(*job)}/passk.json" for job in MATRIX.curve_jobs]


def all_train_summaries() -> list[str]:
    return [f"{train_dir(m, r, s)}/summary.json" for m, r, s in MATRIX.train_jobs]


def diversity_file(model, benchmark, suffix=".json") -> str:
    return layout.diversity_file(RES, model, benchmark, suffix)


def all_diversity() -> list[str]:
    return [diversity_file(m, b) for m in MODELS for b in DIVERSITY_BENCHMARKS]


# The paths task (docs/design.md#the-science-profile): solution paths of correct responses, per evaluated run.
PATHS_TASK = DATA.synthetic is not None and DATA.synthetic.task == "paths"


def paths_benchmarks() -> list[str]:
    """The evaluated benchmarks whose rows are paths-task problems: the synthetic test split and
    the study's hard split (none for other tasks)."""
    if not PATHS_TASK:
        return []
    own = [SYNTHETIC] + ([SPEC.study.hard.benchmark] if SPEC.study else [])
    return [b for b in BENCHMARKS if b in own]


def all_paths() -> list[str]:
    """paths.json of every evaluated run on each paths-task benchmark (none for other tasks)."""
    return [
        f"{eval_dir(m, r, s, b)}/paths.json" for m, r, s in MATRIX.eval_jobs for b in paths_benchmarks()
    ]


def paths_benchmark_input(wildcards) -> str:
    return benchmark_file(wildcards.benchmark)


# The science profile's checkpoint study (docs/design.md#the-study-design): the hard split, and the exact
# path distributions of the base model and of every run at every saved step.


def hard_split_args(wildcards=None) -> str:
    return SPEC.study.hard.cli_args()


def all_path_exact() -> list[str]:
    return [f"{eval_dir(m, r, s, b)}/path_exact.json" for m, r, s, b in MATRIX.exact_jobs]


def path_exact_model_input(wildcards) -> list[str]:
    """The base model after its SFT, or the finished run (its policies/step<k>.pt)."""
    if wildcards.run == BASE_RUN:
        return [f"{base_model_dir(wildcards.model)}/sft_summary.json"]
    return [f"{train_dir(wildcards.model, wildcards.run, wildcards.seed)}/summary.json"]


def path_exact_base_arg(wildcards) -> str:
    """The base model folder: tokenizer and architecture of every scored policy."""
    return base_model_dir(wildcards.model)


def path_exact_checkpoint_args(wildcards) -> str:
    """--checkpoint STEP=PATH of each scored policy: the base (step 0), or a run's snapshots."""
    from pacs.tiny.checkpoint import policy_snapshot_path

    if wildcards.run == BASE_RUN:
        return f"--checkpoint 0={base_model_dir(wildcards.model)}"
    run_dir = train_dir(wildcards.model, wildcards.run, wildcards.seed)
    return " ".join(
        f"--checkpoint {step}={policy_snapshot_path(run_dir, step)}"
        for step in MATRIX.checkpoint_steps
    )


def path_exact_outputs() -> list[str]:
    """One path_exact.json per benchmark of the study, all written by one job per policy set."""
    return [
        f"{eval_dir('{model}', '{run}', '{seed}', b)}/path_exact.json"
        for b in MATRIX.exact_benchmarks
    ]


def path_exact_split_args(wildcards, output) -> str:
    """--split NAME FILE OUT LIMIT per benchmark: the hard split whole, the normal split's first
    exact_normal_problems (or the in-loop eval's count)."""
    normal_limit = SPEC.study.exact_normal_problems or SPEC.train.eval_problems
    return " ".join(
        f"--split {b} {benchmark_file(b)} {out} {normal_limit if b == SYNTHETIC else 'all'}"
        for b, out in zip(MATRIX.exact_benchmarks, output)
    )


def path_exact_args(wildcards) -> str:
    """The prompt switch as generation gets it."""
    return "--enable-thinking" if SPEC.prompt.enable_thinking else "--no-enable-thinking"


def path_exact_settings(wildcards) -> str:
    return _canonical(SPEC.study, SPEC.prompt, MATRIX.checkpoint_steps, SPEC.train.eval_problems)


def tree_job(tree) -> dict:
    """The parts of an evaluation folder below RES: eval/<model>/<run>/seed<s>/<benchmark> or
    curve/<model>/<run>/seed<s>/step<k>/<benchmark> (a checkpoint of the Fig. 3 curve)."""
    return layout.parse_tree(tree)


# ------------------------------------------------------------------ data


def benchmark_file(benchmark) -> str:
    return layout.benchmark_file(RES, benchmark)


def synthetic_file(split) -> str:
    return layout.synthetic_file(RES, split)


TRAIN_PARQUET = layout.train_parquet(RES)  # the RL prompts at paper scale


def prepare_eval_source_args(wildcards) -> str:
    return DATA.prepare_eval_args(wildcards.benchmark)


def synthetic_args(wildcards=None) -> str:
    return DATA.synthetic.cli_args()  # the task's own knobs (arithmetic or paths: docs/design.md#the-science-profile)


def train_source_args(wildcards=None) -> str:
    """DeepScaleR from a local file when data.train_path is set, else the pinned HF dataset;
    overlong prompts are filtered with the first model's tokenizer (App. C: max prompt 1024)."""
    source = f"--source local --path {DATA.train_path}" if DATA.train_path else "--source hf"
    return (f"{source} --tokenizer {model_weights(MODELS[0])} "
            f"--max-prompt-length {SPEC.train.max_prompt_length}{system_prompt_args()}")


def system_prompt_args() -> str:
    """The profile's system turn (prompt.system_prompt) as a flag with a leading space; "" when
    there is none, so the commands stay as they were."""
    system = SPEC.prompt.system_prompt
    return "" if system is None else f" --system-prompt {shlex.quote(system)}"


def train_tokenizer_download(wildcards=None) -> list[str]:
    return [hub_marker(MODELS[0])] if MODELS[0] in HUB else []


def tree_benchmark_input(wildcards) -> str:
    return benchmark_file(tree_job(wildcards.tree)["benchmark"])


# ------------------------------------------------------------------ models


def base_model_dir(model) -> str:
    return layout.model_dir(RES, model, "base")


def init_model_dir(model) -> str:
    return layout.model_dir(RES, model, "init")


INIT_DIR, BASE_DIR = init_model_dir("{model}"), base_model_dir("{model}")


def eval_model_input(wildcards) -> list[str]:
    """What an evaluation waits for: the base model (tiny: the SFT warm-up; paper: its download),
    a finished run, or a merged checkpoint; with verl, also the preflight job (preflight.smk), so
    no GPU job starts before the compute-node checks pass."""
    first = [PREFLIGHT] if ENGINE == "verl" else []
    return first + _eval_model_files(wildcards)


def _eval_model_files(wildcards) -> list[str]:
    job = tree_job(wildcards.tree)
    model, run, seed = job["model"], job["run"], job["seed"]
    if job["kind"] == "curve":
        return [f"{checkpoint_dir(model, run, seed, job['step'])}/config.json"]
    if run == RELEASED_RUN:
        return [hub_marker(model)] if model in HUB else []
    if run == BASE_RUN:
        if ENGINE == "tiny":
            return [f"{base_model_dir(model)}/sft_summary.json"]
        return [hub_marker(model)] if model in HUB else []
    return [f"{train_dir(model, run, seed)}/summary.json"]


def eval_model_arg(wildcards) -> str:
    """Both engines leave a run's final policy as an HF folder `model/` (verl: merged from FSDP)."""
    job = tree_job(wildcards.tree)
    model, run, seed = job["model"], job["run"], job["seed"]
    if job["kind"] == "curve":
        return checkpoint_dir(model, run, seed, job["step"])
    if run == RELEASED_RUN:
        return model_weights(model)
    if run == BASE_RUN:
        return base_model_dir(model) if ENGINE == "tiny" else model_weights(model)
    return f"{train_dir(model, run, seed)}/model"


# ------------------------------------------------------------------ evaluation settings


def generate_args(wildcards=None, n=None) -> str:
    """The profile's evaluation protocol as generate flags (pacs.evaluation.protocol: the same
    spelling `make eval` uses)."""
    return generate_cli_args(EVAL, SPEC.prompt.enable_thinking, n)


def released_prompt_args(wildcards) -> str:
    """A released model's documented prompt format as generate flags, with a leading space; for
    our own runs the profile's system turn ("" when it has none, so the commands stay as they
    were)."""
    job = tree_job(wildcards.tree)
    if job["run"] != RELEASED_RUN:
        return system_prompt_args()
    model = RELEASED[job["model"]]
    flags = ""
    if model.enable_thinking is not None:
        flags += " --enable-thinking" if model.enable_thinking else " --no-enable-thinking"
    if model.system_prompt is not None:
        flags += f" --system-prompt {shlex.quote(model.system_prompt)}"
    if model.chat_template is not None:
        flags += f" --chat-template {shlex.quote(model.chat_template)}"
    return flags


def passk_args(wildcards) -> str:
    job = tree_job(wildcards.tree)
    return (
        f"--benchmark {job['benchmark']} --model {job['model']} --run {job['run']} "
        f"--seed {job['seed']} --bootstrap {EVAL.bootstrap}"
    )


def diversity_inputs(wildcards) -> list[str]:
    return [
        f"{eval_dir(wildcards.model, run, seed, wildcards.benchmark)}/graded.jsonl"
        for run, seed in MATRIX.diversity_runs(wildcards.model)
    ]


def pca_sample_args(wildcards=None) -> str:
    """Fig. 5b's problem sample: a seeded random subset shared by all methods, or every problem."""
    div = SPEC.diversity
    sample = "" if div.pca_problems is None else f"--pca-problems {div.pca_problems} "
    return f"{sample}--pca-seed {div.pca_seed}"


def diversity_labels(wildcards) -> str:
    return " ".join(run for run, _ in MATRIX.diversity_runs(wildcards.model))


def verl_nodes(wildcards) -> int:
    """Nodes for one verl training run: runs.<r>.nnodes, else models.<m>.nnodes."""
    return SPEC.nodes(wildcards.run, wildcards.model)


def output_dir(wildcards, output) -> str:
    """The folder of a rule's first output: stages that write a folder get it from here."""
    return str(Path(output[0]).parent)


def input_dir(wildcards, input) -> str:
    """The folder of a rule's first input."""
    return str(Path(input[0]).parent)


def results_root(wildcards) -> str:
    return RES


# ------------------------------------------------------------------ provenance
# Stages read their settings from CONFIG_FILE, which is deliberately not an input (any edit would
# rerun everything). Instead each job records the spec values it depends on in a `settings` param;
# Snakemake reruns a job when its params change, so editing e.g. models.tiny.sft.steps reruns the
# SFT and everything downstream of it, and nothing else.


def _canonical(*values) -> str:
    plain = [dataclasses.asdict(v) if dataclasses.is_dataclass(v) else v for v in values]
    return json.dumps(plain, sort_keys=True, separators=(",", ":"))


def build_settings(wildcards) -> str:
    return _canonical(SPEC.models[wildcards.model].build, DATA.synthetic)


def sft_settings(wildcards) -> str:
    held_out = {"eval_problems": SPEC.train.eval_problems, "eval_samples": SPEC.train.eval_samples}
    # The numerics setting the Snakefile gave the jobs (pacs.numerics): switching it reruns the
    # SFT and everything after it. Named only when portable: native params are as before.
    portable = numerics.setting() == numerics.PORTABLE
    return _canonical(SPEC.models[wildcards.model].sft, EVAL, held_out, *(["portable"] * portable))


def train_settings(wildcards) -> str:
    run = SPEC.runs[wildcards.run]
    return _canonical(run.method, SPEC.train, EVAL, SPEC.models[wildcards.model])


def report_settings(wildcards) -> str:
    """The report reads the whole config (runs, labels, models, mini-batch note)."""
    return _canonical(SPEC)
