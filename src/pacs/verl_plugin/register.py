"""Entry point of the verl plugin: importing this module registers PACS with verl.

verl 0.9.1 imports it on every ``import verl`` (verl/__init__.py), in the driver and in every Ray
worker, through either mechanism:
- the entry point ``pacs = "pacs.verl_plugin.register"`` in group ``verl.plugins`` (pyproject.toml;
  loaded unless ``VERL_USE_EXTERNAL_PLUGINS=none``);
- ``VERL_USE_EXTERNAL_MODULES=pacs.verl_plugin.register``, the fallback for Ray runtime envs whose
  interpreter does not see the package's metadata (the launcher sets it in the Ray runtime env).
verl swallows exceptions raised while loading an entry point (logged at DEBUG), so the launcher
checks the registries itself before starting a run.

Any verl other than ``pacs.verl_plugin.SUPPORTED_VERL`` (0.9.1) registers nothing and logs one
warning (``VERSION_PROBLEM``): the plugin's private hooks may not exist there, and an error raised
here would break every ``import verl`` that goes through ``VERL_USE_EXTERNAL_MODULES``.

Registered names: advantage estimator ``pacs``, policy losses ``pacs`` and ``real``, trainer modes
``label_sync`` and ``plugin_sync`` (verl's sync trainer with the plugin's worker, for GRPO, PPO
and DAPO); for CPU runs (``pacs.verl_plugin.hf_rollout``) platform ``cpu``, verl's FSDP engine on
device ``cpu`` and rollout ``hf``.
"""

from __future__ import annotations

import logging

import verl  # during verl's own __init__: __version__ is already set when plugins load

from pacs.verl_plugin import verl_version_problem
from pacs.verl_plugin.advantage import ADV_ESTIMATOR_NAME

logger = logging.getLogger(__name__)

VERSION_PROBLEM = verl_version_problem(verl.__version__)
REGISTERED = False


def _register_all() -> None:
    # First: verl resolves its platform once, and the imports below already ask for it.
    from pacs.verl_plugin import cpu_platform

    cpu_platform.register()

    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, register_adv_est

    from pacs.verl_plugin import loss  # noqa: F401  (registers the "pacs" policy loss)
    from pacs.verl_plugin.advantage import compute_pacs_advantage

    # Registering twice with the same function is a no-op in verl; guard anyway so a re-executed
    # module (importlib.reload) does not trip verl's "already registered" check.
    if ADV_ESTIMATOR_REGISTRY.get(ADV_ESTIMATOR_NAME) is None:
        register_adv_est(ADV_ESTIMATOR_NAME)(compute_pacs_advantage)

    try:  # the HF rollout needs verl's rollout replicas (verl[verl-core]), like the trainer
        from pacs.verl_plugin import hf_rollout  # noqa: F401  (registers itself on import)
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        logger.warning("cpu platform / hf rollout not registered (%s)", exc)

    try:  # the trainer needs verl's v1 stack (TransferQueue: verl[verl-core]); loss workers do not
        from pacs.verl_plugin import trainer  # noqa: F401  (registers the "label_sync" trainer)
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        logger.warning("label_sync trainer not registered (%s); install verl[verl-core]", exc)


if VERSION_PROBLEM is None:
    # Ray's fixed 30 s node start-up wait becomes PACS_RAY_START_WAIT_S for the driver's ray.init
    from pacs.verl_plugin.cluster import ray_start

    ray_start.install()
    _register_all()
    REGISTERED = True
else:
    logger.warning(VERSION_PROBLEM)
