"""PACS on verl 0.9.1, as a plugin (no fork). The only part of the project that imports verl.

How the pieces fit (docs/design.md#the-verl-plugin). The plugin proper, what verl (and vLLM) load,
sits at the top of this package:

- ``register``: loaded on every ``import verl`` through the ``verl.plugins`` entry point (declared
  in pyproject.toml). Fallback where entry-point metadata is not visible (e.g. a Ray runtime env
  with its own interpreter): ``VERL_USE_EXTERNAL_MODULES=pacs.verl_plugin.register``; the
  launcher also puts that variable into the Ray runtime env, so every Ray worker loads it.
- ``advantage``: the ``pacs`` advantage estimator (driver side). verl's policy losses see no labels
  or uids, so the driver packs the label and the class weight into one signed number per
  response, ``(2r − 1)·w``, broadcast over the response tokens as the "advantage".
- ``loss``: the ``pacs`` policy loss (worker side) and ``PACSPolicyLossConfig``.
- ``trainer``: the ``label_sync`` trainer, which keeps each prompt's group whole on one rank and in
  one micro-batch (``balance``), and resets the reference model every K steps when asked to
  (``reference``, ``worker``).
- ``cpu_platform``, ``hf_rollout``: verl's trainer on a CPU (a ``cpu`` platform, a transformers
  rollout); ``vllm_cpu``: the ``vllm.general_plugins`` entry point that lets verl's own vLLM
  rollout reload weights on a CPU.

Around it, not loaded by verl: ``launch/`` (``python -m pacs.verl_plugin.launch.train``: config
to Hydra overrides, resume, logs, merge, the smoke chain) and ``cluster/`` (SLURM and Ray).

Importing this package does not import verl; only the submodules that need it do.
"""

from __future__ import annotations

# The plugin writes into private verl tables (the rollout-adapter dict, the engine and platform
# registries) and relies on the v1 trainer's batch geometry: it is written for this verl only.
SUPPORTED_VERL = "0.9.1"


def verl_version_problem(found: str) -> str | None:
    """None when ``found`` (``verl.__version__``) is the supported verl, else the message to
    show."""
    if found == SUPPORTED_VERL:
        return None
    return (
        f"pacs.verl_plugin supports verl {SUPPORTED_VERL} only, found verl {found}: the PACS "
        "estimator, loss and trainer are NOT registered (verl itself works as usual). Install "
        f"verl=={SUPPORTED_VERL} (environment.yml) to run PACS."
    )
