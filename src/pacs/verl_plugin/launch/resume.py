"""Resume only the run that wrote the checkpoints: the launcher's run fingerprint.

verl resumes (``trainer.resume_mode=auto``) from whatever its ``default_local_dir`` holds, under
whatever settings the new command has. The launcher therefore writes a fingerprint
(:mod:`pacs.fingerprint`) of the Hydra overrides that decide what is trained to
``checkpoints/pacs_fingerprint.json`` before verl starts, and before a resume checks that the
checkpoints' fingerprint is the new command's: on a mismatch it refuses, naming the differing
overrides, or (``--on-mismatch restart``) sets the old run aside and starts from step 0.

Overrides that do not change what is trained are left out (:func:`is_training_key`): paths,
logging, save/validation cadence, the step budget (extending a run is a legitimate resume) and
placement/memory knobs (nodes, GPUs, micro-batch sizes, offload, vLLM memory share), which a job
resumed on another allocation may need to change; they change float summation order at most, not
the algorithm. The training parquet counts by content (sha256), not by path.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pacs.fingerprint import FingerprintMismatch, differences, differing_keys, fingerprint
from pacs.io import sha256_file, write_json
from pacs.verl_plugin.launch.overrides import RunPaths

logger = logging.getLogger("pacs.verl_plugin.launch.resume")

FINGERPRINT_NAME = "pacs_fingerprint.json"
DATA_FILE_KEYS = ("data.train_files",)
IGNORED_KEYS = frozenset(
    {
        # the step budget: extending a run is a legitimate resume
        "trainer.total_training_steps",
        "trainer.total_epochs",
        # where things go and how the run is named and logged
        "trainer.default_local_dir",
        "trainer.resume_mode",
        "trainer.project_name",
        "trainer.experiment_name",
        "trainer.logger",
        # checkpoint and validation cadence (validation does not feed training)
        "trainer.save_freq",
        "trainer.max_actor_ckpt_to_keep",
        "trainer.max_critic_ckpt_to_keep",
        "trainer.test_freq",
        "trainer.val_before_train",
        "data.val_files",
        "data.val_max_samples",
        # placement
        "trainer.nnodes",
        "trainer.n_gpus_per_node",
    }
)
IGNORED_PREFIXES = ("ray_kwargs.", "hydra.")
# memory knobs: micro-batches (gradient accumulation), offload, recomputation, vLLM's share/TP
IGNORED_SUFFIXES = (
    "micro_batch_size_per_gpu",
    ".gpu_memory_utilization",
    ".param_offload",
    ".optimizer_offload",
    ".enable_gradient_checkpointing",
    ".tensor_model_parallel_size",
)
# What a run folder holds besides its checkpoints; set aside with them on a restart.
RUN_OUTPUTS = ("verl_logs", "metrics.jsonl", "model", "summary.json", "launch.json", "tensorboard")


def override_key(key: str) -> str:
    """``+a.b`` and ``++a.b`` set the same value as ``a.b``."""
    return key.lstrip("+")


def is_training_key(key: str) -> bool:
    key = override_key(key)
    return not (
        key in IGNORED_KEYS or key.startswith(IGNORED_PREFIXES) or key.endswith(IGNORED_SUFFIXES)
    )


def _unquote(value: str) -> str:
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] == "'" else value


def training_settings(overrides: Sequence[str]) -> dict[str, str]:
    """The overrides that decide what is trained, as ``{key: value}`` (a later override of a
    key wins, as in Hydra); the training file by its content."""
    settings: dict[str, str] = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"Hydra override {item!r} is not key=value")
        if is_training_key(key):
            settings[override_key(key)] = value
    for key in DATA_FILE_KEYS:
        path = Path(_unquote(settings.get(key, "")))
        if key in settings and path.is_file():
            settings[key] = f"sha256:{sha256_file(path)}"
    return settings


def run_fingerprint(overrides: Sequence[str]) -> dict[str, Any]:
    return fingerprint(training_settings(overrides))


def fingerprint_path(ckpt_dir: Path) -> Path:
    return Path(ckpt_dir) / FINGERPRINT_NAME


def read_fingerprint(ckpt_dir: Path) -> dict[str, Any] | None:
    """The stored fingerprint, None when there is none; an unreadable one names its file."""
    path = fingerprint_path(ckpt_dir)
    if not path.is_file():
        return None
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RuntimeError(
            f"{path} cannot be read ({err}); delete it only if you know the checkpoints beside it "
            "belong to this command, or pass --on-mismatch restart to start over"
        ) from err
    if not isinstance(stored, dict) or "sha256" not in stored:
        raise RuntimeError(f"{path} is not a run fingerprint (no 'sha256' field)")
    return stored


def write_fingerprint(ckpt_dir: Path, run_fp: dict[str, Any]) -> Path:
    return write_json(fingerprint_path(ckpt_dir), run_fp)


def must_restart(ckpt_dir: Path, run_fp: dict[str, Any], on_mismatch: str) -> bool:
    """Whether the checkpoints in ``ckpt_dir`` must be set aside before launching: False when
    they were written under this fingerprint; on a mismatch True with ``on_mismatch="restart"``,
    else :class:`FingerprintMismatch` naming the differing overrides."""
    stored = read_fingerprint(ckpt_dir)
    if not differing_keys(stored, run_fp):
        return False
    if on_mismatch != "restart":
        raise FingerprintMismatch(
            ckpt_dir,
            stored,
            run_fp,
            "Rerun with --on-mismatch restart to set that run aside and start from step 0, "
            "or give this run another --out.",
        )
    logger.warning(
        "--on-mismatch restart: %s was written under other settings (%s)",
        ckpt_dir,
        "; ".join(differences(stored, run_fp)),
    )
    return True


def set_aside(paths: RunPaths) -> Path | None:
    """Move the checkpoints, verl logs and outputs of the run in ``paths.out_dir`` into
    ``previous-<time>/`` there, so that nothing of it is resumed or merged into the new run's
    metrics; return that folder (None when there was nothing to move)."""
    out = paths.out_dir
    names = [paths.ckpt_dir.name, *RUN_OUTPUTS]
    present = [out / name for name in names if (out / name).exists()]
    if not present:
        return None
    target = out / f"previous-{time.strftime('%Y%m%d-%H%M%S')}"
    suffix = 0
    while target.exists():  # two restarts within a second
        suffix += 1
        target = out / f"previous-{time.strftime('%Y%m%d-%H%M%S')}-{suffix}"
    target.mkdir()
    for path in present:
        path.rename(target / path.name)
    return target
