"""Turn one run of a profile config (model, method, ablation, seed) into verl Hydra overrides.

Pure Python (no verl import), so ``train --dry-run`` and the tests are fast. The overrides target
verl 0.9.1's ``verl/trainer/config/ppo_trainer.yaml``; tests compose them with that file.

Batch sizes follow verl's units: ``data.train_batch_size`` and ``actor.ppo_mini_batch_size`` count
prompts (verl multiplies by rollout.n); ``ppo_micro_batch_size_per_gpu`` counts responses, except
under the ``label_sync`` trainer, which sets ``force_group_size = n`` and so counts groups: a PACS
micro-batch of 8 responses is written as 1 (= 8 / n) there.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pacs.config import Profile, RunSpec
from pacs.methods import (
    DapoSpec,
    GrpoSpec,
    MethodTable,
    PacsSpec,
    PpoSpec,
    RealSpec,
    objective,
    spec_keys,
    traits,
)
from pacs.metrics_log import TENSORBOARD_DIR
from pacs.progress import NO_PROGRESS_BARS_ENV as NO_BARS_ENV
from pacs.verl_plugin.launch.devices import PLUGIN_SYNC_MODE

PLUGIN_MODULE = "pacs.verl_plugin.register"
REWARD_FN_PATH = "pkg://pacs.rewards.math"  # verl imports it as a package module (load_module)
REWARD_FN_NAME = "compute_score"
PACS_LOSS_CONFIG = "pacs.verl_plugin.loss.PACSPolicyLossConfig"
REAL_LOSS_CONFIG = "pacs.verl_plugin.loss.REALPolicyLossConfig"
# DAPO's group filter reads the verifier's score from reward_extra_info (pacs.rewards.math's
# compute_score returns {"score", ...}; the dapo reward manager adds its penalty to the reward
# only).
DAPO_FILTER_METRIC = "score"
# verl 0.9.1 always dual-clips (it asserts clip_ratio_c > 1), so a spec's null (no cap) becomes a
# cap that cannot bind: both engines clamp the log-ratio to ±20, so ρ ≤ e^20 ≈ 4.9e8 < 1e9.
NO_DUAL_CLIP = 1.0e9
TOTAL_EPOCHS = 1000  # the step budget (trainer.total_training_steps) is what ends a run


@dataclass(frozen=True)
class RunPaths:
    """Where one run reads its data and writes everything (stable per run, for resume)."""

    train_file: str
    val_file: str
    out_dir: Path

    @property
    def ckpt_dir(self) -> Path:
        return self.out_dir / "checkpoints"

    @property
    def log_dir(self) -> Path:
        return self.out_dir / "verl_logs"

    @property
    def tensorboard_dir(self) -> Path:
        """verl's tensorboard logger writes here, beside metrics.jsonl (pacs.metrics_log)."""
        return self.out_dir / TENSORBOARD_DIR


@dataclass(frozen=True)
class ClusterShape:
    nnodes: int
    gpus_per_node: int
    ray_address: str | None = None  # "host:port" of a running Ray cluster (multi-node)


def _fmt(value: Any) -> str:
    """Hydra override value: bools/None in YAML spelling, lists in brackets, odd strings quoted."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_fmt(v) for v in value) + "]"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value)
    # A string Hydra would read as a number, bool or null ("1" for an env var) stays quoted.
    typed = re.fullmatch(r"[-+0-9.e]+|true|false|null", text, flags=re.IGNORECASE)
    if re.fullmatch(r"[A-Za-z0-9_./@+-]+", text) and not typed:
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _ov(items: dict[str, Any]) -> list[str]:
    return [f"{key}={_fmt(val)}" for key, val in items.items()]


def model_path(profile: Profile, model_key: str) -> str:
    """``models.<m>.path`` (made absolute: Ray workers do not share our working directory) when
    set, else the hub id. Compute nodes without internet need the local path."""
    model = profile.models[model_key]
    return str(Path(model.path).resolve()) if model.path else model.source


def experiment_name(model_key: str, run_name: str, seed: int) -> str:
    return f"{model_key}-{run_name}-seed{seed}"


def _data(p: Profile, seed: int, paths: RunPaths) -> dict:
    t = p.train
    return {
        "data.train_files": paths.train_file,
        "data.val_files": paths.val_file,
        "data.val_max_samples": p.verl.val_max_samples,
        "data.train_batch_size": t.prompts_per_step,
        "data.max_prompt_length": t.max_prompt_length,
        "data.max_response_length": t.max_new_tokens,
        "data.filter_overlong_prompts": t.filter_overlong_prompts,
        "data.truncation": "error",
        "data.shuffle": True,
        "data.seed": seed,
        # Training and evaluation render prompts with the same chat-template switch.
        "+data.apply_chat_template_kwargs.enable_thinking": p.prompt.enable_thinking,
    }


def _attention(model_key: str, p: Profile) -> dict:
    """verl.attn_implementation, explicit (verl's own default is flash_attention_2, which
    ``verl[vllm]`` does not install); the spec checked it against use_remove_padding."""
    return {f"++{model_key}.override_config.attn_implementation": p.verl.attn_implementation}


def _actor(p: Profile, model_key: str, seed: int) -> dict:
    t, v, a = p.train, p.verl, "actor_rollout_ref.actor"
    return {
        "actor_rollout_ref.model.path": model_path(p, model_key),
        "actor_rollout_ref.model.use_remove_padding": v.use_remove_padding,
        **_attention("actor_rollout_ref.model", p),
        "actor_rollout_ref.model.enable_gradient_checkpointing": v.enable_gradient_checkpointing,
        f"{a}.strategy": v.strategy,
        f"{a}.optim.lr": t.lr,
        f"{a}.optim.weight_decay": t.weight_decay,
        f"{a}.ppo_mini_batch_size": t.mini_batch_size,
        f"{a}.ppo_micro_batch_size_per_gpu": t.micro_batch_per_gpu,
        f"{a}.use_dynamic_bsz": v.use_dynamic_bsz,
        f"{a}.ppo_epochs": t.ppo_epochs,
        f"{a}.shuffle": False,
        f"{a}.use_kl_loss": t.kl_coef > 0,
        f"{a}.kl_loss_coef": t.kl_coef,
        f"{a}.entropy_coeff": 0.0,
        f"{a}.data_loader_seed": seed,
        f"{a}.fsdp_config.param_offload": v.param_offload,
        f"{a}.fsdp_config.optimizer_offload": v.optimizer_offload,
    }


def _rollout(p: Profile, seed: int) -> dict:
    r, ro = p.verl.rollout, "actor_rollout_ref.rollout"
    return {
        f"{ro}.name": r.name,
        f"{ro}.n": p.train.group_size,
        f"{ro}.temperature": p.train.temperature,
        f"{ro}.tensor_model_parallel_size": r.tensor_model_parallel_size,
        f"{ro}.gpu_memory_utilization": r.gpu_memory_utilization,
        f"{ro}.log_prob_micro_batch_size_per_gpu": r.log_prob_micro_batch_size_per_gpu,
        f"{ro}.seed": seed,
        "algorithm.use_kl_in_reward": False,
        "reward.custom_reward_function.path": REWARD_FN_PATH,
        "reward.custom_reward_function.name": REWARD_FN_NAME,
    }


def _trainer(
    p: Profile, model_key: str, paths: RunPaths, cluster: ClusterShape, log_path: str
) -> dict:
    v = p.verl
    items = {
        "trainer.use_v1": True,
        # verl's sync trainer with the plugin's worker: on a CPU its process group opens, and on
        # every device it logs each update's pre-clip norm and whether the clip bound.
        "trainer.v1.trainer_mode": PLUGIN_SYNC_MODE,
        "trainer.total_training_steps": p.models[model_key].steps,
        "trainer.total_epochs": TOTAL_EPOCHS,
        "trainer.project_name": f"pacs-{p.profile}",
        **_logging(p, paths),
        "trainer.nnodes": cluster.nnodes,
        "trainer.n_gpus_per_node": cluster.gpus_per_node,
        "trainer.save_freq": p.train.save_every,
        "trainer.test_freq": -1,
        "trainer.val_before_train": False,
        "trainer.resume_mode": "auto",
        "trainer.default_local_dir": str(paths.ckpt_dir),
        "trainer.max_actor_ckpt_to_keep": v.max_actor_ckpt_to_keep,  # None: keep all
        "trainer.max_critic_ckpt_to_keep": v.max_critic_ckpt_to_keep,
        # Both reach every Ray worker through the job's runtime env.
        "+ray_kwargs.ray_init.runtime_env.env_vars.VERL_USE_EXTERNAL_MODULES": PLUGIN_MODULE,
        "+ray_kwargs.ray_init.runtime_env.env_vars.VERL_FILE_LOGGER_PATH": log_path,
    }
    if cluster.ray_address:
        items["+ray_kwargs.ray_init.address"] = cluster.ray_address
    return items


def _logging(p: Profile, paths: RunPaths) -> dict:
    """verl's loggers (``verl.logger`` plus ``logging.backends``), its tensorboard logger's folder
    beside metrics.jsonl (read by the trainer, a Ray actor) and no weight-loading bars in
    workers."""
    env = "+ray_kwargs.ray_init.runtime_env.env_vars."
    return {
        "trainer.logger": list(dict.fromkeys([*p.verl.logger, *p.logging.backends])),
        f"{env}TENSORBOARD_DIR": str(paths.tensorboard_dir),
        **{f"{env}{key}": value for key, value in NO_BARS_ENV.items()},
    }


# ------------------------------------------------------------------------------ the methods


def _whole_groups(p: Profile) -> dict:
    """A method whose loss reads whole groups (``MethodTraits.needs_whole_groups``): the
    ``label_sync`` trainer, under which (force_group_size = n) the micro-batch counts groups."""
    n, micro = p.train.group_size, p.train.micro_batch_per_gpu
    return {
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": micro // n,
        "trainer.v1.trainer_mode": "label_sync",
    }


def _pacs(spec: PacsSpec, p: Profile, model_key: str) -> dict:
    """Groups stay whole (:func:`_whole_groups`), the labels travel in the advantages, the loss
    is ours."""
    loss = "actor_rollout_ref.actor.policy_loss"
    items = {
        "algorithm.adv_estimator": "pacs",
        "+algorithm.label_loss.use_weight": spec.use_weight,
        "+algorithm.label_loss.ref": spec.ref,
        "+algorithm.label_loss.ref_reset_every": spec.ref_reset_every,
        f"{loss}._target_": PACS_LOSS_CONFIG,
        f"{loss}.loss_mode": "pacs",
        f"+{loss}.beta": spec.beta,
        f"+{loss}.score": spec.score,
        f"+{loss}.use_weight": spec.use_weight,
    }
    if spec.reference.needs_model:
        items["actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu"] = (
            p.verl.rollout.log_prob_micro_batch_size_per_gpu
        )
    return items


def _objective(method, p: Profile) -> dict:
    """The actor's gradient clip (verl always calls ``clip_grad_norm_``: an infinite norm
    multiplies the gradients by exactly 1, so null = no clipping, as the official PACS actor)
    and, for ``seq-mean-token-sum-norm``, its constant divisor: the response budget over the
    loss scale (:func:`pacs.methods.objective`), not each micro-batch's padded length."""
    a = "actor_rollout_ref.actor"
    obj = objective(method, p.train.max_new_tokens, p.train.micro_batch_per_gpu)
    items: dict[str, Any] = {f"{a}.optim.clip_grad": obj.max_norm}
    if obj.sum_norm_divisor is not None:  # an integer: the config check makes it divide
        items[f"{a}.loss_scale_factor"] = int(obj.sum_norm_divisor)
    return items


def _policy_gradient(spec: GrpoSpec | PpoSpec | DapoSpec, p: Profile) -> dict:
    """verl's ``vanilla`` clipped surrogate with the spec's clip range and dual-clip cap."""
    a = "actor_rollout_ref.actor"
    low, high = spec.clip_range
    return {
        f"{a}.policy_loss.loss_mode": "vanilla",
        f"{a}.loss_agg_mode": spec.loss_agg_mode,
        f"{a}.clip_ratio": low,
        f"{a}.clip_ratio_low": low,
        f"{a}.clip_ratio_high": high,
        f"{a}.clip_ratio_c": NO_DUAL_CLIP if spec.clip_ratio_c is None else spec.clip_ratio_c,
    }


def _grpo(spec: GrpoSpec | DapoSpec, p: Profile, model_key: str) -> dict:
    return {
        "algorithm.adv_estimator": "grpo",
        "algorithm.norm_adv_by_std_in_grpo": True,
        **_policy_gradient(spec, p),
    }


def _ppo(spec: PpoSpec, p: Profile, model_key: str) -> dict:
    v = p.verl
    return {
        "algorithm.adv_estimator": "gae",
        "algorithm.gamma": spec.gamma,
        "algorithm.lam": spec.lam,
        **_policy_gradient(spec, p),
        "critic.enable": True,
        "critic.strategy": v.strategy,
        "critic.model.path": model_path(p, model_key),
        "critic.model.use_remove_padding": v.use_remove_padding,
        **_attention("critic.model", p),
        "critic.model.enable_gradient_checkpointing": v.enable_gradient_checkpointing,
        "critic.optim.lr": spec.critic_lr,
        "critic.optim.clip_grad": objective(spec, 1, None).max_norm,
        "critic.ppo_micro_batch_size_per_gpu": p.train.micro_batch_per_gpu,
        "critic.cliprange_value": spec.value_clip,
    }


def _dapo(spec: DapoSpec, p: Profile, model_key: str) -> dict:
    """verl 0.9.1's own DAPO pieces: clip_ratio_low/high and clip_ratio_c, token-mean, the v1
    replay buffer's group filter (``algorithm.filter_groups`` on the verifier's ``score``; verl
    0.9.1 has no cap on generation rounds, it refills until the batch is full) and the ``dapo``
    reward manager's overlong buffer."""
    items = _grpo(spec, p, model_key)  # GRPO's advantage and surrogate, DAPO's clip range
    items["actor_rollout_ref.actor.optim.weight_decay"] = spec.weight_decay  # the recipe's
    items["actor_rollout_ref.actor.optim.lr_warmup_steps"] = spec.lr_warmup_steps
    if spec.dynamic_sampling:
        items["algorithm.filter_groups.enable"] = True
        items["algorithm.filter_groups.metric"] = DAPO_FILTER_METRIC
    if spec.overlong_buffer is not None:
        kw = "+reward.reward_kwargs"
        items["reward.reward_manager.name"] = "dapo"
        items[f"{kw}.max_resp_len"] = p.train.max_new_tokens
        items[f"{kw}.overlong_buffer_cfg.enable"] = True
        items[f"{kw}.overlong_buffer_cfg.len"] = spec.overlong_buffer
        items[f"{kw}.overlong_buffer_cfg.penalty_factor"] = spec.overlong_penalty
        items[f"{kw}.overlong_buffer_cfg.log"] = False
    return items


def _real(spec: RealSpec, p: Profile, model_key: str) -> dict:
    """The labels travel as PACS's do (the ``pacs`` estimator with weights 1), groups stay whole
    (:func:`_whole_groups`), the loss is ours (``pacs.verl_plugin.loss``, ``real``)."""
    loss = "actor_rollout_ref.actor.policy_loss"
    return {
        "algorithm.adv_estimator": "pacs",
        "+algorithm.label_loss.use_weight": False,
        f"{loss}._target_": REAL_LOSS_CONFIG,
        f"{loss}.loss_mode": "real",
        f"+{loss}.tau": spec.tau,
    }


METHOD_OVERRIDES = MethodTable(
    "pacs.verl_plugin.launch.overrides.METHOD_OVERRIDES",
    {PacsSpec: _pacs, GrpoSpec: _grpo, PpoSpec: _ppo, DapoSpec: _dapo, RealSpec: _real},
)


def build_overrides(
    profile: Profile,
    run: RunSpec,
    model_key: str,
    seed: int,
    paths: RunPaths,
    cluster: ClusterShape,
    log_path: str,
    loss_agg_mode: str | None = None,
) -> list[str]:
    """Hydra overrides for ``verl.trainer.main_ppo`` from one run of a validated profile.

    ``loss_agg_mode`` replaces a GRPO/PPO run's own (e.g. ``token-mean``). Later keys win, so
    method-specific values replace the common ones.
    """
    if profile.engine != "verl":
        raise ValueError(
            f"profile {profile.profile!r} is for the {profile.engine} engine, not verl"
        )
    if model_key not in profile.models:
        raise ValueError(f"unknown model {model_key!r}; known: {sorted(profile.models)}")
    if run.models and model_key not in run.models:
        raise ValueError(
            f"run {run.name!r} is limited to models {list(run.models)}, not {model_key!r}"
        )
    method = launched_method(run, loss_agg_mode)
    items = {
        **_data(profile, seed, paths),
        **_actor(profile, model_key, seed),
        **_rollout(profile, seed),
        **_trainer(profile, model_key, paths, cluster, log_path),
        "trainer.experiment_name": experiment_name(model_key, run.name, seed),
    }
    if traits(method).needs_whole_groups:
        items.update(_whole_groups(profile))
    items.update(METHOD_OVERRIDES[method](method, profile, model_key))
    items.update(_objective(method, profile))
    return _ov(items) + list(profile.verl.extra_overrides)


def launched_method(run: RunSpec, loss_agg_mode: str | None = None):
    """The run's method spec as launched: ``loss_agg_mode`` (``--loss-agg-mode``) replaces a
    GRPO/PPO/DAPO run's own, so the summary and the report name what really ran."""
    method = run.method
    if loss_agg_mode is None:
        return method
    if "loss_agg_mode" not in spec_keys(type(method)):
        raise ValueError(
            f"--loss-agg-mode is for methods with a token-level loss (GRPO, PPO, DAPO); the "
            f"{traits(method).label} loss is one term per response or group"
        )
    return dataclasses.replace(method, loss_agg_mode=loss_agg_mode)
