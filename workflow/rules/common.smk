# Shared names and parameter helpers. Rules get every value from these functions (no lambdas),
# and stages get every value as a command-line argument: src/ never reads Snakemake's config.
import json
import os
import tempfile
from pathlib import Path

import yaml

from snakemake.logging import logger

from pacs.config import OFFLINE_ENV, enable_thinking, model_source, resolve_run, seeds_for

PROFILE = config["profile"]
ENGINE = config["engine"]
RES = f"results/{PROFILE}"
FIG = f"paper_figures/{PROFILE}"
THREADS = int(config.get("threads_per_job", 1))
EVAL = config["eval"]
DATA = config["data"]
MODELS = list(config["models"])
RUNS = {name: resolve_run(config, name) for name in config["runs"]}
BENCHMARKS = list(DATA["benchmarks"])
DIVERSITY_BENCHMARKS = list(DATA.get("diversity_benchmarks", []))
SYNTHETIC = "synthetic"


# ------------------------------------------------------------------ downloads and offline mode
# Compute nodes may have no internet. Every download happens in a local rule, on the host that
# runs snakemake: benchmark files (prepare_eval), the training set (prepare_train), and each hub
# snapshot a compute job reads (fetch_hub): a verl model without a local `path` is fetched into
# RES/hub/<model>, which then becomes its `path`, and a hub embedder likewise. Compute jobs thus
# read local files only and run with the hub switched off (OFFLINE_ENV), so a forgotten download
# fails at once instead of hanging. `make fetch` runs just the downloads.
EMBEDDER = "diversity-embedder"


def hub_dir(name) -> str:
    return f"{RES}/hub/{name}"


def hub_marker(name) -> str:
    return f"{hub_dir(name)}/fetch.json"


def hub_downloads() -> dict:
    """name -> {repo_id, revision} of every hub snapshot a compute job reads."""
    found = {}
    if ENGINE == "verl":
        for model, spec in config["models"].items():
            if not spec.get("path"):
                found[model] = {"repo_id": model_source(spec), "revision": spec.get("revision")}
    embedder = config["diversity"]["embedder"]
    if DIVERSITY_BENCHMARKS and "/" in embedder and not Path(embedder).is_dir():
        found[EMBEDDER] = {
            "repo_id": embedder, "revision": config["diversity"].get("embedder_revision")
        }
    return found


HUB = hub_downloads()
for _model in MODELS:
    if _model in HUB:
        config["models"][_model]["path"] = hub_dir(_model)  # what training and evaluation read

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
    return hub_dir(EMBEDDER) if EMBEDDER in HUB else config["diversity"]["embedder"]


def all_downloads() -> list[str]:
    """Everything `make fetch` prepares: hub snapshots, the training set, the benchmark files."""
    files = [hub_marker(name) for name in HUB]
    if ENGINE == "verl":
        files.append(f"{RES}/data/train.parquet")
    return files + [benchmark_file(b) for b in BENCHMARKS]


def write_resolved_config() -> str:
    """The merged config (profile file + --config overrides) as the stages' --config file.

    Rewritten only when its content changes, and never by a dry run, so a `-n` with other
    settings cannot change what running jobs read. Its path is stable on purpose: it is a param of
    many rules, and the per-rule `settings` params below decide what reruns.
    """
    path = Path(RES) / "config.yaml"
    text = yaml.safe_dump(dict(config), sort_keys=False)
    if workflow.output_settings.dryrun or (path.exists() and path.read_text() == text):
        return str(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)
    return str(path)


CONFIG_FILE = write_resolved_config()


# ------------------------------------------------------------------ the experiment matrix


def run_models(run: str) -> list[str]:
    return [m for m in RUNS[run].get("models", MODELS) if m in MODELS]


def train_jobs() -> list[tuple[str, str, int]]:
    """(model, run, seed) for every training run: models × runs × the run's seeds."""
    return [
        (model, run, seed)
        for run in RUNS
        for model in run_models(run)
        for seed in seeds_for(config, RUNS[run])
    ]


def eval_jobs() -> list[tuple[str, str, int]]:
    """Every trained model plus each base model (run 'base', seed 0)."""
    return [(model, "base", 0) for model in MODELS] + train_jobs()


def train_dir(model, run, seed) -> str:
    return f"{RES}/train/{model}/{run}/seed{seed}"


def eval_dir(model, run, seed, benchmark) -> str:
    return f"{RES}/eval/{model}/{run}/seed{seed}/{benchmark}"


def curve_steps(model) -> list[int]:
    """Paper scale: checkpoint steps evaluated for Fig. 3 (every eval.curve_every steps)."""
    every = EVAL.get("curve_every")
    if ENGINE != "verl" or not every:
        return []
    return list(range(every, int(config["models"][model]["steps"]) + 1, every))


def all_passk() -> list[str]:
    files = [f"{eval_dir(m, r, s, b)}/passk.json" for m, r, s in eval_jobs() for b in BENCHMARKS]
    for m, r, s in train_jobs():
        for step in curve_steps(m):
            for b in EVAL.get("curve_benchmarks", []):
                files.append(f"{RES}/curve/{m}/{r}/seed{s}/step{step}/{b}/passk.json")
    return files


def all_train_summaries() -> list[str]:
    return [f"{train_dir(m, r, s)}/summary.json" for m, r, s in train_jobs()]


def all_diversity() -> list[str]:
    return [f"{RES}/diversity/{m}/{b}.json" for m in MODELS for b in DIVERSITY_BENCHMARKS]


# ------------------------------------------------------------------ data


def benchmark_file(benchmark) -> str:
    if benchmark == SYNTHETIC:
        return f"{RES}/data/synthetic/test.jsonl"
    return f"{RES}/data/eval/{benchmark}.jsonl"


def prepare_eval_source_args(wildcards) -> str:
    """`--source local --path P` when config gives a local file, else the pinned HF source.

    data.revisions.<benchmark> overrides (or supplies, for amc23 and gpqa) the HF revision;
    data.livecodebench_window: {start, end} or "all" replaces the paper's 2024-07-01..2025-01-01.
    """
    benchmark = wildcards.benchmark
    local = (DATA.get("benchmark_paths") or {}).get(benchmark)
    args = f"--source local --path {local}" if local else "--source hf"
    revision = (DATA.get("revisions") or {}).get(benchmark)
    if revision and not local:
        args += f" --revision {revision}"
    window = DATA.get("livecodebench_window")
    if benchmark == "livecodebench" and window == "all":
        args += " --all-dates"
    elif benchmark == "livecodebench" and window:
        args += f" --start-date {window['start']} --end-date {window['end']}"
    return args


def synthetic_args(wildcards=None) -> str:
    s = DATA["synthetic"]
    if s.get("task", "arithmetic") == "paths":  # the many-paths task (docs/design.md §8)
        return (
            f"--task paths --seed {s['seed']} --n-sft {s['n_sft']} --n-train {s['n_train']} "
            f"--n-test {s['n_test']} --min-terms {s['min_terms']} --max-terms {s['max_terms']} "
            f"--max-operand {s['max_operand']}"
        )
    return (
        f"--seed {s['seed']} --n-sft {s['n_sft']} --n-train {s['n_train']} --n-test {s['n_test']} "
        f"--min-steps {s['min_steps']} --max-steps {s['max_steps']} --max-operand {s['max_operand']}"
    )


# ------------------------------------------------------------------ models


def base_model_dir(model) -> str:
    return f"{RES}/models/{model}/base"


def base_model_arg(model) -> str:
    """Tiny: the SFT warm-up folder; paper: the base model's local folder (models.<m>.path, or
    the one fetch_hub fills)."""
    if ENGINE == "tiny":
        return base_model_dir(model)
    return model_source(config["models"][model])


def trained_model_dir(model, run, seed) -> str:
    """Both engines leave the final policy as an HF folder `model/` (verl: merged from FSDP)."""
    return f"{train_dir(model, run, seed)}/model"


def eval_model_input(wildcards) -> list[str]:
    if wildcards.run == "base":
        if ENGINE == "tiny":
            return [f"{base_model_dir(wildcards.model)}/sft_summary.json"]
        return model_download(wildcards)
    return [f"{train_dir(wildcards.model, wildcards.run, wildcards.seed)}/summary.json"]


def eval_model_arg(wildcards) -> str:
    if wildcards.run == "base":
        return base_model_arg(wildcards.model)
    return trained_model_dir(wildcards.model, wildcards.run, wildcards.seed)


def curve_model_arg(wildcards) -> str:
    return f"{train_dir(wildcards.model, wildcards.run, wildcards.seed)}/step{wildcards.step}/hf"


# ------------------------------------------------------------------ evaluation settings


def generate_args(wildcards=None) -> str:
    args = (
        f"--backend {EVAL['backend']} --n {EVAL['n_samples']} --temperature {EVAL['temperature']} "
        f"--top-p {EVAL['top_p']} --max-new-tokens {EVAL['max_new_tokens']} --seed {EVAL['seed']}"
    )
    if EVAL.get("limit"):
        args += f" --limit {EVAL['limit']}"
    # The same chat-template switch as training (verl data.apply_chat_template_kwargs).
    return args + (" --enable-thinking" if enable_thinking(config) else " --no-enable-thinking")


def passk_args(wildcards) -> str:
    return (
        f"--benchmark {wildcards.benchmark} --model {wildcards.model} --run {wildcards.run} "
        f"--seed {wildcards.seed} --bootstrap {EVAL.get('bootstrap', 1000)}"
    )


def diversity_runs(model) -> list[tuple[str, int]]:
    """Base and the main runs (first seed each): Table 3 and the Fig. 5b PCA."""
    runs = [("base", 0)]
    for run, spec in RUNS.items():
        if spec.get("ablation", "main") == "main" and model in run_models(run):
            runs.append((run, seeds_for(config, spec)[0]))
    return runs


def diversity_inputs(wildcards) -> list[str]:
    return [
        f"{eval_dir(wildcards.model, run, seed, wildcards.benchmark)}/graded.jsonl"
        for run, seed in diversity_runs(wildcards.model)
    ]


def pca_sample_args(wildcards=None) -> str:
    """Fig. 5b's problem sample: a seeded random subset shared by all methods, or every problem."""
    div = config["diversity"]
    n = div.get("pca_problems")
    sample = "" if n is None else f"--pca-problems {int(n)} "
    return f"{sample}--pca-seed {int(div.get('pca_seed', 0))}"


def diversity_labels(wildcards) -> str:
    return " ".join(run for run, _ in diversity_runs(wildcards.model))


def train_source_args(wildcards=None) -> str:
    """DeepScaleR from a local file when data.train_path is set, else the pinned HF dataset;
    overlong prompts are filtered with the first model's tokenizer (App. C: max prompt 1024)."""
    tokenizer = model_source(config["models"][MODELS[0]])
    source = f"--source local --path {DATA['train_path']}" if DATA.get("train_path") else "--source hf"
    return f"{source} --tokenizer {tokenizer} --max-prompt-length {config['train']['max_prompt_length']}"


def train_tokenizer_download(wildcards=None) -> list[str]:
    return [hub_marker(MODELS[0])] if MODELS[0] in HUB else []


def benchmark_input(wildcards) -> str:
    return benchmark_file(wildcards.benchmark)


def tree_benchmark_input(wildcards) -> str:
    """The benchmark of an eval/... or curve/... folder is its last path component."""
    return benchmark_file(Path(wildcards.tree).name)


def verl_nodes(wildcards) -> int:
    """Nodes for one verl training run: runs.<r>.nnodes, else models.<m>.nnodes, else 1."""
    run = RUNS[wildcards.run]
    return int(run.get("nnodes") or config["models"][wildcards.model].get("nnodes", 1))


# Software environment of every rule (the cluster env; the tiny profile runs in .venv without
# --use-conda, which ignores this).
ENV_FILE = "../../environment.yml"


def output_dir(wildcards, output) -> str:
    """The folder of a rule's first output: stages that write a folder get it from here."""
    return str(Path(output[0]).parent)


def input_dir(wildcards, input) -> str:
    """The folder of a rule's first input."""
    return str(Path(input[0]).parent)


# ------------------------------------------------------------------ provenance
# Stages read their settings from CONFIG_FILE, which is deliberately not an input (any edit would
# rerun everything). Instead each job records the settings it depends on in a `settings` param;
# Snakemake reruns a job when its params change, so editing e.g. models.tiny.sft.steps reruns the
# SFT and everything downstream of it, and nothing else.


def _canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def build_settings(wildcards) -> str:
    model = config["models"][wildcards.model]
    return _canonical({"build": model.get("build"), "data": DATA.get("synthetic")})


def sft_settings(wildcards) -> str:
    return _canonical({"sft": config["models"][wildcards.model].get("sft"), "eval": EVAL})


def train_settings(wildcards) -> str:
    return _canonical({"run": RUNS[wildcards.run], "train": config["train"], "eval": EVAL,
                       "model": config["models"][wildcards.model]})


def results_root(wildcards) -> str:
    return RES


def report_settings(wildcards) -> str:
    """The report reads the whole config (runs, labels, models, mini-batch note)."""
    return _canonical(dict(config))
