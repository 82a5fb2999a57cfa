"""The tiny RL loop: PACS, GRPO, PPO, DAPO and REAL on CPU, in one readable file (cleanrl style).

Read it top to bottom: :func:`train_step` is one step, in the order it runs:
  1. rollout: take the next ``prompts_per_step`` training prompts and sample ``group_size``
     responses each (HF ``generate``'s tokens; temperature 1.0, top_k 0, top_p 1.0);
  2. reward: grade them with :mod:`pacs.rewards.math` (scores in [0, 1]) and turn them into labels
     (steps 1-2, and DAPO's dynamic sampling, live in :mod:`pacs.tiny.collect`);
  3. compute the rollout policy's ("old") log-probs, the reference log-probs (PACS) and the
     critic's values (PPO), mini-batch by mini-batch with the shapes the update will use;
  4. score and loss: split the batch into ``mini_batches`` mini-batches of whole groups; each
     method's :class:`Branch` gives the loss (PACS: :func:`pacs.core_algos.pacs_loss` scores every
     response by its RLOO log-ratio and takes the class-balanced BCE with its label);
  5. update: one optimizer step per mini-batch, gradients clipped at the method's ``grad_clip``
     (PACS: none, as the official actor; :func:`pacs.methods.objective`).
Every loss, score, weight and advantage comes from :mod:`pacs.core_algos`. :func:`train` is the
loop around it. What a first reading may skip is marked "Plumbing" (the CLI) or lives elsewhere:
recording (metrics rows, held-out points, summary) in :mod:`pacs.tiny.record`, checkpoints and
resume in :mod:`pacs.tiny.checkpoint`, the run's settings and state in :mod:`pacs.tiny.state`.

What this simplifies relative to verl (the paper-profile engine):
- one process, no Ray/FSDP, no vLLM: HF ``generate`` samples, and the same model object scores;
- no micro-batches or gradient accumulation: a mini-batch is one forward/backward;
- no dynamic batch sizes, sequence packing or rebalancing, so groups stay whole and in order;
- mini-batches are taken in rollout order (verl's default ``shuffle: false``), one epoch per
  rollout;
- the reference of ``ref: rollout`` is not a separate model: it IS the rollout ("old") log-probs,
  as in the official PACS code, so no extra forward pass is spent on it;
- log-ratios are summed over the response mask only (the official code also counts padding; the
  deliberate deviation of docs/design.md#padding-is-masked);
- no KL penalty, no entropy bonus, no learning-rate warm-up or schedule, no overlong filtering
  (prompts are short);
- PPO's critic is a second tiny model (the base policy's backbone + a zero-initialised scalar head)
  trained with its own AdamW; GAE advantages are whitened over the batch, as verl does;
- the held-out pass@1 curve is computed in-loop (sampled, seeded, on a forked RNG stream), not by
  the separate evaluation stage.

A run restarted with the same ``--out`` and settings resumes from its last checkpoint and reaches
bit-identical weights and metrics (:mod:`pacs.tiny.checkpoint`).

CLI::

    python -m pacs.tiny.train --config configs/default.yaml --method pacs --seed 0 --base DIR \\
        --train-data train.jsonl --eval-data test.jsonl --out DIR --threads 1 [--steps N] \\
        [--on-mismatch refuse|restart]
"""

from __future__ import annotations

import argparse
import copy
import random
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn
from transformers import AutoTokenizer

from pacs import core_algos
from pacs.config import ConfigError, load_profile
from pacs.fingerprint import ON_MISMATCH, FingerprintMismatch, job_times
from pacs.io import read_jsonl, write_json
from pacs.methods import DapoSpec, GrpoSpec, MethodTable, PacsSpec, PpoSpec, RealSpec
from pacs.metrics_log import (
    DEFAULT_BACKENDS,
    PER_MINI_BATCH_STATS,
    MetricsLog,
)
from pacs.progress import ConsoleBar, load_causal_lm
from pacs.tiny.build import save_pretrained
from pacs.tiny.checkpoint import CheckpointError, resume, run_fingerprint
from pacs.tiny.collect import (
    Collected,
    RewardFn,
    Source,
    binary_labels,
    dynamic_sampling,
    generate_round,
    grade_scores,
)
from pacs.tiny.common import (
    Rollout,
    encode_prompts,
    position_ids,
    response_logprobs,
)
from pacs.tiny.record import Recorder, metrics_row, path_metrics, summarize
from pacs.tiny.state import PromptSampler, Settings, State

# ==============================================================================================
# One training step: rollout -> reward -> labels -> old/reference log-probs -> loss -> update
# ==============================================================================================


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
    t0 = time.perf_counter()
    branch.start_step(state, settings, step)  # PACS ref: periodic resets the reference here
    for group in state.optimizer.param_groups:  # DAPO's warm-up (verl's scheduler, per step)
        group["lr"] = settings.lr * settings.lr_factor(step)
    # 1-2. Rollout and reward: n samples for each of the step's prompts, prompt-major, and their
    # verifier scores (DAPO's dynamic sampling generates more rounds here).
    source = Source(state, settings, tokenizer, rows, prompt_ids, reward_fn)
    got = branch.collect(source, step)
    idx, roll, scores = got.idx, got.roll, got.scores
    labels = branch.labels(scores, settings)
    times = [t0, t0 + got.time_generate, t0 + got.time_generate + got.time_reward]
    # 3. What the update compares against: old and reference log-probs, advantages (GRPO/PPO).
    slices = mini_batch_slices(len(scores), settings.mini_batches)
    batch = rollout_quantities(state, settings, roll, slices)
    batch["labels"] = labels
    batch["loss_mask"] = roll.response_mask  # what the loss reads; DAPO's top-ups are left out
    if got.trained is not None:
        batch["loss_mask"] = roll.response_mask * got.trained[:, None].to(roll.response_mask.dtype)
    branch.prepare(batch, scores, roll, settings)
    times.append(time.perf_counter())
    # 4-5. Loss and update: one optimizer step per mini-batch of whole groups, in rollout order.
    mb_results = []
    for s in slices:
        mask = roll.response_mask[s]
        ids, attention, length = roll.input_ids[s], roll.attention_mask[s], roll.response_len
        logp, entropy = response_logprobs(state.policy, ids, attention, length, with_entropy=True)
        loss, stats = branch.loss(logp, batch, s, batch["loss_mask"][s], settings)
        loss.backward()
        max_norm = settings.objective.max_norm
        grad_norm = clip_and_step(state.policy.parameters(), state.optimizer, max_norm)
        entropy_mean = core_algos.masked_mean(entropy, mask).item()
        clip_bound = float(grad_norm > max_norm)  # the clip scaled this update down
        result = {"loss": loss.item(), "grad_norm": grad_norm, "clip_bound": clip_bound}
        result = {**result, "entropy": entropy_mean, **stats}
        mb_results.append({**result, **branch.after_update(state, settings, roll, s, batch)})
    times.append(time.perf_counter())
    state.step = step
    paths = path_metrics(roll.texts, scores.tolist(), [rows[i] for i in idx], n)
    row = metrics_row(
        step, scores, labels, roll, mb_results, times, n, paths, branch.per_mini_batch
    )
    return {**row, **got.metrics}, mb_results


# ----------------------------------------------------------------------------------------------
# The methods' branches: what each method adds to the shared step
# ----------------------------------------------------------------------------------------------


class Branch:
    """One method's hooks into the step; the defaults do nothing. ``batch`` holds the rollout's
    tensors (``old_logp``, ``ref_logp``, ``labels``, ...) over the whole step."""

    per_mini_batch: tuple[str, ...] = ()  # mini-batch stats also logged per index (metrics_row)

    @staticmethod
    def collect(src: Source, step: int) -> Collected:
        """The step's groups: one round of ``prompts_per_step`` prompts."""
        return generate_round(src, src.settings.prompts_per_step)

    @staticmethod
    def init(state: State, settings: Settings, base: str | Path) -> None:
        """Build what the method keeps beside the policy (reference, critic)."""

    @staticmethod
    def start_step(state: State, settings: Settings, step: int) -> None:
        """Before step ``step`` samples anything."""

    @staticmethod
    def labels(scores: torch.Tensor, settings: Settings) -> torch.Tensor:
        """[B] verifier scores -> [B] labels: 0/1 at 0.5."""
        return binary_labels(scores)

    @staticmethod
    def prepare(batch: dict, scores: torch.Tensor, roll: Rollout, settings: Settings) -> None:
        """Add the step's advantages (and returns) to ``batch``."""

    @staticmethod
    def after_update(
        state: State, settings: Settings, roll: Rollout, s: slice, batch: dict
    ) -> dict:
        """After the policy's step on mini-batch ``s``: further updates and their metrics."""
        return {}


class PacsBranch(Branch):
    per_mini_batch = PER_MINI_BATCH_STATS

    @staticmethod
    def loss(logp: torch.Tensor, batch: dict, s: slice, mask: torch.Tensor, settings: Settings):
        """ψ = RLOO score of β·Σ log(π/π_ref) within each group; class-balanced BCE(σ(ψ), label)."""
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

    @staticmethod
    def labels(scores: torch.Tensor, settings: Settings) -> torch.Tensor:
        if settings.method.soft_labels:
            return scores.clamp(0, 1)
        return binary_labels(scores)

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


class GrpoBranch(Branch):
    @staticmethod
    def prepare(batch: dict, scores: torch.Tensor, roll: Rollout, settings: Settings) -> None:
        adv = core_algos.grpo_outcome_advantage(scores, settings.group_size)
        batch["advantages"] = adv[:, None] * roll.response_mask

    @staticmethod
    def loss(logp: torch.Tensor, batch: dict, s: slice, mask: torch.Tensor, settings: Settings):
        """verl's clipped surrogate (``vanilla``) with the spec's clip range and dual-clip cap;
        Dr. GRPO's horizon is verl's ``loss_scale_factor``: the response budget over the loss
        scale (the official micro-batch sum: ×``micro_batch_per_gpu``)."""
        spec = settings.method
        low, high = spec.clip_range
        return core_algos.ppo_policy_loss(
            logp,
            batch["old_logp"][s],
            batch["advantages"][s],
            mask,
            clip_ratio_c=spec.clip_ratio_c,
            loss_agg_mode=spec.loss_agg_mode,
            clip_ratio_low=low,
            clip_ratio_high=high,
            horizon=settings.objective.sum_norm_divisor,
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
    def after_update(
        state: State, settings: Settings, roll: Rollout, s: slice, batch: dict
    ) -> dict:
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
            horizon=settings.objective.sum_norm_divisor,  # verl's critic: the actor's factor
        )
        vf_loss.backward()
        out = {"vf_loss": vf_loss.item()}
        out["critic_grad_norm"] = clip_and_step(
            state.critic.parameters(), state.critic_optimizer, settings.objective.max_norm
        )
        return {**out, **vf_stats}


class DapoBranch(GrpoBranch):
    """GRPO's group advantage with clip-higher and token-mean (DAPO §3.1, §3.3), dynamic
    sampling (§3.2, :func:`dynamic_sampling`) and the optional overlong penalty (§3.4)."""

    @staticmethod
    def collect(src: Source, step: int) -> Collected:
        if not src.settings.method.dynamic_sampling:
            return Branch.collect(src, step)
        return dynamic_sampling(src, step)

    @staticmethod
    def prepare(batch: dict, scores: torch.Tensor, roll: Rollout, settings: Settings) -> None:
        spec: DapoSpec = settings.method
        rewards = scores
        if spec.overlong_buffer is not None:
            lengths = roll.response_mask.sum(-1)
            rewards = scores + core_algos.overlong_penalty(
                lengths, settings.max_new_tokens, spec.overlong_buffer, spec.overlong_penalty
            )
        adv = core_algos.grpo_outcome_advantage(rewards, settings.group_size)
        batch["advantages"] = adv[:, None] * roll.response_mask


class RealBranch(Branch):
    @staticmethod
    def loss(logp: torch.Tensor, batch: dict, s: slice, mask: torch.Tensor, settings: Settings):
        """Per group, log(1 + Σ_wrong e^{s/τ}) + log(1 + Σ_correct e^{−s/τ}), s the
        length-normalised log-ratio to the rollout policy; homogeneous groups add 0."""
        spec: RealSpec = settings.method
        return core_algos.real_loss(
            logp,
            batch["ref_logp"][s],
            mask,
            batch["labels"][s],
            settings.group_size,
            tau=spec.tau,
        )


BRANCHES: MethodTable[type[Branch]] = MethodTable(
    "pacs.tiny.train.BRANCHES",
    {
        PacsSpec: PacsBranch,
        GrpoSpec: GrpoBranch,
        PpoSpec: PpoBranch,
        DapoSpec: DapoBranch,
        RealSpec: RealBranch,
    },
)


# ----------------------------------------------------------------------------------------------
# What the step calls
# ----------------------------------------------------------------------------------------------


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


def reference_is_policy(state: State, settings: Settings) -> bool:
    """Whether the reference holds the rollout policy's very weights for the coming step (step 1
    of ``fixed`` and ``periodic``, and ``periodic`` just after a reset): its log-probs are then the
    old log-probs bit for bit (tests/tiny/test_train.py), so its forward pass is skipped."""
    if state.ref is None:
        return False
    step = state.step + 1
    return step == 1 or settings.method.reference.reset_due(step)


def ppo_advantages(scores: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, spec: PpoSpec):
    """Outcome reward on the last response token, GAE, then batch whitening (verl)."""
    token_rewards = torch.zeros_like(values)
    last = (mask.sum(-1) - 1).clamp(min=0)
    token_rewards[torch.arange(len(scores)), last] = scores
    adv, returns = core_algos.compute_gae(token_rewards, values, mask, spec.gamma, spec.lam)
    return core_algos.masked_whiten(adv, mask), returns


def clip_and_step(params, optimizer: torch.optim.Optimizer, max_norm: float) -> float:
    """Optimizer step after clipping at ``max_norm`` (inf: the gradients are multiplied by
    exactly 1, as verl's); returns the pre-clip gradient norm."""
    norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return float(norm)


def mini_batch_slices(batch_size: int, mini_batches: int) -> list[slice]:
    size = batch_size // mini_batches
    return [slice(i * size, (i + 1) * size) for i in range(mini_batches)]


# ----------------------------------------------------------------------------------------------
# The models and metrics the step uses
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


def frozen_copy(model: nn.Module) -> nn.Module:
    ref = copy.deepcopy(model)
    ref.eval()
    ref.requires_grad_(False)
    return ref


def make_optimizer(model: nn.Module, lr: float, settings: Settings) -> torch.optim.Optimizer:
    return torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=settings.actor_weight_decay)


# ==============================================================================================
# The loop
# ==============================================================================================


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
    job_started: float | None = None,
) -> State:
    """Train (resuming from ``out`` when it holds a checkpoint of the same settings) and write
    the run folder. A checkpoint of other settings is refused or, with ``on_mismatch="restart"``,
    discarded (:func:`pacs.tiny.checkpoint.load_checkpoint`).

    ``stop_after`` ends the process's work after that step without final outputs, as a crash
    would (tests use it to check resuming). ``job_started``: when the job began (its summary's
    ``job_seconds`` runs from there; default: now).
    """
    job_started = time.time() if job_started is None else job_started
    out, tokenizer = Path(out), AutoTokenizer.from_pretrained(base)
    # Plumbing: the checkpoint/resume harness (fingerprint, resume, replay, Recorder, stop_after).
    run_fp = run_fingerprint(settings, seed, base, train_rows, eval_rows)
    state = init_state(settings, base, len(train_rows), seed)
    resumed = resume(state, settings, out, run_fp, on_mismatch)
    prompt_ids = encode_prompts(tokenizer, train_rows)
    start = time.time()
    with MetricsLog(out, backends, project=project, config=settings.as_dict()) as log:
        log.replay(state.history, state.eval_curve)  # what a resumed run kept, written again
        recorder = Recorder(state, settings, tokenizer, eval_rows, out, run_fp, log)
        if not state.eval_curve:
            recorder.record_eval()
        desc = f"{settings.run.name} seed {seed}: RL steps"
        with ConsoleBar(total=settings.steps, initial=state.step, desc=desc, unit="step") as bar:
            while state.step < settings.steps:
                row, _ = train_step(state, settings, tokenizer, train_rows, prompt_ids, reward_fn)
                recorder.record(row)
                bar.update(1)
                pass1 = state.eval_curve[-1]["pass_at_1"]
                bar.set_postfix(reward=f"{row['reward_mean']:.2f}", pass1=f"{pass1:.3f}")
                if stop_after is not None and state.step >= stop_after:
                    return state
    save_pretrained(state.policy, tokenizer, out / "model")
    summary = summarize(state, settings, seed, time.time() - start, resumed)
    summary.update(fingerprint=run_fp["sha256"], **job_times(job_started))
    write_json(out / "summary.json", summary)
    return state


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


# ==============================================================================================
# Plumbing a first reading may skip: the CLI (recording and the summary: pacs.tiny.record;
# checkpoints and resume: pacs.tiny.checkpoint)
# ==============================================================================================


def main(argv: list[str] | None = None) -> None:
    job_started = time.time()  # the job's own start, for the runs table's wall time
    args = build_parser().parse_args(argv)
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
            job_started=job_started,
        )
    except (ConfigError, FingerprintMismatch, CheckpointError) as err:
        raise SystemExit(f"error: {err}") from err
    curve = state.eval_curve
    print(
        f"{settings.run.name} seed {args.seed}: pass@1 {curve[0]['pass_at_1']:.3f} -> "
        f"{curve[-1]['pass_at_1']:.3f} after {state.step} steps -> {args.out}"
    )


def build_parser() -> argparse.ArgumentParser:
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
    return parser


if __name__ == "__main__":
    main()
