"""``python -m pacs.config CONFIG...``: check configs by hand (a bad key or value is named with
its file and key path)."""

from __future__ import annotations

import sys

import yaml

from pacs.config.load import load_profile
from pacs.config.sections import ConfigError


def main(argv: list[str] | None = None) -> int:
    """``python -m pacs.config CONFIG...``: validate configs; exit 2 on the first bad one."""
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print("usage: python -m pacs.config CONFIG [CONFIG...]", file=sys.stderr)
        return 2
    for path in paths:
        try:
            profile = load_profile(path)
        except (ConfigError, OSError, yaml.YAMLError) as err:
            print(err, file=sys.stderr)
            return 2
        jobs = len(profile.matrix.train_jobs)
        print(
            f"{path}: ok ({profile.engine} engine, {len(profile.runs)} runs, {jobs} training jobs)"
        )
    return 0
