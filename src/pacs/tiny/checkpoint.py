"""Checkpoints and resume for the tiny RL loop (plumbing: the algorithm is in
:mod:`pacs.tiny.train`).

Checkpoints (every ``save_every`` steps and at the end, written atomically) hold the policy,
optimizer(s), critic, reference, step, python/numpy/torch RNG states, the prompt sampler's position
and the run's fingerprint (:func:`run_fingerprint`); a run restarted with the same ``--out`` and
the same settings resumes from the last one and reaches bit-identical weights and metrics
(temporary files of a run killed mid-write are removed first). A checkpoint written under other
settings (method, seed, lr, base model, data, ...) is refused, naming the differing keys, or with
``--on-mismatch restart`` set aside for a fresh start. Only ``steps`` and ``save_every`` may change
on resume: extending a finished run is legitimate.

Each save also keeps the policy's weights of that step, ``policies/step<k>.pt`` (a state dict, a few
MB for the tiny model), written before the checkpoint: the science profile evaluates them
(:mod:`pacs.evaluation.path_exact`, docs/design.md#the-study-design). A crash between the two leaves
a snapshot the resumed run writes again, bit-identically."""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from pacs import numerics
from pacs.fingerprint import (
    ON_MISMATCH,
    FingerprintMismatch,
    differences,
    differing_keys,
    fingerprint,
    folder_digest,
    rows_digest,
)
from pacs.io import atomic_path, read_jsonl
from pacs.methods import spec_dict
from pacs.metrics_log import TENSORBOARD_DIR
from pacs.tiny.sft import SUMMARY_NAME as SFT_SUMMARY_NAME
from pacs.tiny.state import Settings, State

CHECKPOINT_NAME = "checkpoint.pt"
POLICIES_DIR = "policies"  # policies/step<k>.pt: the policy's weights at each save
# Settings a resume may change: the step budget (extending a run) and the checkpoint cadence.
RESUMABLE_SETTINGS = ("steps", "save_every")
RUN_OUTPUTS = (
    CHECKPOINT_NAME,
    POLICIES_DIR,
    "metrics.jsonl",
    "eval_curve.jsonl",
    "model",
    "summary.json",
    TENSORBOARD_DIR,
)


class CheckpointError(RuntimeError):
    """A checkpoint file that cannot be read back, or one this run cannot continue."""


class StepsBehindCheckpoint(CheckpointError):
    """The run folder's checkpoint is past the step budget asked for."""

    def __init__(self, path: Path, step: int, steps: int):
        super().__init__(
            f"{path} is at step {step}, past the {steps} steps asked for (--steps or "
            f"train.steps): ask for at least {step} steps to continue that run, or give this "
            "run another --out"
        )


def run_fingerprint(
    settings: Settings,
    seed: int,
    base: str | Path,
    train_rows: Sequence[dict],
    eval_rows: Sequence[dict],
) -> dict:
    """Fingerprint (:mod:`pacs.fingerprint`) of everything that decides what this run trains
    and records: the resolved run, every ``train:``/``eval:`` setting but ``RESUMABLE_SETTINGS``,
    the seed, the contents of the base model folder and of both data sets, and the numerics
    setting (:mod:`pacs.numerics`), which must be the one the base model was made with."""
    knobs = {k: v for k, v in settings.knobs().items() if k not in RESUMABLE_SETTINGS}
    current = check_numerics(f"the base model {base}", base_numerics(base))
    return fingerprint(
        {
            # Only a portable run names it: native fingerprints stay those of older runs.
            **({"numerics": current} if current == numerics.PORTABLE else {}),
            # What the run trains (its method and knobs), not how it is named or grouped.
            "run": {"method": settings.method.name, **spec_dict(settings.method)},
            **knobs,
            "seed": seed,
            # The SFT summary holds wall-clock times: a byte-identical model may differ there.
            "base_model": folder_digest(base, skip=(SFT_SUMMARY_NAME,)),
            "train_data": rows_digest(train_rows),
            "eval_data": rows_digest(eval_rows),
        }
    )


def check_numerics(where: str | Path, stored: str) -> str:
    """This process's numerics setting, refused (:class:`CheckpointError`, naming both) when
    it is not ``stored``, the one ``where`` was made with, or when it did not take."""
    try:
        current = numerics.check_in_effect()
        numerics.check_same(where, stored, current)
    except (numerics.NumericsMismatch, RuntimeError) as err:
        raise CheckpointError(str(err)) from err
    return current


def base_numerics(base: str | Path) -> str:
    """The numerics setting the SFT base in ``base`` records (``native`` without a record)."""
    path = Path(base) / SFT_SUMMARY_NAME
    return numerics.recorded(json.loads(path.read_text()) if path.is_file() else None)


def resume(
    state: State, settings: Settings, out: Path, run_fp: dict, on_mismatch: str = "refuse"
) -> bool:
    """Make ``out`` ready for this run: remove what a killed run left mid-write, restore
    ``state`` from its checkpoint when there is one of the same settings (:func:`load_checkpoint`)
    and remove the summary (it means 'finished'). Returns whether the run resumed."""
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(out)
    resumed = load_checkpoint(state, settings, out, run_fp, on_mismatch)
    if state.step > settings.steps:
        raise StepsBehindCheckpoint(out / CHECKPOINT_NAME, state.step, settings.steps)
    (out / "summary.json").unlink(missing_ok=True)
    return resumed


def policy_snapshot_path(out: str | Path, step: int) -> Path:
    """Where a run keeps its policy's weights of ``step`` (``policies/step<k>.pt``)."""
    return Path(out) / POLICIES_DIR / f"step{step}.pt"


def save_policy_snapshot(state: State, out: Path) -> Path:
    """The policy's state dict at ``state.step``, written atomically; returns its path."""
    path = policy_snapshot_path(out, state.step)
    path.parent.mkdir(parents=True, exist_ok=True)
    _save_atomically(state.policy.state_dict(), path)
    return path


def _save_atomically(obj: object, path: Path) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        torch.save(obj, fh)
        fh.flush()
        os.fsync(fh.fileno())


def save_checkpoint(state: State, out: Path, run_fp: dict) -> None:
    """Everything needed to continue bit-identically, written atomically (temp file, fsync,
    rename): a crash mid-write leaves the previous checkpoint in place. The step's policy
    snapshot (:func:`save_policy_snapshot`) is written first."""
    save_policy_snapshot(state, out)
    ckpt = {
        "step": state.step,
        "fingerprint": run_fp,
        "policy": state.policy.state_dict(),
        "optimizer": state.optimizer.state_dict(),
        "ref": state.ref.state_dict() if state.ref is not None else None,
        "critic": state.critic.state_dict() if state.critic is not None else None,
        "critic_optimizer": state.critic_optimizer.state_dict()
        if state.critic_optimizer is not None
        else None,
        "sampler": state.sampler.state_dict(),
        "rng": {
            "python": random.getstate(),
            "numpy": np.random.get_state(),
            "torch": torch.get_rng_state(),
        },
    }
    _save_atomically(ckpt, out / CHECKPOINT_NAME)


def read_checkpoint(path: Path) -> dict:
    """The checkpoint dict at ``path``; an unreadable file is a :class:`CheckpointError` that
    names it and says how to recover (torch's own error is a bare zip/pickle message)."""
    try:
        ckpt = torch.load(path, weights_only=False)
    except Exception as err:  # torch raises RuntimeError, EOFError, UnpicklingError, OSError...
        raise CheckpointError(
            f"{path} cannot be read ({type(err).__name__}: {err}); it is truncated or corrupt. "
            f"Delete it to restart this run from step 0, or put back a good copy of it to resume."
        ) from err
    if not isinstance(ckpt, dict) or "step" not in ckpt:
        raise CheckpointError(
            f"{path} is not a pacs.tiny.train checkpoint (no 'step' entry); delete it to restart "
            f"this run from step 0"
        )
    return ckpt


def remove_stale_temps(out: Path) -> list[Path]:
    """Remove the temporary files (``.<name>.*.tmp``) and folders (``.model.*``) that a run
    killed mid-write left in ``out``; they are never read. Returns what was removed."""
    stale = [
        p
        for name in RUN_OUTPUTS
        for p in out.glob(f".{name}.*")
        if p.name.endswith(".tmp") or name == "model"
    ]
    stale += list((out / POLICIES_DIR).glob(".*.tmp"))
    for path in stale:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    return stale


def discard_run_outputs(out: Path) -> None:
    """Remove a previous run's checkpoint, logs and outputs so that none leaks into a fresh run."""
    for name in RUN_OUTPUTS:
        path = out / name
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def load_checkpoint(
    state: State, settings: Settings, out: Path, run_fp: dict, on_mismatch: str = "refuse"
) -> bool:
    """Restore ``state`` from ``out``'s checkpoint, if any, and trim logs written after it.

    A checkpoint of other settings raises :class:`FingerprintMismatch` (``on_mismatch="refuse"``)
    or is discarded with the run's logs (``"restart"``, returns False: a fresh start)."""
    if on_mismatch not in ON_MISMATCH:
        raise ValueError(f"on_mismatch must be one of {ON_MISMATCH}, got {on_mismatch!r}")
    path = out / CHECKPOINT_NAME
    if not path.is_file():
        return False
    ckpt = read_checkpoint(path)
    stored = ckpt.get("fingerprint")
    # Another numerics setting is refused whatever on_mismatch says: restarting would train on
    # a base model of the other setting too (run_fingerprint refuses that).
    check_numerics(path, numerics.recorded((stored or {}).get("settings")))
    if differing_keys(stored, run_fp):
        if on_mismatch == "refuse":
            raise FingerprintMismatch(
                path,
                stored,
                run_fp,
                "Rerun with --on-mismatch restart to discard that run and start from step 0, "
                "or give this run another --out.",
            )
        print(
            f"--on-mismatch restart: discarding the run in {out} written under other settings "
            f"({'; '.join(differences(stored, run_fp))}); starting from step 0",
            file=sys.stderr,
        )
        discard_run_outputs(out)
        return False
    restore_state(state, ckpt)
    # Rows past the checkpoint (written before a crash) are redone; eval rows that were a final
    # step of a shorter run are dropped unless the new schedule has them too.
    state.history = [r for r in _read_rows(out / "metrics.jsonl") if r["step"] <= state.step]
    state.eval_curve = [
        r
        for r in _read_rows(out / "eval_curve.jsonl")
        if r["step"] <= state.step and settings.is_eval_step(r["step"])
    ]
    return True


def restore_state(state: State, ckpt: dict) -> None:
    """Weights, optimizers, sampler position and every RNG, as :func:`save_checkpoint` wrote."""
    state.step = ckpt["step"]
    state.policy.load_state_dict(ckpt["policy"])
    state.optimizer.load_state_dict(ckpt["optimizer"])
    if state.ref is not None:
        state.ref.load_state_dict(ckpt["ref"])
    if state.critic is not None:
        state.critic.load_state_dict(ckpt["critic"])
        state.critic_optimizer.load_state_dict(ckpt["critic_optimizer"])
    state.sampler.load_state_dict(ckpt["sampler"])
    random.setstate(ckpt["rng"]["python"])
    np.random.set_state(ckpt["rng"]["numpy"])
    torch.set_rng_state(ckpt["rng"]["torch"])


def _read_rows(path: Path) -> list[dict]:
    return read_jsonl(path) if path.is_file() else []
