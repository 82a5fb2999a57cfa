"""The per-file CPU tables every test run prints (tests/conftest.py): a child's CPU is counted
once it is waited for, each file's total is the sum of its tests' three phases, and where cgroups
allow, a file's group counts every process it started (tests/cpu_groups.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from .conftest import (
    CPU_BY_FILE,
    CPU_PROPERTY,
    GROUP_CPU_BY_FILE,
    GROUPS_OUTPUT,
    _cpu_s,
    _write_cpu_table,
    pytest_runtest_logreport,
    pytest_testnodedown,
)
from .cpu_groups import FileGroups, cpuacct_group

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


# The cgroup table (tests/cpu_groups.py): a file's figure counts what its tests started and never
# waited for (Ray's daemons, SLURM's job steps), which the rusage figures above miss.
V1_SEPARATE = """\
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
V1_COMOUNTED = "33 31 0:30 /outer /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
V2_ONLY = "41 31 0:38 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n"


def test_the_cpuacct_group_is_found_from_mountinfo_and_proc_cgroup():
    assert cpuacct_group(V1_SEPARATE, "2:cpuacct:/ci\n1:cpu:/\n0::/") == Path(
        "/sys/fs/cgroup/cpuacct/ci"
    )
    assert cpuacct_group(V1_COMOUNTED, "4:cpu,cpuacct:/outer/job\n") == Path(
        "/sys/fs/cgroup/cpu,cpuacct/job"
    )
    assert cpuacct_group(V1_COMOUNTED, "4:cpu,cpuacct:/elsewhere\n") is None  # not under the mount
    assert cpuacct_group(V2_ONLY, "0::/user.slice\n") is None  # v2: the rusage table stands alone


UNREAPED = (
    "import os, time\n"
    "if os.fork() == 0:\n"  # the grandchild: nobody waits for it
    "    os.setsid()\n"
    "    end = time.process_time() + 0.4\n"
    "    while time.process_time() < end: pass\n"
    "    open({done!r}, 'w').close()\n"
    "    os._exit(0)\n"
)


def test_a_files_group_counts_what_it_never_waited_for_and_names_what_is_left(tmp_path):
    groups = FileGroups.here()
    if groups is None:
        pytest.skip("needs root and a cgroup v1 cpuacct hierarchy (tests/cpu_groups.py)")
    done = tmp_path / "done"
    groups.enter("tests/fake/test_a.py")
    start = _cpu_s()
    subprocess.run([sys.executable, "-c", UNREAPED.format(done=str(done))], check=True)
    deadline = time.monotonic() + 30
    while not done.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    rusage = _cpu_s() - start
    sleeper = subprocess.Popen(["sleep", "60"])  # still running when the groups are read
    try:
        totals = groups.finish()
        in_home = str(sleeper.pid) in (groups.home / "cgroup.procs").read_text().split()
    finally:
        sleeper.kill()
        sleeper.wait()
    cpu, left = totals["tests/fake/test_a.py"]
    assert done.exists() and rusage < 0.4 <= cpu  # the grandchild's 0.4 s: only the group saw it
    assert left == 1 and in_home  # the sleeper, moved out so the group could go
    assert not list(groups.home.glob(f"pacs-test-{os.getpid()}-*"))
    assert str(os.getpid()) in (groups.home / "cgroup.procs").read_text().split()


def test_one_files_groups_on_two_workers_are_summed(monkeypatch):
    path = "tests/no_such_dir/test_split.py"
    monkeypatch.setitem(GROUP_CPU_BY_FILE, path, (0.0, 0))  # removed again after the test
    for totals in ({path: (1.5, 0)}, {path: (2.0, 1)}, {}):
        pytest_testnodedown(SimpleNamespace(workeroutput={GROUPS_OUTPUT: totals}), None)
    assert GROUP_CPU_BY_FILE[path] == (3.5, 1)


def test_the_whole_table_is_written_with_what_was_left_running(tmp_path, monkeypatch):
    monkeypatch.setitem(GROUP_CPU_BY_FILE, "tests/x/test_b.py", (2.0, 3))
    out = tmp_path / "logs" / "cpu.tsv"
    _write_cpu_table(out, [("tests/x/test_b.py", 2.0), ("tests/x/test_a.py", 0.3)], "T")
    assert out.read_text().splitlines() == [
        "# T",
        "file\tcpu_s\tprocesses_left",
        "tests/x/test_b.py\t2.0\t3",
        "tests/x/test_a.py\t0.3\t0",
    ]
