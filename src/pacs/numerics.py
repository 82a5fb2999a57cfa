"""Portable numerics: one floating-point path for the CPU engine on every x86-64 CPU with AVX2.

torch picks its CPU kernels by the CPU it finds: ATen's vectorised kernels by the widest
instruction set (DEFAULT, AVX2, AVX512), MKL's matrix products by its own dispatch, oneDNN's by
its own. Each path rounds differently, so 30 SFT steps of one model from one init give other
weights on another CPU, and the tiny report's tables drift by more than the seed's own spread
(docs/testing.md, "Portable numerics"). The portable setting pins all three to their AVX2 path
(:data:`PORTABLE_ENV`), which every x86-64 CPU with AVX2 or better runs; the thread count is
already fixed by each stage (SFT: ``pacs.tiny.sft.SFT_THREADS``; RL: ``threads_per_job``).

The variables are read by torch, MKL and oneDNN when they first dispatch, so they must be in a
process's environment before it imports torch: the Snakefile sets them (:func:`apply`) for every
job of a CPU-engine profile, local or SLURM (jobs inherit Snakemake's environment). The switch
``PACS_PORTABLE_NUMERICS=0`` turns them off (the CPU's native path: faster on some CPUs, tables
that only this CPU type repeats). Each run records :func:`setting` in its summary and
fingerprint; a run on a base model or checkpoint of the other setting is refused
(:func:`check_same`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping

SWITCH = "PACS_PORTABLE_NUMERICS"
PORTABLE, NATIVE = "portable", "native"
# What the portable setting sets (values as each library spells them).
PORTABLE_ENV = {
    "ATEN_CPU_CAPABILITY": "avx2",  # ATen's vectorised kernels
    "MKL_CBWR": "AVX2",  # MKL's conditional numerical reproducibility: the AVX2 branch
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # oneDNN's JIT kernels
}
# OpenMP threads sleep while they wait instead of spinning on cores other jobs need.
WAIT_POLICY = ("OMP_WAIT_POLICY", "PASSIVE")
_ON, _OFF = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


class NumericsMismatch(RuntimeError):
    """A base model or checkpoint made with the other numerics setting than this run's."""

    def __init__(self, where: object, stored: str, current: str):
        self.stored, self.current = stored, current
        pins = " ".join(f"{k}={v}" for k, v in PORTABLE_ENV.items())
        how = (
            f"{SWITCH}=1 (Snakemake; a direct run: export {pins})"
            if stored == PORTABLE
            else f"{SWITCH}=0 (Snakemake; a direct run: without {', '.join(PORTABLE_ENV)})"
        )
        super().__init__(
            f"{where} was made with {stored} numerics, this run has {current} numerics "
            f"({SWITCH}={'1' if current == PORTABLE else '0'}): its arithmetic would mix two "
            f"CPU paths. Rerun with {how} to continue it, or remove it to start over with "
            "this setting."
        )


def requested(environ: MutableMapping[str, str] | None = None) -> bool:
    """Whether the switch asks for portable numerics (unset: yes)."""
    environ = os.environ if environ is None else environ
    value = environ.get(SWITCH, "1").strip().lower()
    if value in _ON or value == "":
        return True
    if value in _OFF:
        return False
    raise ValueError(f"{SWITCH}={environ[SWITCH]!r}: use 1 (portable, the default) or 0 (native)")


def job_environment(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """The variables a CPU-engine job needs: :data:`PORTABLE_ENV` when requested (over any
    value the caller had) and :data:`WAIT_POLICY` unless the caller set one."""
    environ = os.environ if environ is None else environ
    env = dict(PORTABLE_ENV) if requested(environ) else {}
    if WAIT_POLICY[0] not in environ:
        env[WAIT_POLICY[0]] = WAIT_POLICY[1]
    return env


def apply(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Set :func:`job_environment` in ``environ`` (default: this process's, which every child
    inherits); returns what it set. With the switch off, a portable variable the caller did not
    set himself is removed (a parent's portable setting does not leak into a native run)."""
    environ = os.environ if environ is None else environ
    env = job_environment(environ)
    if not requested(environ):
        for key, value in PORTABLE_ENV.items():
            if environ.get(key) == value:
                del environ[key]
    environ.update(env)
    return env


def setting(environ: MutableMapping[str, str] | None = None) -> str:
    """:data:`PORTABLE` when every variable of :data:`PORTABLE_ENV` has its value in
    ``environ``, else :data:`NATIVE` (what this process computes with, whatever the switch)."""
    environ = os.environ if environ is None else environ
    pinned = all(environ.get(k, "").lower() == v.lower() for k, v in PORTABLE_ENV.items())
    return PORTABLE if pinned else NATIVE


def cpu_capability() -> str | None:
    """The ATen kernel set this process dispatches to (``AVX2``...); None before torch is
    imported (the question would import it)."""
    torch = sys.modules.get("torch")
    return None if torch is None else torch.backends.cpu.get_cpu_capability()


def describe(environ: MutableMapping[str, str] | None = None) -> dict[str, object]:
    """What a run's summary records: the setting, the kernel set ATen dispatches to and the
    variables (None: unset)."""
    environ = os.environ if environ is None else environ
    return {
        "setting": setting(environ),
        "aten_kernels": cpu_capability(),
        "env": {key: environ.get(key) for key in PORTABLE_ENV},
    }


def check_in_effect(environ: MutableMapping[str, str] | None = None) -> str:
    """This process's setting, after checking that a portable one took: ATen runs its AVX2
    kernels (a CPU without AVX2 falls back to DEFAULT, another path). Raises RuntimeError."""
    current = setting(environ)
    capability = cpu_capability()
    if current == PORTABLE and capability not in (None, "AVX2"):
        raise RuntimeError(
            f"portable numerics need ATen's AVX2 kernels, this process runs {capability} "
            f"(a CPU without AVX2, or torch imported before ATEN_CPU_CAPABILITY was set); "
            f"{SWITCH}=0 runs the native path"
        )
    return current


def recorded(summary: dict | None) -> str:
    """The setting a summary records; :data:`NATIVE` for one from before the record existed."""
    numerics = (summary or {}).get("numerics")
    if isinstance(numerics, dict):
        return str(numerics.get("setting", NATIVE))
    return NATIVE if numerics is None else str(numerics)


def check_same(where: object, stored: str, current: str) -> None:
    """Refuse (:class:`NumericsMismatch`, naming both) when ``stored`` is not ``current``."""
    if stored != current:
        raise NumericsMismatch(where, stored, current)
