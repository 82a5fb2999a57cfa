"""Collecting a step's groups for the tiny RL loop: generate, grade, and (DAPO) filter.

Steps 1-2 of :func:`pacs.tiny.train.train_step`: take the next ``prompts_per_step`` training
prompts, sample ``group_size`` responses each and grade them with the verifier
(:func:`generate_round`). DAPO's dynamic sampling (:func:`dynamic_sampling`) runs several such
rounds and keeps the groups that hold both labels. The methods' branches in
:mod:`pacs.tiny.train` pick one of the two; :func:`binary_labels` is the default labelling both
modules use.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from pacs import core_algos
from pacs.rewards.math import grade_many
from pacs.tiny.common import Rollout, sample
from pacs.tiny.state import Settings, State

RewardFn = Callable[[list[str], list[str]], list[float]]


def grade_scores(responses: list[str], golds: list[str]) -> list[float]:
    """Verifier scores in [0, 1] (in-process: the synthetic answers are boxed integers)."""
    return [g.score for g in grade_many(responses, golds, workers=0)]


def binary_labels(scores: torch.Tensor) -> torch.Tensor:
    """[B] verifier scores -> [B] labels: 0/1 at 0.5."""
    return (scores >= 0.5).float()


@dataclass
class Source:
    """What generating and grading a round of groups needs."""

    state: State
    settings: Settings
    tokenizer: Any
    rows: Sequence[dict]
    prompt_ids: Sequence[list[int]]
    reward_fn: RewardFn


@dataclass
class Collected:
    """A step's groups: prompts, rollout ([B] rows, prompt-major), [B] verifier scores, the
    seconds spent generating and grading, and the collection's metrics (DAPO: rounds, cap)."""

    idx: list[int]
    roll: Rollout
    scores: torch.Tensor
    time_generate: float = 0.0
    time_reward: float = 0.0
    metrics: dict = dataclasses.field(default_factory=dict)
    trained: torch.Tensor | None = None
    """[B] bool: rows whose tokens enter the loss (dynamic sampling's top-up groups do not);
    None: every row."""


def generate_round(src: Source, k: int) -> Collected:
    """The next ``k`` training prompts, ``group_size`` samples each, graded by the verifier."""
    s, n = src.settings, src.settings.group_size
    t0 = time.perf_counter()
    idx = src.state.sampler.next(k)
    prompts = [src.prompt_ids[i] for i in idx]
    roll = sample(src.state.policy, src.tokenizer, prompts, n, s.max_new_tokens, s.temperature)
    t1 = time.perf_counter()
    golds = [src.rows[i]["answer"] for i in idx for _ in range(n)]
    scores = torch.tensor(src.reward_fn(roll.texts, golds), dtype=torch.float32)
    return Collected(idx, roll, scores, t1 - t0, time.perf_counter() - t1)


# ----------------------------------------------------------------------------------------------
# DAPO's dynamic sampling
# ----------------------------------------------------------------------------------------------


def dynamic_sampling(src: Source, step: int) -> Collected:
    """DAPO §3.2: generate rounds of ``prompts_per_step`` prompts until that many groups hold
    both labels, at most ``max_gen_rounds`` rounds. At the cap the batch is topped up with the
    earliest homogeneous groups, left out of the loss, and the step says so on stderr and
    in ``ds_cap_hit``. Metrics: ``ds_rounds``, ``ds_generated_groups``, ``ds_mixed_groups``
    (kept), ``ds_cap_hit``, ``ds_reward_all`` (the mean score of every generated response, where
    ``reward_mean`` is the kept batch's); the generation time covers every round.

    The top-up groups only keep the batch's shape (whole mini-batches): ``trained`` leaves them
    out of the loss, as they would otherwise enlarge token-mean's denominator (and, with the
    overlong penalty, carry a non-zero advantage)."""
    s, n, want = src.settings, src.settings.group_size, src.settings.prompts_per_step
    mixed, spare, rounds = [], [], []
    while len(mixed) < want and len(rounds) < s.method.max_gen_rounds:
        got = generate_round(src, want)
        rounds.append(got)
        keep = core_algos.mixed_groups(binary_labels(got.scores), n).tolist()
        for g, is_mixed in enumerate(keep):
            (mixed if is_mixed else spare).append((got, g))
    chosen = (mixed + spare)[:want] if len(mixed) < want else mixed[:want]
    cap_hit = len(mixed) < want
    if cap_hit:
        print(
            f"step {step}: dynamic sampling hit its cap of {s.method.max_gen_rounds} generation "
            f"rounds with {len(mixed)}/{want} mixed groups; topped up with "
            f"{want - len(mixed)} all-correct/all-wrong groups, left out of the loss",
            file=sys.stderr,
        )
    out = merge_groups(chosen, n, src.tokenizer.pad_token_id)
    out.trained = torch.arange(want * n) < min(len(mixed), want) * n  # mixed groups come first
    out.time_generate = sum(r.time_generate for r in rounds)
    out.time_reward = sum(r.time_reward for r in rounds)
    out.metrics = {
        "ds_rounds": len(rounds),
        "ds_generated_groups": len(rounds) * want,
        "ds_mixed_groups": min(len(mixed), want),
        "ds_cap_hit": int(cap_hit),
        "ds_reward_all": torch.cat([r.scores for r in rounds]).mean().item(),
    }
    return out


def merge_groups(chosen: list[tuple[Collected, int]], n: int, pad_id: int) -> Collected:
    """One rollout from groups of several rounds: prompts left-padded and responses right-padded
    to the longest (pads masked, so log-probs and positions are unchanged)."""
    prompt_len = max(c.roll.input_ids.shape[1] - c.roll.response_len for c, _ in chosen)
    resp_len = max(c.roll.response_len for c, _ in chosen)
    ids, attn, resp, texts, scores, idx = [], [], [], [], [], []
    for c, g in chosen:
        rows = slice(g * n, (g + 1) * n)
        r, p = c.roll.response_len, c.roll.input_ids.shape[1] - c.roll.response_len
        pad = (prompt_len - p, resp_len - r)
        ids.append(F.pad(c.roll.input_ids[rows], pad, value=pad_id))
        attn.append(F.pad(c.roll.attention_mask[rows], pad, value=0))
        resp.append(F.pad(c.roll.response_mask[rows], (0, resp_len - r), value=0))
        texts += c.roll.texts[rows]
        scores.append(c.scores[rows])
        idx.append(c.idx[g])
    roll = Rollout(torch.cat(ids), torch.cat(attn), torch.cat(resp), texts)
    return Collected(idx, roll, torch.cat(scores))
