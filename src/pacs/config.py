"""Load a profile config and resolve named runs. Shared by both engines and the pipeline.

A run entry in ``runs:`` names a ``method`` (pacs | grpo | ppo) and any knobs that differ from
``method_defaults[method]``. ``resolve_run`` merges the two so every caller sees the same values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

METHODS = ("pacs", "grpo", "ppo")
RUN_META_KEYS = ("method", "ablation", "label", "models", "nnodes")

# Both engines read train.grad_clip through grad_clip(), so a config that omits it trains the same
# way on either: clipped at 1.0 (verl's own actor default; docs/design.md §2.9).
DEFAULT_GRAD_CLIP = 1.0
# Qwen3's chat template thinks unless told otherwise, and verl renders training prompts with its
# data.apply_chat_template_kwargs = {} by default: thinking on (see configs/paper.yaml).
DEFAULT_ENABLE_THINKING = True
# verl.attn_implementation: verl 0.9.1's own default. Remove-padding packs a micro-batch into one
# sequence, which only flash-attention's varlen kernels attend to correctly.
DEFAULT_ATTN_IMPLEMENTATION = "flash_attention_2"
ATTN_PACKAGES = {  # attention implementation -> the module the training environment must import
    "flash_attention_2": "flash_attn",
    "flash_attention_3": "flash_attn_interface",
    "sdpa": "torch",
    "eager": "torch",
}
VARLEN_ATTN = ("flash_attention_2", "flash_attention_3")
# eval.shard.margin: the share of a generate job's time limit a shard leaves unplanned.
DEFAULT_SHARD_MARGIN = 0.25
# Set on compute jobs, whose inputs are all local files (README, "Paper scale").
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def load_config(path: str | Path) -> dict[str, Any]:
    """Read a YAML profile config; raise ValueError naming the file when it is not a mapping."""
    path = Path(path)
    with path.open() as fh:
        cfg = yaml.safe_load(fh)
    if not isinstance(cfg, dict):
        raise ValueError(f"{path}: expected a YAML mapping at the top level, got {type(cfg).__name__}")  # noqa: TRY004 (bad file content, not a bad argument)
    return cfg


def resolve_run(cfg: dict[str, Any], name: str) -> dict[str, Any]:
    """Return ``method_defaults[method]`` updated with the run's own keys, plus ``name``.

    ``name`` may also be a bare method name (``pacs``, ``grpo``, ``ppo``) that has no entry in
    ``runs``; it then resolves to that method's defaults.
    """
    runs = cfg.get("runs") or {}
    if name in runs:
        run = dict(runs[name])
    elif name in METHODS:
        run = {"method": name}
    else:
        raise ValueError(f"unknown run {name!r}; known runs: {sorted(runs)}")
    method = run.get("method")
    if method not in METHODS:
        raise ValueError(f"run {name!r}: field 'method' must be one of {METHODS}, got {method!r}")
    resolved = dict((cfg.get("method_defaults") or {}).get(method, {}))
    resolved.update(run)
    resolved["name"] = name
    resolved.setdefault("ablation", "main")
    resolved.setdefault("label", name)
    return resolved


def seeds_for(cfg: dict[str, Any], run: dict[str, Any]) -> list[int]:
    """Seeds of a resolved run: ``seeds.main`` for main runs, ``seeds.ablation`` otherwise."""
    seeds = cfg.get("seeds") or {}
    key = "main" if run.get("ablation", "main") == "main" else "ablation"
    return list(seeds.get(key, [0]))


def grad_clip(train: dict[str, Any]) -> float:
    """Max gradient norm from ``train.grad_clip``: DEFAULT_GRAD_CLIP when the key is missing;
    ``null`` or a value <= 0 means no clipping (an infinite norm)."""
    value = train.get("grad_clip", DEFAULT_GRAD_CLIP)
    if value is None:
        return float("inf")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"train.grad_clip must be a number or null, got {value!r}")  # noqa: TRY004 (bad config value)
    return float(value) if value > 0 else float("inf")


def enable_thinking(cfg: dict[str, Any]) -> bool:
    """``prompt.enable_thinking``: the chat-template switch shared by training and evaluation."""
    value = (cfg.get("prompt") or {}).get("enable_thinking", DEFAULT_ENABLE_THINKING)
    if not isinstance(value, bool):
        raise ValueError(f"prompt.enable_thinking must be true or false, got {value!r}")  # noqa: TRY004 (bad config value)
    return value


def model_source(model_cfg: dict[str, Any]) -> str:
    """Where a model's weights are read from: ``path`` (a local folder) when set, else ``hf_id``."""
    source = model_cfg.get("path") or model_cfg.get("hf_id")
    if not source:
        raise ValueError(f"model entry {model_cfg!r} needs `path` or `hf_id`")
    return str(source)


def attn_implementation(cfg: dict[str, Any]) -> str:
    """``verl.attn_implementation`` (actor, reference and critic), checked against
    ``verl.use_remove_padding``, which needs a flash-attention (varlen) implementation."""
    verl = cfg.get("verl") or {}
    value = verl.get("attn_implementation", DEFAULT_ATTN_IMPLEMENTATION)
    if value not in ATTN_PACKAGES:
        raise ValueError(f"verl.attn_implementation must be one of {sorted(ATTN_PACKAGES)}, got {value!r}")
    if verl.get("use_remove_padding", True) and value not in VARLEN_ATTN:
        raise ValueError(
            f"verl.use_remove_padding=true needs flash-attention's varlen kernels, but "
            f"verl.attn_implementation={value!r}: set use_remove_padding: false, or "
            "attn_implementation: flash_attention_2 (environment.yml installs flash-attn)"
        )
    return value


def curve_n_samples(cfg: dict[str, Any]) -> int:
    """``eval.curve_n_samples``: samples per problem at the Fig. 3 checkpoints, which report
    pass@1 only; default ``eval.n_samples``."""
    value = cfg["eval"].get("curve_n_samples") or cfg["eval"]["n_samples"]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"eval.curve_n_samples must be an integer >= 1, got {value!r}")
    return value


def eval_shard(cfg: dict[str, Any]) -> dict[str, float] | None:
    """``eval.shard`` {tokens_per_s, job_minutes, margin}: how generate jobs are sized
    (``pacs.evaluation.shards``); absent or null: one generate job per evaluation."""
    shard = cfg["eval"].get("shard")
    if not shard:
        return None
    missing = {"tokens_per_s", "job_minutes"} - set(shard)
    if missing:
        raise ValueError(f"eval.shard lacks {sorted(missing)}")
    return {
        "tokens_per_s": float(shard["tokens_per_s"]),
        "job_minutes": float(shard["job_minutes"]),
        "margin": float(shard.get("margin", DEFAULT_SHARD_MARGIN)),
    }
