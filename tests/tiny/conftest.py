"""A test-sized tiny environment: easy synthetic data, a smaller model and a short SFT.

The task is made easy (one add/subtract step over 1..3) so that ~40 SFT steps give a sampled
pass@1 well above 0: GRPO and PPO only move the policy when a group has both labels.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
import yaml

from pacs.config import load_config
from pacs.data.synthetic.arithmetic import make_splits
from pacs.io import write_jsonl
from pacs.tiny.build import build_model, build_tokenizer, corpus_from_rows, save_pretrained
from pacs.tiny.sft import run_sft

REPO = Path(__file__).resolve().parents[2]
DEFAULT_CONFIG = REPO / "configs" / "default.yaml"

TEST_BUILD = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
}
# weight_decay 0: a parameter then changes only if its gradient moved it (AdamW's decay alone
# would change every parameter and make "every parameter changes" vacuous).
TEST_TRAIN = {
    "weight_decay": 0.0,
    "steps": 3,
    "prompts_per_step": 4,
    "group_size": 4,
    "mini_batches": 4,
    "max_new_tokens": 20,
    "eval_every": 3,
    "eval_problems": 4,
    "eval_samples": 2,
    "save_every": 3,
}


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


def _small_config(**train_overrides) -> dict:
    """The default profile with test-sized ``train:``/``eval:``/``build:`` values."""
    cfg = copy.deepcopy(load_config(DEFAULT_CONFIG))
    cfg["train"].update(TEST_TRAIN)
    cfg["train"].update(train_overrides)
    cfg["eval"]["max_new_tokens"] = TEST_TRAIN["max_new_tokens"]
    cfg["models"]["tiny"]["build"].update(TEST_BUILD)
    return cfg


@pytest.fixture(scope="session")
def small_config():
    """``small_config(**train_overrides) -> dict``."""
    return _small_config


@pytest.fixture
def config_file(tmp_path):
    """``config_file(**train_overrides) -> Path`` of a YAML written under ``tmp_path``."""

    def write(**train_overrides) -> Path:
        path = tmp_path / "config.yaml"
        path.write_text(yaml.safe_dump(_small_config(**train_overrides)))
        return path

    return write


# The session's tiny data (deterministic: rebuilt in memory wherever the files are read).
TINY_SPLITS = {
    "seed": 0,
    "n_sft": 1000,
    "n_train": 64,
    "n_test": 16,
    "min_steps": 1,
    "max_steps": 1,
    "max_operand": 3,
}


def _build_tiny_env(root: Path) -> None:
    splits = make_splits(**TINY_SPLITS)
    for name, rows in splits.items():
        write_jsonl(root / f"{name}.jsonl", rows)
    tokenizer = build_tokenizer(corpus_from_rows(splits["sft"]), vocab_size=384)
    model = build_model(tokenizer, seed=0, **TEST_BUILD)
    run_sft(model, tokenizer, splits["sft"], steps=40, batch_size=32, lr=1e-2, seed=0)
    save_pretrained(model, tokenizer, root / "base")


@pytest.fixture(scope="session")
def tiny_env(build_once) -> dict:
    """Data files and a briefly SFT-ed base model, shared by every test in this folder: built
    once per pytest run, however many xdist workers ask (it was once per worker). Read-only:
    copy to change."""
    torch.set_num_threads(1)
    root = build_once("tiny_env", _build_tiny_env)
    return {
        "root": root,
        "base": root / "base",
        "train": root / "train.jsonl",
        "test": root / "test.jsonl",
        "sft": root / "sft.jsonl",
        "splits": make_splits(**TINY_SPLITS),
    }


@pytest.fixture(scope="session")
def train_args(tiny_env):
    """``f(config, out, method="pacs", seed=0, *extra)``: the `python -m pacs.tiny.train` arguments
    of a run on the session's tiny model and data (one thread); ``out=None`` leaves ``--out``
    off."""

    def args(config, out, method="pacs", seed=0, *extra) -> list[str]:
        argv = [
            "--config",
            str(config),
            "--method",
            method,
            "--seed",
            str(seed),
            "--base",
            str(tiny_env["base"]),
            "--train-data",
            str(tiny_env["train"]),
            "--eval-data",
            str(tiny_env["test"]),
            "--threads",
            "1",
        ]
        if out is not None:
            argv += ["--out", str(out)]
        return argv + [str(e) for e in extra]

    return args
