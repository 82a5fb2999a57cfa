"""Every test here runs Snakemake on the workflow (a dry run builds the DAG in seconds to a
minute; the end-to-end ones run it): all are slow, `make test-fast` leaves them to `make test`."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

VENV_BIN = str(Path(sys.executable).parent)


def pytest_collection_modifyitems(items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.slow)


def _paper_dry_run(
    workflow: Path, targets: list[str], benchmarks: dict[str, int], *configfiles: str
) -> str:
    """`snakemake -n --profile slurm` of ``targets`` in ``workflow``, with placeholder prepared
    benchmark files of the given sizes (their problem counts set the shards); its stdout."""
    eval_dir = workflow / "results" / "paper" / "data" / "eval"
    eval_dir.mkdir(parents=True, exist_ok=True)
    for name, size in benchmarks.items():
        (eval_dir / f"{name}.jsonl").write_text(
            "".join(f'{{"problem_id": "{name}/{i}"}}\n' for i in range(size))
        )
    extra = ["--configfile", *configfiles] if configfiles else []
    env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}", "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--profile", "slurm", *extra, "--", *targets],
        cwd=workflow, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


@pytest.fixture(scope="session")
def paper_dry_run() -> Callable[..., str]:
    """:func:`_paper_dry_run`: ``paper_dry_run(workflow, targets, benchmarks, *configfiles)``."""
    return _paper_dry_run
