"""Turn one run of a profile config (model, method, ablation, seed) into verl Hydra overrides.

Pure Python (no verl import), so ``train --dry-run`` and the tests are fast. The overrides target
verl 0.9.1's ``verl/trainer/config/ppo_trainer.yaml``; tests compose them with that file.

Batch sizes follow verl's units: ``data.train_batch_size`` and ``actor.ppo_mini_batch_size`` count
prompts (verl multiplies by rollout.n); ``ppo_micro_batch_size_per_gpu`` counts responses, except
under the ``pacs_sync`` trainer, which sets ``force_group_size = n`` and so counts groups: a PACS
micro-batch of 8 responses is written as 1 (= 8 / n) there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pacs.config import enable_thinking, grad_clip, model_source
from pacs.metrics_log import TENSORBOARD_DIR, logging_backends
from pacs.progress import NO_PROGRESS_BARS_ENV as NO_BARS_ENV

PLUGIN_MODULE = "pacs.verl_plugin.register"
REWARD_FN_PATH = "pkg://pacs.rewards.math"  # verl imports it as a package module (load_module)
REWARD_FN_NAME = "compute_score"
PACS_LOSS_CONFIG = "pacs.verl_plugin.loss.PACSPolicyLossConfig"
SUM_NORM = "seq-mean-token-sum-norm"
TOTAL_EPOCHS = 1000  # the step budget (trainer.total_training_steps) is what ends a run
LOSS_AGG_MODES = ("token-mean", "seq-mean-token-sum", "seq-mean-token-mean", SUM_NORM)


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


def _need(section: dict, key: str, where: str) -> Any:
    if key not in section:
        raise KeyError(f"config section {where!r} lacks key {key!r}")
    return section[key]


def model_path(model: dict) -> str:
    """``models.<m>.path`` (made absolute: Ray workers do not share our working directory) when
    set, else the hub id. Compute nodes without internet need the local path."""
    source = model_source(model)
    return str(Path(source).resolve()) if model.get("path") else source


def experiment_name(model_key: str, run_name: str, seed: int) -> str:
    return f"{model_key}-{run_name}-seed{seed}"


def check_update_schedule(train: dict, run: dict) -> None:
    """docs/design.md §2.8: mini-batch × mini_batches must tile the rollout batch, and PACS needs several
    updates per rollout (or a reset period above 1), else β and the score ablations are no-ops."""
    prompts = _need(train, "prompts_per_step", "train")
    mini = _need(train, "mini_batch_size", "train")
    updates = _need(train, "mini_batches", "train")
    if prompts % mini or prompts // mini != updates:
        raise ValueError(
            f"train.prompts_per_step={prompts} / train.mini_batch_size={mini} must equal "
            f"train.mini_batches={updates} (updates per rollout)"
        )
    if (
        run["method"] == "pacs"
        and updates < 2
        and not (run.get("ref") == "periodic" and run.get("ref_reset_every", 1) > 1)
    ):
        raise ValueError(
            f"run {run['name']!r}: one update per rollout with ref=rollout makes ψ ≡ 0, so β and the "
            "score ablations do nothing (docs/design.md §2.8); use train.mini_batches >= 2"
        )


def _common(
    cfg: dict, model_key: str, seed: int, paths: RunPaths, cluster: ClusterShape, log_path: str
) -> dict:
    train, verl, model = cfg["train"], cfg.get("verl") or {}, cfg["models"][model_key]
    rollout = verl.get("rollout") or {}
    items = {
        "data.train_files": paths.train_file,
        "data.val_files": paths.val_file,
        "data.val_max_samples": verl.get("val_max_samples", 8),
        "data.train_batch_size": _need(train, "prompts_per_step", "train"),
        "data.max_prompt_length": _need(train, "max_prompt_length", "train"),
        "data.max_response_length": _need(train, "max_new_tokens", "train"),
        "data.filter_overlong_prompts": bool(train.get("filter_overlong_prompts", True)),
        "data.truncation": "error",
        "data.shuffle": True,
        "data.seed": seed,
        # Training and evaluation render prompts with the same chat-template switch.
        "+data.apply_chat_template_kwargs.enable_thinking": enable_thinking(cfg),
        "actor_rollout_ref.model.path": model_path(model),
        "actor_rollout_ref.model.use_remove_padding": bool(verl.get("use_remove_padding", True)),
        "actor_rollout_ref.model.enable_gradient_checkpointing": bool(
            verl.get("enable_gradient_checkpointing", True)
        ),
        "actor_rollout_ref.actor.strategy": verl.get("strategy", "fsdp2"),
        "actor_rollout_ref.actor.optim.lr": float(_need(train, "lr", "train")),
        "actor_rollout_ref.actor.optim.clip_grad": grad_clip(train),
        "actor_rollout_ref.actor.ppo_mini_batch_size": _need(train, "mini_batch_size", "train"),
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": _need(
            train, "micro_batch_per_gpu", "train"
        ),
        "actor_rollout_ref.actor.use_dynamic_bsz": bool(verl.get("use_dynamic_bsz", False)),
        "actor_rollout_ref.actor.ppo_epochs": int(train.get("ppo_epochs", 1)),
        "actor_rollout_ref.actor.shuffle": False,
        "actor_rollout_ref.actor.use_kl_loss": float(train.get("kl_coef", 0.0)) > 0,
        "actor_rollout_ref.actor.kl_loss_coef": float(train.get("kl_coef", 0.0)),
        "actor_rollout_ref.actor.entropy_coeff": 0.0,
        "actor_rollout_ref.actor.data_loader_seed": seed,
        "actor_rollout_ref.actor.fsdp_config.param_offload": bool(verl.get("param_offload", False)),
        "actor_rollout_ref.actor.fsdp_config.optimizer_offload": bool(
            verl.get("optimizer_offload", False)
        ),
        "actor_rollout_ref.rollout.name": rollout.get("name", "vllm"),
        "actor_rollout_ref.rollout.n": _need(train, "group_size", "train"),
        "actor_rollout_ref.rollout.temperature": float(train.get("temperature", 1.0)),
        "actor_rollout_ref.rollout.tensor_model_parallel_size": int(
            rollout.get("tensor_model_parallel_size", 1)
        ),
        "actor_rollout_ref.rollout.gpu_memory_utilization": float(
            rollout.get("gpu_memory_utilization", 0.6)
        ),
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": int(
            rollout.get("log_prob_micro_batch_size_per_gpu", 16)
        ),
        "actor_rollout_ref.rollout.seed": seed,
        "algorithm.use_kl_in_reward": False,
        "reward.custom_reward_function.path": REWARD_FN_PATH,
        "reward.custom_reward_function.name": REWARD_FN_NAME,
        "trainer.use_v1": True,
        "trainer.v1.trainer_mode": "sync",
        "trainer.total_training_steps": int(_need(model, "steps", f"models.{model_key}")),
        "trainer.total_epochs": TOTAL_EPOCHS,
        "trainer.project_name": f"pacs-{cfg['profile']}",
        **_logging(cfg, verl, paths),
        "trainer.nnodes": cluster.nnodes,
        "trainer.n_gpus_per_node": cluster.gpus_per_node,
        "trainer.save_freq": int(train.get("save_every", 20)),
        "trainer.test_freq": -1,
        "trainer.val_before_train": False,
        "trainer.resume_mode": "auto",
        "trainer.default_local_dir": str(paths.ckpt_dir),
        "trainer.max_actor_ckpt_to_keep": verl.get("max_actor_ckpt_to_keep"),  # None: keep all
        "trainer.max_critic_ckpt_to_keep": verl.get("max_critic_ckpt_to_keep"),
        # Both reach every Ray worker through the job's runtime env.
        "+ray_kwargs.ray_init.runtime_env.env_vars.VERL_USE_EXTERNAL_MODULES": PLUGIN_MODULE,
        "+ray_kwargs.ray_init.runtime_env.env_vars.VERL_FILE_LOGGER_PATH": log_path,
    }
    if cluster.ray_address:
        items["+ray_kwargs.ray_init.address"] = cluster.ray_address
    return items


def _logging(cfg: dict, verl: dict, paths: RunPaths) -> dict:
    """verl's loggers (``verl.logger`` plus ``logging.backends``), its tensorboard logger's folder
    beside metrics.jsonl (read by the trainer, a Ray actor) and no weight-loading bars in workers."""
    env = "+ray_kwargs.ray_init.runtime_env.env_vars."
    return {
        "trainer.logger": list(
            dict.fromkeys([*verl.get("logger", ["console", "file"]), *logging_backends(cfg)])
        ),
        f"{env}TENSORBOARD_DIR": str(paths.tensorboard_dir),
        **{f"{env}{key}": value for key, value in NO_BARS_ENV.items()},
    }


def _pacs(run: dict, train: dict, verl: dict) -> dict:
    if run.get("soft_labels"):
        raise ValueError(f"run {run['name']!r}: soft labels are supported by the tiny engine only")
    n, micro = train["group_size"], train["micro_batch_per_gpu"]
    if micro % n:
        raise ValueError(
            f"PACS keeps groups whole: train.micro_batch_per_gpu={micro} must be a multiple of group_size={n}"
        )
    ref, every = run.get("ref", "rollout"), int(run.get("ref_reset_every", 1))
    items = {
        "algorithm.adv_estimator": "pacs",
        "+algorithm.pacs.use_weight": bool(run.get("use_weight", True)),
        "+algorithm.pacs.ref": ref,
        "+algorithm.pacs.ref_reset_every": every,
        "actor_rollout_ref.actor.policy_loss._target_": PACS_LOSS_CONFIG,
        "actor_rollout_ref.actor.policy_loss.loss_mode": "pacs",
        "+actor_rollout_ref.actor.policy_loss.beta": float(run.get("beta", 1.0)),
        "+actor_rollout_ref.actor.policy_loss.score": run.get("score", "rloo"),
        "+actor_rollout_ref.actor.policy_loss.use_weight": bool(run.get("use_weight", True)),
        # force_group_size = n under pacs_sync: the micro-batch size is counted in groups.
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": micro // n,
        "trainer.v1.trainer_mode": "pacs_sync",
    }
    if ref != "rollout":
        items["actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu"] = int(
            (verl.get("rollout") or {}).get("log_prob_micro_batch_size_per_gpu", 16)
        )
    return items


def _policy_gradient(run: dict, train: dict, loss_agg_mode: str | None) -> dict:
    mode = loss_agg_mode or run.get("loss_agg_mode", SUM_NORM)
    if mode not in LOSS_AGG_MODES:
        raise ValueError(f"loss_agg_mode must be one of {LOSS_AGG_MODES}, got {mode!r}")
    clip = float(run.get("clip_ratio", 0.2))
    items = {
        "actor_rollout_ref.actor.policy_loss.loss_mode": "vanilla",
        "actor_rollout_ref.actor.loss_agg_mode": mode,
        "actor_rollout_ref.actor.clip_ratio": clip,
        "actor_rollout_ref.actor.clip_ratio_low": clip,
        "actor_rollout_ref.actor.clip_ratio_high": clip,
    }
    if mode == SUM_NORM:
        # Dr.GRPO's constant normaliser: the response budget, not each micro-batch's padded length.
        items["actor_rollout_ref.actor.loss_scale_factor"] = int(train["max_new_tokens"])
    return items


def _grpo(run: dict, train: dict, loss_agg_mode: str | None) -> dict:
    return {
        "algorithm.adv_estimator": "grpo",
        "algorithm.norm_adv_by_std_in_grpo": True,
        **_policy_gradient(run, train, loss_agg_mode),
    }


def _ppo(run: dict, train: dict, verl: dict, path: str, loss_agg_mode: str | None) -> dict:
    return {
        "algorithm.adv_estimator": "gae",
        "algorithm.gamma": float(run.get("gamma", 1.0)),
        "algorithm.lam": float(run.get("lam", 1.0)),
        **_policy_gradient(run, train, loss_agg_mode),
        "critic.enable": True,
        "critic.strategy": verl.get("strategy", "fsdp2"),
        "critic.model.path": path,
        "critic.model.use_remove_padding": bool(verl.get("use_remove_padding", True)),
        "critic.model.enable_gradient_checkpointing": bool(
            verl.get("enable_gradient_checkpointing", True)
        ),
        "critic.optim.lr": float(_need(run, "critic_lr", "method_defaults.ppo")),
        "critic.optim.clip_grad": grad_clip(train),
        "critic.ppo_micro_batch_size_per_gpu": int(train["micro_batch_per_gpu"]),
        "critic.cliprange_value": float(run.get("value_clip", 0.5)),
    }


def build_overrides(
    cfg: dict,
    run: dict,
    model_key: str,
    seed: int,
    paths: RunPaths,
    cluster: ClusterShape,
    log_path: str,
    loss_agg_mode: str | None = None,
) -> list[str]:
    """Hydra overrides for ``verl.trainer.main_ppo`` from a resolved run (``pacs.config.resolve_run``).

    Later keys win, so method-specific values replace the common ones.
    """
    if model_key not in cfg["models"]:
        raise ValueError(f"unknown model {model_key!r}; known: {sorted(cfg['models'])}")
    allowed = run.get("models")
    if allowed and model_key not in allowed:
        raise ValueError(f"run {run['name']!r} is limited to models {allowed}, not {model_key!r}")
    train, verl = cfg["train"], cfg.get("verl") or {}
    check_update_schedule(train, run)
    items = _common(cfg, model_key, seed, paths, cluster, log_path)
    items["trainer.experiment_name"] = experiment_name(model_key, run["name"], seed)
    method = run["method"]
    if method == "pacs":
        items.update(_pacs(run, train, verl))
    elif method == "grpo":
        items.update(_grpo(run, train, loss_agg_mode))
    elif method == "ppo":
        items.update(_ppo(run, train, verl, model_path(cfg["models"][model_key]), loss_agg_mode))
    else:
        raise ValueError(f"unknown method {method!r}")
    return _ov(items) + [str(o) for o in verl.get("extra_overrides", []) or []]
