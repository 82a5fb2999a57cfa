"""The run spec: a profile config (``configs/*.yaml``) as one validated, frozen object.

    YAML  ->  :func:`load_config` (a mapping, the file named on error)
          ->  :func:`parse_profile` (unknown keys, types, ranges and cross-field rules)
          ->  :class:`Profile` (frozen dataclasses: sections, runs with a method spec each)

Both engines, the Snakefile and the report read a :class:`Profile`; :class:`Matrix` is the one
experiment matrix (runs × seeds × models × checkpoints) that the DAG builds and the report expects.
Every default is stated once, as a field with a docstring saying where it comes from; the method
knobs live in :mod:`pacs.methods`. Adding a key is adding one field with its docstring.

A bad config fails at load, naming the file and the key path, with the nearest valid key for an
unknown one: ``configs/x.yaml: runs.pacs_beta2.betta: unknown key; did you mean 'beta'?``.
``python -m pacs.config CONFIG...`` checks configs by hand.

A run entry in ``runs:`` names a ``method`` and the knobs that differ from ``method_defaults``
(which in turn differ from the spec's defaults); the three are merged into the run's spec.

The package, one idea a module (import every name from ``pacs.config``):

- :mod:`.sections`: the spec class of each config section (models, data, train, eval, ...);
- :mod:`.profile`: :class:`Profile` and :class:`RunSpec`, and the rules that span sections;
- :mod:`.matrix`: :class:`Matrix`, the jobs of a profile;
- :mod:`.load`: :func:`load_config`, :func:`parse_profile` and the error messages;
- :mod:`.snakefile`: typed ``--config`` overrides, the config snapshot, the compute jobs' env;
- :mod:`.check`: ``python -m pacs.config``.
"""

from pacs.config.check import main
from pacs.config.load import load_config, load_profile, parse_profile
from pacs.config.matrix import BASE_RUN, RELEASED_RUN, TABLE1_BENCHMARKS, Matrix
from pacs.config.profile import (
    ABLATIONS,
    RUN_META_KEYS,
    TINY_TRAIN_KEYS,
    VERL_TRAIN_KEYS,
    Profile,
    RunSpec,
)
from pacs.config.sections import (
    ATTN_PACKAGES,
    LOGGING_BACKENDS,
    SIZE_CLASSES,
    SYNTHETIC_TASK_KEYS,
    VARLEN_ATTN,
    BuildSpec,
    ClaimsSpec,
    ConfigError,
    DataSpec,
    DateWindow,
    DiversitySpec,
    EvalSpec,
    EvalVllmSpec,
    HardSplitSpec,
    LoggingSpec,
    ModelSpec,
    Name,
    PromptSpec,
    ReleasedModelSpec,
    SeedsSpec,
    SftSpec,
    ShardSpec,
    StudySpec,
    SyntheticSpec,
    TrainSpec,
    VerlRolloutSpec,
    VerlSpec,
)
from pacs.config.snakefile import OFFLINE_ENV, typed_cli_overrides, write_snapshot

__all__ = [
    "ABLATIONS",
    "ATTN_PACKAGES",
    "BASE_RUN",
    "LOGGING_BACKENDS",
    "OFFLINE_ENV",
    "RELEASED_RUN",
    "RUN_META_KEYS",
    "SIZE_CLASSES",
    "SYNTHETIC_TASK_KEYS",
    "TABLE1_BENCHMARKS",
    "TINY_TRAIN_KEYS",
    "VARLEN_ATTN",
    "VERL_TRAIN_KEYS",
    "BuildSpec",
    "ClaimsSpec",
    "ConfigError",
    "DataSpec",
    "DateWindow",
    "DiversitySpec",
    "EvalSpec",
    "EvalVllmSpec",
    "HardSplitSpec",
    "LoggingSpec",
    "Matrix",
    "ModelSpec",
    "Name",
    "Profile",
    "PromptSpec",
    "ReleasedModelSpec",
    "RunSpec",
    "SeedsSpec",
    "SftSpec",
    "ShardSpec",
    "StudySpec",
    "SyntheticSpec",
    "TrainSpec",
    "VerlRolloutSpec",
    "VerlSpec",
    "load_config",
    "load_profile",
    "main",
    "parse_profile",
    "typed_cli_overrides",
    "write_snapshot",
]
