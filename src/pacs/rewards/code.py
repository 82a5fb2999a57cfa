"""Code grader for LiveCodeBench: extract the program, run each test in a sandboxed subprocess.

Tests follow LiveCodeBench's schema: ``{"input": str, "output": str, "testtype": "stdin" |
"functional"}``.
- stdin: the program reads ``input`` on stdin; its stdout matches ``output`` as LCB compares it:
  both are stripped, split into lines, each line stripped; lines equal as text or, token by
  token, as ``Decimal`` numbers ("1.0" == "1").
- functional (LeetCode): ``input`` holds one JSON value per line, the arguments of
  ``Solution().<fn_name>`` (or a top-level function ``fn_name``); the return value (a tuple
  counts as a list) must equal ``json.loads(output)``. The value crosses the process boundary as
  JSON and is compared here, so a returned object with a rigged ``__eq__`` cannot pass.

Every test runs in a fresh sandbox; see ``_sandbox_harness.py`` for its layers: private mount,
PID, network, IPC, UTS and cgroup namespaces, a root holding only what Python needs (programs
may import the standard library only) plus a size-limited scratch tmpfs (/work, /tmp, /dev/shm,
gone with the sandbox), a uid of its own, no capabilities, a seccomp filter, rlimits and a
Python-level guard; and, where the kernel offers them, a memory and a pids cgroup per test
(:mod:`pacs.rewards._cgroup`): the memory limit then covers every process of the sandbox,
memfd, tmpfs, socket and pipe buffers, and a thread pool runs while a fork bomb stops at
``PIDS_MAX`` tasks. Without cgroups the seccomp filter takes child processes and memfd away, so
that RLIMIT_AS bounds what the program holds; every result lists what was missing
(``details["missing_layers"]``). The tests never enter the sandbox: stdin arrives on a pipe and
outputs are compared here (:mod:`pacs.rewards._compare`, bounded in time and memory whatever
the output). ``os.system``, ``subprocess`` and ``os.fork`` are BLOCKED: they raise
PermissionError, so the test is a ``runtime_error``; a process forked through ctypes dies with
its program (the PID namespace ends with it). The parent kills the sandbox at the wall-clock
limit.

Verdicts come from what the parent and the sandbox's init saw, never from a channel the program
holds: how the program ended (init's wait status, the cgroup's OOM count, the wall clock), its
stdout, and for functional tests the record the harness sent init with a key init handed out
only after the program's code had run. Whatever a program does ends as a verdict on that
program; only a broken sandbox raises (:class:`SandboxError`, an ``error`` result).

The private uid needs root. Started by another user, the sandbox runs *rootless* (the same
namespaces inside a user namespace, the program as the grading user with no capabilities): a
weaker mode that every result marks, ``details["sandbox"] == "rootless"`` (``"root"``
otherwise). Where the kernel refuses a layer (no user namespaces, no CAP_SYS_ADMIN, no seccomp),
grading raises :class:`SandboxUnavailable` instead of running programs with fewer layers.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from pacs.rewards import _cgroup
from pacs.rewards._compare import parse_json, stdout_matches, values_equal
from pacs.rewards._limits import check_megabytes, check_seconds
from pacs.rewards.result import GradeResult

__all__ = ["CodeResult", "SandboxError", "SandboxUnavailable", "grade", "run_tests"]
__all__ += ["check_tests", "extract_code", "sandbox_layers", "sandbox_mode", "stdout_matches"]

TEST_STATUSES = ("pass", "fail", "timeout", "runtime_error", "memory_error")
TEST_TYPES = ("stdin", "functional")
HARNESS = Path(__file__).with_name("_sandbox_harness.py")
# Wall time beyond the program's own limit: interpreter start-up and the LCB imports.
STARTUP_GRACE_S = 1.0
OUTPUT_LIMIT_MB = 64
# The sandbox's one tmpfs (/work, /tmp, /dev/shm together): RAM, freed when the sandbox ends.
SCRATCH_MB = 64
SCRATCH_INODES = 4096
# Tasks (threads count) of one program: a thread pool or a deep-recursion thread runs; a fork
# bomb stops there. Per sandbox: its pids cgroup, and RLIMIT_NPROC of its private uid (rootless:
# of its own user namespace).
NPROC = 64
PIDS_MAX = NPROC + 2  # the pids cgroup also holds the sandbox's outer process and init
# Open files per process: sockets and pipes hold kernel buffers (~200 KB-1 MB each) outside the
# address space; the memory cgroup charges them, this bounds them where there is none.
NOFILE = 64
# The memory cgroup holds the program's memory_mb, the scratch tmpfs and this much for the
# sandbox's own processes (outer, init; page tables, kernel buffers).
CGROUP_OVERHEAD_MB = 64
# init's report: a few JSON lines.
REPORT_LIMIT = 1 << 20
# The base interpreter, not a virtualenv's: the sandbox shows only its prefix, and programs may
# import the standard library only (as in LiveCodeBench's prompts: plain Python 3).
INTERPRETER = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
# How long to keep killing a process group that still refills (killed orphans are reaped by init).
GROUP_KILL_S = 2.0
_SANDBOX_ENV = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    # glibc reserves 64 MB of address space for each thread's malloc arena: under RLIMIT_AS of
    # 256 MB a ThreadPoolExecutor(8) could not start its threads. One arena (Python's GIL
    # serialises the program's allocations anyway).
    "MALLOC_ARENA_MAX": "1",
}
# What the program runs in (every test's details["layers"] adds its limits).
LAYERS = {
    "filesystem": "private root (pivot_root)",
    "pid": "private PID namespace",
    "network": "private network namespace",
    "uid": "private uid",
    "capabilities": "none",
}
LAYERS_ROOTLESS = {**LAYERS, "uid": "the grading user's, as uid 0 of a user namespace"}
SECCOMP_DENIED = (
    "new namespaces (no nested user namespace)",
    "SysV IPC",
    "POSIX message queues",
    "keyrings",
    "io_uring",
    "BPF",
    "userfaultfd",
    "perf events",
    "ptrace",
)
_HARNESS_STATUSES = ("done", "runtime_error", "memory_error", "unserializable")

_FENCE_TAG = re.compile(r"[ \t]*([A-Za-z0-9_+.-]*)")
_PYTHON_TAGS = {"python", "python3", "py", "py3"}


@dataclass(frozen=True)
class CodeResult:
    """passed: every test passed. tests_status[i] in TEST_STATUSES; errors[i]: why, or "".

    layers: what confined the program (``layers["missing"]``: what the machine did not give).
    """

    passed: bool
    tests_status: list[str]
    errors: list[str] = field(default_factory=list)
    layers: dict[str, Any] = field(default_factory=dict, compare=False)


class SandboxError(RuntimeError):
    """The sandbox itself failed (not the program): the result must not count as a verdict."""


class SandboxUnavailable(RuntimeError):
    """This machine cannot give the sandbox its layers: nothing can be graded here."""


def extract_code(response: str) -> str | None:
    """The last ```python fenced block; failing that, the last untagged ``` block."""
    blocks = fenced_blocks(response)
    for wanted in (lambda tag: tag in _PYTHON_TAGS, lambda tag: tag == ""):
        chosen = [body for tag, body in blocks if wanted(tag)]
        if chosen and chosen[-1].strip():
            return chosen[-1]
    return None


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(lower-case tag, body) of each fenced block, in order, in one pass over ``text``.

    A block opens with ``` and the rest of its line (the tag: the word after the backticks) and
    ends at the next ```. The regex this replaces was quadratic on long runs of backticks.
    """
    blocks, pos = [], 0
    while True:
        start = text.find("```", pos)
        line_end = text.find("\n", start + 3) if start >= 0 else -1
        close = text.find("```", line_end + 1) if line_end >= 0 else -1
        if close < 0:  # no later fence can close either: every later ``` lies before line_end
            return blocks
        tag = _FENCE_TAG.match(text, start + 3, line_end).group(1).lower()
        blocks.append((tag, text[line_end + 1 : close]))
        pos = close + 3


# ----------------------------------------------------------------------------- test validation


def check_tests(tests: list[dict], fn_name: str | None) -> list[dict]:
    """Validated copies; functional inputs/outputs parsed from JSON (errors name the test,
    counted from 1, and the field). Data preparation runs it too (pacs.data.livecodebench)."""
    if not tests:
        raise ValueError("no tests given: a program cannot be graded without tests")
    checked = []
    for i, test in enumerate(tests, start=1):
        if not isinstance(test, dict):
            raise TypeError(f"test {i} is a {type(test).__name__}, expected an object")
        for key in ("input", "output"):
            if not isinstance(test.get(key), str):
                raise TypeError(
                    f"test {i}: field {key!r} must be a string, got {type(test.get(key)).__name__}"
                )
        testtype = test.get("testtype", "stdin")
        if testtype not in TEST_TYPES:
            raise ValueError(
                f"test {i}: field 'testtype' is {testtype!r}, expected one of {TEST_TYPES}"
            )
        item = {"testtype": testtype, "input": test["input"], "output": test["output"]}
        if testtype == "functional":
            if not fn_name:
                raise ValueError(f"test {i} is functional but no fn_name was given")
            item["args"] = _json_lines(test["input"], i)
            item["expected"] = _json_value(test["output"], i, "output")
        checked.append(item)
    return checked


def _json_lines(text: str, i: int) -> list:
    lines = text.rstrip("\n").split("\n")
    return [_json_value(line, i, f"input line {k + 1}") for k, line in enumerate(lines)]


def _json_value(text: str, i: int, where: str):
    try:
        return parse_json(text)
    except ValueError as exc:
        raise ValueError(f"test {i}: {where} is {exc}: {text[:80]!r}") from None


def result_limit(expected_output: str) -> int:
    """Bytes of JSON a functional test's return value may take.

    A value equal to the expected one serialises to at most a small multiple of its text (1 vs
    1.0, 2**1000 as an integer vs as a float: ~13x); beyond 64x + 1 MiB it cannot be equal, and
    the parent never parses it.
    """
    return min(OUTPUT_LIMIT_MB << 20, (1 << 20) + 64 * len(expected_output.encode("utf-8")))


# ----------------------------------------------------------------------------- running


def run_tests(
    program: str,
    tests: list[dict],
    fn_name: str | None = None,
    timeout_s: float = 6.0,
    memory_mb: int = 1024,
) -> CodeResult:
    """Run ``program`` on every test, each in a fresh sandboxed process (LCB's 6 s default)."""
    timeout_s = check_seconds("timeout_s", timeout_s)
    memory_mb = check_megabytes("memory_mb", memory_mb)
    checked = check_tests(tests, fn_name)
    sandbox_layers()  # refuses (SandboxUnavailable) before any program runs unconfined
    statuses, errors, layers = [], [], {}
    with tempfile.TemporaryDirectory(prefix="pacs-sandbox-", ignore_cleanup_errors=True) as root:
        root_path = Path(root)
        program_path = root_path / "solution.py"  # read by the harness before it isolates itself
        program_path.write_text(program, encoding="utf-8")
        for i, test in enumerate(checked):
            limits = (timeout_s, memory_mb)
            outcome = _execute(program_path, test, fn_name, limits, root_path / f"t{i}")
            statuses.append(outcome["status"])
            errors.append(outcome["error"])
            layers = _weakest(layers, outcome["layers"])
    passed = all(s == "pass" for s in statuses)
    return CodeResult(passed, statuses, errors, layers)


def _weakest(seen: dict, layers: dict) -> dict:
    """The layers of a run: any test's missing layer is the run's (cgroups are made per test)."""
    if not seen:
        return dict(layers)
    merged = {**seen, **layers}
    merged["missing"] = sorted(set(seen.get("missing", [])) | set(layers.get("missing", [])))
    return merged


def _execute(program_path: Path, test: dict, fn_name, limits, base: Path) -> dict[str, Any]:
    """Run the harness once: {"status" (a TEST_STATUSES entry), "error", "layers"}."""
    timeout_s, memory_mb = limits
    mount_point = base / "root"  # the harness mounts the sandbox's root here, in its namespace
    mount_point.mkdir(parents=True)
    limit = result_limit(test["output"]) if test["testtype"] == "functional" else 0
    groups = _cgroup.create(((memory_mb + SCRATCH_MB + CGROUP_OVERHEAD_MB) << 20) + limit, PIDS_MAX)
    layers = _layers(groups, memory_mb)
    config_path = base / "config.json"
    config = _harness_config(program_path, test, fn_name, limits, groups, layers, limit)
    config_path.write_text(json.dumps(config), encoding="utf-8")
    stdin = test["input"].encode("utf-8") if test["testtype"] == "stdin" else b""
    files = {name: open(base / name, "wb+") for name in ("stdout", "stderr", "report", "result")}  # noqa: SIM115  (closed in the finally below)
    try:
        timed_out = _spawn_and_wait(config_path, mount_point, stdin, files, timeout_s)
        oom_kills = groups.oom_kills()
        seen = _Seen(
            report=_report_lines(files["report"]),
            result=_read_head(files["result"], limit + 1),
            stdout=_read_head(files["stdout"], (OUTPUT_LIMIT_MB << 20) + 1),
            stderr_tail=_read_tail(files["stderr"], 2000).decode("utf-8", errors="replace"),
            timed_out=timed_out,
            oom_kills=oom_kills,
        )
    finally:
        groups.remove()
        for f in files.values():
            f.close()
    status, error = judge(seen, test)
    return {"status": status, "error": error, "layers": layers}


def _harness_config(program_path, test, fn_name, limits, groups, layers, limit) -> dict:
    timeout_s, memory_mb = limits
    return {
        "program_path": str(program_path),
        "mode": test["testtype"],
        "fn_name": fn_name,
        "args": test.get("args", []),
        "timeout_s": timeout_s,
        "cpu_s": math.ceil(timeout_s) + 1,
        "memory_mb": memory_mb,
        "fsize_mb": OUTPUT_LIMIT_MB,
        "scratch_mb": SCRATCH_MB,
        "scratch_inodes": SCRATCH_INODES,
        "nproc": NPROC,
        "nofile": NOFILE,
        "cgroup_procs": groups.procs_files(),
        "processes_allowed": groups.complete,
        "result_limit": limit + 4096,  # the record's key and header, then the value
        "layers": layers,
    }


def _layers(groups: _cgroup.TestCgroups, memory_mb: int) -> dict[str, Any]:
    """What confines this test's program; ``missing`` lists the layers the machine did not give."""
    layers: dict[str, Any] = dict(LAYERS if os.geteuid() == 0 else LAYERS_ROOTLESS)
    layers["system calls"] = (
        "seccomp: "
        + ", ".join(SECCOMP_DENIED)
        + ("" if groups.complete else ", child processes, memfd (no cgroup to bound them)")
    )
    if "memory" in groups.folders:
        version = groups.folders["memory"][0]
        total = memory_mb + SCRATCH_MB + CGROUP_OVERHEAD_MB
        layers["memory"] = f"cgroup v{version}: {total} MB for the whole sandbox; "
    else:
        layers["memory"] = "no memory cgroup; "
    layers["memory"] += f"RLIMIT_AS {memory_mb} MB per process"
    if "pids" in groups.folders:
        layers["processes"] = f"cgroup v{groups.folders['pids'][0]}: {PIDS_MAX} tasks per sandbox"
    else:
        layers["processes"] = f"no pids cgroup; RLIMIT_NPROC {NPROC} tasks"
    layers["open files"] = f"RLIMIT_NOFILE {NOFILE}"
    layers["missing"] = [f"{name} cgroup ({why})" for name, why in sorted(groups.missing.items())]
    return layers


def _read_head(f, limit: int) -> bytes:
    f.seek(0)
    return f.read(limit)


def _read_tail(f, size: int) -> bytes:
    f.seek(max(0, f.seek(0, os.SEEK_END) - size))
    return f.read(size)


def _spawn_and_wait(config_path, mount_point, stdin: bytes, files: dict, timeout_s) -> bool:
    """Run the harness; True if we killed the sandbox at the wall limit."""
    report_fd, result_fd = files["report"].fileno(), files["result"].fileno()
    proc = subprocess.Popen(
        [
            INTERPRETER,
            "-I",  # isolated: no environment variables, no user site, no script folder
            "-S",  # no site module: no .pth file runs, only the stdlib is importable
            str(HARNESS),
            str(config_path),
            str(report_fd),
            str(result_fd),
        ],
        stdin=subprocess.PIPE,
        stdout=files["stdout"],
        stderr=files["stderr"],
        cwd=mount_point,
        env=_SANDBOX_ENV,
        start_new_session=True,
        close_fds=True,
        pass_fds=(report_fd, result_fd),
    )
    feeder = threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True)
    feeder.start()
    try:
        proc.wait(timeout=timeout_s + STARTUP_GRACE_S)
        timed_out = False
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        _kill_group(proc)
        feeder.join()  # the pipe broke when the sandbox ended, if not before
    return timed_out


def _feed(pipe, data: bytes) -> None:
    """Write the test's input to the program's stdin (a pipe: the tests never enter the sandbox)."""
    try:
        pipe.write(data)
    except OSError:  # BrokenPipeError: the program ended without reading it all
        pass
    finally:
        try:
            pipe.close()
        except OSError:
            pass


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the harness's process group until it is empty.

    The group holds the harness and the sandbox's init; killing init ends the PID namespace, and
    the kernel kills whatever the program left in it (the cgroup, where there is one, is killed
    whole afterwards).
    """
    deadline = time.monotonic() + GROUP_KILL_S
    while True:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            break
        if proc.poll() is None:
            proc.wait()
        if time.monotonic() > deadline:
            break
        time.sleep(0.01)
    proc.wait()


def _report_lines(f) -> list[dict]:
    """The JSON lines init (or the outer process) wrote; the program never holds this file."""
    lines = []
    for raw in _read_head(f, REPORT_LIMIT).splitlines():
        try:
            line = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if isinstance(line, dict):
            lines.append(line)
    return lines


# ----------------------------------------------------------------------------- verdict


@dataclass(frozen=True)
class _Seen:
    """What the parent saw of one test: init's report, the value's bytes, the outputs, limits."""

    report: list[dict]
    result: bytes
    stdout: bytes
    stderr_tail: str
    timed_out: bool
    oom_kills: int


def judge(seen: _Seen, test: dict) -> tuple[str, str]:
    """(status, reason) of one test. Raises only :class:`SandboxError` (the sandbox broke)."""
    if not any("layers" in line for line in seen.report):
        errors = [line["sandbox_error"] for line in seen.report if "sandbox_error" in line]
        raise SandboxError(
            "the sandbox failed before the program ran: "
            f"{errors[0] if errors else seen.stderr_tail[-500:] or 'no error message'}"
        )
    if seen.timed_out:
        return "timeout", "time limit exceeded"
    final = next((line for line in seen.report if "ending" in line), None)
    if seen.oom_kills and (final is None or final["ending"].get("signal") == signal.SIGKILL):
        return "memory_error", "memory limit exceeded (killed by the sandbox's memory cgroup)"
    if final is None:
        raise SandboxError("the sandbox ended without reporting how the program ended")
    ended = _ending(final["ending"], seen.stderr_tail)
    if ended is not None:
        return ended
    record = _record(final)
    if isinstance(record, str):  # no record the harness wrote
        if test["testtype"] == "stdin":  # os._exit(0) after printing: finished, as in LCB
            return _compare_stdout(seen.stdout, test)
        return "runtime_error", record
    return _from_record(record, seen, test)


def _ending(ending: dict, stderr_tail: str) -> tuple[str, str] | None:
    """The verdict how the program ended decides alone (signal, exit code), else None."""
    killed_by = ending.get("signal")
    if killed_by in (signal.SIGALRM, signal.SIGXCPU):
        return "timeout", "time limit exceeded"
    if killed_by == signal.SIGXFSZ:
        return "runtime_error", f"output larger than {OUTPUT_LIMIT_MB} MB"
    if killed_by is not None:
        return "runtime_error", f"killed by signal {killed_by}; stderr: {stderr_tail[-300:]}"
    if ending.get("exit") != 0:
        return "runtime_error", f"exit code {ending.get('exit')}; stderr: {stderr_tail[-300:]}"
    return None


def _record(final: dict) -> dict | str:
    """The harness's record, or why there is none (a str)."""
    if final.get("overflow"):
        return "the program wrote more on the harness's channel than a result may take"
    try:
        record = parse_json(final.get("record") or "")
    except ValueError:
        return "the program ended without the harness reporting a result"
    if not isinstance(record, dict) or record.get("status") not in _HARNESS_STATUSES:
        return "the harness's record is malformed"
    return record


def _from_record(record: dict, seen: _Seen, test: dict) -> tuple[str, str]:
    status, error = record["status"], str(record.get("error", ""))[:500]
    if status == "unserializable":
        return "fail", error
    if status != "done":
        return status, error
    if test["testtype"] == "stdin":
        return _compare_stdout(seen.stdout, test)
    size = record.get("result_bytes")
    if not isinstance(size, int) or size > result_limit(test["output"]):
        return "fail", "the return value is larger than any value equal to the expected one"
    if not 0 <= size <= len(seen.result):
        return "fail", "the return value did not arrive whole"
    try:
        value = parse_json(seen.result[:size])
    except ValueError as exc:
        return "fail", f"the return value is {exc}"
    return ("pass", "") if values_equal(value, test["expected"]) else ("fail", "wrong answer")


def _compare_stdout(stdout: bytes, test: dict) -> tuple[str, str]:
    if len(stdout) > OUTPUT_LIMIT_MB << 20:
        return "runtime_error", f"output larger than {OUTPUT_LIMIT_MB} MB"
    text = stdout.decode("utf-8", errors="replace")
    return ("pass", "") if stdout_matches(text, test["output"]) else ("fail", "wrong answer")


# ----------------------------------------------------------------------------- grading


def grade(
    response: str, tests: list[dict], fn_name: str | None = None, **limits: Any
) -> GradeResult:
    """Score 1.0 iff the last code block passes every test; details["tests_status"] per test.

    ``limits``: ``timeout_s`` and ``memory_mb`` of :func:`run_tests`. details["layers"] says
    what confined the program, details["missing_layers"] what this machine could not give.
    """
    if not isinstance(response, str):
        raise TypeError(f"response has type {type(response).__name__}, expected str")
    limits = _checked_limits(limits)
    program = extract_code(response)
    if program is None:
        return GradeResult(0.0, None, "no_answer", {"tests_status": []})
    try:
        result = run_tests(program, tests, fn_name, **limits)
    except SandboxError as exc:
        return GradeResult(0.0, program, "error", {"tests_status": [], "error": str(exc)})
    details = {
        "tests_status": result.tests_status,
        "errors": result.errors,
        "sandbox": sandbox_mode(),
        "layers": result.layers,
        "missing_layers": result.layers.get("missing", []),
    }
    return GradeResult(1.0 if result.passed else 0.0, program, "ok", details)


def _checked_limits(limits: dict[str, Any]) -> dict[str, Any]:
    """``timeout_s`` and ``memory_mb`` checked before any response is looked at."""
    unknown = sorted(set(limits) - {"timeout_s", "memory_mb"})
    if unknown:
        raise TypeError(f"unknown limit(s) {unknown}; expected timeout_s and memory_mb")
    checked = dict(limits)
    if "timeout_s" in limits:
        checked["timeout_s"] = check_seconds("timeout_s", limits["timeout_s"])
    if "memory_mb" in limits:
        checked["memory_mb"] = check_megabytes("memory_mb", limits["memory_mb"])
    return checked


def sandbox_mode() -> str:
    """Which sandbox graded: "root" (a private uid per program) or "rootless" (see the top)."""
    return "root" if sandbox_layers()["uid"] == "private uid" else "rootless"


@lru_cache(maxsize=1)
def sandbox_layers() -> dict[str, Any]:
    """The sandbox's layers on this machine (checked by running an empty program once).

    Raises :class:`SandboxUnavailable`, naming what the kernel refused, where the machine cannot
    give every required layer: then no program may be graded. Missing cgroups are not a refusal:
    the sandbox then forbids child processes and memfd, and ``layers["missing"]`` says so.
    """
    with tempfile.TemporaryDirectory(prefix="pacs-sandbox-probe-") as root:
        base = Path(root)
        program = base / "solution.py"
        program.write_text("pass\n", encoding="utf-8")
        test = {"testtype": "stdin", "input": "", "output": ""}
        try:
            outcome = _execute(program, test, None, (5.0, 1024), base / "probe")
        except SandboxError as exc:
            raise SandboxUnavailable(
                f"the code sandbox cannot run on this machine: {exc}. It needs root, or a user "
                "allowed to create user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
                "user.max_user_namespaces > 0), and seccomp."
            ) from None
    if outcome["status"] != "pass":
        raise SandboxUnavailable(f"the sandbox probe did not finish cleanly: {outcome}")
    return outcome["layers"]
