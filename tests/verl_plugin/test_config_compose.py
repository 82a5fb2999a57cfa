"""Every paper run's overrides compose with verl's own ppo_trainer.yaml and resolve to App. C."""

from __future__ import annotations

from pathlib import Path

import pytest

from pacs.config import ConfigError, load_config, parse_profile
from pacs.methods import traits
from pacs.tiny.build import CHAT_TEMPLATE, build_tokenizer
from pacs.verl_plugin.launch.overrides import ClusterShape, RunPaths, build_overrides

REPO = Path(__file__).resolve().parents[2]
PAPER_CONFIGS = (REPO / "configs" / "paper.yaml", REPO / "configs" / "paper_v1.yaml")

# App. C (v2) and the official scripts (v1), written out by hand, not read from the configs.
EXPECTED = {
    "paper": {
        "batch": 1024,
        "prompt": 1024,
        "response": 8192,
        "mini": 256,
        "micro": 8,
        "n": 8,
        "lr": 1e-6,
        "steps": {"qwen3_4b": 120, "qwen3_8b": 320},
        "hf": {"qwen3_4b": "Qwen/Qwen3-4B", "qwen3_8b": "Qwen/Qwen3-8B"},
    },
    "paper_v1": {
        "batch": 1024,
        "prompt": 512,
        "response": 4096,
        "mini": 256,
        "micro": 8,
        "n": 8,
        "lr": 1e-6,
        "steps": {"qwen25_7b": 300},
        "hf": {"qwen25_7b": "Qwen/Qwen2.5-7B"},
    },
}
PACS_KNOBS = {  # run -> (beta, score, use_weight)
    "pacs": (1.0, "rloo", True),
    "pacs_noweight": (1.0, "rloo", False),
    "pacs_score_grpo": (1.0, "grpo", True),
    "pacs_score_drgrpo": (1.0, "drgrpo", True),
    "pacs_beta0.5": (0.5, "rloo", True),
    "pacs_beta2": (2.0, "rloo", True),
}
BASELINES = {"grpo": "grpo", "ppo": "gae"}
# configs/paper.yaml only: later baselines (docs/design.md#dapo-and-real)
NOT_IN_PAPER = {"dapo", "real"}
# Every run on the first model; every model on the main PACS run (only steps and weights differ).
CASES = [
    (path, run, next(iter(load_config(path)["models"])))
    for path in PAPER_CONFIGS
    for run in load_config(path)["runs"]
]
CASES += [
    (path, "pacs", model)
    for path in PAPER_CONFIGS
    for model in list(load_config(path)["models"])[1:]
]


def test_every_expected_run_is_configured():
    paper, v1 = (set(load_config(path)["runs"]) for path in PAPER_CONFIGS)
    assert paper == set(PACS_KNOBS) | set(BASELINES) | NOT_IN_PAPER
    assert v1 == set(PACS_KNOBS) | set(BASELINES)


def _overrides(cfg, run_name, model, tmp_path: Path) -> list[str]:
    paths = RunPaths(
        train_file="/data/train.parquet",
        val_file="/data/train.parquet",
        out_dir=tmp_path / run_name,
    )
    profile = parse_profile(cfg)
    return build_overrides(
        profile,
        profile.run(run_name),
        model,
        0,
        paths,
        ClusterShape(1, 8),
        str(tmp_path / "log.jsonl"),
    )


def _check_app_c(c, exp: dict, model: str, method: str) -> None:
    actor, rollout = c.actor_rollout_ref.actor, c.actor_rollout_ref.rollout
    assert c.data.train_batch_size == exp["batch"]
    assert c.data.max_prompt_length == exp["prompt"] and rollout.prompt_length == exp["prompt"]
    assert (
        c.data.max_response_length == exp["response"] and rollout.response_length == exp["response"]
    )
    assert c.data.filter_overlong_prompts is True
    assert actor.ppo_mini_batch_size == exp["mini"]
    assert (
        c.data.train_batch_size // actor.ppo_mini_batch_size == 4
    )  # docs/design.md#when-the-ablations-are-no-ops: 4 updates per rollout
    assert rollout.n == exp["n"] and actor.rollout_n == exp["n"]
    assert actor.optim.lr == pytest.approx(exp["lr"])
    assert actor.use_kl_loss is False and c.algorithm.use_kl_in_reward is False
    assert c.trainer.total_training_steps == exp["steps"][model]
    assert c.trainer.resume_mode == "auto"
    if traits(method).needs_whole_groups:
        # force_group_size = n makes verl count the micro-batch in groups: 1 group of 8 responses.
        assert actor.ppo_micro_batch_size_per_gpu * rollout.n == exp["micro"]
        assert c.trainer.v1.trainer_mode == "label_sync"
    else:
        assert actor.ppo_micro_batch_size_per_gpu == exp["micro"]
        assert c.trainer.v1.trainer_mode == "plugin_sync"  # verl's sync trainer, our worker


def _check_not_in_paper(c, run_name: str) -> None:
    """DAPO: verl's own clip-higher, token-mean and group filter; REAL: our loss on the labels."""
    actor = c.actor_rollout_ref.actor
    if run_name == "dapo":
        assert c.algorithm.adv_estimator == "grpo" and actor.policy_loss.loss_mode == "vanilla"
        assert (actor.clip_ratio_low, actor.clip_ratio_high) == (0.2, 0.28)
        assert actor.loss_agg_mode == "token-mean"
        assert c.algorithm.filter_groups.enable is True
        assert c.algorithm.filter_groups.metric == "score"
        return
    assert c.algorithm.adv_estimator == "pacs" and actor.policy_loss.loss_mode == "real"
    assert actor.policy_loss.tau == 0.5 and c.algorithm.label_loss.use_weight is False


def _check_method(c, run_name: str) -> None:
    if run_name in NOT_IN_PAPER:
        _check_not_in_paper(c, run_name)
        return
    if run_name in BASELINES:
        assert c.algorithm.adv_estimator == BASELINES[run_name]
        assert c.actor_rollout_ref.actor.policy_loss.loss_mode == "vanilla"
        assert (
            c.actor_rollout_ref.actor.loss_agg_mode == "seq-mean-token-sum-norm"
        )  # official scripts
        if run_name == "ppo":
            assert c.critic.enable is True and c.critic.optim.lr == pytest.approx(1e-5)
            assert c.algorithm.gamma == 1.0 and c.algorithm.lam == 1.0
        return
    beta, score, use_weight = PACS_KNOBS[run_name]
    loss = c.actor_rollout_ref.actor.policy_loss
    assert c.algorithm.adv_estimator == "pacs" and loss.loss_mode == "pacs"
    assert loss.beta == beta and loss.score == score and loss.use_weight is use_weight
    assert (
        c.algorithm.label_loss.use_weight is use_weight and c.algorithm.label_loss.ref == "rollout"
    )


@pytest.mark.parametrize(
    "config_path,run_name,model", CASES, ids=[f"{p.stem}-{r}-{m}" for p, r, m in CASES]
)
def test_overrides_compose_and_validate(
    config_path, run_name, model, compose, tiny_hf_dir, tmp_path
):
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    from pacs.verl_plugin.loss import PACSPolicyLossConfig, REALPolicyLossConfig
    from pacs.verl_plugin.trainer import check_pacs_config

    cfg = load_config(config_path)
    exp = EXPECTED[cfg["profile"]]
    overrides = _overrides(cfg, run_name, model, tmp_path)
    assert f"actor_rollout_ref.model.path={exp['hf'][model]}" in overrides
    # verl's validation instantiates the critic's HF model config: point the model paths (last
    # override wins) at a local tiny model so nothing is downloaded.
    c = compose(
        overrides
        + [f"actor_rollout_ref.model.path={tiny_hf_dir}", f"critic.model.path={tiny_hf_dir}"]
    )
    method = parse_profile(cfg).run(run_name).method.name
    _check_app_c(c, exp, model, method)
    _check_method(c, run_name)
    check_pacs_config(c)
    validate_config(c, use_reference_policy=need_reference_policy(c), use_critic=need_critic(c))
    actor = omega_conf_to_dataclass(c.actor_rollout_ref.actor)
    if method == "pacs":
        assert isinstance(actor.policy_loss, PACSPolicyLossConfig)
        assert (
            actor.policy_loss.beta,
            actor.policy_loss.score,
            actor.policy_loss.use_weight,
        ) == PACS_KNOBS[run_name]
    if method == "real":
        assert isinstance(actor.policy_loss, REALPolicyLossConfig)
        assert actor.policy_loss.spec().tau == 0.5


def test_token_mean_is_offered_for_baselines(compose, tmp_path):
    profile = parse_profile(load_config(PAPER_CONFIGS[0]))
    paths = RunPaths("/d/t.parquet", "/d/t.parquet", tmp_path)
    overrides = build_overrides(
        profile, profile.run("grpo"), "qwen3_4b", 0, paths, ClusterShape(1, 8), "/l", "token-mean"
    )
    c = compose(overrides)
    assert c.actor_rollout_ref.actor.loss_agg_mode == "token-mean"
    assert c.actor_rollout_ref.actor.loss_scale_factor is None


def test_sum_norm_uses_a_constant_horizon(compose, tmp_path):
    cfg = load_config(PAPER_CONFIGS[0])
    c = compose(_overrides(cfg, "grpo", "qwen3_4b", tmp_path))
    # Not each micro-batch's padded length: the budget, over the official scripts' micro-batch
    # sum (verl 0.3.1 summed 8 sequences where verl 0.9.1 averages them): 8192 / 8.
    assert c.actor_rollout_ref.actor.loss_scale_factor == 1024
    cfg["method_defaults"] = {"grpo": {"loss_scale": "sequence_mean"}}
    c = compose(_overrides(cfg, "grpo", "qwen3_4b", tmp_path))
    assert c.actor_rollout_ref.actor.loss_scale_factor == 8192


def test_periodic_reference_adds_a_ref_model(compose, tmp_path):
    cfg = load_config(PAPER_CONFIGS[0])
    cfg["runs"]["pacs_ref10"] = {
        "method": "pacs",
        "ref": "periodic",
        "ref_reset_every": 10,
        "ablation": "ref",
    }
    c = compose(_overrides(cfg, "pacs_ref10", "qwen3_4b", tmp_path))
    assert c.algorithm.label_loss.ref == "periodic" and c.algorithm.label_loss.ref_reset_every == 10
    assert c.actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu == 16


def test_single_update_per_rollout_is_refused(tmp_path):
    cfg = load_config(PAPER_CONFIGS[0])
    cfg["train"].update(mini_batch_size=1024, mini_batches=1)
    with pytest.raises(ValueError, match="docs/design.md#when-the-ablations-are-no-ops"):
        _overrides(cfg, "pacs_beta2", "qwen3_4b", tmp_path)


def test_inconsistent_update_count_is_refused(tmp_path):
    cfg = load_config(PAPER_CONFIGS[0])
    cfg["train"]["mini_batches"] = 3
    with pytest.raises(ValueError, match="mini_batches"):
        _overrides(cfg, "grpo", "qwen3_4b", tmp_path)


def test_micro_batch_must_hold_whole_groups(tmp_path):
    cfg = load_config(PAPER_CONFIGS[0])
    cfg["train"]["micro_batch_per_gpu"] = 12
    with pytest.raises(ValueError, match="multiple of train.group_size"):
        _overrides(cfg, "pacs", "qwen3_4b", tmp_path)


def test_soft_labels_are_refused_on_verl(tmp_path):
    cfg = load_config(PAPER_CONFIGS[0])
    cfg["method_defaults"] = {"pacs": {"soft_labels": True}}
    with pytest.raises(ValueError, match="tiny engine"):
        _overrides(cfg, "pacs", "qwen3_4b", tmp_path)


def test_mismatched_weight_settings_are_caught(compose, tmp_path):
    from pacs.verl_plugin.trainer import check_pacs_config

    cfg = load_config(PAPER_CONFIGS[0])
    c = compose(
        _overrides(cfg, "pacs", "qwen3_4b", tmp_path) + ["algorithm.label_loss.use_weight=false"]
    )
    with pytest.raises(ValueError, match="use_weight"):
        check_pacs_config(c)


def test_reward_function_resolves_through_verls_loader(compose, tmp_path):
    """reward.custom_reward_function -> pacs.rewards.math.compute_score via verl's
    load_extern_object."""
    from verl.utils.import_utils import load_extern_object

    from pacs.rewards.math import compute_score

    c = compose(_overrides(load_config(PAPER_CONFIGS[0]), "pacs", "qwen3_4b", tmp_path))
    spec = c.reward.custom_reward_function
    assert load_extern_object(module_path=spec.path, object_name=spec.name) is compute_score
    assert (
        c.ray_kwargs.ray_init.runtime_env.env_vars.VERL_USE_EXTERNAL_MODULES
        == "pacs.verl_plugin.register"
    )


# ------------------------------------------------------------------ one default, local paths


def _paper(**train_changes) -> dict:
    import copy

    cfg = copy.deepcopy(load_config(PAPER_CONFIGS[0]))
    for key, value in train_changes.items():
        if value is _DROP:
            cfg["train"].pop(key)
        else:
            cfg["train"][key] = value
    return cfg


_DROP = object()


def _with_clip(cfg: dict, method: str, value) -> dict:
    """``cfg`` with ``method_defaults.<method>.grad_clip = value`` (``_DROP``: the spec default)."""
    if value is not _DROP:
        cfg.setdefault("method_defaults", {}).setdefault(method, {})["grad_clip"] = value
    return cfg


@pytest.mark.parametrize(
    "method,value,expected",
    [
        ("ppo", _DROP, 1.0),  # verl 0.3.1's default, which the official scripts ran with
        ("pacs", _DROP, float("inf")),  # the official actor never clips
        ("ppo", 0.5, 0.5),
        ("ppo", None, float("inf")),
    ],
)
def test_both_engines_read_grad_clip_the_same_way(method, value, expected, compose, tmp_path):
    """Each method's clip (docs/design.md#gradient-clipping), read alike by both engines; null = no
    clipping, an infinite norm for verl's ``clip_grad_norm_`` (a multiplication by exactly 1)."""
    from pacs.tiny.train import Settings

    c = compose(_overrides(_with_clip(_paper(), method, value), method, "qwen3_4b", tmp_path))
    assert c.actor_rollout_ref.actor.optim.clip_grad == expected
    if method == "ppo":
        assert c.critic.optim.clip_grad == expected
    tiny = _with_clip(load_config(REPO / "configs" / "default.yaml"), method, value)
    assert Settings.from_profile(parse_profile(tiny), method).objective.max_norm == expected


@pytest.mark.parametrize("value", [0, -1.0])
def test_a_clip_norm_that_is_not_positive_is_refused_naming_the_key(value):
    with pytest.raises(ConfigError, match=r"method_defaults\.pacs\.grad_clip"):
        parse_profile(_with_clip(_paper(), "pacs", value))


@pytest.mark.parametrize(
    "where,edit",
    [
        (
            "method_defaults.grpo.loss_scale",
            lambda c: c["method_defaults"].update(grpo={"loss_scale": 0}),
        ),
        ("train.micro_batch_per_gpu", lambda c: c["train"].update(micro_batch_per_gpu=0)),
    ],
)
def test_a_loss_scale_of_zero_is_refused_naming_the_key(where, edit):
    cfg = _paper()
    cfg.setdefault("method_defaults", {})
    edit(cfg)
    with pytest.raises(ConfigError, match=where.replace(".", r"\.")):
        parse_profile(cfg)


def test_train_grad_clip_is_refused_with_where_the_clip_went():
    cfg = _paper()
    cfg["train"]["grad_clip"] = 1.0
    with pytest.raises(ConfigError, match=r"train\.grad_clip: .*method_defaults\.<method>"):
        parse_profile(cfg)


def test_critic_checkpoint_limit_has_its_own_key(compose, tmp_path):
    cfg = _paper()
    cfg["verl"].update(max_actor_ckpt_to_keep=None, max_critic_ckpt_to_keep=2)
    c = compose(_overrides(cfg, "ppo", "qwen3_4b", tmp_path))
    assert c.trainer.max_actor_ckpt_to_keep is None and c.trainer.max_critic_ckpt_to_keep == 2


def test_local_model_path_is_what_verl_trains(compose, tiny_hf_dir, tmp_path, monkeypatch):
    """models.<m>.path (relative to the working directory) reaches actor and critic, absolute."""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    monkeypatch.chdir(tiny_hf_dir.parent)
    cfg = _paper()
    cfg["models"]["qwen3_4b"]["path"] = tiny_hf_dir.name
    overrides = _overrides(cfg, "ppo", "qwen3_4b", tmp_path)
    assert not any("Qwen/Qwen3-4B" in o for o in overrides)
    c = compose(overrides)  # no path override here: verl reads the local folder itself
    assert c.actor_rollout_ref.model.path == str(tiny_hf_dir) == c.critic.model.path
    validate_config(c, use_reference_policy=need_reference_policy(c), use_critic=need_critic(c))


# ------------------------------------------------------------------ Qwen3 thinking mode

# Qwen3's switch, as its own template spells it: with enable_thinking false the generation prompt
# carries an empty think block; otherwise the model opens one itself.
QWEN3_LIKE_TEMPLATE = CHAT_TEMPLATE.replace(
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}",
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false -%}"
    "{{ '<think>\\n\\n</think>\\n\\n' }}{%- endif -%}{%- endif -%}",
)
MESSAGES = [
    {"role": "system", "content": "Put the final answer in \\boxed{}."},
    {"role": "user", "content": "What is 12 + 30?"},
]


@pytest.fixture(scope="module")
def thinking_tokenizer():
    tok = build_tokenizer(["What is 12 + 30? think boxed answer"] * 4)
    assert tok.chat_template != QWEN3_LIKE_TEMPLATE  # the replacement above did apply
    tok.chat_template = QWEN3_LIKE_TEMPLATE
    return tok


def _verl_prompt_ids(c, tokenizer, tmp_path) -> list[int]:
    """The rollout prompt verl 0.9.1 builds: RLHFDataset's raw_prompt, rendered by the agent
    loop's Continuous Token builder with data.apply_chat_template_kwargs (agent_loop.py)."""
    import pandas as pd
    from verl.utils.dataset.rl_dataset import RLHFDataset
    from verl.utils.tokenizer.continuous_token_wiring import create_continuous_token_builder

    parquet = tmp_path / "train.parquet"
    pd.DataFrame(
        [
            {
                "data_source": "t",
                "prompt": MESSAGES,
                "reward_model": {"ground_truth": "42"},
                "extra_info": {"index": 0},
            }
        ]
    ).to_parquet(parquet)
    dataset = RLHFDataset(data_files=str(parquet), tokenizer=tokenizer, config=c.data)
    assert len(dataset) == 1  # not filtered as overlong
    builder = create_continuous_token_builder(
        tokenizer,
        hf_model_type="qwen3",
        chat_template_kwargs=c.data.get("apply_chat_template_kwargs", {}),
    )
    return builder.build_initial_tokens(dataset[0]["raw_prompt"])


@pytest.mark.parametrize("thinking", [True, False])
def test_training_and_evaluation_render_the_same_prompt(
    thinking, thinking_tokenizer, compose, tmp_path
):
    from pacs.evaluation.backends import render_prompt

    cfg = _paper()
    cfg["prompt"] = {"enable_thinking": thinking}
    c = compose(_overrides(cfg, "pacs", "qwen3_4b", tmp_path))
    assert c.data.apply_chat_template_kwargs.enable_thinking is thinking
    verl_ids = _verl_prompt_ids(c, thinking_tokenizer, tmp_path)
    eval_text = render_prompt(
        thinking_tokenizer, MESSAGES, parse_profile(cfg).prompt.enable_thinking
    )
    assert thinking_tokenizer.decode(verl_ids) == eval_text
    assert verl_ids == thinking_tokenizer(eval_text, add_special_tokens=False)["input_ids"]
    assert eval_text.endswith("<|im_start|>assistant\n" if thinking else "<think>\n\n</think>\n\n")


def test_paper_decides_thinking_mode_explicitly(compose, tmp_path):
    for path in PAPER_CONFIGS:
        cfg = load_config(path)
        assert isinstance(cfg["prompt"]["enable_thinking"], bool), path.name
    cfg = load_config(PAPER_CONFIGS[0])
    assert cfg["prompt"]["enable_thinking"] is True  # Qwen3 thinking mode (configs/paper.yaml)
    c = compose(_overrides(cfg, "grpo", "qwen3_4b", tmp_path))
    assert c.data.apply_chat_template_kwargs == {"enable_thinking": True}


def test_dapo_overlong_penalty_uses_verls_dapo_reward_manager(compose, tmp_path):
    cfg = load_config(PAPER_CONFIGS[0])
    cfg["runs"]["dapo_overlong"] = {"method": "dapo", "overlong_buffer": 4096, "ablation": "main"}
    c = compose(_overrides(cfg, "dapo_overlong", "qwen3_4b", tmp_path))
    assert c.reward.reward_manager.name == "dapo"
    kw = c.reward.reward_kwargs
    assert kw.max_resp_len == 8192 and kw.overlong_buffer_cfg.len == 4096
    assert kw.overlong_buffer_cfg.enable is True and kw.overlong_buffer_cfg.penalty_factor == 1.0
    # verl's own checks accept it, and its dapo reward manager reads exactly these keys
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    validate_config(c, use_reference_policy=need_reference_policy(c), use_critic=need_critic(c))
    assert c.reward.get("reward_kwargs", {}).get("overlong_buffer_cfg", None).enable is True


def test_real_needs_unweighted_labels(compose, tmp_path):
    from pacs.verl_plugin.trainer import check_pacs_config

    cfg = load_config(PAPER_CONFIGS[0])
    c = compose(
        _overrides(cfg, "real", "qwen3_4b", tmp_path) + ["algorithm.label_loss.use_weight=true"]
    )
    with pytest.raises(ValueError, match="use_weight=False"):
        check_pacs_config(c)


def test_loss_agg_mode_override_is_refused_for_a_group_loss(tmp_path):
    cfg = load_config(PAPER_CONFIGS[0])
    profile = parse_profile(cfg)
    paths = RunPaths("/d/t.parquet", "/d/t.parquet", tmp_path)
    with pytest.raises(ValueError, match="REAL loss is one term per response or group"):
        build_overrides(
            profile,
            profile.run("real"),
            "qwen3_4b",
            0,
            paths,
            ClusterShape(1, 8),
            "/l",
            "token-mean",
        )


def test_cpu_runs_of_verls_sync_trainer_get_the_plugins_worker(compose, tmp_path):
    """GRPO/PPO/DAPO run verl's sync trainer as ``plugin_sync`` (our worker), on every device;
    PACS and REAL run ``label_sync``; both modes are registered with verl."""
    from verl.trainer.ppo.v1 import get_trainer_cls

    from pacs.verl_plugin.trainer import PACSTrainerSync, PluginTrainerSync

    cfg = load_config(PAPER_CONFIGS[0])
    modes = {}
    for run in ("dapo", "grpo", "real", "pacs"):
        c = compose(_overrides(cfg, run, "qwen3_4b", tmp_path))
        modes[run] = c.trainer.v1.trainer_mode
    assert modes == {
        "dapo": "plugin_sync",
        "grpo": "plugin_sync",
        "real": "label_sync",
        "pacs": "label_sync",
    }
    assert get_trainer_cls("plugin_sync") is PluginTrainerSync
    assert get_trainer_cls("label_sync") is PACSTrainerSync


def test_plugin_sync_runs_verls_roles_on_the_plugins_worker(compose, tmp_path):
    """plugin_sync changes only the worker class: verl's own role set, our worker behind it."""
    from verl.trainer.ppo.utils import Role

    from pacs.verl_plugin.trainer import PluginTrainerSync
    from pacs.verl_plugin.worker import PACSActorRolloutRefWorker

    cfg = load_config(PAPER_CONFIGS[0])
    trainer = object.__new__(PluginTrainerSync)
    trainer.config = compose(_overrides(cfg, "dapo", "qwen3_4b", tmp_path))
    trainer._init_resource_pool_mgr()
    assert set(trainer.role_worker_mapping) == {Role.ActorRollout}
    worker = trainer.role_worker_mapping[Role.ActorRollout]
    assert worker.__ray_actor_class__ is PACSActorRolloutRefWorker
