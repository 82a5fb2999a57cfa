"""The training methods as typed specs, and the dispatch tables that give each method its branches.

A run's ``method:`` in a profile config becomes one frozen spec object (:class:`PacsSpec`,
:class:`GrpoSpec` or :class:`PpoSpec`) holding every knob of that method, each default stated once
below with where it comes from. Both engines, the verl loss config and the report read these
objects; nothing else states a method default.

Adding a method: write its spec class here and list it in :data:`METHOD_SPECS`, then add its
branch to every :class:`MethodTable` (the test ``tests/config/test_methods.py`` names each table
that lacks one). docs/design.md#the-run-spec lists the places.

Pure Python (pydantic, no torch), so the Snakefile can import it cheaply.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar, Union

from pydantic import (
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_validator,
)
from pydantic.dataclasses import dataclass as pydantic_dataclass

from pacs.loss_modes import LOSS_AGG_MODES, SCORE_METHODS

# Every spec class: unknown keys are errors, values are not coerced across types (a YAML string
# is not a number, an int is not a bool), attribute docstrings document the field.
SPEC_CONFIG = ConfigDict(extra="forbid", use_attribute_docstrings=True)


def spec(cls):
    """Decorator: a frozen, keyword-only, validated dataclass (pydantic's dataclass)."""
    return pydantic_dataclass(frozen=True, kw_only=True, config=SPEC_CONFIG)(cls)


Bool = StrictBool
Int = StrictInt
Str = StrictStr
Float = StrictFloat  # accepts an int (1 -> 1.0), refuses a string or a bool
PositiveFloat = Annotated[StrictFloat, Field(gt=0)]
NonNegativeFloat = Annotated[StrictFloat, Field(ge=0)]
UnitFloat = Annotated[StrictFloat, Field(ge=0, le=1)]
PositiveInt = Annotated[StrictInt, Field(ge=1)]
DualClip = Annotated[StrictFloat, Field(gt=1, le=100)] | None  # verl asserts c > 1; null: no cap
GradClip = Annotated[StrictFloat, Field(gt=0)] | None  # a max gradient norm; null: no clipping
NonNegativeInt = Annotated[StrictInt, Field(ge=0)]
# Ranges that mean something (issue 47: 1e308, 1e-300 and 1e9 loaded); the error names the bound.
# ClipRatio: ε of [1 - ε, 1 + ε], a ratio within [0, 2]; Scale: τ, a scale of log-ratios (β:
# at most 1e3, above 0 as before).
ClipRatio = Annotated[StrictFloat, Field(gt=0, le=1, allow_inf_nan=False)]
Scale = Annotated[StrictFloat, Field(ge=1e-3, le=1e3, allow_inf_nan=False)]
LearningRate = Annotated[StrictFloat, Field(gt=0, le=1, allow_inf_nan=False)]
GenRounds = Annotated[StrictInt, Field(ge=1, le=64)]  # generation rounds per step
Beta = Annotated[StrictFloat, Field(gt=0, le=1e3, allow_inf_nan=False)]

# The loss code's modes (SCORE_METHODS, LOSS_AGG_MODES) come from pacs.loss_modes.
REF_MODES = ("rollout", "periodic", "fixed")
SUM_NORM = "seq-mean-token-sum-norm"
# How seq-mean-token-sum-norm's sequence sum is averaged (GrpoSpec.loss_scale).
LOSS_SCALES = ("micro_batch_sum", "sequence_mean")


# ------------------------------------------------------------------------------ the reference


@dataclasses.dataclass(frozen=True)
class RefSchedule:
    """When PACS's reference model is reset to the policy (docs/design.md#the-reference-model).

    ``rollout``: the reference is the policy that generated the batch (no model of its own);
    ``periodic``: a reference model hard-reset to the actor, optimizer re-initialised, every
    ``every`` steps; ``fixed``: the initial model, never reset.
    """

    mode: str = "rollout"
    every: int = 1

    @property
    def needs_model(self) -> bool:
        """``rollout`` reuses the rollout log-probs; the other modes keep a reference model."""
        return self.mode != "rollout"

    @property
    def resets_each_step(self) -> bool:
        """The reference equals the policy at the start of every step (so with one update per
        rollout every log-ratio is 0: docs/design.md#when-the-ablations-are-no-ops)."""
        return self.mode == "rollout" or (self.mode == "periodic" and self.every == 1)

    def reset_due(self, step: int) -> bool:
        """Whether the reference is reset at the start of step ``step`` (steps count from 1).

        Step 1 never resets: the reference was just built from the policy's own weights and
        the optimizer is fresh. Then steps 1 + K, 1 + 2K, ... do.
        """
        return self.mode == "periodic" and step > 1 and (step - 1) % self.every == 0


# ------------------------------------------------------------------------------ method traits

OBJECTIVES = ("classification", "policy_gradient")


@dataclasses.dataclass(frozen=True)
class MethodTraits:
    """What the code outside this module may know about a method: data, never its name.

    Every site that behaves differently per method reads one of these (the preflight's disk
    estimate, the loss panel, the claims table, the config checks, the verl launcher); a method
    spec states them once as its ``TRAITS`` (docs/design.md#the-run-spec).
    """

    label: str
    """How tables and figures name the method (``PACS``)."""
    objective: Literal[OBJECTIVES]
    """``classification``: a loss on a per-response logit against the 0/1 label (PACS, REAL);
    ``policy_gradient``: a clipped surrogate on advantages (GRPO, PPO, DAPO)."""
    loss_title: str
    """What its ``loss`` metric is, for the notebook's loss panel (one panel per title)."""
    has_critic: bool = False
    """Keeps a value model (its checkpoints count in the preflight's disk estimate)."""
    needs_whole_groups: bool = False
    """Its loss reads each prompt's n responses together, so every micro-batch must hold whole
    groups (verl: the ``label_sync`` trainer)."""
    loss_panel_metrics: tuple[str, ...] = ("loss",)
    """metrics.jsonl columns the notebook's loss panel draws for it."""
    loss_reference: float | None = None
    """A level the loss panel marks (PACS's BCE is ln 2 at ψ = 0), or none."""


def traits(method: Any) -> MethodTraits:
    """The traits of a method: a spec, a spec class or a method name (``"pacs"``)."""
    cls = spec_class(method) if isinstance(method, str) else method
    cls = cls if isinstance(cls, type) else type(cls)
    return cls.TRAITS


def methods_with(**wanted: Any) -> tuple[str, ...]:
    """Names of the methods whose traits have these values (``methods_with(has_critic=True)``)."""
    return tuple(
        name
        for name in METHOD_NAMES
        if all(getattr(traits(name), k) == v for k, v in wanted.items())
    )


# ------------------------------------------------------------------------------ method specs


class SpecChecks:
    """What a spec says about the rest of a profile, as problems (empty: none). A method checks
    its own knobs here, so the config code never asks for a method's name or field."""

    def knob_problems(self, where: str) -> list[str]:
        """Problems of the spec's knobs together (``where``: the spec's place in the config)."""
        return []

    def budget_problems(self, where: str, train: Any) -> list[str]:
        """Problems of the spec against the profile's ``train:`` section (its response limit
        ``max_new_tokens``, its ``micro_batch_per_gpu``)."""
        return []

    @property
    def loss_agg_mode_used(self) -> str | None:
        """verl's name of how its token losses become one number; None: one term per response
        or group (PACS, REAL)."""
        return getattr(self, "loss_agg_mode", None)

    def loss_scale_factor(self, micro_batch_per_gpu: int | None) -> int:
        """The factor on verl 0.9.1's aggregation that gives the loss this spec asks for (1:
        verl 0.9.1's own)."""
        return 1

    def verl_problems(self, where: str) -> list[str]:
        """What the verl engine cannot run of this spec."""
        return []


@spec
class PacsSpec(SpecChecks):
    """PACS (paper §3): class-balanced BCE between σ(score) and the verifier's label."""

    TRAITS: ClassVar[MethodTraits] = MethodTraits(
        label="PACS",
        objective="classification",
        loss_title="PACS: class-balanced BCE",
        needs_whole_groups=True,
        loss_reference=math.log(2),
    )
    name: Literal["pacs"] = "pacs"
    beta: Beta = 1.0
    """β of the reward proxy r̂ = β·Σ_t log(π/π_ref) (paper eq. 7); β = 1 is the paper's choice
    (§4.3, Fig. 4)."""
    score: Literal[SCORE_METHODS] = "rloo"
    """How r̂ becomes the logit ψ within a group: the leave-one-out advantage (paper eq. 6); App.
    D.3 ablates ``grpo`` (z-score) and ``drgrpo`` (mean-centred) (docs/design.md#score)."""
    use_weight: Bool = True
    """Class-balanced weights within each group (paper §3.5, official ``weight_mode=question``);
    false is the 'w/o weight' ablation of Tables 2 and 6 (docs/design.md#class-balanced-weights)."""
    ref: Literal[REF_MODES] = "rollout"
    """The reference model: the rollout policy (the official code's ``old_log_prob``, a reset
    every step), ``periodic`` or ``fixed`` (docs/design.md#the-reference-model)."""
    ref_reset_every: PositiveInt | None = None
    """``ref: periodic`` only, and required there: reset the reference every K steps (the
    paper's text: 'periodically hard-reset'; docs/design.md#the-reference-model)."""
    soft_labels: Bool = False
    """Use the verifier's score in [0, 1] as the BCE label instead of score ≥ 0.5
    (docs/design.md#soft-labels); the tiny engine only."""
    grad_clip: GradClip = None
    """Max gradient norm of the actor's update; null: no clipping, as the official actor, whose
    ``_optimizer_step`` steps without clipping (its config's ``grad_clip: 1.0`` is never read).
    configs/overlays/pacs_clipped.yaml sets 1.0 (docs/design.md#gradient-clipping)."""

    @model_validator(mode="after")
    def _reset_period_goes_with_periodic(self):
        if self.ref == "periodic" and self.ref_reset_every is None:
            raise ValueError("ref: periodic needs ref_reset_every (the reset period K, in steps)")
        if self.ref != "periodic" and self.ref_reset_every is not None:
            raise ValueError(
                f"ref_reset_every is set but ref is {self.ref!r}, which never resets; "
                "use ref: periodic or remove ref_reset_every"
            )
        return self

    @property
    def reference(self) -> RefSchedule:
        return RefSchedule(self.ref, self.ref_reset_every or 1)

    def verl_problems(self, where: str) -> list[str]:
        if not self.soft_labels:
            return []
        return [
            (
                f"{where}.soft_labels: the verl engine carries 0/1 labels only "
                "(docs/design.md#soft-labels); soft labels are supported by the tiny engine only"
            )
        ]


class ClippedSurrogate(SpecChecks):
    """What the PPO-clip methods (GRPO, PPO, DAPO) share: no reference model in their loss, a
    clip range and a dual-clip cap (``clip_ratio_c``, docs/design.md#ppo-and-grpo)."""

    @property
    def clip_range(self) -> tuple[float, float]:
        """(ε_low, ε_high) of the clip range [1 − ε_low, 1 + ε_high]: symmetric here."""
        return (self.clip_ratio, self.clip_ratio)

    @property
    def reference(self) -> RefSchedule | None:
        """No log-ratio to a reference in its loss (the clip ratio is to the rollout policy)."""
        return None

    def loss_scale_factor(self, micro_batch_per_gpu: int | None) -> int:
        """``micro_batch_per_gpu`` under ``loss_scale: micro_batch_sum`` with
        ``seq-mean-token-sum-norm`` (verl 0.3.1's sum over a micro-batch's sequences), else 1."""
        sums = getattr(self, "loss_scale", "sequence_mean") == "micro_batch_sum"
        if sums and self.loss_agg_mode == SUM_NORM and micro_batch_per_gpu:
            return micro_batch_per_gpu
        return 1


@spec
class GrpoSpec(ClippedSurrogate):
    """GRPO baseline (paper App. B): group-normalised outcome advantage, PPO-clip loss, no KL."""

    TRAITS: ClassVar[MethodTraits] = MethodTraits(
        label="GRPO",
        objective="policy_gradient",
        loss_title="GRPO / PPO / DAPO: clipped surrogate",
    )
    name: Literal["grpo"] = "grpo"
    loss_agg_mode: Literal[LOSS_AGG_MODES] = "seq-mean-token-sum-norm"
    """How token losses become one number; the official GRPO/PPO scripts used
    ``seq-mean-token-sum-norm`` (docs/design.md#ppo-and-grpo); ``token-mean`` is vanilla."""
    clip_ratio: ClipRatio = 0.2
    """PPO-clip ε (App. B; verl's default)."""
    clip_ratio_c: DualClip = 3.0
    """Dual-clip cap (Ye et al. 2020, arXiv 1912.09729): for A < 0 the token loss is at most
    −A·c. verl's default 3.0, which the official scripts ran with (they never set it); null: no
    cap (docs/design.md#ppo-and-grpo)."""
    loss_scale: Literal[LOSS_SCALES] = "micro_batch_sum"
    """How ``seq-mean-token-sum-norm`` averages its per-sequence sums Σ_t ℓ_it / T:
    ``micro_batch_sum``, as the official scripts ran it in verl 0.3.1, which summed each
    micro-batch's sequences and then averaged over the gradient accumulation, so a mini-batch's
    loss is ``train.micro_batch_per_gpu`` × the mean; ``sequence_mean``: verl 0.9.1's mean
    (1/8 of the official loss at App. C's micro-batch of 8). Other aggregations are means in both
    verl versions (docs/design.md#ppo-and-grpo)."""
    grad_clip: GradClip = 1.0
    """Max gradient norm (actor and critic): verl 0.3.1's default 1.0, which the official
    scripts ran with; null: no clipping."""


@spec
class PpoSpec(ClippedSurrogate):
    """PPO baseline (paper App. B): clipped surrogate, a critic, GAE."""

    TRAITS: ClassVar[MethodTraits] = MethodTraits(
        label="PPO",
        objective="policy_gradient",
        loss_title="GRPO / PPO / DAPO: clipped surrogate",
        has_critic=True,
    )
    name: Literal["ppo"] = "ppo"
    loss_agg_mode: Literal[LOSS_AGG_MODES] = "seq-mean-token-sum-norm"
    """As for GRPO: the official scripts' aggregation (docs/design.md#ppo-and-grpo)."""
    clip_ratio: ClipRatio = 0.2
    """PPO-clip ε (App. B; verl's default)."""
    clip_ratio_c: DualClip = 3.0
    """Dual-clip cap (Ye et al. 2020, arXiv 1912.09729): for A < 0 the token loss is at most
    −A·c. verl's default 3.0, which the official scripts ran with (they never set it); null: no
    cap (docs/design.md#ppo-and-grpo)."""
    loss_scale: Literal[LOSS_SCALES] = "micro_batch_sum"
    """How ``seq-mean-token-sum-norm`` averages its per-sequence sums Σ_t ℓ_it / T:
    ``micro_batch_sum``, as the official scripts ran it in verl 0.3.1, which summed each
    micro-batch's sequences and then averaged over the gradient accumulation, so a mini-batch's
    loss is ``train.micro_batch_per_gpu`` × the mean; ``sequence_mean``: verl 0.9.1's mean
    (1/8 of the official loss at App. C's micro-batch of 8). Other aggregations are means in both
    verl versions (docs/design.md#ppo-and-grpo)."""
    grad_clip: GradClip = 1.0
    """Max gradient norm (actor and critic): verl 0.3.1's default 1.0, which the official
    scripts ran with; null: no clipping."""
    gamma: UnitFloat = 1.0
    """GAE discount γ; verl's LLM default 1 (App. B)."""
    lam: UnitFloat = 1.0
    """GAE λ; verl's LLM default 1 (App. B)."""
    value_clip: PositiveFloat = 0.5
    """Clip range of the value loss (verl's ``critic.cliprange_value`` default)."""
    critic_lr: LearningRate = 1.0e-5
    """Critic learning rate: the official PPO script's 1e-5
    (docs/design.md#paper-hyper-parameters)."""


@spec
class DapoSpec(ClippedSurrogate):
    """DAPO baseline (Yu et al. 2025, arXiv 2503.14476; not in the PACS paper): GRPO's advantage
    with clip-higher, token-mean aggregation, dynamic sampling and an optional overlong penalty."""

    TRAITS: ClassVar[MethodTraits] = MethodTraits(
        label="DAPO",
        objective="policy_gradient",
        loss_title="GRPO / PPO / DAPO: clipped surrogate",
    )
    name: Literal["dapo"] = "dapo"
    clip_ratio_low: ClipRatio = 0.2
    """ε_low of the clip range [1 − ε_low, 1 + ε_high] (DAPO §3.1, 'clip-higher': 0.2)."""
    clip_ratio_high: ClipRatio = 0.28
    """ε_high (DAPO §3.1: 0.28), above ε_low so low-probability tokens can rise."""
    clip_ratio_c: DualClip = 10.0
    """Dual-clip cap for A < 0 (as GRPO's): the DAPO recipe's ``clip_ratio_c=10.0``
    (verl ``recipe/dapo``); null: no cap (docs/design.md#ppo-and-grpo)."""
    loss_agg_mode: Literal[LOSS_AGG_MODES] = "token-mean"
    """DAPO §3.3's token-level policy-gradient loss (verl's ``token-mean``)."""
    dynamic_sampling: Bool = True
    """DAPO §3.2: sample until the batch holds ``train.prompts_per_step`` groups that are neither
    all-correct nor all-wrong (verl: ``algorithm.filter_groups``)."""
    grad_clip: GradClip = 1.0
    """Max gradient norm: the DAPO recipe's ``grad_clip=1.0``; null: no clipping."""
    weight_decay: NonNegativeFloat = 0.1
    """AdamW weight decay: the DAPO recipe's ``optim.weight_decay=0.1`` (the other methods take
    ``train.weight_decay``, verl's 0.01)."""
    lr_warmup_steps: NonNegativeInt = 10
    """Linear learning-rate warm-up over the first K training steps, then constant: the DAPO
    recipe's ``optim.lr_warmup_steps=10``, as verl's ``get_constant_schedule_with_warmup`` steps
    it (factor (step − 1) / K at step 1, 2, ...: step 1 updates at learning rate 0)."""
    max_gen_rounds: GenRounds = 3
    """Cap on generation rounds per step (verl recipe's ``max_num_gen_batches``; 3 is ours, for
    a CPU budget): at the cap the batch is topped up with homogeneous groups, which keep its
    shape but stay out of the loss, and the step logs ``ds_cap_hit = 1`` (tiny engine; verl
    0.9.1 has no such cap)."""
    overlong_buffer: PositiveInt | None = None
    """DAPO §3.4's soft overlong punishment: the last ``overlong_buffer`` tokens before the
    response limit cost up to ``overlong_penalty`` reward, linearly; null turns it off (the
    default: the tiny profile's responses are too short for a buffer). The recipe: 4096 of
    20480 tokens; configs/paper.yaml scales it to its limit (docs/design.md#dapo-and-real)."""
    overlong_penalty: PositiveFloat = 1.0
    """The penalty at the response limit (DAPO: 1.0 against a ±1 reward, half the reward gap;
    with our 0/1 reward the same share is 0.5, as configs/paper.yaml sets)."""

    @property
    def clip_range(self) -> tuple[float, float]:
        """(ε_low, ε_high): clip-higher."""
        return (self.clip_ratio_low, self.clip_ratio_high)

    def knob_problems(self, where: str) -> list[str]:
        low, high = self.clip_range
        if not high < low:  # (a NaN is named by the finite-number check)
            return []
        return [
            (
                f"{where}.clip_ratio_high: {high} is below clip_ratio_low {low} (clip-higher needs "
                "clip_ratio_high >= clip_ratio_low)"
            )
        ]

    def budget_problems(self, where: str, train: Any) -> list[str]:
        max_new_tokens = train.max_new_tokens
        buffer = self.overlong_buffer  # the overlong penalty's buffer
        if buffer is None or buffer <= max_new_tokens:
            return []
        return [
            (
                f"{where}.overlong_buffer: {buffer} tokens exceeds the response limit "
                f"train.max_new_tokens={max_new_tokens} (docs/design.md#dapo-and-real)"
            )
        ]


@spec
class RealSpec(SpecChecks):
    """REAL, 'rewards as labels' (Zhai et al., arXiv 2602.05630v2; not in the PACS paper): per
    group, an anchored log-sum-exp over the length-normalised log-ratios of the correct and the
    wrong responses (docs/design.md#dapo-and-real)."""

    TRAITS: ClassVar[MethodTraits] = MethodTraits(
        label="REAL",
        objective="classification",
        loss_title="REAL: anchored log-sum-exp",
        needs_whole_groups=True,
    )
    name: Literal["real"] = "real"
    tau: Scale = 0.5
    """Temperature τ dividing the length-normalised log-ratio: the authors' scripts
    (``actor.tau=0.5``) and ms-swift's ``real_tau`` default 0.5."""
    grad_clip: GradClip = 1.0
    """Max gradient norm: verl's default 1.0, which the authors' scripts keep; null: none."""

    @property
    def reference(self) -> RefSchedule:
        """The log-ratio is to the rollout policy (the authors' ``old_log_prob``): reset every step,
        so one update per rollout makes τ a pure gradient scale
        (docs/design.md#when-the-ablations-are-no-ops)."""
        return RefSchedule()


# ------------------------------------------------------------------------------ the objective


@dataclasses.dataclass(frozen=True)
class Objective:
    """What one run's optimizer step minimises beyond its loss formula, as both engines apply it and
    every report's runs table names it (docs/design.md#ppo-and-grpo and
    docs/design.md#gradient-clipping)."""

    loss_agg_mode: str | None
    """verl's aggregation of token losses; None: one term per response or group (PACS, REAL)."""
    loss_scale: int
    """The factor on verl 0.9.1's aggregation (8: the official micro-batch sum of App. C)."""
    sum_norm_divisor: float | None
    """``seq-mean-token-sum-norm``'s divisor: ``max_new_tokens`` / ``loss_scale`` (verl's
    ``loss_scale_factor``); None for the other aggregations."""
    clip_norm: float | None
    """Max gradient norm; None: no clipping."""
    dual_clip_c: float | None
    """The dual-clip cap c of a clipped surrogate; None: none (or not a clipped surrogate)."""

    @property
    def max_norm(self) -> float:
        """The clip as ``clip_grad_norm_`` takes it: infinite when there is none (a no-op: the
        gradients are multiplied by exactly 1)."""
        return math.inf if self.clip_norm is None else self.clip_norm

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def objective(method: Any, max_new_tokens: int, micro_batch_per_gpu: int | None) -> Objective:
    """The :class:`Objective` of a method spec under a profile's response limit and micro-batch."""
    agg = method.loss_agg_mode_used
    scale = method.loss_scale_factor(micro_batch_per_gpu)
    return Objective(
        loss_agg_mode=agg,
        loss_scale=scale,
        sum_norm_divisor=max_new_tokens / scale if agg == SUM_NORM else None,
        clip_norm=method.grad_clip,
        dual_clip_c=getattr(method, "clip_ratio_c", None),
    )


METHOD_SPECS: tuple[type, ...] = (PacsSpec, GrpoSpec, PpoSpec, DapoSpec, RealSpec)
"""Every method, in the order tables list them. A new method is appended here."""

MethodSpec = Union[METHOD_SPECS]  # noqa: UP007  (a tuple of classes has no `|` spelling)
METHOD_NAMES: tuple[str, ...] = tuple(
    cls.__dataclass_fields__["name"].default for cls in METHOD_SPECS
)


def spec_class(method: str) -> type:
    """The spec class of a method name (``pacs`` -> :class:`PacsSpec`)."""
    for cls in METHOD_SPECS:
        if cls.__dataclass_fields__["name"].default == method:
            return cls
    raise KeyError(method)


def spec_keys(cls: type) -> tuple[str, ...]:
    """The config keys of a method spec (its fields but the ``name`` discriminator)."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.name != "name")


def spec_dict(method: Any) -> dict[str, Any]:
    """A method spec's knobs as a plain dict (JSON-able), without the ``name`` discriminator."""
    return {k: v for k, v in dataclasses.asdict(method).items() if k != "name"}


# ------------------------------------------------------------------------------ dispatch tables

V = TypeVar("V")
_TABLES: dict[str, MethodTable] = {}


class MissingBranch(KeyError):
    """A method has no branch in a dispatch table."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class MethodTable(Mapping, Generic[V]):
    """A dispatch table keyed by method spec class: what one engine or stage does per method.

    Every table registers itself under ``where`` (the code site), so the test suite can check that
    each one has a branch for every class in :data:`METHOD_SPECS` and name the ones that do not.
    """

    def __init__(self, where: str, branches: dict[type, V]):
        unknown = [cls for cls in branches if cls not in METHOD_SPECS]
        if unknown:
            raise TypeError(f"{where}: {unknown} are not method specs (pacs.methods.METHOD_SPECS)")
        self.where = where
        self._branches = dict(branches)
        _TABLES[where] = self

    def missing(self) -> list[type]:
        """Method spec classes that have no branch here."""
        return [cls for cls in METHOD_SPECS if cls not in self._branches]

    def __getitem__(self, key: Any) -> V:
        cls = key if isinstance(key, type) else type(key)
        if cls not in self._branches:
            raise MissingBranch(
                f"{self.where} has no branch for {cls.__name__}: add one "
                "(docs/design.md#adding-a-method)"
            )
        return self._branches[cls]

    def __iter__(self) -> Iterator[type]:
        return iter(self._branches)

    def __len__(self) -> int:
        return len(self._branches)


def method_tables() -> dict[str, MethodTable]:
    """Every dispatch table created so far (by the modules imported so far), by code site."""
    return dict(_TABLES)
