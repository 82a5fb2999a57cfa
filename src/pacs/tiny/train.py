"""The tiny RL loop: PACS, GRPO and PPO on CPU, in one readable file (cleanrl / nanochat style).

One step:
  1. take the next ``prompts_per_step`` training prompts and sample ``group_size`` responses each
     with HF ``generate`` (temperature 1.0, top_k 0, top_p 1.0);
  2. grade them with :mod:`pacs.rewards.math` (scores in [0, 1]);
  3. compute the rollout policy's ("old") log-probs, the reference log-probs (PACS) and the
     critic's values (PPO), mini-batch by mini-batch with the shapes the update will use;
  4. split the batch into ``mini_batches`` mini-batches of whole groups;
  5. one optimizer step per mini-batch, gradients clipped at ``grad_clip``.
Every loss, score, weight and advantage comes from :mod:`pacs.core_algos`.

What this simplifies relative to verl (the paper-profile engine):
- one process, no Ray/FSDP, no vLLM: HF ``generate`` samples, and the same model object scores;
- no micro-batches or gradient accumulation: a mini-batch is one forward/backward;
- no dynamic batch sizes, sequence packing or rebalancing, so groups stay whole and in order;
- mini-batches are taken in rollout order (verl's default ``shuffle: false``), one epoch per rollout;
- the reference of ``ref: rollout`` is not a separate model: it IS the rollout ("old") log-probs,
  as in the official PACS code, so no extra forward pass is spent on it;
- log-ratios are summed over the response mask only (the official code also counts padding; the
  deliberate deviation of docs/design.md §2.8);
- no KL penalty, no entropy bonus, no learning-rate warm-up or schedule, no overlong filtering
  (prompts are short);
- PPO's critic is a second tiny model (the base policy's backbone + a zero-initialised scalar head)
  trained with its own AdamW; GAE advantages are whitened over the batch, as verl does;
- the held-out pass@1 curve is computed in-loop (sampled, seeded, on a forked RNG stream), not by
  the separate evaluation stage.

Checkpoints (every ``save_every`` steps and at the end, written atomically) hold the policy,
optimizer(s), critic, reference, step, python/numpy/torch RNG states, the prompt sampler's position
and the run's fingerprint (:func:`run_fingerprint`); a run restarted with the same ``--out`` and
the same settings resumes from the last one and reaches bit-identical weights and metrics
(temporary files of a run killed mid-write are removed first). A
checkpoint written under other settings (method, seed, lr, base model, data, ...) is refused,
naming the differing keys, or with ``--on-mismatch restart`` set aside for a fresh start. Only
``steps`` and ``save_every`` may change on resume: extending a finished run is legitimate.

CLI::

    python -m pacs.tiny.train --config configs/default.yaml --method pacs --seed 0 --base DIR \\
        --train-data train.jsonl --eval-data test.jsonl --out DIR --threads 1 [--steps N] \\
        [--on-mismatch refuse|restart]
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import random
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm import tqdm
from transformers import AutoTokenizer

from pacs import core_algos
from pacs.config import ConfigError, Profile, RunSpec, load_profile
from pacs.evaluation.paths import rollout_path_stats
from pacs.fingerprint import (
    ON_MISMATCH,
    FingerprintMismatch,
    differences,
    differing_keys,
    fingerprint,
    folder_digest,
    rows_digest,
)
from pacs.io import atomic_path, read_jsonl, write_json, write_jsonl
from pacs.methods import GrpoSpec, MethodTable, PacsSpec, PpoSpec, spec_dict
from pacs.metrics_log import DEFAULT_BACKENDS, EVAL_METRICS, TENSORBOARD_DIR, MetricsLog
from pacs.progress import load_causal_lm
from pacs.rewards.math import grade_many
from pacs.tiny.build import save_pretrained
from pacs.tiny.common import (
    Rollout,
    encode_prompts,
    eval_pass_at_1,
    position_ids,
    response_logprobs,
    sample,
)
from pacs.tiny.sft import SUMMARY_NAME as SFT_SUMMARY_NAME

CHECKPOINT_NAME = "checkpoint.pt"
TIME_KEYS = ("time_generate", "time_reward", "time_reference", "time_update", "time_total")
# Settings a resume may change: the step budget (extending a run) and the checkpoint cadence.
RESUMABLE_SETTINGS = ("steps", "save_every")
RUN_OUTPUTS = (
    CHECKPOINT_NAME, "metrics.jsonl", "eval_curve.jsonl", "model", "summary.json", TENSORBOARD_DIR
)


class CheckpointError(RuntimeError):
    """A checkpoint file that cannot be read back, or one this run cannot continue."""


RewardFn = Callable[[list[str], list[str]], list[float]]


def grade_scores(responses: list[str], golds: list[str]) -> list[float]:
    """Verifier scores in [0, 1] (in-process: the synthetic answers are boxed integers)."""
    return [g.score for g in grade_many(responses, golds, workers=0)]


# ----------------------------------------------------------------------------------------------
# Settings
# ----------------------------------------------------------------------------------------------


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
    grad_clip: float  # max gradient norm; inf: no clipping
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
            grad_clip=t.max_grad_norm,
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


# ----------------------------------------------------------------------------------------------
# Models and state
# ----------------------------------------------------------------------------------------------


class Critic(nn.Module):
    """PPO value model: a copy of the policy's transformer with a scalar head on each position."""

    def __init__(self, policy_dir: str | Path):
        super().__init__()
        self.backbone = load_causal_lm(policy_dir, dtype=torch.float32).model
        self.value_head = nn.Linear(self.backbone.config.hidden_size, 1)
        # Zero head: values start at 0 instead of at random, so early advantages are the rewards.
        nn.init.zeros_(self.value_head.weight)
        nn.init.zeros_(self.value_head.bias)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, response_len: int
    ) -> torch.Tensor:
        """Values [B, R] of the states just before each response token (verl's slicing)."""
        hidden = self.backbone(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids(attention_mask),
            use_cache=False,
        ).last_hidden_state
        return self.value_head(hidden[:, -response_len - 1 : -1]).squeeze(-1)


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
    ref: nn.Module | None = None
    critic: Critic | None = None
    critic_optimizer: torch.optim.Optimizer | None = None
    step: int = 0
    history: list[dict] = field(default_factory=list)  # metrics rows so far
    eval_curve: list[dict] = field(default_factory=list)


def frozen_copy(model: nn.Module) -> nn.Module:
    ref = copy.deepcopy(model)
    ref.eval()
    ref.requires_grad_(False)
    return ref


def make_optimizer(model: nn.Module, lr: float, settings: Settings) -> torch.optim.Optimizer:
    return torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=settings.weight_decay)


def init_state(settings: Settings, base: str | Path, n_train: int, seed: int) -> State:
    """Policy from ``base``, plus what the method keeps beside it (:data:`BRANCHES`)."""
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    policy = load_causal_lm(base, dtype=torch.float32)
    policy.train()
    state = State(
        policy, make_optimizer(policy, settings.lr, settings), PromptSampler(n_train, seed)
    )
    BRANCHES[settings.method].init(state, settings, base)
    return state


def reference_is_policy(state: State, settings: Settings) -> bool:
    """Whether the reference holds the rollout policy's very weights for the coming step (step 1
    of ``fixed`` and ``periodic``, and ``periodic`` just after a reset): its log-probs are then the
    old log-probs bit for bit (tests/tiny/test_train.py), so its forward pass is skipped."""
    if state.ref is None:
        return False
    step = state.step + 1
    return step == 1 or settings.method.reference.reset_due(step)


# ----------------------------------------------------------------------------------------------
# One training step
# ----------------------------------------------------------------------------------------------


def mini_batch_slices(batch_size: int, mini_batches: int) -> list[slice]:
    size = batch_size // mini_batches
    return [slice(i * size, (i + 1) * size) for i in range(mini_batches)]


@torch.no_grad()
def rollout_quantities(
    state: State, settings: Settings, roll: Rollout, slices: list[slice]
) -> dict:
    """Old log-probs, reference log-probs and old values, computed per mini-batch.

    Scoring each mini-batch with the exact tensors the update will see makes the first update's
    log-ratio exactly 0, as it is in theory (a different batch shape can change float rounding).
    """

    def per_slice(fn):
        return torch.cat([fn(roll.input_ids[s], roll.attention_mask[s]) for s in slices])

    R = roll.response_len
    out = {"old_logp": per_slice(lambda ids, m: response_logprobs(state.policy, ids, m, R)[0])}
    if state.ref is not None and not reference_is_policy(state, settings):
        out["ref_logp"] = per_slice(lambda ids, m: response_logprobs(state.ref, ids, m, R)[0])
    else:
        out["ref_logp"] = out["old_logp"]  # ref: rollout (official code: old_log_prob)
    if state.critic is not None:
        out["old_values"] = per_slice(lambda ids, m: state.critic(ids, m, R))
    return out


def ppo_advantages(scores: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, spec: PpoSpec):
    """Outcome reward on the last response token, GAE, then batch whitening (verl)."""
    token_rewards = torch.zeros_like(values)
    last = (mask.sum(-1) - 1).clamp(min=0)
    token_rewards[torch.arange(len(scores)), last] = scores
    adv, returns = core_algos.compute_gae(token_rewards, values, mask, spec.gamma, spec.lam)
    return core_algos.masked_whiten(adv, mask), returns


def clip_and_step(params, optimizer: torch.optim.Optimizer, grad_clip: float | None) -> float:
    """Optimizer step after clipping; returns the pre-clip gradient norm."""
    max_norm = grad_clip if grad_clip is not None and grad_clip > 0 else float("inf")
    norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return float(norm)


# ----------------------------------------------------------------------------------------------
# The methods' branches: what each method adds to the shared loop
# ----------------------------------------------------------------------------------------------


class Branch:
    """One method's hooks into the loop; the defaults do nothing. ``batch`` holds the rollout's
    tensors (``old_logp``, ``ref_logp``, ``labels``, ...) over the whole step."""

    @staticmethod
    def init(state: State, settings: Settings, base: str | Path) -> None:
        """Build what the method keeps beside the policy (reference, critic)."""

    @staticmethod
    def start_step(state: State, settings: Settings, step: int) -> None:
        """Before step ``step`` samples anything."""

    @staticmethod
    def labels(scores: torch.Tensor, settings: Settings) -> torch.Tensor:
        """[B] verifier scores -> [B] labels: 0/1 at 0.5."""
        return (scores >= 0.5).float()

    @staticmethod
    def prepare(batch: dict, scores: torch.Tensor, roll: Rollout, settings: Settings) -> None:
        """Add the step's advantages (and returns) to ``batch``."""

    @staticmethod
    def after_update(state: State, settings: Settings, roll: Rollout, s: slice, batch: dict) -> dict:
        """After the policy's step on mini-batch ``s``: further updates and their metrics."""
        return {}


class PacsBranch(Branch):
    @staticmethod
    def init(state: State, settings: Settings, base: str | Path) -> None:
        if settings.method.reference.needs_model:  # ref: fixed | periodic
            state.ref = frozen_copy(state.policy)

    @staticmethod
    def start_step(state: State, settings: Settings, step: int) -> None:
        """``ref: periodic``: copy the policy into the reference and restart AdamW when due."""
        if settings.method.reference.reset_due(step):
            state.ref.load_state_dict(state.policy.state_dict())
            state.optimizer = make_optimizer(state.policy, settings.lr, settings)

    @staticmethod
    def labels(scores: torch.Tensor, settings: Settings) -> torch.Tensor:
        if settings.method.soft_labels:
            return scores.clamp(0, 1)
        return Branch.labels(scores, settings)

    @staticmethod
    def loss(logp: torch.Tensor, batch: dict, s: slice, mask: torch.Tensor, settings: Settings):
        spec: PacsSpec = settings.method
        return core_algos.pacs_loss(
            logp,
            batch["ref_logp"][s],
            mask,
            batch["labels"][s],
            settings.group_size,
            beta=spec.beta,
            score=spec.score,
            use_weight=spec.use_weight,
        )


class GrpoBranch(Branch):
    @staticmethod
    def prepare(batch: dict, scores: torch.Tensor, roll: Rollout, settings: Settings) -> None:
        adv = core_algos.grpo_outcome_advantage(scores, settings.group_size)
        batch["advantages"] = adv[:, None] * roll.response_mask

    @staticmethod
    def loss(logp: torch.Tensor, batch: dict, s: slice, mask: torch.Tensor, settings: Settings):
        return core_algos.ppo_policy_loss(
            logp,
            batch["old_logp"][s],
            batch["advantages"][s],
            mask,
            clip_ratio=settings.method.clip_ratio,
            loss_agg_mode=settings.method.loss_agg_mode,
        )


class PpoBranch(GrpoBranch):
    @staticmethod
    def init(state: State, settings: Settings, base: str | Path) -> None:
        state.critic = Critic(base)
        state.critic.train()
        state.critic_optimizer = make_optimizer(state.critic, settings.method.critic_lr, settings)

    @staticmethod
    def prepare(batch: dict, scores: torch.Tensor, roll: Rollout, settings: Settings) -> None:
        batch["advantages"], batch["returns"] = ppo_advantages(
            scores, batch["old_values"], roll.response_mask, settings.method
        )

    @staticmethod
    def after_update(state: State, settings: Settings, roll: Rollout, s: slice, batch: dict) -> dict:
        """One critic step on the same mini-batch (clipped value loss)."""
        mask = roll.response_mask[s]
        values = state.critic(roll.input_ids[s], roll.attention_mask[s], roll.response_len)
        vf_loss, vf_stats = core_algos.value_loss(
            values,
            batch["old_values"][s],
            batch["returns"][s],
            mask,
            clip_range=settings.method.value_clip,
            loss_agg_mode=settings.method.loss_agg_mode,
        )
        vf_loss.backward()
        out = {"vf_loss": vf_loss.item()}
        out["critic_grad_norm"] = clip_and_step(
            state.critic.parameters(), state.critic_optimizer, settings.grad_clip
        )
        return {**out, **vf_stats}


BRANCHES: MethodTable[type[Branch]] = MethodTable(
    "pacs.tiny.train.BRANCHES", {PacsSpec: PacsBranch, GrpoSpec: GrpoBranch, PpoSpec: PpoBranch}
)


def update_mini_batch(
    state: State, settings: Settings, roll: Rollout, s: slice, batch: dict
) -> dict:
    """One optimizer step on mini-batch ``s``; returns its loss, grad norm, entropy and stats."""
    branch, mask = BRANCHES[settings.method], roll.response_mask[s]
    logp, entropy = response_logprobs(
        state.policy,
        roll.input_ids[s],
        roll.attention_mask[s],
        roll.response_len,
        with_entropy=True,
    )
    loss, stats = branch.loss(logp, batch, s, mask, settings)
    loss.backward()
    out = {
        "loss": loss.item(),
        "grad_norm": clip_and_step(state.policy.parameters(), state.optimizer, settings.grad_clip),
        "entropy": core_algos.masked_mean(entropy, mask).item(),
        **stats,
    }
    return {**out, **branch.after_update(state, settings, roll, s, batch)}


def path_metrics(texts: list[str], scores: list[float], rows: list[dict], n: int) -> dict:
    """Paths task (rows with ``quantities``): path diversity/entropy of each group's correct
    responses, averaged over groups (docs/design.md §10); nothing for other tasks."""
    if not rows or "quantities" not in rows[0]:
        return {}
    return rollout_path_stats(texts, scores, [r["quantities"] for r in rows for _ in range(n)], n)


def mixed_fraction(labels: torch.Tensor, group_size: int) -> float:
    """Fraction of groups whose responses do not all share one label."""
    g = labels.reshape(-1, group_size)
    return (g.max(dim=1).values != g.min(dim=1).values).float().mean().item()


def train_step(
    state: State,
    settings: Settings,
    tokenizer,
    rows: Sequence[dict],
    prompt_ids: Sequence[list[int]],
    reward_fn: RewardFn = grade_scores,
) -> tuple[dict, list[dict]]:
    """Run step ``state.step + 1``; return its metrics row and the per-mini-batch results."""
    step, n = state.step + 1, settings.group_size
    branch = BRANCHES[settings.method]
    times = [time.perf_counter()]
    branch.start_step(state, settings, step)
    idx = state.sampler.next(settings.prompts_per_step)
    prompts = [prompt_ids[i] for i in idx]
    roll = sample(state.policy, tokenizer, prompts, n, settings.max_new_tokens, settings.temperature)
    times.append(time.perf_counter())
    golds = [rows[i]["answer"] for i in idx for _ in range(n)]
    scores = torch.tensor(reward_fn(roll.texts, golds), dtype=torch.float32)
    labels = branch.labels(scores, settings)
    times.append(time.perf_counter())

    slices = mini_batch_slices(len(scores), settings.mini_batches)
    batch = rollout_quantities(state, settings, roll, slices)
    batch["labels"] = labels
    branch.prepare(batch, scores, roll, settings)
    times.append(time.perf_counter())

    mb_results = [update_mini_batch(state, settings, roll, s, batch) for s in slices]
    times.append(time.perf_counter())
    state.step = step
    paths = path_metrics(roll.texts, scores.tolist(), [rows[i] for i in idx], n)
    return metrics_row(step, scores, labels, roll, mb_results, times, n, paths), mb_results


def metrics_row(
    step, scores, labels, roll: Rollout, mb_results: list[dict], times, n, paths: dict
) -> dict:
    """One metrics.jsonl row: rewards, the mini-batches' means, the paths task's path
    statistics (``paths``, empty for other tasks) and the phase times."""
    t0, t1, t2, t3, t4 = times
    return {
        "step": step,
        "reward_mean": scores.mean().item(),
        "mixed_frac": mixed_fraction(labels, n),
        "response_len": roll.response_mask.sum(-1).float().mean().item(),
        **{k: float(np.mean([r[k] for r in mb_results])) for k in mb_results[0]},
        **paths,
        "time_generate": t1 - t0,
        "time_reward": t2 - t1,
        "time_reference": t3 - t2,
        "time_update": t4 - t3,
        "time_total": t4 - t0,
    }


# ----------------------------------------------------------------------------------------------
# Checkpoints
# ----------------------------------------------------------------------------------------------


def run_fingerprint(
    settings: Settings,
    seed: int,
    base: str | Path,
    train_rows: Sequence[dict],
    eval_rows: Sequence[dict],
) -> dict:
    """Fingerprint (:mod:`pacs.fingerprint`) of everything that decides what this run trains
    and records: the resolved run, every ``train:``/``eval:`` setting but ``RESUMABLE_SETTINGS``,
    the seed, and the contents of the base model folder and of both data sets."""
    knobs = {k: v for k, v in settings.knobs().items() if k not in RESUMABLE_SETTINGS}
    return fingerprint(
        {
            # What the run trains (its method and knobs), not how it is named or grouped.
            "run": {"method": settings.method.name, **spec_dict(settings.method)},
            **knobs,
            "seed": seed,
            # The SFT summary holds wall-clock times: a byte-identical model may differ there.
            "base_model": folder_digest(base, skip=(SFT_SUMMARY_NAME,)),
            "train_data": rows_digest(train_rows),
            "eval_data": rows_digest(eval_rows),
        }
    )


def save_checkpoint(state: State, out: Path, run_fp: dict) -> None:
    """Everything needed to continue bit-identically, written atomically (temp file, fsync,
    rename): a crash mid-write leaves the previous checkpoint in place."""
    ckpt = {
        "step": state.step,
        "fingerprint": run_fp,
        "policy": state.policy.state_dict(),
        "optimizer": state.optimizer.state_dict(),
        "ref": state.ref.state_dict() if state.ref is not None else None,
        "critic": state.critic.state_dict() if state.critic is not None else None,
        "critic_optimizer": state.critic_optimizer.state_dict()
        if state.critic_optimizer is not None
        else None,
        "sampler": state.sampler.state_dict(),
        "rng": {
            "python": random.getstate(),
            "numpy": np.random.get_state(),
            "torch": torch.get_rng_state(),
        },
    }
    with atomic_path(out / CHECKPOINT_NAME) as tmp, open(tmp, "wb") as fh:
        torch.save(ckpt, fh)
        fh.flush()
        os.fsync(fh.fileno())


def read_checkpoint(path: Path) -> dict:
    """The checkpoint dict at ``path``; an unreadable file is a :class:`CheckpointError` that
    names it and says how to recover (torch's own error is a bare zip/pickle message)."""
    try:
        ckpt = torch.load(path, weights_only=False)
    except Exception as err:  # torch raises RuntimeError, EOFError, UnpicklingError, OSError...
        raise CheckpointError(
            f"{path} cannot be read ({type(err).__name__}: {err}); it is truncated or corrupt. "
            f"Delete it to restart this run from step 0, or put back a good copy of it to resume."
        ) from err
    if not isinstance(ckpt, dict) or "step" not in ckpt:
        raise CheckpointError(
            f"{path} is not a pacs.tiny.train checkpoint (no 'step' entry); delete it to restart "
            f"this run from step 0"
        )
    return ckpt


class StepsBehindCheckpoint(CheckpointError):
    """The run folder's checkpoint is past the step budget asked for."""

    def __init__(self, path: Path, step: int, steps: int):
        super().__init__(
            f"{path} is at step {step}, past the {steps} steps asked for (--steps or "
            f"train.steps): ask for at least {step} steps to continue that run, or give this "
            "run another --out"
        )


def remove_stale_temps(out: Path) -> list[Path]:
    """Remove the temporary files (``.<name>.*.tmp``) and folders (``.model.*``) that a run
    killed mid-write left in ``out``; they are never read. Returns what was removed."""
    stale = [p for name in RUN_OUTPUTS for p in out.glob(f".{name}.*")
             if p.name.endswith(".tmp") or name == "model"]
    for path in stale:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    return stale


def discard_run_outputs(out: Path) -> None:
    """Remove a previous run's checkpoint, logs and outputs so that none leaks into a fresh run."""
    for name in RUN_OUTPUTS:
        path = out / name
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def load_checkpoint(
    state: State, settings: Settings, out: Path, run_fp: dict, on_mismatch: str = "refuse"
) -> bool:
    """Restore ``state`` from ``out``'s checkpoint, if any, and trim logs written after it.

    A checkpoint of other settings raises :class:`FingerprintMismatch` (``on_mismatch="refuse"``)
    or is discarded with the run's logs (``"restart"``, returns False: a fresh start)."""
    if on_mismatch not in ON_MISMATCH:
        raise ValueError(f"on_mismatch must be one of {ON_MISMATCH}, got {on_mismatch!r}")
    path = out / CHECKPOINT_NAME
    if not path.is_file():
        return False
    ckpt = read_checkpoint(path)
    stored = ckpt.get("fingerprint")
    if differing_keys(stored, run_fp):
        if on_mismatch == "refuse":
            raise FingerprintMismatch(
                path,
                stored,
                run_fp,
                "Rerun with --on-mismatch restart to discard that run and start from step 0, "
                "or give this run another --out.",
            )
        print(
            f"--on-mismatch restart: discarding the run in {out} written under other settings "
            f"({'; '.join(differences(stored, run_fp))}); starting from step 0",
            file=sys.stderr,
        )
        discard_run_outputs(out)
        return False
    state.step = ckpt["step"]
    state.policy.load_state_dict(ckpt["policy"])
    state.optimizer.load_state_dict(ckpt["optimizer"])
    if state.ref is not None:
        state.ref.load_state_dict(ckpt["ref"])
    if state.critic is not None:
        state.critic.load_state_dict(ckpt["critic"])
        state.critic_optimizer.load_state_dict(ckpt["critic_optimizer"])
    state.sampler.load_state_dict(ckpt["sampler"])
    random.setstate(ckpt["rng"]["python"])
    np.random.set_state(ckpt["rng"]["numpy"])
    torch.set_rng_state(ckpt["rng"]["torch"])
    # Rows past the checkpoint (written before a crash) are redone; eval rows that were a final
    # step of a shorter run are dropped unless the new schedule has them too.
    state.history = [r for r in _read_rows(out / "metrics.jsonl") if r["step"] <= state.step]
    state.eval_curve = [
        r
        for r in _read_rows(out / "eval_curve.jsonl")
        if r["step"] <= state.step and settings.is_eval_step(r["step"])
    ]
    return True


def _read_rows(path: Path) -> list[dict]:
    return read_jsonl(path) if path.is_file() else []


# ----------------------------------------------------------------------------------------------
# The run
# ----------------------------------------------------------------------------------------------


def evaluate(state: State, settings: Settings, tokenizer, eval_rows: Sequence[dict]) -> dict:
    rows = list(eval_rows[: settings.eval_problems])
    p1 = eval_pass_at_1(
        state.policy,
        tokenizer,
        rows,
        settings.eval_samples,
        settings.eval_max_new_tokens,
        settings.eval_temperature,
        settings.eval_top_p,
        settings.eval_seed,
    )
    return {
        "step": state.step,
        "pass_at_1": p1,
        "n_problems": len(rows),
        "n_samples": settings.eval_samples,
    }


def train(
    settings: Settings,
    seed: int,
    base: str | Path,
    train_rows: Sequence[dict],
    eval_rows: Sequence[dict],
    out: str | Path,
    stop_after: int | None = None,
    reward_fn: RewardFn = grade_scores,
    on_mismatch: str = "refuse",
    backends: Sequence[str] = DEFAULT_BACKENDS,
    project: str = "pacs",
) -> State:
    """Train (resuming from ``out`` when it holds a checkpoint of the same settings) and write
    the run folder. A checkpoint of other settings is refused or, with ``on_mismatch="restart"``,
    discarded (:func:`load_checkpoint`).

    ``stop_after`` ends the process's work after that step without final outputs, as a crash
    would (tests use it to check resuming).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(out)
    run_fp = run_fingerprint(settings, seed, base, train_rows, eval_rows)
    tokenizer = AutoTokenizer.from_pretrained(base)
    state = init_state(settings, base, len(train_rows), seed)
    resumed = load_checkpoint(state, settings, out, run_fp, on_mismatch)
    if state.step > settings.steps:
        raise StepsBehindCheckpoint(out / CHECKPOINT_NAME, state.step, settings.steps)
    (out / "summary.json").unlink(missing_ok=True)  # a summary means finished; we are not, yet
    start = time.time()
    with MetricsLog(out, backends, project=project, config=settings.as_dict()) as log:
        log.replay(state.history, state.eval_curve)  # what a resumed run kept, written again
        rows = (train_rows, eval_rows)
        loop = RunLoop(state, settings, tokenizer, *rows, out, run_fp, reward_fn, log)
        if not state.eval_curve:
            loop.record_eval()
        if not loop.run(f"{settings.run.name} seed {seed}: RL steps", stop_after):
            return state
    save_pretrained(state.policy, tokenizer, out / "model")
    summary = summarize(state, settings, seed, time.time() - start, resumed)
    summary["fingerprint"] = run_fp["sha256"]
    write_json(out / "summary.json", summary)
    return state


@dataclass
class RunLoop:
    """The steps of one run, each logged, evaluated and checkpointed on its cadence."""

    state: State
    settings: Settings
    tokenizer: Any
    train_rows: Sequence[dict]
    eval_rows: Sequence[dict]
    out: Path
    run_fp: dict
    reward_fn: RewardFn
    log: MetricsLog

    def run(self, desc: str, stop_after: int | None) -> bool:
        """Train up to ``settings.steps``; False when ``stop_after`` cut it short."""
        state, settings = self.state, self.settings
        prompt_ids = encode_prompts(self.tokenizer, self.train_rows)
        with tqdm(total=settings.steps, initial=state.step, desc=desc, unit="step") as bar:
            while state.step < settings.steps:
                row, _ = train_step(
                    state, settings, self.tokenizer, self.train_rows, prompt_ids, self.reward_fn
                )
                self.record(row)
                bar.update(1)
                pass1 = state.eval_curve[-1]["pass_at_1"]
                bar.set_postfix(reward=f"{row['reward_mean']:.2f}", pass1=f"{pass1:.3f}")
                if stop_after is not None and state.step >= stop_after:
                    return False
        return True

    def record(self, row: dict) -> None:
        """Log the step's row (``metrics.jsonl``, rewritten whole, and the :class:`MetricsLog`);
        evaluate and checkpoint when due."""
        state, settings, out = self.state, self.settings, self.out
        state.history.append(row)
        write_jsonl(out / "metrics.jsonl", state.history)
        self.log.log(row)
        if settings.is_eval_step(state.step):
            self.record_eval()
        if state.step % settings.save_every == 0 or state.step == settings.steps:
            save_checkpoint(state, out, self.run_fp)

    def record_eval(self) -> None:
        """Add a held-out pass@1 point to ``eval_curve.jsonl`` and the :class:`MetricsLog`."""
        state = self.state
        point = evaluate(state, self.settings, self.tokenizer, self.eval_rows)
        state.eval_curve.append(point)
        write_jsonl(self.out / "eval_curve.jsonl", state.eval_curve)
        self.log.log(point, EVAL_METRICS)


def summarize(state: State, settings: Settings, seed: int, wall: float, resumed: bool) -> dict:
    hist = state.history
    mean_time = {k: float(np.mean([r[k] for r in hist])) for k in TIME_KEYS} if hist else {}
    return {
        "run": settings.run.name,
        "method": settings.method.name,
        "seed": seed,
        "steps": state.step,
        "base_pass_at_1": state.eval_curve[0]["pass_at_1"],
        "final_pass_at_1": state.eval_curve[-1]["pass_at_1"],
        "reward_mean_last10": float(np.mean([r["reward_mean"] for r in hist[-10:]]))
        if hist
        else math.nan,
        "mean_step_times": mean_time,
        "wall_seconds_this_process": round(wall, 2),
        "resumed": resumed,
        "settings": settings.as_dict(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True)
    parser.add_argument(
        "--method", required=True, help="a run name from runs:, or pacs | grpo | ppo"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--base", required=True, help="base model folder (SFT warm-up output)")
    parser.add_argument("--train-data", required=True)
    parser.add_argument("--eval-data", required=True)
    parser.add_argument(
        "--out", required=True, help="run folder; resumes from its checkpoint if present"
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=None, help="override train.steps")
    parser.add_argument(
        "--stop-after", type=int, default=None, help="stop after this step without finishing"
    )
    parser.add_argument(
        "--on-mismatch",
        choices=ON_MISMATCH,
        default="refuse",
        help="when --out holds a checkpoint of other settings: refuse (default, names the "
        "differing keys) or restart (discard it and start from step 0)",
    )
    args = parser.parse_args(argv)

    torch.set_num_threads(args.threads)
    try:
        profile = load_profile(args.config)
        settings = Settings.from_profile(profile, args.method, args.steps)
        state = train(
            settings,
            args.seed,
            args.base,
            read_jsonl(args.train_data),
            read_jsonl(args.eval_data),
            args.out,
            stop_after=args.stop_after,
            on_mismatch=args.on_mismatch,
            backends=profile.logging.backends,
            project=f"pacs-{profile.profile}",
        )
    except (ConfigError, FingerprintMismatch, CheckpointError) as err:
        raise SystemExit(f"error: {err}") from err
    curve = state.eval_curve
    print(
        f"{settings.run.name} seed {args.seed}: pass@1 {curve[0]['pass_at_1']:.3f} -> "
        f"{curve[-1]['pass_at_1']:.3f} after {state.step} steps -> {args.out}"
    )


if __name__ == "__main__":
    main()
