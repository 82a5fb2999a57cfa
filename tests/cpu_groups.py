"""Every process a test file starts, billed to that file: one cpuacct cgroup per test file.

The rusage figures of tests/conftest.py count a test's process and the children it waited for;
they miss Ray's daemons, SLURM's job steps and anything else a test starts but does not reap, and
on this project that is most of a verl test's cost. Where this process may make groups in a cgroup
v1 ``cpuacct`` hierarchy (root, Linux), each xdist worker moves itself into a fresh group
``<its own group>/pacs-test-<pid>-<n>`` when it starts a file: everything started from then on is
born there and stays there, so the group's ``cpuacct.usage`` at the end of the run is what running
that file cost (a shared input it built for others included). Groups are made under the worker's
own group, so a measurement around the whole run still sees their time (v1 usage is
hierarchical). At the end the worker moves back, moves any process still running there to its own
group (counted as left over), and removes the groups.

Not on cgroup v2: moving the worker would change the group the sandbox's v2 memory and pids
groups are made under (pacs.rewards._cgroup); there the rusage table stands alone.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from pacs.rewards._cgroup import _inside, _mounts, _own_groups

PREFIX = "pacs-test"


def cpuacct_group(mountinfo: str, proc_cgroup: str) -> Path | None:
    """This process's group in a v1 hierarchy holding ``cpuacct``, or None (pure: fed text; the
    sandbox's own readers of mountinfo and /proc/self/cgroup)."""
    own = _own_groups(proc_cgroup).get("cpuacct")
    if own is None:
        return None
    for root, point, fstype, options in _mounts(mountinfo):
        if fstype == "cgroup" and "cpuacct" in options:
            folder = _inside(point, root, own)
            if folder is not None:
                return folder
    return None


def _move(pids: list[str], group: Path) -> None:
    for pid in pids:
        try:
            (group / "cgroup.procs").write_text(pid, encoding="ascii")
        except OSError:
            pass  # it exited meanwhile


def _procs(group: Path) -> list[str]:
    try:
        return (group / "cgroup.procs").read_text(encoding="ascii").split()
    except OSError:
        return []


@dataclass
class FileGroups:
    """One worker's groups: ``enter(path)`` at each new test file, ``finish()`` once at the end."""

    home: Path  # the worker's own group
    groups: dict[str, Path] = field(default_factory=dict)
    current: str | None = None
    _numbers: itertools.count = field(default_factory=itertools.count)

    @classmethod
    def here(cls) -> FileGroups | None:
        """This process's groups, or None where it cannot make them (not v1, not root)."""
        try:
            home = cpuacct_group(
                Path("/proc/self/mountinfo").read_text(), Path("/proc/self/cgroup").read_text()
            )
        except OSError:
            return None
        if home is None or not os.access(home, os.W_OK):
            return None
        groups = cls(home)
        groups.remove_stale()
        return groups

    def remove_stale(self) -> None:
        """Empty groups of an earlier run that was killed before it could remove them."""
        for group in self.home.glob(f"{PREFIX}-*"):
            owner = group.name.split("-")[2]
            if owner.isdigit() and not psutil.pid_exists(int(owner)):
                _move(_procs(group), self.home)
                try:
                    group.rmdir()
                except OSError:
                    pass

    def enter(self, path: str) -> None:
        """Run from now on (this process and what it starts) in ``path``'s group."""
        if path == self.current:
            return
        if path not in self.groups:
            group = self.home / f"{PREFIX}-{os.getpid()}-{next(self._numbers)}"
            try:
                group.mkdir()
            except OSError:
                return  # no group for this file: its time stays in the one before
            self.groups[path] = group
        _move([str(os.getpid())], self.groups[path])
        self.current = path

    def finish(self) -> dict[str, tuple[float, int]]:
        """File -> (CPU seconds of every process started while it ran, processes left running)."""
        _move([str(os.getpid())], self.home)
        self.current = None
        totals = {}
        for path, group in self.groups.items():
            left = _procs(group)
            _move(left, self.home)
            try:
                usage_ns = int((group / "cpuacct.usage").read_text(encoding="ascii"))
            except (OSError, ValueError):
                continue
            totals[path] = (usage_ns / 1e9, len(left))
            try:
                group.rmdir()
            except OSError:
                pass  # a process moved in again meanwhile; remove_stale takes it next time
        self.groups.clear()
        return totals
