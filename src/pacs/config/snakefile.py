"""What the Snakefile and its rules take from the config package besides the spec: nested
``--config`` overrides typed, the merged config written for the stages, and the environment of
compute jobs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from pacs.config.profile import plain_data
from pacs.io import atomic_open

# Set on compute jobs, whose inputs are all local files (README, "Paper scale").
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
_CLI_WORDS = {"true": True, "True": True, "false": False, "False": False, "null": None, "~": None}


def typed_cli_overrides(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Snakemake's ``--config`` values with their nested scalars typed.

    Snakemake types a top-level value (``--config seed=3`` gives 3) but reads a nested one with
    YAML's BaseLoader, so ``models={tiny: {sft: {steps: 151}}}`` arrives as the string ``'151'``,
    which the spec refuses. Each string is read here as Snakemake reads a top-level value: an
    int, else a float, else true/false/null, else the string itself."""
    return {key: _typed_cli_value(value) for key, value in overrides.items()}


def _typed_cli_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        return typed_cli_overrides(value)
    if isinstance(value, (list, tuple)):
        return [_typed_cli_value(v) for v in value]
    if not isinstance(value, str):
        return value
    for parse in (int, float):
        try:
            return parse(value)
        except ValueError:
            pass
    return _CLI_WORDS.get(value, value)


def write_snapshot(raw: Mapping[str, Any], path: str | Path, dry_run: bool = False) -> str:
    """Write the merged config the DAG runs with (profile file + ``--config`` overrides) for the
    stages' ``--config``: atomically, only when its content changes, never in a dry run (a
    ``-n`` with other settings must not change what running jobs read). Returns the path."""
    path = Path(path)
    text = yaml.safe_dump(plain_data(dict(raw)), sort_keys=False)
    if dry_run or (path.exists() and path.read_text() == text):
        return str(path)
    with atomic_open(path) as fh:
        fh.write(text)
    return str(path)
