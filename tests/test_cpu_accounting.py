"""The per-file CPU table every test run prints (tests/conftest.py): a child's CPU is counted once
it is waited for, and each file's total is the sum of its tests' three phases."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

from .conftest import CPU_BY_FILE, CPU_PROPERTY, _cpu_s, pytest_runtest_logreport

BURN = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass"


def test_a_waited_for_child_counts_its_cpu():
    start = _cpu_s()
    subprocess.run([sys.executable, "-c", BURN], check=True)
    assert _cpu_s() - start >= 0.3


def _report(nodeid: str, when: str, *cpu: float) -> SimpleNamespace:
    props = [(CPU_PROPERTY, value) for value in cpu] + [("other", 9.0)]
    return SimpleNamespace(nodeid=nodeid, when=when, user_properties=props)


def test_a_files_total_sums_its_tests_teardown_reports(monkeypatch):
    path = "tests/no_such_dir/test_fake.py"
    monkeypatch.setitem(CPU_BY_FILE, path, 0.0)  # removed again after the test
    for report in (
        _report(f"{path}::a", "setup", 1.0),  # the teardown report repeats it
        _report(f"{path}::a", "call", 1.0, 2.0),
        _report(f"{path}::a", "teardown", 1.0, 2.0, 0.5),
        _report(f"{path}::b[x]", "teardown", 0.25, 0.25, 0.25),
    ):
        pytest_runtest_logreport(report)
    assert CPU_BY_FILE[path] == 3.5 + 0.75
