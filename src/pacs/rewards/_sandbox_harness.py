"""Runs ONE test of an untrusted program.

``python -I -S _sandbox_harness.py CONFIG REPORT_FD RESULT_FD``, stdlib only, no imports from
``pacs`` (``-I`` keeps this script's folder off ``sys.path``, ``-S`` every site-packages). The
parent (:mod:`pacs.rewards.code`) has made this process a session leader whose working directory
is an empty folder (the mount point of the sandbox's root), with a scrubbed environment, stdin on
a pipe, stdout/stderr on files, and two files that only the outer process and init ever hold:
REPORT_FD (JSON lines: the layers once the program is ready to run, then how it ended) and
RESULT_FD (the bytes of a functional test's return value). Three processes run:

- the *outer* process (this one, in the machine's PID namespace) joins the test's cgroups (memory
  and pids, made by the parent where the kernel offers them), reads the config and the program,
  moves into new mount, PID, network, IPC, UTS and cgroup namespaces, builds the sandbox's root
  (below) and forks *init*; it exits when init has;
- *init* (PID 1 of the new PID namespace, still root) mounts a /proc that shows only the program's
  own processes, pivots into the new root, forks the program and waits for it. The program
  talks to init over one pipe: "ready" once its privileges are gone (trusted: no program code
  has run yet), then at the end a record that init accepts only if it carries the key init
  handed out for this run (see ``_finish``). Init writes the layers, the program's wait status
  and the accepted record on REPORT_FD/RESULT_FD (which the program never holds) and exits, and
  with it the kernel SIGKILLs every process left in the namespace: a forked, sleeping or
  ``setsid`` child never outlives its program. Init dies with the outer process (parent-death
  signal), which the parent kills at its wall-clock limit;
- the *program* (PID 2) drops every capability, the bounding set included, becomes a uid of its
  own (``SANDBOX_UID_BASE`` + the outer pid: unique while the sandbox lives, so RLIMIT_NPROC
  concerns this sandbox alone; ``kill(-1, 9)`` reaches its own namespace only), sets
  ``no_new_privs`` and rlimits (address space, CPU seconds, file size, tasks, open files, POSIX
  message queues, no core files), installs a seccomp filter (no new namespaces of any kind, so
  no nested user namespace regains capabilities; no SysV IPC, keyrings, io_uring, BPF,
  userfaultfd, ptrace; without the parent's cgroups also no child processes and no memfd, so
  RLIMIT_AS bounds all the memory the program can hold), installs a Python-level guard like
  LiveCodeBench's ``reliability_guard`` (spawning, signalling, sockets and writes outside /work
  raise PermissionError; ctypes can bypass it, the kernel layers
  hold), arms a SIGALRM at the time limit and runs the program.

The root is one tmpfs of ``scratch_mb`` MB (nosuid, nodev) holding read-only binds of /usr (and
/bin, /lib... or their symlinks), of the interpreter's prefix, of /etc/ld.so.cache and
/etc/localtime, the devices null, zero, full, random and urandom, and three writable folders:
/work (the program's working directory, its uid's alone), /tmp and /dev/shm. Nothing else of the
machine is visible: no tests, no other sandbox, no /home, /etc/shadow, /sys, nothing of /root but
the interpreter's prefix when it lives there. Whatever the program writes (/work, /tmp, /dev/shm)
counts against the one tmpfs limit and is gone when the namespace ends.
There is no network at all (only a down loopback device).

Started by a user other than root, the harness runs *rootless*: the same namespaces inside a new
user namespace where that user is uid 0 (the only uid mapped), so there is no private uid: the
program runs as the grading user, with no capabilities, and RLIMIT_NPROC counts the tasks of its
user namespace (Linux >= 5.14 counts per user namespace). Everything else is as above; the status
layers the parent reports say which mode ran. Where the kernel refuses a layer (no user
namespaces, no CAP_SYS_ADMIN, a /proc it will not mount), the harness fails and says why.
"""

# Everything the guard patches is imported before the address-space limit is set.
import _io
import _posixsubprocess
import _socket
import builtins
import contextlib
import ctypes
import errno
import io
import json
import os
import posix
import pty
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWCGROUP = 0x02000000
CLONE_THREAD = 0x00010000
NAMESPACE_FLAGS = (
    CLONE_NEWNS
    | CLONE_NEWUTS
    | CLONE_NEWIPC
    | CLONE_NEWPID
    | CLONE_NEWNET
    | CLONE_NEWUSER
    | CLONE_NEWCGROUP
)
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
LINUX_CAPABILITY_VERSION_3 = 0x20080522
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
# Far above any uid a real account uses; plus the outer pid (at most 2**22).
SANDBOX_UID_BASE = 1 << 30
WORKDIR = "/work"
ROOT_BINDS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
ETC_FILES = ("ld.so.cache", "localtime")
DEVICES = ("null", "zero", "full", "random", "urandom")
DEV_LINKS = {"fd": "/proc/self/fd", "stdin": "0", "stdout": "1", "stderr": "2"}
PROGRAM_ENV = {"HOME": WORKDIR, "TMPDIR": "/tmp"}
# LiveCodeBench prepends this to every program (lcb_runner/evaluation/testing_util.py).
LCB_IMPORTS = (
    "from string import *\nfrom re import *\nfrom datetime import *\nfrom collections import *\n"
    "from heapq import *\nfrom bisect import *\nfrom copy import *\nfrom math import *\n"
    "from random import *\nfrom statistics import *\nfrom itertools import *\n"
    "from functools import *\nfrom operator import *\nfrom io import *\nfrom sys import *\n"
    "from json import *\nfrom builtins import *\nfrom typing import *\nimport string\nimport re\n"
    "import datetime\nimport collections\nimport heapq\nimport bisect\nimport copy\nimport math\n"
    "import random\nimport statistics\nimport itertools\nimport functools\nimport operator\n"
    "import io\nimport sys\nimport json\nsys.setrecursionlimit(50000)\n"
)

# The program process's ends of its pipes to init: (channel to write on, key to read at the end).
_CHANNEL = (-1, -1)
# The longest first line init waits for (b"ready" or a setup error).
FIRST_LINE_LIMIT = 4096


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_line(fd: int, fields: dict) -> None:
    _write_all(fd, json.dumps(fields).encode() + b"\n")


# ----------------------------------------------------------------------------- kernel layers


def _libc():
    # The interpreter's own symbols include libc's; find_library("c") would spawn ldconfig.
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what} failed: {os.strerror(err)}")


def _path(text):
    return None if text is None else os.fsencode(text)


def _mount(libc, source, target, fstype, flags, data=None) -> None:
    result = libc.mount(_path(source), _path(target), _path(fstype), flags, _path(data))
    _check(result, f"mount({source}, {target}, {fstype})")


def enter_namespaces(libc, rootless: bool) -> None:
    """New mount, PID (for the children), network, IPC, UTS and cgroup namespaces; mounts stay
    private. Rootless, inside a new user namespace too, where this user becomes uid 0 (and gid 0).
    """
    flags = (
        CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP
    )
    if not rootless:
        _check(libc.unshare(flags), "unshare(mount, pid, net, ipc, uts, cgroup namespaces)")
    else:
        uid, gid = os.geteuid(), os.getegid()
        _check(
            libc.unshare(CLONE_NEWUSER | flags), "unshare(user, mount, pid, net, ipc, uts, cgroup)"
        )
        maps = {"setgroups": "deny", "uid_map": f"0 {uid} 1", "gid_map": f"0 {gid} 1"}
        for name, text in maps.items():
            with open(f"/proc/self/{name}", "w", encoding="ascii") as f:
                f.write(text)
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)  # nothing propagates back to the machine


# What a remount must keep (in a user namespace the kernel locks them): statvfs bit -> mount flag.
_KEPT_FLAGS = {
    os.ST_NOEXEC: MS_NOEXEC,
    os.ST_NOATIME: 1024,  # MS_NOATIME
    os.ST_NODIRATIME: 2048,  # MS_NODIRATIME
    os.ST_RELATIME: 1 << 21,  # MS_RELATIME
}


def _remount(libc, source: str, target: str, flags: int) -> None:
    have = os.statvfs(source).f_flag
    flags |= sum(ms for st, ms in _KEPT_FLAGS.items() if have & st)
    _mount(libc, None, target, None, MS_BIND | MS_REMOUNT | flags)


def _bind_read_only(libc, source: str, target: str) -> None:
    _mount(libc, source, target, None, MS_BIND)
    _remount(libc, source, target, MS_RDONLY | MS_NOSUID | MS_NODEV)


def _bind_file(libc, source: str, target: str, read_only: bool) -> None:
    with open(target, "w"):
        pass  # a bind mount needs an existing file to cover
    if read_only:
        _bind_read_only(libc, source, target)
    else:  # a device: writable, but nothing on it can be set-uid or executed
        _mount(libc, source, target, None, MS_BIND)
        _remount(libc, source, target, MS_NOSUID | MS_NOEXEC)


def _interpreter_prefixes() -> list[str]:
    """Where this interpreter's stdlib and extension modules live, outside /usr."""
    prefixes = {os.path.realpath(p) for p in (sys.base_prefix, sys.base_exec_prefix)}
    return sorted(p for p in prefixes if p != "/usr" and not p.startswith("/usr/"))


def build_root(libc, root: str, cfg: dict, uid: int) -> None:
    """The sandbox's whole filesystem: one size-limited tmpfs and read-only binds (see top)."""
    tmpfs = f"size={cfg['scratch_mb']}m,nr_inodes={cfg['scratch_inodes']},mode=755"
    _mount(libc, "pacs-sandbox", root, "tmpfs", MS_NOSUID | MS_NODEV, tmpfs)
    for name in ROOT_BINDS:
        host, inside = "/" + name, os.path.join(root, name)
        if os.path.islink(host):  # merged /usr: /lib -> usr/lib
            os.symlink(os.readlink(host), inside)
        elif os.path.isdir(host):
            os.mkdir(inside)
            _bind_read_only(libc, host, inside)
    for prefix in _interpreter_prefixes():
        inside = root + prefix
        os.makedirs(inside, mode=0o755)
        _bind_read_only(libc, prefix, inside)
    os.mkdir(os.path.join(root, "etc"))
    for name in ETC_FILES:
        host = os.path.realpath(os.path.join("/etc", name))
        if os.path.isfile(host):
            _bind_file(libc, host, os.path.join(root, "etc", name), read_only=True)
    os.mkdir(os.path.join(root, "proc"))
    os.mkdir(os.path.join(root, "dev"))
    for name in DEVICES:
        _bind_file(libc, f"/dev/{name}", os.path.join(root, "dev", name), read_only=False)
    for name, target in DEV_LINKS.items():
        os.symlink(target if name == "fd" else f"/proc/self/fd/{target}", f"{root}/dev/{name}")
    for folder in ("tmp", "dev/shm"):
        os.mkdir(os.path.join(root, folder))
        os.chmod(os.path.join(root, folder), 0o1777)
    work = root + WORKDIR
    os.mkdir(work, mode=0o700)
    os.chown(work, uid, uid)


def enter_root(libc, root: str) -> None:
    """(init) Mount /proc for the new PID namespace, pivot into ``root``, detach the old root."""
    # hidepid=2: the program (another uid, unless rootless) does not even see init.
    _mount(libc, "proc", f"{root}/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2")
    machine = os.uname().machine
    number = SYS_PIVOT_ROOT.get(machine)
    if number is None:
        raise OSError(f"no pivot_root syscall number known for {machine}")
    os.chdir(root)
    os.mkdir(".old_root")
    _check(libc.syscall(number, b".", b".old_root"), "pivot_root")
    os.chdir("/")
    _check(libc.umount2(b"/.old_root", MNT_DETACH), "umount2(old root)")
    os.rmdir("/.old_root")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_privileges(libc, uid: int, last_cap: int, rootless: bool) -> None:
    """(program) Empty every capability set, the bounding set included; become ``uid``."""
    for cap in range(last_cap + 1):
        _check(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"prctl(PR_CAPBSET_DROP, {cap})")
    _check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clearing ambient caps")
    if not rootless:  # a user namespace denies setgroups, and its one gid has no groups
        os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)  # root -> uid without PR_SET_KEEPCAPS empties permitted/effective
    header, data = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    _check(libc.capset(ctypes.byref(header), data), "capset(no capabilities)")
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    _verify_no_privileges(uid)


def _verify_no_privileges(uid: int) -> None:
    with open("/proc/self/status", encoding="utf-8") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    left = {
        name: fields[name].strip()
        for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
        if int(fields[name], 16) != 0
    }
    if left or fields["NoNewPrivs"].strip() != "1" or os.getresuid() != (uid,) * 3:
        raise OSError(f"privileges left after dropping them: {left}, uid {os.getresuid()}")


def set_limits(cfg: dict) -> None:
    mib = 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (cfg["memory_mb"] * mib,) * 2)
    resource.setrlimit(resource.RLIMIT_CPU, (cfg["cpu_s"], cfg["cpu_s"] + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (cfg["fsize_mb"] * mib,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (cfg["nproc"],) * 2)
    # Sockets and pipes hold kernel buffers outside the address space: bound how many.
    resource.setrlimit(resource.RLIMIT_NOFILE, (cfg["nofile"],) * 2)
    resource.setrlimit(resource.RLIMIT_MSGQUEUE, (0, 0))
    # Python ignores SIGXFSZ (writes then fail with EFBIG); the default kills at the file limit,
    # which the parent reports as output that was too large.
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)


# ----------------------------------------------------------------------------- seccomp

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
SYSCALLS = {
    "x86_64": {
        "clone": 56, "fork": 57, "vfork": 58, "clone3": 435, "unshare": 272, "setns": 308,
        "memfd_create": 319, "memfd_secret": 447, "shmget": 29, "msgget": 68, "semget": 64,
        "mq_open": 240, "keyctl": 250, "add_key": 248, "request_key": 249, "userfaultfd": 323,
        "perf_event_open": 298, "bpf": 321, "io_uring_setup": 425, "ptrace": 101,
        "process_vm_readv": 310, "process_vm_writev": 311,
    },
    "aarch64": {
        "clone": 220, "clone3": 435, "unshare": 97, "setns": 268, "memfd_create": 279,
        "memfd_secret": 447, "shmget": 194, "msgget": 186, "semget": 190, "mq_open": 180,
        "keyctl": 219, "add_key": 217, "request_key": 218, "userfaultfd": 282,
        "perf_event_open": 241, "bpf": 280, "io_uring_setup": 425, "ptrace": 117,
        "process_vm_readv": 270, "process_vm_writev": 271,
    },
}  # fmt: skip
# No program needs these; each holds memory or kernel state outside every other limit, or is
# the usual first step of a kernel exploit (a user namespace gives back every capability).
ALWAYS_DENIED = (
    "unshare", "setns", "shmget", "msgget", "semget", "mq_open", "keyctl", "add_key",
    "request_key", "userfaultfd", "perf_event_open", "bpf", "io_uring_setup", "ptrace",
    "process_vm_readv", "process_vm_writev", "memfd_secret",
)  # fmt: skip
# Without a memory and a pids cgroup only RLIMIT_AS bounds memory, which is per process and does
# not see memfd pages: then the program gets no child process and no memfd.
DENIED_WITHOUT_CGROUP = ("fork", "vfork", "memfd_create")
X32_SYSCALL_BIT = 0x40000000
_BPF_LD_W_ABS, _BPF_JEQ, _BPF_JGE, _BPF_JSET, _BPF_RET = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW, _RET_KILL, _RET_ERRNO = 0x7FFF0000, 0x80000000, 0x00050000


class _SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def seccomp_program(machine: str, processes_allowed: bool) -> list[tuple[int, int, int, int]]:
    """The BPF filter as (code, jump if true, jump if false, k) instructions.

    Denied calls fail with EPERM; clone3 with ENOSYS (its flags sit in memory a filter cannot
    read; glibc then falls back to clone); clone with any namespace flag, or without
    CLONE_THREAD when processes are not allowed, with EPERM. Another architecture is killed.
    """
    numbers, eperm = SYSCALLS[machine], _RET_ERRNO | errno.EPERM
    program = [(_BPF_LD_W_ABS, 0, 0, 4), (_BPF_JEQ, 1, 0, AUDIT_ARCH[machine])]
    program += [(_BPF_RET, 0, 0, _RET_KILL), (_BPF_LD_W_ABS, 0, 0, 0)]  # 4: arch, 0: number
    if machine == "x86_64":  # the x32 ABI's numbers would slip past the ones below
        program += [(_BPF_JGE, 0, 1, X32_SYSCALL_BIT), (_BPF_RET, 0, 0, eperm)]
    denied = ALWAYS_DENIED + (() if processes_allowed else DENIED_WITHOUT_CGROUP)
    for name in (n for n in denied if n in numbers):
        program += [(_BPF_JEQ, 0, 1, numbers[name]), (_BPF_RET, 0, 0, eperm)]
    program += [(_BPF_JEQ, 0, 1, numbers["clone3"]), (_BPF_RET, 0, 0, _RET_ERRNO | errno.ENOSYS)]
    # clone's flags (argument 0, offset 16): loaded last, as the load replaces the number.
    clone = [(_BPF_LD_W_ABS, 0, 0, 16), (_BPF_JSET, 0, 1, NAMESPACE_FLAGS), (_BPF_RET, 0, 0, eperm)]
    if not processes_allowed:
        clone += [(_BPF_JSET, 1, 0, CLONE_THREAD), (_BPF_RET, 0, 0, eperm)]
    clone += [(_BPF_RET, 0, 0, _RET_ALLOW)]
    program += [(_BPF_JEQ, 0, len(clone), numbers["clone"]), *clone, (_BPF_RET, 0, 0, _RET_ALLOW)]
    return program


def install_seccomp(libc, processes_allowed: bool) -> None:
    """(program, after no_new_privs) Load the filter; it holds for every later thread and child."""
    machine = os.uname().machine
    if machine not in SYSCALLS:
        raise OSError(f"no seccomp filter for {machine}")
    program = seccomp_program(machine, processes_allowed)
    instructions = (_SockFilter * len(program))(*(_SockFilter(*ins) for ins in program))
    fprog = _SockFprog(len(program), instructions)
    result = libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0)
    _check(result, "prctl(PR_SET_SECCOMP)")


# ----------------------------------------------------------------------------- Python guard


def _deny(name):
    def denied(*args, **kwargs):
        raise PermissionError(f"{name} is disabled in the sandbox")

    denied.__name__ = name
    return denied


_SPAWN_AND_SIGNAL = (
    "system",
    "popen",
    "fork",
    "forkpty",
    "vfork",
    "execv",
    "execve",
    "execl",
    "execle",
    "execlp",
    "execlpe",
    "execvp",
    "execvpe",
    "spawnv",
    "spawnve",
    "spawnl",
    "spawnle",
    "spawnlp",
    "spawnlpe",
    "spawnvp",
    "spawnvpe",
    "posix_spawn",
    "posix_spawnp",
    "kill",
    "killpg",
    "setsid",
    "setpgid",
    "setpgrp",
    "setuid",
    "setgid",
    "seteuid",
    "setegid",
    "setreuid",
    "setregid",
    "plock",
    "fchdir",
    "chroot",
)
_PATH_MUTATORS = {
    # name: positions of path arguments
    "remove": (0,),
    "unlink": (0,),
    "rmdir": (0,),
    "removedirs": (0,),
    "mkdir": (0,),
    "makedirs": (0,),
    "rename": (0, 1),
    "renames": (0, 1),
    "replace": (0, 1),
    "link": (0, 1),
    "symlink": (1,),
    "chmod": (0,),
    "lchmod": (0,),
    "chown": (0,),
    "lchown": (0,),
    "truncate": (0,),
    "utime": (0,),
    "mkfifo": (0,),
    "mknod": (0,),
    "setxattr": (0,),
    "removexattr": (0,),
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _inside(path, workdir: str) -> bool:
    if isinstance(path, int):  # an fd the program already holds
        return True
    real = os.path.realpath(os.fsdecode(path))
    return real == "/dev/null" or real == workdir or real.startswith(workdir + os.sep)


def install_guard(workdir: str) -> None:
    for name in _SPAWN_AND_SIGNAL:
        for module in (os, posix):
            if hasattr(module, name):
                setattr(module, name, _deny(f"os.{name}"))
    _posixsubprocess.fork_exec = _deny("subprocess")
    subprocess.Popen = _deny("subprocess.Popen")
    pty.fork = _deny("pty.fork")

    for name, positions in _PATH_MUTATORS.items():
        for module in (os, posix):
            if hasattr(module, name):
                setattr(
                    module,
                    name,
                    _guard_paths(getattr(module, name), f"os.{name}", positions, workdir),
                )
    shutil.rmtree = _guard_paths(shutil.rmtree, "shutil.rmtree", (0,), workdir)

    real_open = builtins.open
    real_os_open = os.open

    def guarded_open(file, mode="r", *args, **kwargs):
        if any(c in mode for c in "wax+") and not _inside(file, workdir):
            raise PermissionError(f"writing {file!r} outside the sandbox directory is not allowed")
        return real_open(file, mode, *args, **kwargs)

    def guarded_os_open(path, flags, *args, **kwargs):
        if (flags & _WRITE_FLAGS or kwargs.get("dir_fd") is not None) and not _inside(
            path, workdir
        ):
            raise PermissionError(f"writing {path!r} outside the sandbox directory is not allowed")
        return real_os_open(path, flags, *args, **kwargs)

    class GuardedFileIO(_io.FileIO):
        def __init__(self, file, mode="r", *args, **kwargs):
            if any(c in mode for c in "wax+") and not _inside(file, workdir):
                raise PermissionError(
                    f"writing {file!r} outside the sandbox directory is not allowed"
                )
            super().__init__(file, mode, *args, **kwargs)

    builtins.open = io.open = _io.open = guarded_open
    io.FileIO = _io.FileIO = GuardedFileIO
    os.open = posix.open = guarded_os_open

    class NoSocket:
        def __init__(self, *args, **kwargs):
            raise PermissionError("network access is disabled in the sandbox")

    socket.socket = socket.SocketType = _socket.socket = _socket.SocketType = NoSocket
    socket.socketpair = _socket.socketpair = _deny("socket.socketpair")
    socket.fromfd = _deny("socket.fromfd")


def _guard_paths(func, name, positions, workdir):
    def guarded(*args, **kwargs):
        if kwargs.get("dir_fd") is not None or kwargs.get("src_dir_fd") is not None:
            raise PermissionError(f"{name} with dir_fd is disabled in the sandbox")
        for pos in positions:
            if pos < len(args) and not _inside(args[pos], workdir):
                raise PermissionError(
                    f"{name}({args[pos]!r}) outside the sandbox directory is not allowed"
                )
        return func(*args, **kwargs)

    guarded.__name__ = name
    return guarded


# ----------------------------------------------------------------------------- running


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


def run_program(cfg: dict, source: str) -> None:
    # The interpreter runs with -S: provide the exit() and quit() the site module would add.
    builtins.exit = builtins.quit = sys.exit
    mode = cfg["mode"]
    namespace = {
        "__name__": "__main__" if mode == "stdin" else "solution",
        "__builtins__": builtins,
    }
    signal.setitimer(signal.ITIMER_REAL, cfg["timeout_s"])  # SIG_DFL: the process dies
    try:
        exec(compile(LCB_IMPORTS + source, "solution.py", "exec"), namespace)  # noqa: S102 - the point
        if mode == "functional":
            value = _call(namespace, source, cfg)
    except SystemExit:
        # LiveCodeBench ignores SystemExit (exit() after printing is common); a functional
        # program that exits has returned nothing.
        if mode == "functional":
            return _finish(status="runtime_error", error="SystemExit before returning")
        return _finish(status="done")
    except MemoryError as exc:
        return _finish(status="memory_error", error=_error_text(exc))
    except BaseException as exc:  # noqa: BLE001 - any failure of the program is its runtime error
        return _finish(status="runtime_error", error=_error_text(exc))
    if mode == "stdin":
        return _finish(status="done")
    return _finish_with(value)


def _finish_with(value) -> None:
    """Report a functional test's return value as JSON (compared in the parent)."""
    signal.setitimer(signal.ITIMER_REAL, 0)
    if hasattr(sys, "set_int_max_str_digits"):  # LiveCodeBench compares in-process: no limit
        sys.set_int_max_str_digits(0)
    try:
        result = json.dumps(list(value) if isinstance(value, tuple) else value).encode()
    except (TypeError, ValueError, RecursionError, MemoryError) as exc:
        return _finish(status="unserializable", error=_error_text(exc))
    return _finish(status="done", result=result)


def _call(namespace: dict, source: str, cfg: dict):
    fn_name = cfg["fn_name"]
    # LiveCodeBench's rule: LeetCode programs define class Solution; call its method.
    owner = namespace["Solution"]() if "class Solution" in source else None
    if owner is not None:
        method = getattr(owner, fn_name)
    elif fn_name in namespace:
        method = namespace[fn_name]
    else:
        raise NameError(f"the program defines no function {fn_name!r}")
    return method(*cfg["args"])


def _finish(result: bytes = b"", **fields) -> None:
    """Send init the final record: this run's key, a JSON header, the result bytes; exit 0.

    The key comes from init only now, after the program's code has run, so a program that writes
    a record of its own on the channel (its fd is no secret) cannot make init accept it. A
    program that reads the key pipe itself takes the key from the harness, whose record then
    fails (it runs in this very process: a secret here is never out of its reach).
    """
    signal.setitimer(signal.ITIMER_REAL, 0)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a program may have closed or replaced them
            stream.flush()
    channel_w, key_r = _CHANNEL
    with contextlib.suppress(OSError):
        key = os.read(key_r, 64)
        header = json.dumps({**fields, "result_bytes": len(result)}).encode()
        _write_all(channel_w, key + b"\n" + header + b"\n" + result)
    # Skip atexit handlers and non-daemon threads the program may have left behind.
    os._exit(0)


def _fail(report_fd: int, exc: BaseException) -> None:
    """Tell the parent the sandbox, not the program, failed; never returns."""
    with contextlib.suppress(Exception):
        _write_line(report_fd, {"sandbox_error": _error_text(exc)})
    os._exit(1)


def join_cgroups(procs_files: list[str]) -> None:
    """Move this process (and so everything it forks) into the test's cgroups."""
    for path in procs_files:
        with open(path, "w", encoding="ascii") as f:
            f.write(str(os.getpid()))


def main() -> None:
    report_fd, result_fd = int(sys.argv[2]), int(sys.argv[3])
    try:
        with open(sys.argv[1], encoding="utf-8") as f:
            cfg = json.load(f)
        join_cgroups(cfg["cgroup_procs"])
        with open(cfg["program_path"], encoding="utf-8") as f:
            source = f.read()
        rootless = os.geteuid() != 0
        with open("/proc/sys/kernel/cap_last_cap", encoding="utf-8") as f:
            last_cap = int(f.read())
        libc = _libc()
        uid = 0 if rootless else SANDBOX_UID_BASE + os.getpid()
        root = os.path.realpath(os.getcwd())
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        enter_namespaces(libc, rootless)
        build_root(libc, root, cfg, uid)
        lifeline_r, lifeline_w = os.pipe()  # init's way to see that this process is gone
        init_pid = os.fork()
    except BaseException as exc:  # noqa: BLE001 - the parent must learn the sandbox is broken
        _fail(report_fd, exc)
    if init_pid == 0:
        os.close(lifeline_w)
        who = (uid, rootless, last_cap)
        run_init(libc, cfg, source, who, root, lifeline_r, report_fd, result_fd)
    for fd in (0, 1, report_fd, result_fd):  # init and the program hold their own
        os.close(fd)
    os.waitpid(init_pid, 0)
    os._exit(0)


def run_init(libc, cfg, source, who, root, lifeline_r, report_fd, result_fd) -> None:
    """PID 1: run the program as PID 2, report how it ended; never returns."""
    try:
        _check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
        if select.select([lifeline_r], [], [], 0)[0]:  # the outer process died before the prctl
            os._exit(1)
        enter_root(libc, root)
        channel_r, channel_w = os.pipe()  # program -> init: "ready", then the final record
        key_r, key_w = os.pipe()  # init -> program: this run's key
        program_pid = os.fork()
    except BaseException as exc:  # noqa: BLE001
        _fail(report_fd, exc)
    if program_pid == 0:
        # The program must hold nothing that reaches the parent or forges how it ended.
        for fd in (report_fd, result_fd, lifeline_r, channel_r, key_w):
            os.close(fd)
        global _CHANNEL
        _CHANNEL = (channel_w, key_r)
        run_sandboxed(libc, cfg, source, who)
    for fd in (0, 1, channel_w, key_r):  # hold no pipe or file of the program's open
        os.close(fd)
    key = os.urandom(16).hex().encode()
    _write_all(key_w, key)
    os.close(key_w)
    channel = _Channel(channel_r, program_pid, cfg["result_limit"])
    watch_program(cfg, program_pid, channel, key, (report_fd, result_fd))
    # The kernel now kills everything left in the PID namespace.
    os._exit(0)


def watch_program(cfg, program_pid, channel, key, fds) -> None:
    """(init) Report the layers once the program is ready, then its ending and accepted record."""
    report_fd, result_fd = fds
    first = channel.first_line()
    if first == b"ready":
        _write_line(report_fd, {"layers": cfg["layers"]})
    else:
        error = first.decode("utf-8", "replace") or "the program ended before it was ready"
        _write_line(report_fd, {"sandbox_error": error})
    rest = channel.rest()
    _, wait_status = os.waitpid(program_pid, 0)
    if os.WIFSIGNALED(wait_status):
        ending = {"signal": os.WTERMSIG(wait_status)}
    else:
        ending = {"exit": os.WEXITSTATUS(wait_status)}
    start = rest.find(key + b"\n")  # the program cannot know the key: its bytes never match
    if start < 0 or channel.overflow:
        _write_line(report_fd, {"ending": ending, "record": None, "overflow": channel.overflow})
        return
    header, _, result = rest[start + len(key) + 1 :].partition(b"\n")
    record = header[:FIRST_LINE_LIMIT].decode("utf-8", "replace")
    _write_line(report_fd, {"ending": ending, "record": record})
    _write_all(result_fd, result)


class _Channel:
    """(init) What the program process writes on its channel, read until it ends, bounded."""

    def __init__(self, fd: int, pid: int, limit: int) -> None:
        self.fd, self.limit = fd, limit
        self.pidfd = os.pidfd_open(pid)
        self.buffer, self.overflow, self.open = bytearray(), False, True
        self.poller = select.poll()
        for watched in (fd, self.pidfd):
            self.poller.register(watched, select.POLLIN)

    def first_line(self) -> bytes:
        while b"\n" not in self.buffer[:FIRST_LINE_LIMIT] and len(self.buffer) < FIRST_LINE_LIMIT:
            if not self._pump():
                break
        line, _, rest = bytes(self.buffer).partition(b"\n")
        self.buffer = bytearray(rest)
        return line[:FIRST_LINE_LIMIT]

    def rest(self) -> bytes:
        while self._pump():
            pass
        return bytes(self.buffer)

    def _pump(self) -> bool:
        """Read what has come; False once nothing more will (EOF, or the program ended)."""
        if not self.open:
            return False
        ready = dict(self.poller.poll())
        if self.fd in ready:
            chunk = os.read(self.fd, 1 << 16)
            if chunk:
                self._keep(chunk)
                return True
        else:  # the program ended; what it left in the pipe is all that counts
            self._drain()
        self.open = False
        return False

    def _drain(self) -> None:
        os.set_blocking(self.fd, False)
        for _ in range(64):  # a child that keeps writing must not keep init here
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return
            if not chunk:
                return
            self._keep(chunk)

    def _keep(self, chunk: bytes) -> None:
        room = self.limit - len(self.buffer)
        self.overflow |= len(chunk) > room
        self.buffer += chunk[: max(room, 0)]


def run_sandboxed(libc, cfg, source, who) -> None:
    """PID 2: drop every privilege, set the limits, seccomp and the guard, run the program."""
    uid, rootless, last_cap = who
    channel_w = _CHANNEL[0]
    try:
        os.chdir(WORKDIR)
        os.environ.update(PROGRAM_ENV)
        # Under memory pressure the kernel kills sandboxed processes before anything else.
        with open("/proc/self/oom_score_adj", "w", encoding="ascii") as f:
            f.write("1000")
        drop_privileges(libc, uid, last_cap, rootless)
        install_seccomp(libc, cfg["processes_allowed"])  # before the limits: it allocates
        set_limits(cfg)
        install_guard(WORKDIR)
    except BaseException as exc:  # noqa: BLE001
        with contextlib.suppress(Exception):
            _write_all(channel_w, _error_text(exc).encode().replace(b"\n", b" ") + b"\n")
        os._exit(1)
    _write_all(channel_w, b"ready\n")  # no program code has run yet: this line is the harness's
    run_program(cfg, source)


if __name__ == "__main__":
    main()
