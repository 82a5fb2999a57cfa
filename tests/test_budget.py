"""pacs.budget: the rule reproduces the figures it is fitted to, and the job arithmetic on a
small hand-computed config (one model, one benchmark, one run)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from pacs import budget
from pacs.budget import FIGURES, GPUS, SHAPES, Gpu, Job, Plan, Rule, Shape
from pacs.config import load_profile

# A GPU and a model whose numbers are easy by hand.
GPU = Gpu("test", memory_gb=100, bandwidth_tb_s=1.0, bf16_tflops=100, source="test")
SHAPE = Shape(params_b=1.0, layers=10, kv_heads=1, head_dim=50)  # KV: 2·2·10·1·50 = 2000 B/token
RULE = Rule(bw_eff=0.5, flops_eff=0.5, reserve_gb=0.0)


def test_the_fitted_rule_reproduces_both_published_figures():
    rule = budget.fit_rule()
    for key in ("long", "short"):
        fig = FIGURES[key]
        tps = budget.decode_tokens_per_s(
            rule, GPUS[fig.gpu], SHAPES[fig.model], fig.output_tokens,
            prompt=fig.prompt_tokens, max_seqs=fig.concurrency, cache_tokens=fig.kv_cache_tokens,
        )  # fmt: skip
        assert tps == pytest.approx(fig.tokens_per_s, rel=1e-9)
    # physical efficiencies, and the reserve implied by silybench's reported KV cache:
    # 0.9 · 85.52 GB − 16.38 GB of weights − 377,024 tokens · 147,456 B = 5.0 GB
    assert 0 < rule.bw_eff < 1 and 0 < rule.flops_eff < 1
    assert rule.reserve_gb == pytest.approx(0.9 * 85.52 - 16.38 - 377_024 * 147_456 / 1e9)


def test_the_rule_predicts_our_own_h200_measurement_within_ten_percent():
    """Out of sample: fitted on H100 figures, checked on our H200 run (gpu_check.md)."""
    rule, ours = budget.fit_rule(), FIGURES["ours"]
    tps = budget.decode_tokens_per_s(
        rule, GPUS["h200"], SHAPES[ours.model], ours.output_tokens,
        prompt=ours.prompt_tokens, max_seqs=ours.concurrency, cache_tokens=ours.kv_cache_tokens,
    )  # fmt: skip
    assert tps == pytest.approx(ours.tokens_per_s, rel=0.10)


def test_decode_rate_by_hand():
    # KV: (0.9 · 100e9 − 2e9) / 2000 = 44e6 tokens; context 1000 + 2000/2 = 2000, so the batch is
    # capped at 1024 sequences. Step: (2e9 + 1024 · 2000 · 2000) B / 0.5e12 B/s = 12.192 ms, plus
    # 2 · 1e9 · 1024 · (1 + 1000/2000) FLOPs / 0.5e14 = 61.44 ms: 1024 / 73.632 ms tokens/s.
    tps = budget.decode_tokens_per_s(RULE, GPU, SHAPE, 2000, prompt=1000, max_seqs=1024)
    assert tps == pytest.approx(1024 / 0.073632)
    # KV-bound: with up to 50,000 sequences the cache holds 44e6 / 2000 = 22,000 of them
    tps = budget.decode_tokens_per_s(RULE, GPU, SHAPE, 2000, prompt=1000, max_seqs=50_000)
    step = (2e9 + 44e6 * 2000) / 0.5e12 + 2e9 * 22_000 * 1.5 / 0.5e14
    assert tps == pytest.approx(22_000 / step)


def small_plan(tokens_per_s: float = 1000.0) -> Plan:
    """One model (the test shape), one benchmark of 10 problems, 2 training steps of 4 responses
    of 100 tokens, generate limit 2 h, train limit 1 h."""
    model = SimpleNamespace(hf_id="test/model", nnodes=1, gpus_per_node=2, steps=2)
    ev = SimpleNamespace(
        shard=SimpleNamespace(tokens_per_s=tokens_per_s, job_minutes=120, margin=0.25),
        max_new_tokens=100, vllm=SimpleNamespace(gpu_memory_utilization=0.9), released={},
    )  # fmt: skip
    train = SimpleNamespace(prompts_per_step=2, group_size=2, max_new_tokens=100, save_every=1)
    spec = SimpleNamespace(
        models={"m": model}, eval=ev, train=train,
        verl=SimpleNamespace(rollout=SimpleNamespace(gpu_memory_utilization=0.9)),
    )  # fmt: skip
    limits = {"generate": 2.0, "train_verl": 1.0, "diversity": 1.0}
    return Plan(spec, limits, retries=2, gpu=GPU, rule=RULE, sizes={"b": 10})


def test_generate_jobs_by_hand(monkeypatch):
    monkeypatch.setitem(budget.SHAPES, "test/model", SHAPE)
    plan = small_plan()
    rate = budget.decode_tokens_per_s(RULE, GPU, SHAPE, 100)
    # shard: 120 min · 0.75 = 5400 s; a problem is 8 · 100 / 1000 = 0.8 s: 6750 > 10 problems
    (job,) = budget.generate_jobs(plan, "m", "eval", ["b"], n=8, count=3)
    assert job.count == 3  # one shard per evaluation
    assert job.hours == pytest.approx(5 / 60 + 10 * 8 * 100 / rate / 3600)
    assert job.gpu_hours == pytest.approx(3 * job.hours)
    assert job.margin == pytest.approx(1 - job.hours / 2.0)
    # planned at 100 tokens/s and n = 2000, a problem takes 2000 · 100 / 100 = 2000 s: 2 fit
    # 5400 s, so 11 problems are 5 full shards and a last one of 1, per evaluation
    plan = small_plan(tokens_per_s=100.0)
    full, last = budget.generate_jobs(replace(plan, sizes={"b": 11}), "m", "eval", ["b"], 2000, 3)
    assert (full.count, last.count) == (15, 3) and last.note == "1 problems"
    assert full.hours == pytest.approx(5 / 60 + 2 * 2000 * 100 / rate / 3600)
    assert last.hours == pytest.approx(5 / 60 + 1 * 2000 * 100 / rate / 3600)
    # at 0.01 tokens/s the planner fits 5400 / 80,000 s -> refuses even one problem
    with pytest.raises(ValueError, match="one shard"):
        budget.generate_jobs(small_plan(0.01), "m", "eval", ["b"], n=8, count=1)


def test_a_slow_model_is_marked_split(monkeypatch):
    slow = Shape(params_b=40.0, layers=10, kv_heads=1, head_dim=50)  # 80 GB of weights
    monkeypatch.setitem(budget.SHAPES, "test/model", slow)
    plan = small_plan(tokens_per_s=1e9)  # the planner puts all 10 problems in one shard
    rate = budget.decode_tokens_per_s(RULE, GPU, slow, 100)
    (job,) = budget.generate_jobs(plan, "m", "eval", ["b"], n=1000, count=1)
    hours = 5 / 60 + 10 * 1000 * 100 / rate / 3600
    assert job.hours == pytest.approx(hours) and hours > 1.5  # margin under 25 % of 2 h
    keep = int((2.0 * 0.75 - 5 / 60) * 3600 * rate // (1000 * 100))
    assert 1 <= keep < 10 and f"SPLIT: <= {keep} problems a shard" in job.note
    (job,) = budget.generate_jobs(plan, "m", "eval", ["b"], n=100_000, count=1)
    assert "not even 1 problem fits" in job.note


def test_train_hours_by_hand(monkeypatch):
    monkeypatch.setitem(budget.SHAPES, "test/model", SHAPE)
    plan = small_plan()
    rate = budget.decode_tokens_per_s(RULE, GPU, SHAPE, 100)
    rollout = 4 * 100 / (rate * 2)  # 4 responses of 100 tokens on 2 GPUs
    update = 10 * 1e9 * 4 * (budget.PROMPT_TOKENS + 100) / (0.30 * 100e12 * 2)
    want = 0.25 + 2 * (rollout + update) / 3600 + 2 * budget.CHECKPOINT_HOURS
    assert budget.train_hours(plan, "m", "pacs", 2) == pytest.approx(want)
    # PPO trains a critic of the same size: the update costs twice as much
    ppo = 0.25 + 2 * (rollout + 2 * update) / 3600 + 2 * budget.CHECKPOINT_HOURS
    assert budget.train_hours(plan, "m", "ppo", 2) == pytest.approx(ppo)


def test_profile_limits_read_runtime_in_minutes():
    profile = {
        "retries": 2,
        "default-resources": {"runtime": 120},
        "set-resources": {"train_verl": {"runtime": 4320}, "generate": {"runtime": 720}},
    }
    limits, retries = budget.profile_limits(profile)
    assert limits == {"train_verl": 72.0, "generate": 12.0, "diversity": 2.0} and retries == 2
    with pytest.raises(ValueError, match="no runtime for train_verl"):
        budget.profile_limits({"set-resources": {}})


def test_the_totals_add_up():
    jobs = [
        Job("train", "a", "r", 1, 10.0, 8, 72.0),
        Job("eval", "a", "x n=8", 6, 2.0, 1, 12.0),
        Job("eval", "b", "x n=8", 2, 11.0, 1, 12.0, "SPLIT"),
    ]
    text = budget.render(jobs, 8, detail=True)
    assert "| a | 80 | 12 | 0 | 0 | 0 | 92 |" in text  # 10 · 8 and 6 · 2
    assert "| b | 0 | 22 | 0 | 0 | 0 | 22 |" in text
    assert "| **matrix** | 80 | 34 | 0 | 0 | 0 | **114** |" in text
    assert re.search(
        r"1 job group\(s\) under the 25% margin \(SPLIT.*\): eval b x n=8$", text, re.MULTILINE
    )


def test_the_paper_shards_are_planned_at_no_more_than_the_rules_rate():
    """configs/paper.yaml's eval.shard.tokens_per_s sizes every generate shard: at most the
    rule's Qwen3-8B rate on an H200 at max_new_tokens, so the 8B's shards keep their margin."""
    spec = load_profile(Path(__file__).resolve().parents[1] / "configs" / "paper.yaml")
    rate = budget.decode_tokens_per_s(
        budget.fit_rule(), GPUS["h200"], SHAPES["Qwen/Qwen3-8B"], spec.eval.max_new_tokens
    )
    assert spec.eval.shard.tokens_per_s <= rate < spec.eval.shard.tokens_per_s * 1.05
