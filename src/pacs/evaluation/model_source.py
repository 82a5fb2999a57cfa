"""Where ``make eval``'s model comes from: a local folder or a hub id, checked before anything
loads (:func:`check_model`, :func:`check_hub`), and the profile whose evaluation protocol it gets
when none is named (:func:`default_config`)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from pacs import layout

DEFAULT_CONFIG = Path("configs/paper.yaml")
TINY_VOCAB = 1000  # no released LLM has a vocabulary this small; the tiny engine's has 384 tokens
HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
MODEL_FILES = ("config.json",)  # what makes a folder a model (save_pretrained writes it)


class EvalError(ValueError):
    """Bad input to ``make eval``; the message names the argument, file, row or field."""


def check_model(model: str) -> str:
    """A local model folder (it holds config.json) or a hub id (``owner/name``)."""
    path = Path(model)
    if path.exists():
        if not path.is_dir():
            raise EvalError(f"--model {model}: a file, not a model folder")
        missing = [f for f in MODEL_FILES if not (path / f).is_file()]
        if missing:
            raise EvalError(
                f"--model {model}: this folder is not a model: it has no {', '.join(missing)} "
                "(a folder written by save_pretrained has one)"
            )
        return str(path)
    if not HUB_ID.match(model):
        raise EvalError(
            f"--model {model}: neither an existing folder nor a hub id of the form owner/name"
        )
    return model


def default_config(model: str | None) -> Path:
    """The profile whose protocol a model gets without ``--config``: for a folder inside
    ``results/<profile>/`` that profile's config snapshot, else the paper's; a tiny-engine model
    found elsewhere has no paper protocol, and the error names the configs to pass."""
    path = Path(model) if model else None
    if path is None or not path.is_dir():
        return DEFAULT_CONFIG
    for parent in path.resolve().parents:
        if parent.parent.name == "results" and Path(layout.config_snapshot(parent)).is_file():
            return Path(layout.config_snapshot(parent))
    try:
        vocab = json.loads((path / "config.json").read_text()).get("vocab_size")
    except (OSError, ValueError, AttributeError):
        vocab = None
    if isinstance(vocab, int) and vocab < TINY_VOCAB:
        raise EvalError(
            f"--model {model}: a tiny-engine model (vocabulary of {vocab}); pass "
            "EVAL_CONFIG=configs/default.yaml (its arithmetic task) or configs/science.yaml (paths)"
        )
    return DEFAULT_CONFIG


def check_hub(model: str) -> None:
    """A hub id must be in the local Hugging Face cache or the hub reachable now, so a model
    that cannot be had fails in seconds (not after transformers' retries) and says what to do."""
    import huggingface_hub  # here: the rest of the module never needs it

    if _cached(model):
        return
    hint = f"download it where the hub is reachable (hf download {model}) or give MODEL=<a folder>"
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        raise EvalError(f"--model {model}: not in the local Hugging Face cache and HF_HUB_OFFLINE "
                        f"is set: {hint}")  # fmt: skip
    try:
        huggingface_hub.model_info(model, timeout=10)
    except Exception as err:  # noqa: BLE001 (unreachable, unknown, gated: each named)
        first = str(err).splitlines()[0] if str(err) else ""
        raise EvalError(
            f"--model {model}: not in the local Hugging Face cache, and the hub answered "
            f"{type(err).__name__}: {first}: {hint}"
        ) from None


def _cached(model: str) -> bool:
    import huggingface_hub

    try:
        huggingface_hub.snapshot_download(model, local_files_only=True)
    except Exception:  # noqa: BLE001 (any reason it is not cached: the caller asks the hub)
        return False
    return True


def model_name(model: str) -> str:
    """A folder-safe name for a model: a hub id's ``owner__name``, a folder's own name."""
    path = Path(model)
    name = path.resolve().name if path.exists() else model.replace("/", "__")
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def model_files(model: str) -> dict[str, list[int]] | None:
    """A local model folder's files (config, tokenizer, weights) as ``name: [size, mtime_ns]``;
    None for a hub id. Recorded in protocol.json, so changed weights are never reused."""
    path = Path(model)
    if not path.is_dir():
        return None
    return {
        f.name: [f.stat().st_size, f.stat().st_mtime_ns]
        for f in sorted(path.iterdir())
        if f.is_file()
    }
