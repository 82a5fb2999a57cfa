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
PID, network, IPC and UTS namespaces, a root holding only what Python needs (programs may import
the standard library only) plus a size-limited scratch tmpfs (/work, /tmp, /dev/shm, gone with
the sandbox), a uid of its own, no capabilities, rlimits and a Python-level guard. The tests never
enter the sandbox: stdin arrives on a pipe and outputs are compared here. ``os.system``,
``subprocess`` and ``os.fork`` are BLOCKED: they raise PermissionError, so the test is a
``runtime_error``; a process forked through ctypes dies with its program (the PID namespace ends
with it). The parent kills the sandbox at the wall-clock limit.

The private uid needs root. Started by another user, the sandbox runs *rootless* (the same
namespaces inside a user namespace, the program as the grading user with no capabilities): a
weaker mode that every result marks, ``details["sandbox"] == "rootless"`` (``"root"`` otherwise). Where the kernel refuses a layer (no user namespaces, no CAP_SYS_ADMIN),
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
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from pathlib import Path
from typing import Any

from pacs.rewards.result import GradeResult

TEST_STATUSES = ("pass", "fail", "timeout", "runtime_error", "memory_error")
TEST_TYPES = ("stdin", "functional")
HARNESS = Path(__file__).with_name("_sandbox_harness.py")
# Wall time beyond the program's own limit: interpreter start-up and the LCB imports.
STARTUP_GRACE_S = 1.0
OUTPUT_LIMIT_MB = 64
# The sandbox's one tmpfs (/work, /tmp, /dev/shm together): RAM, freed when the sandbox ends.
SCRATCH_MB = 64
SCRATCH_INODES = 4096
# Tasks (processes and threads) of the program's private uid: room for a few threads (a thread
# with a big stack for deep recursion is common), and a bound on the memory a ctypes fork bomb
# can hold: NPROC processes of memory_mb address space each.
NPROC = 8
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
}

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)```", re.DOTALL)
_PYTHON_TAGS = {"python", "python3", "py", "py3"}


@dataclass(frozen=True)
class CodeResult:
    """passed: every test passed. tests_status[i] in TEST_STATUSES; errors[i]: why, or ""."""

    passed: bool
    tests_status: list[str]
    errors: list[str] = field(default_factory=list)


class SandboxError(RuntimeError):
    """The sandbox itself failed (not the program): the result must not count as a verdict."""


class SandboxUnavailable(RuntimeError):
    """This machine cannot give the sandbox its layers: nothing can be graded here."""


def extract_code(response: str) -> str | None:
    """The last ```python fenced block; failing that, the last untagged ``` block."""
    blocks = [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(response)]
    for wanted in (lambda tag: tag in _PYTHON_TAGS, lambda tag: tag == ""):
        chosen = [body for tag, body in blocks if wanted(tag)]
        if chosen and chosen[-1].strip():
            return chosen[-1]
    return None


# ----------------------------------------------------------------------------- test validation


def _check_tests(tests: list[dict], fn_name: str | None) -> list[dict]:
    """Validated copies; functional inputs/outputs parsed from JSON (errors name test and field)."""
    if not tests:
        raise ValueError("no tests given: a program cannot be graded without tests")
    checked = []
    for i, test in enumerate(tests):
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
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"test {i}: {where} is not JSON ({exc.msg}): {text[:80]!r}") from None


# ----------------------------------------------------------------------------- comparison


def _stripped_lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().split("\n")]


def _as_decimals(line: str) -> list[Decimal] | None:
    try:
        return [Decimal(token) for token in line.split()]
    except InvalidOperation:
        return None


def stdout_matches(actual: str, expected: str) -> bool:
    """LiveCodeBench's stdin comparison (see the module docstring)."""
    got, want = _stripped_lines(actual), _stripped_lines(expected)
    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        if g == w:
            continue
        g_num, w_num = _as_decimals(g), _as_decimals(w)
        if g_num is None or w_num is None or g_num != w_num:
            return False
    return True


# ----------------------------------------------------------------------------- running


def run_tests(
    program: str,
    tests: list[dict],
    fn_name: str | None = None,
    timeout_s: float = 6.0,
    memory_mb: int = 1024,
) -> CodeResult:
    """Run ``program`` on every test, each in a fresh sandboxed process (LCB's 6 s default)."""
    if timeout_s <= 0 or memory_mb <= 0:
        raise ValueError(f"timeout_s and memory_mb must be > 0, got {timeout_s}, {memory_mb}")
    checked = _check_tests(tests, fn_name)
    sandbox_layers()  # refuses (SandboxUnavailable) before any program runs unconfined
    statuses, errors = [], []
    with tempfile.TemporaryDirectory(prefix="pacs-sandbox-", ignore_cleanup_errors=True) as root:
        root_path = Path(root)
        program_path = root_path / "solution.py"  # read by the harness before it isolates itself
        program_path.write_text(program, encoding="utf-8")
        for i, test in enumerate(checked):
            status, error = _run_one(
                program_path, test, fn_name, timeout_s, memory_mb, root_path / f"t{i}"
            )
            statuses.append(status)
            errors.append(error)
    return CodeResult(all(s == "pass" for s in statuses), statuses, errors)


def _run_one(
    program_path: Path,
    test: dict,
    fn_name: str | None,
    timeout_s: float,
    memory_mb: int,
    base: Path,
) -> tuple[str, str]:
    outcome = _execute(program_path, test, fn_name, timeout_s, memory_mb, base)
    status = outcome["status"]
    if status == "done" and test["testtype"] == "stdin":
        ok = stdout_matches(outcome["stdout"], test["output"])
        return ("pass", "") if ok else ("fail", "wrong answer")
    if status == "done":
        ok = _returned(outcome) == test["expected"]
        return ("pass", "") if ok else ("fail", "wrong answer")
    if status == "unserializable":
        return "fail", outcome.get("error", "")
    return status, outcome.get("error", "")


def _returned(outcome: dict) -> Any:
    try:
        return json.loads(outcome.get("result", "null"))
    except (TypeError, json.JSONDecodeError):
        return _NOTHING  # a status line the program forged on the status fd


_NOTHING = object()
_HARNESS_STATUSES = ("done", "runtime_error", "memory_error", "unserializable")


def _execute(
    program_path: Path,
    test: dict,
    fn_name: str | None,
    timeout_s: float,
    memory_mb: int,
    base: Path,
) -> dict[str, Any]:
    """Run the harness once: {"status": done|timeout|runtime_error|memory_error|unserializable}."""
    mount_point = base / "root"  # the harness mounts the sandbox's root here, in its namespace
    mount_point.mkdir(parents=True)
    config_path = base / "config.json"
    config_path.write_text(
        json.dumps(
            {
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
            }
        ),
        encoding="utf-8",
    )
    stdin = test["input"].encode("utf-8") if test["testtype"] == "stdin" else b""
    with (
        open(base / "stdout.txt", "wb+") as stdout,
        open(base / "stderr.txt", "wb+") as stderr,
        open(base / "status.jsonl", "wb+") as status,
    ):
        ending = _spawn_and_wait(config_path, mount_point, stdin, stdout, stderr, status, timeout_s)
        lines = _status_lines(status)
        output = _read(stdout).decode("utf-8", errors="replace")
        stderr_tail = _read(stderr)[-2000:].decode("utf-8", errors="replace")
    return _interpret(lines, ending, output, stderr_tail)


def _read(f) -> bytes:
    f.seek(0)
    return f.read()


def _spawn_and_wait(
    config_path, mount_point, stdin: bytes, stdout, stderr, status, timeout_s
) -> dict | None:
    """Run the harness; how the program ended: {"exit": code} or {"signal": number} as init
    reported it, {} when nothing was reported, None when we killed the sandbox at the wall limit."""
    outcome_r, outcome_w = os.pipe()  # written by the sandbox's init only, never the program
    try:
        proc = subprocess.Popen(
            [
                INTERPRETER,
                "-I",  # isolated: no environment variables, no user site, no script folder
                "-S",  # no site module: no .pth file runs, only the stdlib is importable
                str(HARNESS),
                str(config_path),
                str(status.fileno()),
                str(outcome_w),
            ],
            stdin=subprocess.PIPE,
            stdout=stdout,
            stderr=stderr,
            cwd=mount_point,
            env=_SANDBOX_ENV,
            start_new_session=True,
            close_fds=True,
            pass_fds=(status.fileno(), outcome_w),
        )
    finally:
        os.close(outcome_w)
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
        written = _read_now(outcome_r)
    return None if timed_out else _outcome(written)


def _read_now(fd: int) -> bytes:
    """What is in the pipe already (init wrote it before the harness could exit); closes it."""
    os.set_blocking(fd, False)
    try:
        return os.read(fd, 4096)
    except BlockingIOError:
        return b""
    finally:
        os.close(fd)


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


def _outcome(written: bytes) -> dict:
    try:
        outcome = json.loads(written)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return outcome if isinstance(outcome, dict) else {}


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL the harness's process group until it is empty.

    The group holds the harness and the sandbox's init; killing init ends the PID namespace, and
    the kernel kills whatever the program left in it.
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


def _status_lines(status_file) -> list[dict]:
    lines = []
    for raw in _read(status_file).decode("utf-8", errors="replace").splitlines():
        try:
            line = json.loads(raw)
        except json.JSONDecodeError:
            continue  # a program may scribble on the status fd; only well-formed lines count
        if isinstance(line, dict):
            lines.append(line)
    return lines


def _interpret(lines: list[dict], ending: dict | None, stdout: str, stderr_tail: str) -> dict:
    layers = next((line["layers"] for line in lines if "layers" in line), None)
    outcome = _verdict(lines, ending, stdout, stderr_tail)
    return {**outcome, "layers": layers} if layers is not None else outcome


def _verdict(lines: list[dict], ending: dict | None, stdout: str, stderr_tail: str) -> dict:
    """The test's outcome from the harness's status lines and how the program ended.

    ``ending`` comes from the sandbox's init, which the program cannot reach: None when we killed
    the sandbox at the wall limit, {} when it ended without a word, else {"exit": code} or
    {"signal": number}. The harness writes its final status line and exits 0, so a final line
    counts only with exit code 0: a program that forges a line on the status fd and then hangs
    or crashes gains nothing.
    """
    if not any("layers" in line for line in lines):
        errors = [line.get("error") for line in lines if line.get("status") == "sandbox_error"]
        raise SandboxError(
            "the sandbox failed before the program ran: "
            f"{errors[0] if errors else stderr_tail[-500:] or 'no error message'}"
        )
    if ending is None:
        return {"status": "timeout", "error": "time limit exceeded"}
    if not ending:
        raise SandboxError("the sandbox ended without reporting how the program ended")
    killed_by = ending.get("signal")
    if killed_by in (signal.SIGALRM, signal.SIGXCPU):
        return {"status": "timeout", "error": "time limit exceeded"}
    if killed_by == signal.SIGXFSZ:
        return {"status": "runtime_error", "error": f"output larger than {OUTPUT_LIMIT_MB} MB"}
    if killed_by is not None:
        return {
            "status": "runtime_error",
            "error": f"killed by signal {killed_by}; stderr: {stderr_tail[-300:]}",
        }
    if ending.get("exit") != 0:
        return {
            "status": "runtime_error",
            "error": f"exit code {ending.get('exit')}; stderr: {stderr_tail[-300:]}",
        }
    final = next(
        (line for line in reversed(lines) if line.get("status") in _HARNESS_STATUSES), None
    )
    if final is None:  # os._exit(0) from the program: it finished, without the harness's last word
        return {"status": "done", "stdout": stdout, "result": "null"}
    return {**final, "stdout": stdout}


# ----------------------------------------------------------------------------- grading


def grade(
    response: str, tests: list[dict], fn_name: str | None = None, **limits: Any
) -> GradeResult:
    """Score 1.0 iff the last code block passes every test; details["tests_status"] per test.

    ``limits``: ``timeout_s`` and ``memory_mb`` of :func:`run_tests`.
    """
    if not isinstance(response, str):
        raise TypeError(f"response has type {type(response).__name__}, expected str")
    program = extract_code(response)
    if program is None:
        return GradeResult(0.0, None, "no_answer", {"tests_status": []})
    try:
        result = run_tests(program, tests, fn_name, **limits)
    except SandboxError as exc:
        return GradeResult(0.0, program, "error", {"tests_status": [], "error": str(exc)})
    return GradeResult(
        1.0 if result.passed else 0.0,
        program,
        "ok",
        {"tests_status": result.tests_status, "errors": result.errors, "sandbox": sandbox_mode()},
    )


def sandbox_mode() -> str:
    """Which sandbox graded: "root" (a private uid per program) or "rootless" (see the top)."""
    return "root" if sandbox_layers()["uid"] == "private uid" else "rootless"


@lru_cache(maxsize=1)
def sandbox_layers() -> dict[str, str]:
    """The sandbox's layers on this machine (checked by running an empty program once).

    Raises :class:`SandboxUnavailable`, naming what the kernel refused, where the machine cannot
    give every layer: then no program may be graded.
    """
    with tempfile.TemporaryDirectory(prefix="pacs-sandbox-probe-") as root:
        base = Path(root)
        program = base / "solution.py"
        program.write_text("pass\n", encoding="utf-8")
        test = {"testtype": "stdin", "input": "", "output": ""}
        try:
            outcome = _execute(program, test, None, 5.0, 1024, base / "probe")
        except SandboxError as exc:
            raise SandboxUnavailable(
                f"the code sandbox cannot run on this machine: {exc}. It needs root, or a user "
                "allowed to create user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
                "user.max_user_namespaces > 0)."
            ) from None
    if outcome["status"] != "done" or "layers" not in outcome:
        raise SandboxUnavailable(f"the sandbox probe did not finish cleanly: {outcome}")
    return outcome["layers"]
