"""Tables 4-5 of the report: the paper's App. C settings beside this profile's config values."""

from __future__ import annotations

import pandas as pd

from .context import ReportContext
from .paper import paper_model_for
from .render import Section, TableDoc

# The paper's App. C settings (Tables 4-5): (section, setting, our config key, paper value, source).
APP_C = [
    ("training", "prompts per step (train batch)", "train.prompts_per_step", 1024, "App. C"),
    ("training", "responses per prompt (rollout n)", "train.group_size", 8, "App. C"),
    ("training", "mini-batch (prompts)", "train.mini_batch_size", 256, "App. C"),
    ("training", "updates per rollout", "train.mini_batches", 4, "App. C: 1024 / 256"),
    ("training", "micro-batch per GPU (responses)", "train.micro_batch_per_gpu", 8, "App. C"),
    ("training", "max prompt length (tokens)", "train.max_prompt_length", 1024, "App. C"),
    ("training", "filter overlong prompts", "train.filter_overlong_prompts", True, "App. C"),
    ("training", "max response length (tokens)", "train.max_new_tokens", 8192, "App. C"),
    ("training", "actor learning rate", "train.lr", 1.0e-6, "App. C"),
    ("training", "KL loss coefficient", "train.kl_coef", 0.0, "App. C: no KL loss"),
    (
        "training",
        "PPO critic learning rate",
        "method_defaults.ppo.critic_lr",
        1.0e-5,
        "the official PPO script",
    ),
    ("training", "PACS β", "method_defaults.pacs.beta", 1.0, "§3, Fig. 4"),
    ("training", "PACS score function", "method_defaults.pacs.score", "rloo", "§3"),
    (
        "evaluation",
        "samples per problem (n)",
        "eval.n_samples",
        None,
        "not legible in the paper; the official code samples 256",
    ),
    ("evaluation", "temperature", "eval.temperature", 0.6, "App. C"),
    ("evaluation", "top-p", "eval.top_p", 0.95, "App. C"),
    ("evaluation", "max new tokens", "eval.max_new_tokens", 8192, "App. C"),
    ("evaluation", "engine", "eval.backend", "vllm", "App. C"),
]
PAPER_STEPS = {"Qwen3-4B": 120, "Qwen3-8B": 320}  # App. C
SETTINGS_CSV_COLUMNS = ["section", "setting", "config_key", "ours", "paper", "paper_source"]


def _config_value(cfg: dict, key: str):
    node = cfg
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _setting_text(value) -> str:
    if value is None:
        return "not set"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def table4_5(ctx: ReportContext) -> TableDoc:
    """Tables 4-5: this config's training and evaluation settings beside the paper's (App. C)."""
    records = _settings_records(ctx)
    sections = [
        Section(
            f"{name} settings",
            pd.DataFrame(
                _settings_rows(records, name),
                columns=["Setting", f"ours ({ctx.profile})", "paper", "paper source"],
            ),
        )
        for name in ("training", "evaluation")
    ]
    data = pd.DataFrame(
        [
            [
                sec,
                setting,
                key,
                _setting_text(ours),
                "–" if paper is None else _setting_text(paper),
                source,
            ]
            for sec, setting, key, ours, paper, source in records
        ],
        columns=SETTINGS_CSV_COLUMNS,
    )
    caption = (
        f"The settings of this config ({ctx.config_path or 'config'}) beside the paper's "
        "hyper-parameters (App. C, Tables 4-5); 'not set' = the key is absent from this "
        "config (the engine's default applies)."
    )
    return TableDoc(
        "table4_5_settings",
        "Tables 4-5: hyper-parameters, ours beside the paper's",
        caption,
        sections,
        data,
        [ctx.ablation_note(ctx.subject_runs())],
        "Tables 4-5: training and evaluation settings of this config beside App. C's",
    )


def _settings_records(ctx: ReportContext) -> list[tuple]:
    """(section, setting, config key, ours, paper, source) per App. C setting, with one
    training-steps record per model after the other training records."""
    records = [
        (section, setting, key, _config_value(ctx.cfg, key), paper, source)
        for section, setting, key, paper, source in APP_C
    ]
    for model in ctx.models:
        key = f"models.{model}.steps"
        ours = _config_value(ctx.cfg, key)
        if ours is None:
            key, ours = "train.steps", _config_value(ctx.cfg, "train.steps")
        mapped = paper_model_for(ctx.cfg, model)
        paper = PAPER_STEPS.get(mapped) if mapped else None
        source = (
            f"App. C ({mapped})" if paper is not None else "App. C: 120 (Qwen3-4B), 320 (Qwen3-8B)"
        )
        records.insert(
            len([r for r in records if r[0] == "training"]),
            ("training", f"training steps, {model}", key, ours, paper, source),
        )
    return records


def _settings_rows(records: list[tuple], name: str) -> list[list[str]]:
    """The display rows of one section ("training" or "evaluation") of Tables 4-5."""
    return [
        [setting, _setting_text(ours), "–" if paper is None else _setting_text(paper), source]
        for section, setting, _, ours, paper, source in records
        if section == name
    ]
