"""Every test here runs Snakemake on the workflow (a dry run builds the DAG in seconds to a
minute; the end-to-end ones run it): all are slow, `make test-fast` leaves them to `make test`."""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_collection_modifyitems(items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.slow)
