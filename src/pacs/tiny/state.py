"""What one tiny run carries: its :class:`Settings` (read from the profile), its mutable
:class:`State` and the :class:`PromptSampler` that walks the training prompts.

Everything in :class:`State` is checkpointed (:mod:`pacs.tiny.checkpoint`); the step that changes
it is :func:`pacs.tiny.train.train_step`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from pacs.config import Profile, RunSpec
from pacs.methods import Objective, objective, spec_dict


@dataclass(frozen=True)
class Settings:
    """The tiny engine's view of one run: its :class:`pacs.config.RunSpec` and the ``train:`` /
    ``eval:`` values it reads, every one taken from the profile's spec (no defaults here)."""

    run: RunSpec
    steps: int
    prompts_per_step: int
    group_size: int
    mini_batches: int
    max_new_tokens: int
    temperature: float
    lr: float
    weight_decay: float
    micro_batch_per_gpu: int  # the factor of GRPO/PPO's micro_batch_sum loss scale
    eval_every: int
    eval_problems: int
    eval_samples: int
    save_every: int
    eval_temperature: float
    eval_top_p: float
    eval_max_new_tokens: int
    eval_seed: int

    @property
    def method(self):
        """The run's method spec (:mod:`pacs.methods`)."""
        return self.run.method

    @property
    def actor_weight_decay(self) -> float:
        """The method's own AdamW weight decay where it has one (DAPO's recipe), else train's."""
        return getattr(self.method, "weight_decay", self.weight_decay)

    def lr_factor(self, step: int) -> float:
        """The learning rate's factor at training step ``step`` (from 1): verl's constant schedule
        with a linear warm-up of the method's ``lr_warmup_steps`` (none: 1)."""
        warmup = getattr(self.method, "lr_warmup_steps", 0)
        return min(1.0, (step - 1) / warmup) if warmup > 0 else 1.0

    @property
    def objective(self) -> Objective:
        """Aggregation, loss scale and gradient clip of the run's updates (as verl's)."""
        return objective(self.method, self.max_new_tokens, self.micro_batch_per_gpu)

    @classmethod
    def from_profile(cls, profile: Profile, run_name: str, steps: int | None = None) -> Settings:
        t, ev = profile.train, profile.eval
        return cls(
            run=profile.run(run_name),
            steps=steps if steps is not None else t.steps,
            prompts_per_step=t.prompts_per_step,
            group_size=t.group_size,
            mini_batches=t.mini_batches,
            max_new_tokens=t.max_new_tokens,
            temperature=t.temperature,
            lr=t.lr,
            weight_decay=t.weight_decay,
            micro_batch_per_gpu=t.micro_batch_per_gpu,
            eval_every=t.eval_every,
            eval_problems=t.eval_problems,
            eval_samples=t.eval_samples,
            save_every=t.save_every,
            eval_temperature=ev.temperature,
            eval_top_p=ev.top_p,
            eval_max_new_tokens=ev.max_new_tokens,
            eval_seed=ev.seed,
        )

    def knobs(self) -> dict:
        """Every value but the run, by name."""
        return {k: v for k, v in vars(self).items() if k != "run"}

    def as_dict(self) -> dict:
        """JSON-able: the knobs plus the run's name, grouping and method spec."""
        run = {"name": self.run.name, "label": self.run.label, "ablation": self.run.ablation}
        method = {"name": self.method.name, **spec_dict(self.method)}
        return {"run": {**run, "method": method}, **self.knobs()}

    def is_eval_step(self, step: int) -> bool:
        return (
            step == 0 or step == self.steps or (self.eval_every > 0 and step % self.eval_every == 0)
        )


class PromptSampler:
    """Walks seeded per-epoch permutations of the training prompts; its position is checkpointed."""

    def __init__(self, n_rows: int, seed: int):
        self.n_rows, self.seed = n_rows, seed
        self.epoch, self.pos = 0, 0

    def _perm(self) -> np.ndarray:
        return np.random.default_rng([self.seed, self.epoch]).permutation(self.n_rows)

    def next(self, k: int) -> list[int]:
        out: list[int] = []
        while len(out) < k:
            take = self._perm()[self.pos : self.pos + k - len(out)]
            out.extend(int(i) for i in take)
            self.pos += len(take)
            if self.pos >= self.n_rows:
                self.epoch, self.pos = self.epoch + 1, 0
        return out

    def state_dict(self) -> dict:
        return {"epoch": self.epoch, "pos": self.pos}

    def load_state_dict(self, state: dict) -> None:
        self.epoch, self.pos = state["epoch"], state["pos"]


@dataclass
class State:
    """The mutable training state; everything in it is checkpointed."""

    policy: nn.Module
    optimizer: torch.optim.Optimizer
    sampler: PromptSampler
    ref: nn.Module | None = None  # a frozen policy copy (PACS ``ref: fixed | periodic``)
    critic: nn.Module | None = None  # PPO's value model (pacs.tiny.train.Critic)
    critic_optimizer: torch.optim.Optimizer | None = None
    step: int = 0
    history: list[dict] = field(default_factory=list)  # metrics rows so far
    eval_curve: list[dict] = field(default_factory=list)
