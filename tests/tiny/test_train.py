"""The tiny RL loop: every method learns, the PACS identities hold, resuming is exact."""

from __future__ import annotations

import copy
import json
import math

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer

from pacs.config import parse_profile
from pacs.io import read_jsonl
from pacs.tiny import checkpoint as ckpt_mod
from pacs.tiny import train as tt
from pacs.tiny.collect import grade_scores
from pacs.tiny.common import encode_prompts
from pacs.tiny.record import TIME_KEYS, metrics_row

METHOD_MATRIX = {
    "pacs": ("pacs", {}),
    "pacs_noweight": ("pacs", {"use_weight": False}),
    "pacs_ref_periodic": ("pacs", {"ref": "periodic", "ref_reset_every": 2}),
    "pacs_ref_fixed": ("pacs", {"ref": "fixed"}),
    "pacs_score_grpo": ("pacs", {"score": "grpo"}),
    "pacs_score_drgrpo": ("pacs", {"score": "drgrpo"}),
    "pacs_soft_labels": ("pacs", {"soft_labels": True}),
    "grpo_token_mean": ("grpo", {"loss_agg_mode": "token-mean"}),
    "grpo_seq_norm": ("grpo", {"loss_agg_mode": "seq-mean-token-sum-norm"}),
    "ppo": ("ppo", {}),
    "dapo": ("dapo", {}),
    "dapo_overlong": ("dapo", {"overlong_buffer": 8, "dynamic_sampling": False}),
    "real": ("real", {}),
}


def settings_for(cfg: dict, method: str, **knobs) -> tt.Settings:
    cfg = copy.deepcopy(cfg)
    cfg["runs"] = {"under_test": {"method": method, **knobs}}  # the profile's own runs aside
    return tt.Settings.from_profile(parse_profile(cfg), "under_test")


def base_params(base) -> dict[str, torch.Tensor]:
    return {
        k: v.detach().clone()
        for k, v in AutoModelForCausalLM.from_pretrained(base).named_parameters()
    }


def unchanged(before: dict[str, torch.Tensor], module: torch.nn.Module) -> list[str]:
    return [name for name, p in module.named_parameters() if torch.equal(before[name], p.detach())]


def one_step(tiny_env, settings: tt.Settings, seed: int = 0, reward_fn=grade_scores):
    """A fresh state after one training step, its metrics row and per-mini-batch results."""
    rows = read_jsonl(tiny_env["train"])
    tokenizer = AutoTokenizer.from_pretrained(tiny_env["base"])
    state = tt.init_state(settings, tiny_env["base"], len(rows), seed)
    row, mbs = tt.train_step(
        state, settings, tokenizer, rows, encode_prompts(tokenizer, rows), reward_fn
    )
    return state, row, mbs


@pytest.mark.parametrize("name", list(METHOD_MATRIX))
def test_every_method_trains_every_parameter(name, tiny_env, small_config, tmp_path):
    method, knobs = METHOD_MATRIX[name]
    settings = settings_for(small_config(), method, **knobs)
    before = base_params(tiny_env["base"])
    state = tt.train(
        settings,
        0,
        tiny_env["base"],
        read_jsonl(tiny_env["train"]),
        read_jsonl(tiny_env["test"]),
        tmp_path / name,
    )

    assert len(state.history) == 3
    assert all(math.isfinite(r["loss"]) and math.isfinite(r["grad_norm"]) for r in state.history)
    assert any(r["mixed_frac"] > 0 for r in state.history), (
        "no mixed group: the test data is too hard"
    )
    assert unchanged(before, state.policy) == []
    if method == "ppo":
        critic_before = tt.Critic(tiny_env["base"])
        critic_init = {k: v.detach().clone() for k, v in critic_before.named_parameters()}
        assert unchanged(critic_init, state.critic) == []
    if method == "pacs":
        assert {"psi_mean", "sigma_mean", "score_acc", "weight_mean"} <= set(state.history[0])

    out = tmp_path / name
    assert [r["step"] for r in read_jsonl(out / "metrics.jsonl")] == [1, 2, 3]
    assert [r["step"] for r in read_jsonl(out / "eval_curve.jsonl")] == [0, 3]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 3 and summary["method"] == method
    saved = load_file(out / "model" / "model.safetensors")
    assert torch.equal(saved["model.embed_tokens.weight"], state.policy.model.embed_tokens.weight)


def alternating(texts, golds):
    """Labels 1,0,1,0,...: every group is mixed, independent of what the model wrote."""
    return [float(i % 2 == 0) for i in range(len(texts))]


def first_group_mixed_rest_wrong(texts, golds, group_size=4):
    return [float(i == 0) for i in range(len(texts))]


def test_first_minibatch_is_at_the_reference_state(tiny_env, small_config):
    """ref=rollout: the first mini-batch has psi == 0, so its loss is mean(w)·ln 2
    (docs/design.md#the-reference-model)."""
    _, _, mbs = one_step(tiny_env, settings_for(small_config(), "pacs"), reward_fn=alternating)
    first = mbs[0]
    assert first["loss"] == pytest.approx(first["weight_mean"] * math.log(2), abs=1e-6)
    assert first["sigma_mean"] == pytest.approx(0.5, abs=1e-6)
    assert first["grad_norm"] > 0  # the gradient is not zero at psi == 0
    later = [abs(m["loss"] - m["weight_mean"] * math.log(2)) for m in mbs[1:]]
    assert min(later) > 1e-6  # after the first update psi != 0


def steps_of(tiny_env, settings: tt.Settings, steps: int, reward_fn) -> list[tuple[dict, list]]:
    """``steps`` training steps of one fresh state: each step's row and mini-batch results."""
    rows = read_jsonl(tiny_env["train"])
    tokenizer = AutoTokenizer.from_pretrained(tiny_env["base"])
    state = tt.init_state(settings, tiny_env["base"], len(rows), 0)
    prompt_ids = encode_prompts(tokenizer, rows)
    return [
        tt.train_step(state, settings, tokenizer, rows, prompt_ids, reward_fn) for _ in range(steps)
    ]


@pytest.mark.parametrize("score", ["rloo", "grpo"])
def test_psi_is_exactly_zero_on_every_steps_first_minibatch(score, tiny_env, small_config):
    """ref: rollout resets the reference every step, so each step's mini-batch 0 scores every
    response at psi == 0 exactly (its log-ratios are 0 bit for bit), and the per-mini-batch
    columns say so; later mini-batches have moved. Each column is that mini-batch's own value,
    and the step's mean is their mean."""
    settings = settings_for(small_config(), "pacs", score=score)
    for row, mbs in steps_of(tiny_env, settings, 3, alternating):
        for stat in ("psi_abs_mean", "psi_std", "sigma_std"):
            assert row[f"{stat}/mb0"] == 0.0
            assert all(row[f"{stat}/mb{i}"] > 0 for i in (1, 2, 3))
            assert row[stat] == pytest.approx(sum(row[f"{stat}/mb{i}"] for i in range(4)) / 4)
        assert [row[f"grad_norm/mb{i}"] for i in range(4)] == [m["grad_norm"] for m in mbs]
        assert row["grad_norm/mb0"] > 0  # (σ(0) − r)·∇ψ: the first update still learns
        assert not any(key.endswith("/mb4") for key in row)


def test_metrics_row_keeps_the_means_and_adds_each_minibatch():
    """Hand-made mini-batch results: the step's mean of every stat, and ``<stat>/mb<i>`` for
    the stats asked for, in mini-batch order."""
    from pacs.tiny.common import Rollout

    roll = Rollout(torch.zeros(2, 3), torch.ones(2, 3), torch.tensor([[1, 1], [1, 0]]), ["", ""])
    mbs = [{"psi_std": 0.0, "grad_norm": 8.0}, {"psi_std": 0.5, "grad_norm": 2.0}]
    scores = torch.tensor([1.0, 0.0])
    row = metrics_row(
        7, scores, scores, roll, mbs, [0, 1, 2, 3, 4], 2, {}, per_mini_batch=("psi_std",)
    )
    assert (row["step"], row["psi_std"], row["grad_norm"]) == (7, 0.25, 5.0)
    assert (row["psi_std/mb0"], row["psi_std/mb1"]) == (0.0, 0.5)
    assert "grad_norm/mb0" not in row
    assert (row["response_len"], row["mixed_frac"], row["time_total"]) == (1.5, 1.0, 4)


def test_per_minibatch_columns_are_pacs_only(tiny_env, small_config):
    """GRPO has no ψ; like the verl worker, the tiny engine adds per-mini-batch columns only for
    PACS, so both engines write the same fields."""
    ((row, _),) = steps_of(tiny_env, settings_for(small_config(), "grpo"), 1, alternating)
    assert not any("/mb" in key for key in row)


def test_single_label_groups_learn_only_after_the_first_update(tiny_env, small_config):
    """At psi == 0 an all-wrong group's gradient is (σ(0) − 0)·∇Σψ = 0 (RLOO scores sum to 0);
    once a mixed group has moved the policy, psi != 0 and all-wrong groups do push."""
    _, _, wrong = one_step(
        tiny_env,
        settings_for(small_config(), "pacs"),
        reward_fn=lambda texts, golds: [0.0] * len(texts),
    )
    assert all(m["grad_norm"] == 0 for m in wrong)  # never leaves the reference state

    before = base_params(tiny_env["base"])
    state, row, mbs = one_step(
        tiny_env, settings_for(small_config(), "pacs"), reward_fn=first_group_mixed_rest_wrong
    )
    assert row["mixed_frac"] == pytest.approx(1 / 4)
    assert all(m["grad_norm"] > 0 for m in mbs)  # mini-batches 2..4 hold only all-wrong groups
    assert unchanged(before, state.policy) == []


def test_beta_changes_the_update_with_several_minibatches(tiny_env, small_config):
    s1 = settings_for(small_config(mini_batches=4), "pacs", beta=1.0)
    s2 = settings_for(small_config(mini_batches=4), "pacs", beta=2.0)
    state1, row1, _ = one_step(tiny_env, s1)
    state2, row2, _ = one_step(tiny_env, s2)
    assert row1["reward_mean"] == row2["reward_mean"]  # same seed, same rollout
    p1, p2 = dict(state1.policy.named_parameters()), dict(state2.policy.named_parameters())
    assert any(not torch.equal(p1[k], p2[k]) for k in p1)


def test_soft_labels_pass_fractional_scores_through(tiny_env, small_config):
    """Dense rewards: soft_labels feeds the [0,1] scores to the BCE; hard labels binarise them."""

    def partial_credit(texts, golds):
        return [
            0.75 * s + (0.25 if "boxed" in t else 0.0)
            for s, t in zip(grade_scores(texts, golds), texts)
        ]

    _, soft, soft_mbs = one_step(
        tiny_env, settings_for(small_config(), "pacs", soft_labels=True), reward_fn=partial_credit
    )
    _, hard, hard_mbs = one_step(
        tiny_env, settings_for(small_config(), "pacs", soft_labels=False), reward_fn=partial_credit
    )
    assert soft["reward_mean"] == hard["reward_mean"]
    assert 0 < soft["reward_mean"] < 1
    assert all(math.isfinite(m["loss"]) for m in soft_mbs)
    # At psi == 0 both losses are mean(w)·ln 2, but the gradient (σ(0) − r)∇ψ sees the soft r.
    assert soft_mbs[0]["loss"] == pytest.approx(hard_mbs[0]["loss"])
    assert soft_mbs[0]["grad_norm"] != pytest.approx(hard_mbs[0]["grad_norm"])
    assert soft_mbs[-1]["loss"] != pytest.approx(hard_mbs[-1]["loss"])


def test_grpo_uses_clipped_ratio_stats(tiny_env, small_config):
    _, row, mbs = one_step(tiny_env, settings_for(small_config(), "grpo"))
    assert mbs[0]["ppo_kl"] == 0.0  # first mini-batch is on-policy: ratio exactly 1
    assert {"clipfrac", "ppo_kl", "entropy"} <= set(row)


@pytest.mark.parametrize(
    "method,knobs,overrides",
    [
        ("pacs", {"ref": "rollout"}, {"mini_batches": 1}),
        ("pacs", {"ref": "periodic", "ref_reset_every": 1}, {"mini_batches": 1}),
        ("pacs", {"score": "nope"}, {}),
        ("pacs", {"ref": "rollout", "ref_reset_every": 5}, {}),  # would never reset
        ("pacs", {"ref": "periodic"}, {}),  # no period
        ("pacs", {"betta": 2.0}, {}),  # a typo would train at the default beta
        ("pacs", {"beta": -1.0}, {}),
        ("pacs", {"ref": "sometimes"}, {}),
        ("grpo", {"loss_agg_mode": "token-sum"}, {}),
        ("pacs", {}, {"prompts_per_step": 6, "mini_batches": 4}),
    ],
)
def test_invalid_runs_are_rejected(method, knobs, overrides, small_config):
    with pytest.raises(ValueError):
        settings_for(small_config(**overrides), method, **knobs)


def test_no_op_guard_names_the_hazard(small_config):
    with pytest.raises(ValueError, match="mini_batches > 1"):
        settings_for(small_config(mini_batches=1), "pacs")
    # a reset period above 1 or a fixed reference keeps psi != 0 with one update per rollout
    settings_for(small_config(mini_batches=1), "pacs", ref="periodic", ref_reset_every=3)
    settings_for(small_config(mini_batches=1), "pacs", ref="fixed")


def test_prompt_sampler_walks_epochs_and_restores():
    sampler = tt.PromptSampler(10, seed=3)
    first_epoch = sampler.next(4) + sampler.next(4) + sampler.next(2)
    assert sorted(first_epoch) == list(range(10))
    saved = sampler.state_dict()
    a = sampler.next(7)
    other = tt.PromptSampler(10, seed=3)
    other.load_state_dict(saved)
    assert other.next(7) == a


def _without_times(rows):
    return [{k: v for k, v in r.items() if k not in TIME_KEYS} for r in rows]


@pytest.mark.parametrize(
    "run_name", ["pacs_periodic", "dapo", pytest.param("ppo", marks=pytest.mark.slow)]
)
def test_resume_is_bit_identical(run_name, tiny_env, small_config, tmp_path, train_args):
    """Killed after step 4 (last checkpoint at 3) and restarted == one uninterrupted 6-step run."""
    cfg = small_config(steps=6, save_every=3, eval_every=2)
    cfg["runs"]["pacs_periodic"] = {"method": "pacs", "ref": "periodic", "ref_reset_every": 2}
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps(cfg))  # JSON is YAML
    common = train_args(config, None, run_name, 1)
    full, resumed = tmp_path / "full", tmp_path / "resumed"

    tt.main(common + ["--out", str(full)])
    tt.main(common + ["--out", str(resumed), "--stop-after", "4"])
    assert not (resumed / "summary.json").exists()
    assert len(read_jsonl(resumed / "metrics.jsonl")) == 4
    assert torch.load(resumed / ckpt_mod.CHECKPOINT_NAME, weights_only=False)["step"] == 3
    tt.main(common + ["--out", str(resumed)])

    a = torch.load(full / ckpt_mod.CHECKPOINT_NAME, weights_only=False)
    b = torch.load(resumed / ckpt_mod.CHECKPOINT_NAME, weights_only=False)
    for part in ("policy", "ref", "critic"):
        if a[part] is not None:
            assert a[part].keys() == b[part].keys()
            assert all(torch.equal(a[part][k], b[part][k]) for k in a[part]), part
    wa, wb = (
        load_file(full / "model" / "model.safetensors"),
        load_file(resumed / "model" / "model.safetensors"),
    )
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    assert _without_times(read_jsonl(full / "metrics.jsonl")) == _without_times(
        read_jsonl(resumed / "metrics.jsonl")
    )
    assert read_jsonl(full / "eval_curve.jsonl") == read_jsonl(resumed / "eval_curve.jsonl")
    assert [r["step"] for r in read_jsonl(full / "eval_curve.jsonl")] == [0, 2, 4, 6]
    assert json.loads((resumed / "summary.json").read_text())["resumed"] is True


@pytest.mark.parametrize(
    "ref, knobs, skipped",
    [
        ("periodic", {"ref_reset_every": 2}, [True, False, True]),
        ("fixed", {}, [True, False, False]),
    ],
)
def test_reference_pass_is_skipped_only_when_it_equals_the_rollout(
    ref, knobs, skipped, tiny_env, small_config, monkeypatch
):
    """When the reference holds the policy's weights (fixed: step 1; periodic: right after a
    reset) its log-probs ARE the old log-probs, bit for bit: skipping its forward pass leaves
    every log-prob, metric and weight of the run exactly as computing it does."""
    settings = settings_for(small_config(), "pacs", ref=ref, **knobs)
    rows = read_jsonl(tiny_env["train"])
    tokenizer = AutoTokenizer.from_pretrained(tiny_env["base"])
    prompt_ids = encode_prompts(tokenizer, rows)

    def run(skip_allowed: bool):
        state = tt.init_state(settings, tiny_env["base"], len(rows), 0)
        schedule, rows_out = [], []
        for _ in range(3):
            schedule.append(tt.reference_is_policy(state, settings))
            if schedule[-1]:  # the claim itself, on the reference as the step will see it
                check = copy.deepcopy(state)
                tt.BRANCHES[settings.method].start_step(check, settings, check.step + 1)
                ids = torch.randint(3, 50, (4, 12))
                mask = torch.ones_like(ids)
                with torch.no_grad():
                    ref_lp = tt.response_logprobs(check.ref, ids, mask, 5)[0]
                    old_lp = tt.response_logprobs(check.policy, ids, mask, 5)[0]
                assert torch.equal(ref_lp, old_lp)
            with monkeypatch.context() as m:
                if not skip_allowed:
                    m.setattr(tt, "reference_is_policy", lambda state, settings: False)
                row, _ = tt.train_step(state, settings, tokenizer, rows, prompt_ids)
            rows_out.append({k: v for k, v in row.items() if not k.startswith("time_")})
        return schedule, rows_out, state.policy.state_dict()

    schedule, fast_rows, fast_weights = run(skip_allowed=True)
    _, slow_rows, slow_weights = run(skip_allowed=False)
    assert schedule == skipped
    assert fast_rows == slow_rows
    assert all(torch.equal(fast_weights[k], slow_weights[k]) for k in slow_weights)
