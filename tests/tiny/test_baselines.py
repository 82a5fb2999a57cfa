"""DAPO and REAL in the tiny engine: dynamic sampling keeps mixed groups and stops at its cap,
the losses are the core_algos ones, and a short run of each learns."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from transformers import AutoTokenizer

from pacs import core_algos
from pacs.config import parse_profile
from pacs.io import read_jsonl
from pacs.tiny import train as tt
from pacs.tiny.common import encode_prompts


def settings_for(cfg: dict, method: str, **knobs) -> tt.Settings:
    cfg = copy.deepcopy(cfg)
    cfg["runs"] = {"under_test": {"method": method, **knobs}}
    return tt.Settings.from_profile(parse_profile(cfg), "under_test")


def one_step(tiny_env, settings, reward_fn, seed=0):
    rows = read_jsonl(tiny_env["train"])
    tokenizer = AutoTokenizer.from_pretrained(tiny_env["base"])
    state = tt.init_state(settings, tiny_env["base"], len(rows), seed)
    row, mbs = tt.train_step(
        state, settings, tokenizer, rows, encode_prompts(tokenizer, rows), reward_fn
    )
    return state, row, mbs


class RoundRewards:
    """A verifier whose call k (one per generation round) marks the groups in ``mixed[k]``
    mixed (labels 1, 0, 0, ...) and every other group all-wrong; it records the prompts'
    golds it saw, so a test can tell which groups were kept."""

    def __init__(self, group_size: int, mixed: list[set[int]]):
        self.n, self.mixed, self.calls = group_size, mixed, []

    def __call__(self, texts, golds):
        k = len(self.calls)
        self.calls.append(golds[:: self.n])
        chosen = self.mixed[k] if k < len(self.mixed) else set()
        return [float(i // self.n in chosen and i % self.n == 0) for i in range(len(texts))]


@pytest.mark.slow  # ~75 s: dynamic sampling's rounds on the tiny model
def test_dynamic_sampling_keeps_only_mixed_groups(tiny_env, small_config):
    settings = settings_for(small_config(), "dapo", max_gen_rounds=4)
    n, want = settings.group_size, settings.prompts_per_step
    assert want >= 3
    # Round 1: groups 0 and 2 mixed; round 2: every group mixed -> the batch is 0, 2, then the
    # first want - 2 groups of round 2.
    rewards = RoundRewards(n, [{0, 2}, set(range(want))])
    _, row, _ = one_step(tiny_env, settings, rewards)
    assert len(rewards.calls) == 2
    assert row["ds_rounds"] == 2 and row["ds_generated_groups"] == 2 * want
    assert row["ds_mixed_groups"] == want and row["ds_cap_hit"] == 0
    assert row["mixed_frac"] == 1.0  # only mixed groups reached the update
    assert row["reward_mean"] == pytest.approx(1 / n)


def test_dynamic_sampling_stops_at_its_cap_and_says_so(tiny_env, small_config, capsys, monkeypatch):
    """At the cap the batch is topped up to its shape, but the top-up groups' tokens never reach
    the loss: they would enlarge token-mean's denominator and shrink the mixed group's gradient."""
    settings = settings_for(small_config(), "dapo", max_gen_rounds=2)
    n, want = settings.group_size, settings.prompts_per_step
    masks = []
    loss = tt.DapoBranch.loss

    def recording(logp, batch, s, mask, settings):
        masks.append(mask.clone())
        return loss(logp, batch, s, mask, settings)

    monkeypatch.setattr(tt.DapoBranch, "loss", staticmethod(recording))
    rewards = RoundRewards(n, [{1}, set()])
    _, row, mbs = one_step(tiny_env, settings, rewards)
    assert len(rewards.calls) == 2  # never a third round
    assert row["ds_rounds"] == 2 and row["ds_cap_hit"] == 1 and row["ds_mixed_groups"] == 1
    assert row["mixed_frac"] == pytest.approx(1 / want)  # topped up with all-wrong groups
    assert all(math.isfinite(m["loss"]) for m in mbs)
    rows_seen = torch.cat(masks).sum(-1) > 0  # the mixed group comes first, then the top-ups
    assert rows_seen[:n].all() and not rows_seen[n:].any() and len(rows_seen) == want * n
    err = capsys.readouterr().err
    assert "dynamic sampling hit its cap of 2 generation rounds with 1/" in err
    assert "left out of the loss" in err


def test_without_dynamic_sampling_dapo_generates_once(tiny_env, small_config):
    settings = settings_for(small_config(), "dapo", dynamic_sampling=False)
    rewards = RoundRewards(settings.group_size, [set()])
    _, row, _ = one_step(tiny_env, settings, rewards)
    assert len(rewards.calls) == 1 and "ds_rounds" not in row


def test_real_step_is_the_core_loss_at_the_reference(tiny_env, small_config):
    """First mini-batch: every log-ratio is 0, so each mixed group's loss is
    log(1 + |wrong|) + log(1 + |correct|) and the loss is their mean over all groups."""
    settings = settings_for(small_config(), "real")
    n = settings.group_size
    rewards = RoundRewards(n, [{0, 1, 2, 3, 4, 5, 6, 7}])
    _, _, mbs = one_step(tiny_env, settings, rewards)
    # labels 1, 0, ..., 0 in every group: one correct, n - 1 wrong
    assert mbs[0]["loss"] == pytest.approx(math.log(1 + (n - 1)) + math.log(2), abs=1e-6)
    assert mbs[0]["mixed_frac"] == 1.0 and mbs[0]["grad_norm"] > 0
    assert mbs[-1]["loss"] != pytest.approx(mbs[0]["loss"])


def test_dapo_loss_uses_clip_higher(tiny_env, small_config):
    """The DAPO branch's loss is ppo_policy_loss with (ε_low, ε_high) and token-mean."""
    settings = settings_for(small_config(), "dapo", clip_ratio_low=0.1, clip_ratio_high=0.5)
    logp = torch.log(torch.tensor([[1.6, 0.5]]))
    batch = {"old_logp": torch.zeros(1, 2), "advantages": torch.tensor([[1.0, -1.0]])}
    loss, _ = tt.DapoBranch.loss(logp, batch, slice(0, 1), torch.ones(1, 2), settings)
    # token 1: A = 1, ρ = 1.6 -> clipped at 1.5: −1.5; token 2: A = −1, ρ = 0.5 -> max(0.5, 0.9)
    assert loss.item() == pytest.approx((-1.5 + 0.9) / 2)
    expected, _ = core_algos.ppo_policy_loss(
        logp,
        batch["old_logp"],
        batch["advantages"],
        torch.ones(1, 2),
        clip_ratio_low=0.1,
        clip_ratio_high=0.5,
    )
    assert loss.item() == expected.item()


@pytest.mark.slow
@pytest.mark.parametrize("method", ["dapo", "real"])
def test_a_short_run_learns(method, tiny_env, small_config, tmp_path):
    """40 steps on the test task: the reward of the responses it generates rises and held-out
    pass@1 beats the base (measured: REAL 0.12 -> 0.24 reward, pass@1 0.148 -> 0.242;
    DAPO 0.14 -> 0.33 over every generated response, pass@1 0.148 -> 0.250)."""
    cfg = small_config(
        steps=40,
        lr=1e-3,
        eval_every=40,
        eval_problems=16,
        eval_samples=8,
        prompts_per_step=8,
        group_size=4,
        mini_batches=2,
    )
    state = tt.train(
        settings_for(cfg, method),
        0,
        tiny_env["base"],
        read_jsonl(tiny_env["train"]),
        read_jsonl(tiny_env["test"]),
        tmp_path / method,
    )
    # DAPO's reward_mean is the kept (mixed) groups'; ds_reward_all is every response's.
    rewards = [r.get("ds_reward_all", r["reward_mean"]) for r in state.history]
    first, last = sum(rewards[:10]) / 10, sum(rewards[-10:]) / 10
    assert last > first + 0.05, (first, last)
    assert state.eval_curve[-1]["pass_at_1"] > state.eval_curve[0]["pass_at_1"]
