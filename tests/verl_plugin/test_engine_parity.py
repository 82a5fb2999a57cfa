"""Both engines resolve the same method from the same spec: for every run of every config in
configs/, the tiny engine's Settings and the verl launch built from that spec agree on β, score,
weights, the reference schedule (as each engine actually steps it) and the baselines' knobs."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest
import torch

from pacs.config import Profile, load_config, parse_profile
from pacs.methods import DapoSpec, GrpoSpec, PacsSpec, PpoSpec, RealSpec
from pacs.tiny import train as tt
from pacs.verl_plugin.launch.overrides import ClusterShape, RunPaths, build_overrides

REPO = Path(__file__).resolve().parents[2]
CONFIGS = sorted((REPO / "configs").glob("*.yaml"))
STEPS = range(1, 31)
# Beside each config's own runs: the reference schedules no shipped config uses yet.
EXTRA_RUNS = {
    "x_periodic3": {"method": "pacs", "ref": "periodic", "ref_reset_every": 3, "ablation": "ref"},
    "x_periodic1": {"method": "pacs", "ref": "periodic", "ref_reset_every": 1, "ablation": "ref"},
    "x_fixed": {
        "method": "pacs",
        "ref": "fixed",
        "beta": 0.25,
        "score": "drgrpo",
        "ablation": "ref",
    },
}


def _profile(path: Path) -> Profile:
    cfg = copy.deepcopy(load_config(path))
    cfg["runs"].update(EXTRA_RUNS)
    return parse_profile(cfg, str(path))


def as_verl(profile: Profile) -> Profile:
    """A tiny profile with the keys only the verl launcher needs filled in; runs untouched."""
    if profile.engine == "verl":
        return profile
    t = profile.train
    train = dataclasses.replace(
        t,
        mini_batch_size=t.prompts_per_step // t.mini_batches,
        micro_batch_per_gpu=t.micro_batch_per_gpu,
        max_prompt_length=128,
    )
    models = {
        k: dataclasses.replace(m, hf_id=f"local/{k}", steps=t.steps)
        for k, m in profile.models.items()
    }
    # The checkpoint study (``study:``) is the tiny engine's only (it scores saved tiny policies),
    # and so are the claims its design declares on the study's endpoints (``claims:``).
    return dataclasses.replace(
        profile, engine="verl", train=train, models=models, study=None, claims=None
    )


CASES = [(path, run) for path in CONFIGS for run in _profile(path).runs]


def tiny_resets(settings: tt.Settings) -> list[int]:
    """Steps at which the tiny engine resets the reference (its optimizer is replaced)."""
    policy, ref = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    state = tt.State(
        policy, tt.make_optimizer(policy, 1e-3, settings), tt.PromptSampler(1, 0), ref=ref
    )
    fired = []
    for step in STEPS:
        before = state.optimizer
        tt.BRANCHES[settings.method].start_step(state, settings, step)
        if state.optimizer is not before:
            fired.append(step)
            assert all(
                torch.equal(a, b)
                for a, b in zip(ref.state_dict().values(), policy.state_dict().values())
            )
    return fired


class _RecordingWG:
    def __init__(self):
        self.calls = []

    def reset_reference(self, reset_optimizer=True):
        self.calls.append(reset_optimizer)
        return [{}]


def verl_resets(algorithm) -> list[int]:
    """Steps at which verl's PACSTrainerSync resets the reference (with the optimizer)."""
    from pacs.verl_plugin.reference import schedule_from_algorithm_config
    from pacs.verl_plugin.trainer import PACSTrainerSync

    trainer = object.__new__(PACSTrainerSync)
    trainer.ref_settings = schedule_from_algorithm_config(algorithm)
    trainer.actor_rollout_wg = _RecordingWG()
    trainer._steps_in_this_process = 0
    fired = []
    for step in STEPS:
        trainer.global_steps = step
        before = len(trainer.actor_rollout_wg.calls)
        trainer.on_step_begin()
        if len(trainer.actor_rollout_wg.calls) > before:
            assert trainer.actor_rollout_wg.calls[-1] is True
            fired.append(step)
    return fired


@pytest.mark.parametrize("path,run", CASES, ids=[f"{p.stem}-{r}" for p, r in CASES])
def test_both_engines_resolve_the_same_method(path, run, compose, tmp_path):
    from verl.utils.config import omega_conf_to_dataclass

    from pacs.verl_plugin.advantage import use_weight_from_config

    profile = _profile(path)
    settings = tt.Settings.from_profile(profile, run)
    verl_profile = as_verl(profile)
    model = next(iter(verl_profile.models))
    c = compose(
        build_overrides(
            verl_profile,
            verl_profile.run(run),
            model,
            0,
            RunPaths("/t", "/t", tmp_path),
            ClusterShape(1, 8),
            "/l",
        )
    )
    actor = omega_conf_to_dataclass(c.actor_rollout_ref.actor)
    spec = settings.method
    assert spec is profile.runs[run].method  # both read the one object
    if isinstance(spec, PacsSpec):
        loss = actor.policy_loss.spec()
        assert (loss.beta, loss.score, loss.use_weight) == (spec.beta, spec.score, spec.use_weight)
        assert type(loss.beta) is float and use_weight_from_config(c.algorithm) is spec.use_weight
        assert tiny_resets(settings) == verl_resets(c.algorithm)
        assert (c.actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu is not None) == (
            spec.reference.needs_model
        )
    elif isinstance(spec, RealSpec):
        assert actor.policy_loss.spec() == spec and use_weight_from_config(c.algorithm) is False
        assert tiny_resets(settings) == verl_resets(c.algorithm) == []
    elif isinstance(spec, DapoSpec):
        assert actor.loss_agg_mode == spec.loss_agg_mode
        assert (actor.clip_ratio_low, actor.clip_ratio_high) == (
            spec.clip_ratio_low,
            spec.clip_ratio_high,
        )
        assert bool(c.algorithm.filter_groups.enable) is spec.dynamic_sampling
        assert actor.clip_ratio_c == spec.clip_ratio_c == 10.0  # the recipe's cap
    else:
        assert isinstance(spec, (GrpoSpec, PpoSpec))
        assert actor.loss_agg_mode == spec.loss_agg_mode
        divisor = settings.objective.sum_norm_divisor  # the tiny engine's horizon
        assert actor.loss_scale_factor == (None if divisor is None else int(divisor))
        assert actor.clip_ratio_low == actor.clip_ratio_high == spec.clip_ratio
        assert actor.clip_ratio_c == spec.clip_ratio_c == 3.0  # verl's default, now stated
        if isinstance(spec, PpoSpec):
            assert (c.algorithm.gamma, c.algorithm.lam) == (spec.gamma, spec.lam)
            assert (
                c.critic.optim.lr == spec.critic_lr and c.critic.cliprange_value == spec.value_clip
            )
    assert actor.optim.clip_grad == settings.objective.max_norm


def test_the_reset_schedules_are_not_trivial():
    profile = _profile(CONFIGS[0])
    assert tiny_resets(tt.Settings.from_profile(profile, "x_periodic3")) == [
        4,
        7,
        10,
        13,
        16,
        19,
        22,
        25,
        28,
    ]
    assert tiny_resets(tt.Settings.from_profile(profile, "x_periodic1")) == list(STEPS)[1:]
    assert tiny_resets(tt.Settings.from_profile(profile, "x_fixed")) == []


# ------------------------------------------------------------------ one objective, both engines
#
# The tiny engine's loss branch and verl 0.9.1's own policy-loss function (the one ppo_loss picks by
# actor.policy_loss.loss_mode, with the actor config the launcher's overrides compose to) on the
# same tensors: loss and gradient, per method, including tokens where the dual-clip cap binds.

PAPER = REPO / "configs" / "paper.yaml"
LOSS_RUNS = {
    "grpo": {"method": "grpo", "ablation": "main"},
    "ppo": {"method": "ppo", "ablation": "main"},
    "dapo": {"method": "dapo", "ablation": "main"},
    "real": {"method": "real", "ablation": "main"},
    "grpo_nocap": {"method": "grpo", "ablation": "main", "clip_ratio_c": None},
    "ppo_token_mean": {"method": "ppo", "ablation": "main", "loss_agg_mode": "token-mean"},
    "dapo_cap2": {"method": "dapo", "ablation": "main", "clip_ratio_c": 2.0},
}
GROUPS, T = 2, 6


@pytest.fixture(scope="module")
def loss_profile() -> Profile:
    cfg = copy.deepcopy(load_config(PAPER))
    cfg["runs"] = LOSS_RUNS
    return parse_profile(cfg, str(PAPER))


def verl_actor(profile: Profile, run: str, compose, tmp_path):
    """verl's actor config (a dataclass) composed from the launcher's overrides for ``run``."""
    from verl.utils.config import omega_conf_to_dataclass

    model = next(iter(profile.models))
    overrides = build_overrides(
        profile,
        profile.run(run),
        model,
        0,
        RunPaths("/t", "/t", tmp_path),
        ClusterShape(1, 8),
        "/l",
    )
    return omega_conf_to_dataclass(compose(overrides).actor_rollout_ref.actor)


def loss_batch(n: int, seed: int = 0) -> dict:
    """[B, T] log-probs (the rollout's and the policy's), a ragged mask, 0/1 labels in mixed and
    homogeneous groups, advantages with both signs; token (0, 0) has A < 0 at ρ = e^3 ≈ 20, where
    every cap in LOSS_RUNS binds."""
    g = torch.Generator().manual_seed(seed)
    b = GROUPS * n
    lengths = torch.randint(1, T + 1, (b,), generator=g)
    lengths[0] = T
    mask = (torch.arange(T)[None, :] < lengths[:, None]).float()
    old = -torch.rand(b, T, generator=g) * 3
    logp = old + 0.8 * torch.randn(b, T, generator=g)
    logp[0, 0] = old[0, 0] + 3.0
    adv = torch.randn(b, T, generator=g) * mask
    adv[0, 0] = -0.5
    labels = torch.tensor([1.0, 0.0] * (n // 2) + [1.0] * n)  # group 0 mixed, group 1 all correct
    return {
        "old_logp": old,
        "ref_logp": old,
        "logp": logp,
        "mask": mask,
        "adv": adv,
        "labels": labels,
    }


def verl_advantages(spec, data: dict, n: int) -> torch.Tensor:
    """What verl's actor receives as advantages: the tensor itself, or for REAL the labels as
    signs of weight 1 (the ``pacs`` estimator with ``use_weight=False``)."""
    from pacs.verl_plugin.advantage import signed_class_weights

    if not isinstance(spec, RealSpec):
        return data["adv"]
    uids = [f"u{i // n}" for i in range(len(data["labels"]))]
    return signed_class_weights(data["labels"], uids, False).unsqueeze(-1) * data["mask"]


def tiny_loss(settings: tt.Settings, data: dict):
    leaf = data["logp"].clone().requires_grad_(True)
    batch = {**data, "advantages": data["adv"]}
    rows = slice(0, leaf.shape[0])
    loss, stats = tt.BRANCHES[settings.method].loss(leaf, batch, rows, data["mask"], settings)
    loss.backward()
    return loss.detach(), leaf.grad, stats


def verl_loss(actor, advantages: torch.Tensor, data: dict):
    """verl.workers.utils.losses.ppo_loss's policy-loss call, one rank, one micro-batch."""
    from verl.trainer.ppo.core_algos import get_policy_loss_fn

    import pacs.verl_plugin.loss  # noqa: F401  (registers the pacs and real losses)

    mask = data["mask"].bool()
    actor.global_batch_info.update(
        dp_size=1,
        batch_num_tokens=int(mask.sum()),
        global_batch_size=mask.shape[0],
        loss_scale_factor=actor.loss_scale_factor,
    )
    leaf = data["logp"].clone().requires_grad_(True)
    loss, metrics = get_policy_loss_fn(actor.policy_loss.loss_mode)(
        old_log_prob=data["old_logp"],
        log_prob=leaf,
        advantages=advantages,
        response_mask=mask,
        loss_agg_mode=actor.loss_agg_mode,
        config=actor,
    )
    loss.backward()
    return loss.detach(), leaf.grad, metrics


@pytest.mark.parametrize("run", list(LOSS_RUNS))
def test_tiny_loss_equals_verl_policy_loss(run, loss_profile, compose, tmp_path):
    settings = tt.Settings.from_profile(loss_profile, run)
    spec, n = settings.method, settings.group_size
    data = loss_batch(n, seed=len(run))
    ours, our_grad, stats = tiny_loss(settings, data)
    theirs, their_grad, metrics = verl_loss(
        verl_actor(loss_profile, run, compose, tmp_path), verl_advantages(spec, data, n), data
    )
    torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(our_grad, their_grad, rtol=1e-6, atol=1e-7)
    assert our_grad.abs().sum() > 0
    if isinstance(spec, RealSpec):
        return
    capped = spec.clip_ratio_c is not None
    assert (stats["clipfrac_lower"] > 0) is capped  # token (0, 0) is capped iff there is a cap
    assert stats["clipfrac_lower"] == pytest.approx(metrics["actor/pg_clipfrac_lower"])
    assert stats["clipfrac"] == pytest.approx(metrics["actor/pg_clipfrac"])


@pytest.mark.parametrize("run,expected", [("grpo", 1.2371), ("grpo_nocap", 1.8481)])
def test_the_cap_binds_as_in_verl(run, expected, loss_profile, compose, tmp_path):
    """One token, A = −0.41237 at ρ = e^1.5 ≈ 4.48: verl's default cap c = 3 gives −A·c = 1.2371
    (its gradient is 0: the cap does not depend on the policy); uncapped −A·ρ = 1.8481."""
    settings = tt.Settings.from_profile(loss_profile, run)
    one = torch.ones(1, 1)
    data = {"old_logp": 0 * one, "logp": 1.5 * one, "mask": one, "adv": -0.41237 * one}
    ours, our_grad, _ = tiny_loss(settings, data)
    theirs, their_grad, _ = verl_loss(
        verl_actor(loss_profile, run, compose, tmp_path), data["adv"], data
    )
    # seq-mean-token-sum-norm divides by the budget over the official micro-batch sum's factor
    horizon = settings.max_new_tokens / settings.micro_batch_per_gpu
    assert float(ours) * horizon == pytest.approx(expected, abs=1e-4)
    assert float(theirs) * horizon == pytest.approx(expected, abs=1e-4)
    assert (
        float(our_grad)
        == float(their_grad)
        == (0.0 if run == "grpo" else pytest.approx(1.8481 / horizon, abs=1e-7))
    )


def test_tiny_critic_loss_is_normalised_as_verls(loss_profile, compose, tmp_path):
    """The PPO critic's seq-mean-token-sum-norm divides by the actor's loss_scale_factor in verl
    0.9.1 (critic.loss_scale_factor interpolates it), not by the batch's longest response: here
    T = 6 against a budget of 8192 / 8."""
    from verl.trainer.ppo.core_algos import compute_value_loss

    from pacs import core_algos

    settings = tt.Settings.from_profile(loss_profile, "ppo")
    model = next(iter(loss_profile.models))
    overrides = build_overrides(
        loss_profile,
        loss_profile.run("ppo"),
        model,
        0,
        RunPaths("/t", "/t", tmp_path),
        ClusterShape(1, 8),
        "/l",
    )
    critic = compose(overrides).critic
    data = loss_batch(settings.group_size, seed=3)
    g = torch.Generator().manual_seed(4)
    values, old = torch.randn(*data["mask"].shape, generator=g), data["old_logp"]
    returns = torch.randn(*values.shape, generator=g)
    theirs, _ = compute_value_loss(
        values,
        returns,
        old,
        data["mask"].bool(),
        critic.cliprange_value,
        loss_agg_mode=critic.loss_agg_mode,
        loss_scale_factor=critic.loss_scale_factor,
    )
    ours, _ = core_algos.value_loss(
        values,
        old,
        returns,
        data["mask"],
        settings.method.value_clip,
        settings.method.loss_agg_mode,
        horizon=settings.objective.sum_norm_divisor,
    )
    assert critic.loss_scale_factor == settings.objective.sum_norm_divisor == 1024 > T
    torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=0)


def test_dapo_warms_up_and_decays_as_its_recipe_in_both_engines(loss_profile, compose, tmp_path):
    """The DAPO recipe's AdamW weight decay 0.1 and 10-step linear warm-up: verl's constant
    schedule with warm-up (stepped once per training step) and the tiny engine's factor agree."""
    from verl.utils.torch_functional import get_constant_schedule_with_warmup

    settings = tt.Settings.from_profile(loss_profile, "dapo")
    actor = verl_actor(loss_profile, "dapo", compose, tmp_path)
    assert actor.optim.weight_decay == settings.actor_weight_decay == 0.1
    assert actor.optim.lr_warmup_steps == settings.method.lr_warmup_steps == 10
    assert verl_actor(loss_profile, "grpo", compose, tmp_path).optim.weight_decay == 0.01
    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.AdamW([param], lr=1.0)
    scheduler = get_constant_schedule_with_warmup(optimizer, actor.optim.lr_warmup_steps)
    for step in range(1, 16):
        assert settings.lr_factor(step) == pytest.approx(optimizer.param_groups[0]["lr"])
        scheduler.step()
    assert settings.lr_factor(1) == 0.0 and settings.lr_factor(11) == 1.0
    assert tt.Settings.from_profile(loss_profile, "grpo").lr_factor(1) == 1.0
