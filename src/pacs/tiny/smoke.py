"""Inputs of the verl smoke run (``make verl-smoke``): synthetic task + tiny Qwen3, locally built.

    python -m pacs.tiny.smoke --config configs/verl_smoke.yaml --out results/verl_smoke

writes, under ``--out``:
- ``data/{sft,train,test}.jsonl`` (``pacs.data.synthetic``; ``test.jsonl`` is a prepared
  benchmark file that ``pacs.evaluation.generate`` reads);
- ``data/train.parquet``: the train split in verl's RL parquet schema (as ``pacs.data.train``
  writes DeepScaleR), rewarded by ``pacs.rewards.math``;
- ``model/base``: the tiny model and tokenizer (``pacs.tiny.build``), warmed up by the tiny
  profile's SFT (``pacs.tiny.sft.run_sft`` with ``models.<model>.sft``) so that some sampled
  responses are correct: the RL groups then hold both labels and the PACS class weights differ
  from 1, instead of the trivial all-wrong batch of an untrained model. ``sft_summary.json``
  there records the SFT settings, its final loss and the sampled pass@1 on the train split at
  the rollout's settings (``train.max_new_tokens``, temperature ``train.temperature``).
No network, no hub, no verl import (so it lives in pacs.tiny: only pacs.verl_plugin imports verl).
Deterministic: seeded build, seeded SFT batches and ``threads_per_job`` torch threads.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

import torch

from pacs.config import ConfigError, Profile, load_profile
from pacs.data.synthetic import write_task_splits
from pacs.data.train import write_parquet
from pacs.io import read_jsonl
from pacs.tiny.build import build_model, build_tokenizer, corpus_from_rows, save_pretrained
from pacs.tiny.common import eval_pass_at_1
from pacs.tiny.sft import SUMMARY_NAME, run_sft

DATA_SOURCE = "synthetic"


def verl_rows(rows: list[dict[str, Any]], split: str = "train") -> list[dict[str, Any]]:
    """Prepared synthetic rows -> verl RL rows (``prompt`` messages, rule ground truth)."""
    return [
        {
            "data_source": DATA_SOURCE,
            "prompt": row["prompt"],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": row["answer"]},
            "extra_info": {"index": i, "id": row["problem_id"], "split": split},
        }
        for i, row in enumerate(rows)
    ]


def prepare(config: Path, out: Path, model_key: str = "tiny") -> dict[str, Path]:
    profile = load_profile(config)
    data_dir = out / "data"
    paths = write_task_splits(data_dir, **dataclasses.asdict(profile.data.synthetic))
    train_rows = read_jsonl(paths["train"])
    parquet = write_parquet(data_dir / "train.parquet", verl_rows(train_rows))
    build_cfg = dataclasses.asdict(profile.models[model_key].build)
    tokenizer = build_tokenizer(
        corpus_from_rows(read_jsonl(paths["sft"])), build_cfg.pop("vocab_size")
    )
    model = build_model(tokenizer, seed=0, **build_cfg)
    summary = warm_up(model, tokenizer, read_jsonl(paths["sft"]), train_rows, profile, model_key)
    model_dir = out / "model" / "base"
    save_pretrained(model, tokenizer, model_dir, extra_json={SUMMARY_NAME: summary})
    print(
        f"sft: {summary['steps']} steps, loss {summary['final_loss']:.3f}, "
        f"train pass@1 {summary['train_pass_at_1']:.3f} at the rollout's settings"
    )
    return {"train_parquet": parquet, "test": paths["test"], "model": model_dir}


def warm_up(
    model, tokenizer, sft_rows: list[dict], train_rows: list[dict], profile: Profile, model_key: str
) -> dict[str, Any]:
    """SFT ``model`` in place with ``models.<model_key>.sft``; return its summary."""
    sft = profile.models[model_key].sft
    losses = run_sft(model, tokenizer, sft_rows, sft.steps, sft.batch_size, sft.lr, sft.seed)
    train = profile.train
    pass_at_1 = eval_pass_at_1(
        model,
        tokenizer,
        train_rows,
        train.group_size,
        max_new_tokens=train.max_new_tokens,
        temperature=train.temperature,
        top_p=1.0,
        seed=sft.seed,
    )
    return {
        "steps": sft.steps,
        "batch_size": sft.batch_size,
        "lr": sft.lr,
        "seed": sft.seed,
        "final_loss": sum(losses[-10:]) / max(len(losses[-10:]), 1),
        "train_pass_at_1": pass_at_1,
        "train_samples_per_problem": train.group_size,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True, help="configs/verl_smoke.yaml")
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--model", default="tiny", help="model key under models:")
    args = parser.parse_args(argv)
    # a fixed thread count keeps the SFT's float reductions, hence the base model, reproducible
    try:
        torch.set_num_threads(load_profile(args.config).threads_per_job)
    except ConfigError as err:
        raise SystemExit(f"error: {err}") from err
    for name, path in prepare(args.config, args.out, args.model).items():
        print(f"{name}: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
