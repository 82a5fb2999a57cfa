"""A memory and a pids cgroup per sandboxed test, cgroup v1 or v2, wherever the kernel offers them.

RLIMIT_AS bounds one process's address space; it does not see memfd pages, SysV or tmpfs pages,
socket and pipe buffers, nor the sum over a program's processes. A memory cgroup charges all of
these to the test, and a pids cgroup bounds its tasks (threads included) per sandbox rather than
per uid. Each test gets its own group, made here by the parent, joined by the sandbox's outer
process before it forks anything, killed and removed by the parent when the test ends.

Discovery, per controller: a v1 hierarchy mounted with it (``/sys/fs/cgroup/memory``), else the
v2 hierarchy if its ``cgroup.controllers`` lists it. Groups are made under this process's own
group (v1: in a ``pacs-sandbox`` folder there; v2: in ``$PACS_SANDBOX_CGROUP`` when set, a
delegated group holding no process, else in this process's own group, with the controllers
enabled in its ``cgroup.subtree_control``). Where that fails (no such controller, no permission:
a grader that is not root without a delegated group), the controller is missing, and
:func:`hierarchies` says why; the sandbox then runs with tighter rules instead (see
``_sandbox_harness.py``) and every result says so. Groups that an earlier, killed grader left
behind are removed when this process first looks (empty ones whose creator is gone).
"""

from __future__ import annotations

import errno
import itertools
import os
import signal
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

CONTROLLERS = ("memory", "pids")
BASE_ENV = "PACS_SANDBOX_CGROUP"
PREFIX = "pacs-sandbox"
# How long to keep killing and removing a group whose processes are still exiting.
REMOVE_S = 2.0
_COUNTER = itertools.count()


@dataclass(frozen=True)
class Hierarchy:
    """Where the groups of one controller are made: ``base/<name>`` (cgroup ``version`` 1 or 2)."""

    controller: str
    version: int
    base: Path


def _mounts(mountinfo: str) -> list[tuple[str, str, str, set[str]]]:
    """(root, mount point, fstype, super options) of each cgroup mount in /proc/self/mountinfo."""
    mounts = []
    for line in mountinfo.splitlines():
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            mounts.append((fields[3], fields[4], tail[0], set(tail[2].split(","))))
    return mounts


def _own_groups(proc_cgroup: str) -> dict[str, str]:
    """Controller (or "" for v2) -> this process's group path, from /proc/self/cgroup."""
    groups = {}
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for name in parts[1].split(",") if parts[1] else [""]:
                groups[name] = parts[2]
    return groups


def _inside(mount_point: str, mount_root: str, group: str) -> Path | None:
    if group != mount_root and not group.startswith(mount_root.rstrip("/") + "/"):
        return None  # our group is outside what this mount shows
    return Path(mount_point + "/" + group[len(mount_root) :].lstrip("/")).resolve()


def discover(mountinfo: str, proc_cgroup: str, v2_base: str | None = None) -> dict:
    """Controller -> Hierarchy or a str saying why it is missing (pure: tests feed it text)."""
    mounts, own = _mounts(mountinfo), _own_groups(proc_cgroup)
    found: dict[str, Hierarchy | str] = {}
    for controller in CONTROLLERS:
        for root, point, fstype, options in mounts:
            if fstype == "cgroup" and controller in options and controller in own:
                folder = _inside(point, root, own[controller])
                if folder is not None:
                    found[controller] = Hierarchy(controller, 1, folder / PREFIX)
        if controller in found:
            continue
        v2 = next((m for m in mounts if m[2] == "cgroup2"), None)
        folder = _inside(v2[1], v2[0], own.get("", "/")) if v2 and "" in own else None
        base = Path(v2_base) if v2_base else folder
        offered = _read(Path(v2[1]) / "cgroup.controllers").split() if v2 else []
        if base is not None and controller in offered:
            found[controller] = Hierarchy(controller, 2, base)
        else:
            found[controller] = f"no cgroup hierarchy offers the {controller} controller"
    return found


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii")
    except OSError:
        return ""


def _prepare(hierarchy: Hierarchy) -> str | None:
    """Make the base usable; None, or why it is not."""
    try:
        hierarchy.base.mkdir(exist_ok=True)
        if not os.access(hierarchy.base, os.W_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        if hierarchy.version == 2:
            control = hierarchy.base / "cgroup.subtree_control"
            if hierarchy.controller not in _read(control).split():
                control.write_text(f"+{hierarchy.controller}", encoding="ascii")
    except OSError as exc:
        return f"cannot use {hierarchy.base} for the {hierarchy.controller} cgroup: {exc.strerror}"
    _remove_stale(hierarchy.base)
    return None


def _remove_stale(base: Path) -> None:
    """Empty groups of graders that are gone (killed before they could remove them)."""
    for group in base.glob(f"{PREFIX}-*"):
        owner = group.name.split("-")[2]
        if owner.isdigit() and int(owner) != os.getpid() and not _alive(int(owner)):
            try:
                group.rmdir()
            except OSError:
                pass  # still holds processes (or belongs to a grader in another PID namespace)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@lru_cache(maxsize=1)
def hierarchies() -> dict:
    """This machine's usable controllers: controller -> Hierarchy, or a str saying why not."""
    mountinfo, own = _read(Path("/proc/self/mountinfo")), _read(Path("/proc/self/cgroup"))
    found = discover(mountinfo, own, os.environ.get(BASE_ENV))
    for controller, hierarchy in found.items():
        if isinstance(hierarchy, Hierarchy):
            problem = _prepare(hierarchy)
            found[controller] = problem if problem else hierarchy
    return found


@dataclass
class TestCgroups:
    """The groups of one test. ``missing``: controller -> why it has no group."""

    folders: dict[str, tuple[int, Path]] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.missing

    def procs_files(self) -> list[str]:
        """The files the sandbox's outer process writes its pid to (one per distinct group)."""
        return sorted({str(folder / "cgroup.procs") for _, folder in self.folders.values()})

    def oom_kills(self) -> int:
        """How many processes the kernel killed for the memory limit."""
        if "memory" not in self.folders:
            return 0
        version, folder = self.folders["memory"]
        text = _read(folder / ("memory.oom_control" if version == 1 else "memory.events"))
        counts = dict(line.split()[:2] for line in text.splitlines() if len(line.split()) >= 2)
        return int(counts.get("oom_kill", "0"))

    def remove(self) -> None:
        """SIGKILL whatever is left in the groups, then remove them (retrying while they empty)."""
        deadline = time.monotonic() + REMOVE_S
        for folder in {folder for _, folder in self.folders.values()}:
            while True:
                _kill_members(folder)
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break  # a later grader's _remove_stale takes it
                    time.sleep(0.005)


def _kill_members(folder: Path) -> None:
    for pid in _read(folder / "cgroup.procs").split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def create(memory_bytes: int, pids_max: int) -> TestCgroups:
    """Groups for one test with these limits; a controller that cannot have one is ``missing``."""
    groups = TestCgroups()
    name = f"{PREFIX}-{os.getpid()}-{next(_COUNTER)}-{os.urandom(3).hex()}"
    for controller, hierarchy in hierarchies().items():
        if isinstance(hierarchy, str):
            groups.missing[controller] = hierarchy
            continue
        folder = hierarchy.base / name
        try:
            folder.mkdir(exist_ok=True)  # v2: memory and pids share the folder
            _set_limit(hierarchy, folder, memory_bytes, pids_max)
        except OSError as exc:
            groups.missing[controller] = (
                f"cannot set up a group in {hierarchy.base}: {exc.strerror}"
            )
            continue
        groups.folders[controller] = (hierarchy.version, folder)
    return groups


def _set_limit(hierarchy: Hierarchy, folder: Path, memory_bytes: int, pids_max: int) -> None:
    if hierarchy.controller == "pids":
        (folder / "pids.max").write_text(str(pids_max), encoding="ascii")
        return
    if hierarchy.version == 1:
        (folder / "memory.limit_in_bytes").write_text(str(memory_bytes), encoding="ascii")
        swap = folder / "memory.memsw.limit_in_bytes"  # absent without swap accounting
    else:
        (folder / "memory.max").write_text(str(memory_bytes), encoding="ascii")
        swap = folder / "memory.swap.max"
    if swap.exists():
        swap.write_text(str(memory_bytes) if hierarchy.version == 1 else "0", encoding="ascii")
