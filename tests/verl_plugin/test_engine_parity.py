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
        micro_batch_per_gpu=t.group_size,
        max_prompt_length=128,
    )
    models = {
        k: dataclasses.replace(m, hf_id=f"local/{k}", steps=t.steps)
        for k, m in profile.models.items()
    }
    # The checkpoint study (``study:``) is the tiny engine's only (it scores saved tiny policies).
    return dataclasses.replace(profile, engine="verl", train=train, models=models, study=None)


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
    else:
        assert isinstance(spec, (GrpoSpec, PpoSpec))
        assert actor.loss_agg_mode == spec.loss_agg_mode
        assert actor.clip_ratio_low == actor.clip_ratio_high == spec.clip_ratio
        if isinstance(spec, PpoSpec):
            assert (c.algorithm.gamma, c.algorithm.lam) == (spec.gamma, spec.lam)
            assert (
                c.critic.optim.lr == spec.critic_lr and c.critic.cliprange_value == spec.value_clip
            )
    assert actor.optim.clip_grad == settings.grad_clip


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
