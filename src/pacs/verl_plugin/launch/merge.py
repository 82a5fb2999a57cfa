"""Convert a verl FSDP checkpoint into a Hugging Face model folder with verl's model merger.

    python -m pacs.verl_plugin.launch.merge --ckpt-dir RUN/checkpoints --out RUN/model
    python -m pacs.verl_plugin.launch.merge --run-dir RUN [--step N] --out DIR
    (RUN/checkpoints[/global_step_N])

``--ckpt-dir`` may be a run's checkpoint root (the latest step is taken from verl's
``latest_checkpointed_iteration.txt``), one ``global_step_N`` folder, or its ``actor`` folder.
The conversion is ``verl.model_merger`` (``FSDPModelMerger`` with ``ModelMergerConfig``; the CLI
equivalent is ``python -m verl.model_merger merge --backend fsdp --local_dir ACTOR --target_dir
OUT``).
It reads ``fsdp_config.json``, the ``model_world_size_W_rank_R.pt`` shards and the
``huggingface/`` folder (config + tokenizer) that verl saves next to them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pacs.io import atomic_dir

TRACKER = "latest_checkpointed_iteration.txt"


def resolve_actor_dir(ckpt_dir: Path) -> Path:
    """The ``actor`` folder holding the FSDP shards, from any of the three accepted inputs."""
    ckpt_dir = Path(ckpt_dir)
    if (ckpt_dir / "fsdp_config.json").is_file():
        return ckpt_dir
    if (ckpt_dir / "actor" / "fsdp_config.json").is_file():
        return ckpt_dir / "actor"
    tracker = ckpt_dir / TRACKER
    if tracker.is_file():
        step = int(tracker.read_text().strip())
        actor = ckpt_dir / f"global_step_{step}" / "actor"
        if not (actor / "fsdp_config.json").is_file():
            raise FileNotFoundError(
                f"{tracker} names step {step} but {actor}/fsdp_config.json is missing"
            )
        return actor
    raise FileNotFoundError(
        f"{ckpt_dir} is not a verl FSDP checkpoint (no fsdp_config.json, actor/ or {TRACKER})"
    )


def merge_checkpoint(ckpt_dir: Path, out: Path) -> Path:
    """Merge the FSDP shards under ``ckpt_dir`` into an HF folder at ``out`` (written to a temporary
    sibling and renamed, so an existing ``out`` is always complete). Returns the actor folder
    used."""
    from verl.model_merger.base_model_merger import ModelMergerConfig
    from verl.model_merger.fsdp_model_merger import FSDPModelMerger

    actor = resolve_actor_dir(ckpt_dir)
    hf_config = actor / "huggingface"
    if not (hf_config / "config.json").is_file():
        raise FileNotFoundError(
            f"{hf_config}/config.json is missing; verl saves it with every actor checkpoint"
        )
    with atomic_dir(out) as tmp:
        config = ModelMergerConfig(
            operation="merge",
            backend="fsdp",
            local_dir=str(actor),
            target_dir=str(tmp),
            hf_model_config_path=str(hf_config),
        )
        merger = FSDPModelMerger(config)
        merger.merge_and_save()
        merger.cleanup()
    return actor


def checkpoint_from_args(args: argparse.Namespace) -> Path:
    """--ckpt-dir as given, or RUN/checkpoints (latest) / RUN/checkpoints/global_step_N for
    --run-dir."""
    if args.ckpt_dir is not None:
        if args.step is not None:
            raise SystemExit(
                "--step goes with --run-dir; with --ckpt-dir name the global_step_N folder"
            )
        return args.ckpt_dir
    root = args.run_dir / "checkpoints"
    return root if args.step is None else root / f"global_step_{args.step}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Merge a verl FSDP checkpoint into a Hugging Face model folder."
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--ckpt-dir", type=Path, help="checkpoint root, global_step_N, or its actor/"
    )
    source.add_argument("--run-dir", type=Path, help="a training run folder (its checkpoints/)")
    parser.add_argument("--step", type=int, help="with --run-dir: this step instead of the latest")
    parser.add_argument("--out", type=Path, required=True, help="HF model folder to write")
    args = parser.parse_args(argv)
    actor = merge_checkpoint(checkpoint_from_args(args), args.out)
    print(f"merged {actor} -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
