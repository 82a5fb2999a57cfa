"""The profile: one config as a frozen :class:`Profile` of sections (:mod:`.sections`) and named
runs (:class:`RunSpec`, each with its method spec), and the rules that span sections (what each
engine needs, when a PACS run would be a no-op)."""

from __future__ import annotations

import dataclasses
import math
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from pacs.config.claims_design import claims_problems
from pacs.config.matrix import Matrix
from pacs.config.sections import (
    ClaimsSpec,
    ConfigError,
    DataSpec,
    DiversitySpec,
    EvalSpec,
    LoggingSpec,
    ModelSpec,
    Name,
    PromptSpec,
    SeedsSpec,
    StudySpec,
    TrainSpec,
    VerlSpec,
)
from pacs.methods import METHOD_NAMES, MethodSpec, PositiveInt, Str, spec, spec_class, traits

ABLATIONS = ("main", "beta", "score", "weight", "ref")


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
    """``tiny``: pacs.tiny on a CPU; ``verl``: verl 0.9.1 + the plugin
    (docs/design.md#two-scales-one-dag)."""
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
    """Torch threads per job (two 1-thread jobs beat one 2-thread job:
    docs/design.md#the-tiny-profile)."""
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
    """The claims table of the paper's claims C1-C7 (docs/design.md#the-science-profile); null or
    absent: none."""
    study: StudySpec | None = None
    """The science profile's checkpoint study on the paths task (docs/design.md#the-study-design):
    the hard split and exact path distributions at every saved step; null or absent: none."""
    logging: LoggingSpec = LoggingSpec()
    """Metric writers of both engines (TensorBoard, W&B)."""

    @model_validator(mode="after")
    def _engine_requirements(self):
        problems = [*_run_problems(self), *_engine_problems(self), *_study_problems(self)]
        problems += claims_problems(self)  # the declared families and endpoints exist
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
        return plain_data(dataclasses.asdict(self))


# Run names the results layout already uses (results/<profile>/.../{base,released}) or that
# are not a folder of their own.
RESERVED_RUN_NAMES = (".", "..", "base", "released")


def _nonfinite(obj: Any, where: str):
    """``where.field`` of every float in a spec (nested specs too) that is inf or NaN: YAML's
    ``.inf`` passes a ``> 0`` check, and a ratio, temperature or penalty must be a number."""
    if not dataclasses.is_dataclass(obj):
        return
    for field in dataclasses.fields(obj):
        value = getattr(obj, field.name)
        if isinstance(value, float) and not math.isfinite(value):
            yield f"{where}.{field.name}: must be a finite number, got {value}"
        elif dataclasses.is_dataclass(value):
            yield from _nonfinite(value, f"{where}.{field.name}")


def _method_problems(method: MethodSpec, where: str) -> list[str]:
    return list(_nonfinite(method, where)) + method.knob_problems(where)


def _run_problems(p: Profile) -> list[str]:
    problems = list(_nonfinite(p.train, "train")) + list(_nonfinite(p.eval, "eval"))
    for method_name, method in p.method_defaults.items():
        problems += _method_problems(method, f"method_defaults.{method_name}")
    for name, run in p.runs.items():
        if name in RESERVED_RUN_NAMES:
            problems.append(
                f"runs.{name}: the run name {name!r} collides with the results layout "
                f"(reserved: {', '.join(RESERVED_RUN_NAMES)}); choose another"
            )
        problems += _method_problems(run.method, f"runs.{name}")
        unknown = [m for m in run.models or () if m not in p.models]
        if unknown:
            problems.append(f"runs.{name}.models: {unknown} are not in models ({sorted(p.models)})")
        no_op = _no_op_problem(name, run.method, p.train)
        if no_op:
            problems.append(no_op)
        problems += run.method.budget_problems(f"runs.{name}", p.train)
    return problems


def _no_op_problem(name: str, method: MethodSpec, train: TrainSpec) -> str | None:
    """docs/design.md#when-the-ablations-are-no-ops: a log-ratio loss whose reference equals the
    policy at every update (PACS, REAL) is a no-op."""
    ref = method.reference
    if ref is None or not ref.resets_each_step:
        return None
    if train.mini_batches > 1:
        return None
    return (
        f"runs.{name}: {traits(method).label} with the reference reset every step "
        f"(ref: {ref.mode}) needs "
        "train.mini_batches > 1; with one update per rollout every log-ratio is 0, ψ ≡ 0 and "
        "the β/score ablations are no-ops (docs/design.md#when-the-ablations-are-no-ops)"
    )


TINY_TRAIN_KEYS = ("steps", "eval_problems", "eval_samples")
VERL_TRAIN_KEYS = ("mini_batch_size", "max_prompt_length")


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
    if tiny and p.prompt.system_prompt is not None:
        problems.append("prompt.system_prompt: the tiny engine's prompts have no system turn")
    if not tiny:
        problems += _verl_run_problems(p)
    return problems


def _study_problems(p: Profile) -> list[str]:
    """The checkpoint study needs the tiny engine on the paths task, a hard split inside the SFT
    range, and a held-out pass@1 at every saved step."""
    study = p.study
    if study is None:
        return []
    syn = p.data.synthetic
    if p.engine != "tiny" or syn is None or syn.task != "paths":
        need = "study: needs engine: tiny and data.synthetic.task: paths"
        return [f"{need} (docs/design.md#the-science-profile)"]
    hard, problems = study.hard, []
    if not syn.min_terms <= hard.terms <= syn.max_terms:
        problems.append(
            f"study.hard.terms={hard.terms} is outside data.synthetic's "
            f"{syn.min_terms}..{syn.max_terms} (the hard split stays inside the SFT range)"
        )
    if hard.max_operand > syn.max_operand:
        problems.append(
            f"study.hard.max_operand={hard.max_operand} > data.synthetic.max_operand="
            f"{syn.max_operand} (the hard split stays inside the SFT range)"
        )
    if p.train.eval_every != p.train.save_every:
        problems.append(
            f"study: train.eval_every={p.train.eval_every} must equal train.save_every="
            f"{p.train.save_every}, so every saved policy has its held-out pass@1"
        )
    return problems


def _verl_run_problems(p: Profile) -> list[str]:
    problems = []
    n, micro = p.train.group_size, p.train.micro_batch_per_gpu
    for name, run in p.runs.items():
        scale = run.method.loss_scale_factor(micro)
        if scale > 1 and p.train.max_new_tokens % scale:
            problems.append(
                f"runs.{name}.loss_scale: verl's loss_scale_factor is an integer, "
                f"train.max_new_tokens={p.train.max_new_tokens} / train.micro_batch_per_gpu="
                f"{micro} is not: make max_new_tokens a multiple of micro_batch_per_gpu"
            )
        if not traits(run.method).needs_whole_groups:
            continue
        if micro is not None and micro % n:
            problems.append(
                f"runs.{name}: {traits(run.method).label} keeps groups whole: "
                f"train.micro_batch_per_gpu={micro} must "
                f"be a multiple of train.group_size={n}"
            )
        problems += run.method.verl_problems(f"runs.{name}")
    return problems


def plain_data(obj: Any) -> Any:
    """``obj`` with every tuple a list: what YAML and JSON write."""
    if isinstance(obj, dict):
        return {k: plain_data(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain_data(v) for v in obj]
    return obj
