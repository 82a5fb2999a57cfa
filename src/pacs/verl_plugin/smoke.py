"""Inputs of the verl smoke run (``make verl-smoke``): synthetic task + tiny Qwen3, locally built.

    python -m pacs.verl_plugin.smoke --config configs/verl_smoke.yaml --out results/verl_smoke

writes, under ``--out``:
- ``data/{sft,train,test}.jsonl`` (``pacs.data.synthetic``; ``test.jsonl`` is a prepared
  benchmark file that ``pacs.evaluation.generate`` reads);
- ``data/train.parquet``: the train split in verl's RL parquet schema (as ``pacs.data.train``
  writes DeepScaleR), rewarded by ``pacs.rewards.math``;
- ``model/base``: the tiny model and tokenizer (``pacs.tiny.build``), untrained: the smoke run
  proves the machinery, not learning.
No network, no hub. Pure Python (no verl import).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pacs.config import load_config
from pacs.data.synthetic import write_splits
from pacs.data.train import write_parquet
from pacs.tiny.build import build_model, build_tokenizer, corpus_from_rows, save_pretrained
from pacs.tiny.common import read_jsonl

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
    cfg = load_config(config)
    synth = dict(cfg["data"]["synthetic"])
    data_dir = out / "data"
    paths = write_splits(
        data_dir,
        seed=synth.pop("seed"),
        n_sft=synth.pop("n_sft"),
        n_train=synth.pop("n_train"),
        n_test=synth.pop("n_test"),
        **synth,
    )
    train_rows = read_jsonl(paths["train"])
    parquet = write_parquet(data_dir / "train.parquet", verl_rows(train_rows))
    build_cfg = dict(cfg["models"][model_key]["build"])
    tokenizer = build_tokenizer(
        corpus_from_rows(read_jsonl(paths["sft"])), build_cfg.pop("vocab_size", 384)
    )
    model_dir = out / "model" / "base"
    save_pretrained(build_model(tokenizer, seed=0, **build_cfg), tokenizer, model_dir)
    return {"train_parquet": parquet, "test": paths["test"], "model": model_dir}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True, help="configs/verl_smoke.yaml")
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--model", default="tiny", help="model key under models:")
    args = parser.parse_args(argv)
    for name, path in prepare(args.config, args.out, args.model).items():
        print(f"{name}: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
