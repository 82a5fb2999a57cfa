"""Issue 18: what a hostile program does ends as a verdict on that program, never as an exception
in the grader; it cannot forge its result; memory it holds outside its address space is bounded;
its output cannot make the comparison expensive; ordinary threaded programs run.

Each test here failed on the sandbox before (an exception out of ``grade``, a forged pass, an
``error`` instead of ``fail``, ~1 GB held under ``memory_mb=256``, ``can't start new thread``).
"""

from __future__ import annotations

import time
import tracemalloc

import pytest

from pacs.rewards import code as C
from pacs.rewards import grade_rows

LIBC = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
FUNCTIONAL = [{"input": "[1, 2]\n3", "output": "[1, 2, 3]", "testtype": "functional"}]
SUM_TEST = [{"input": "3 4\n", "output": "7\n", "testtype": "stdin"}]
MEMORY_MB = 256
# What one sandbox may hold under MEMORY_MB (its memory cgroup's limit).
SANDBOX_MB = MEMORY_MB + C.SCRATCH_MB + C.CGROUP_OVERHEAD_MB


def grade(program: str, tests=None, **limits):
    return C.grade(f"```python\n{program}\n```", tests or SUM_TEST, **limits)


def bounded(held_mb: str) -> str:
    return f"print('bounded' if {held_mb} <= {SANDBOX_MB} else {held_mb})\n"


# ----------------------------------------------------------------------------- 1: crashes


def test_an_snan_output_is_a_wrong_answer_for_its_row_alone():
    # Decimal("sNaN") == Decimal("7") raised InvalidOperation out of grade_rows for the batch.
    rows = [{"task": "code", "tests": SUM_TEST, "problem_id": p} for p in ("snan", "good")]
    responses = ["```python\nprint('sNaN')\n```", "```python\nprint(7)\n```"]
    snan, good = grade_rows(rows, responses, workers=2)
    assert (snan.status, snan.details["tests_status"]) == ("ok", ["fail"])
    assert good.score == 1.0


def test_a_return_value_nested_3000_deep_is_a_wrong_answer():
    program = "def f(a, b):\n    x = []\n    for _ in range(3000):\n        x = [x]\n    return x\n"
    result = grade(program, FUNCTIONAL, fn_name="f")
    assert (result.status, result.details["tests_status"]) == ("ok", ["fail"])


@pytest.mark.parametrize(
    "line", ["9" * 5000, "[" * 100_000, '{"status": "done", "result": ' + "[" * 100_000]
)
def test_lines_written_on_every_fd_do_not_reach_the_grader(line):
    # The harness's status fd was the program's to write: a 5,000-digit integer and 100,000
    # brackets raised ValueError / RecursionError in the parent.
    program = (
        "import os\n"
        f"for fd in range(3, 64):\n    try:\n        os.write(fd, {line!r}.encode() + b'\\n')\n"
        "    except OSError:\n        pass\nprint(7)\n"
    )
    result = grade(program)
    assert (result.score, result.details["tests_status"]) == (1.0, ["pass"])


# ----------------------------------------------------------------------------- 2: forgery


def test_a_forged_done_record_does_not_pass_without_the_function():
    # It wrote {"status": "done", "result": "[1, 2, 3]"} on the status fd and exited: a pass.
    records = [
        b'{"status": "done", "result": "[1, 2, 3]"}\n',
        b'\n{"status": "done", "result_bytes": 9}\n[1, 2, 3]',
        b'ready\n\n{"status": "done", "result_bytes": 9}\n[1, 2, 3]',
    ]
    program = (
        "import os\n"
        f"for fd in range(3, 64):\n    for record in {records!r}:\n"
        "        try:\n            os.write(fd, record)\n        except OSError:\n            "
        "pass\n"
        "os._exit(0)\n"
    )
    result = grade(program, FUNCTIONAL, fn_name="f")
    assert result.score == 0.0
    assert result.details["tests_status"] == ["runtime_error"], result.details


def test_truncating_every_fd_leaves_a_wrong_answer_wrong():
    # Truncating the status file erased the harness's first line: "sandbox failed" (an error).
    program = (
        "import os\nfor fd in range(3, 64):\n    try:\n        os.ftruncate(fd, 0)\n"
        "    except OSError:\n        pass\nprint(8)\n"
    )
    result = grade(program)
    assert (result.status, result.details["tests_status"]) == ("ok", ["fail"])


# ----------------------------------------------------------------------------- 3: memory


MEMFD = (
    "held = 0\ntry:\n    for _ in range(17):\n        fd = os.memfd_create('x')\n"
    "        for _ in range(60):\n            os.write(fd, b'x' * (1 << 20))\n            held += "
    "1\n"
    "except OSError:\n    pass\n"
)
SYSV_SHM = (
    "libc.shmat.restype = ctypes.c_void_p\nheld = 0\nfor _ in range(8):\n"
    "    sid = libc.shmget(0, 128 << 20, 0o1600)\n    if sid < 0:\n        break\n"
    "    addr = libc.shmat(sid, None, 0)\n    if addr in (None, 2 ** 64 - 1):\n        break\n"
    "    ctypes.memset(addr, 1, 128 << 20)\n    libc.shmdt(ctypes.c_void_p(addr))\n    held += "
    "128\n"
)
SOCKET_BUFFERS = (
    "held = 0\nchunk = b'x' * 65536\nfor _ in range(2500):\n    pair = (ctypes.c_int * 2)()\n"
    "    if libc.socketpair(1, 1, 0, pair) != 0:\n        break\n"
    "    while libc.send(pair[0], chunk, len(chunk), 0x40) > 0:\n        held += 1 / 16\n"
)
NESTED_USERNS_TMPFS = (  # libc's open and write: past the Python guard, as an attacker would
    "held = 0\nchunk = b'x' * (1 << 20)\nuid, gid = os.getuid(), os.getgid()\n"
    "def put(name, text):\n    fd = libc.open(f'/proc/self/{name}'.encode(), 1)\n"
    "    libc.write(fd, text.encode(), len(text))\n    libc.close(fd)\n"
    "libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: /proc/self becomes its own to write\n"
    "if libc.unshare(0x10000000 | 0x00020000) == 0:\n"
    "    put('setgroups', 'deny')\n    put('uid_map', f'0 {uid} 1')\n    put('gid_map', f'0 {gid} "
    "1')\n"
    "    libc.mount(b'none', b'/tmp', b'tmpfs', 0, b'size=1g')\n"
    "    for k in range(8):\n        fd = libc.open(f'/tmp/f{k}'.encode(), 0o101, 0o600)\n"
    "        for _ in range(60):\n            if libc.write(fd, chunk, len(chunk)) != len(chunk):\n"
    "                break\n            held += 1\n"
)


@pytest.mark.parametrize(
    "attack",
    [MEMFD, SYSV_SHM, SOCKET_BUFFERS, NESTED_USERNS_TMPFS],
    ids=["memfd 17x60MB", "sysv shm 8x128MB", "2500 socketpairs", "nested userns tmpfs"],
)
def test_memory_outside_the_address_space_is_bounded(attack, private_tmp, leftover_processes):
    # Each held 0.5-1 GB of the machine's memory under memory_mb=256.
    result = grade(LIBC + attack + bounded("held"), expect("bounded"), memory_mb=MEMORY_MB)
    assert result.details["tests_status"][0] in ("pass", "memory_error"), result.details
    assert leftover_processes(private_tmp) == []


def expect(text: str) -> list[dict]:
    return [{"input": "", "output": text, "testtype": "stdin"}]


def test_the_memory_cgroup_turns_an_overrun_into_a_memory_error():
    if C.sandbox_layers()["missing"]:
        pytest.skip(f"no memory and pids cgroup here: {C.sandbox_layers()['missing']}")
    result = grade(LIBC + MEMFD + bounded("held"), expect("bounded"), memory_mb=MEMORY_MB)
    assert result.details["tests_status"] == ["memory_error"]
    assert "cgroup" in result.details["errors"][0]
    assert "cgroup v" in result.details["layers"]["memory"]


def test_open_files_are_limited():
    program = (
        "import os\nfds = []\ntry:\n    while len(fds) < 10000:\n        "
        "fds.append(os.open('/dev/null', 0))\n"
        "except OSError:\n    pass\n"
        f"print('limited' if len(fds) < {C.NOFILE} else len(fds))\n"
    )
    result = grade(program, expect("limited"))
    assert result.score == 1.0, result.details


def test_without_cgroups_the_program_gets_no_process_and_no_memfd(monkeypatch):
    # A machine (or a rootless grader) without usable cgroups: every result says so, and the
    # seccomp filter then takes fork and memfd away, so RLIMIT_AS bounds everything.
    from pacs.rewards import _cgroup

    def no_cgroups(memory_bytes, pids_max):
        missing = {"memory": "not offered (test)", "pids": "not offered (test)"}
        return _cgroup.TestCgroups(missing=missing)

    monkeypatch.setattr(_cgroup, "create", no_cgroups)
    program = (
        LIBC
        + "pid = libc.fork()\nif pid == 0:\n    libc._exit(0)\n"
        + "try:\n    os.memfd_create('x')\n    memfd = 'memfd'\n"
        + "except OSError:\n    memfd = 'no memfd'\n"
        + "from concurrent.futures import ThreadPoolExecutor\n"
        + "with ThreadPoolExecutor(8) as pool:\n    total = sum(pool.map(abs, range(100)))\n"
        + "print('no fork' if pid < 0 else 'forked', memfd, total)\n"
    )
    result = grade(program, expect("no fork no memfd 4950"))
    assert result.score == 1.0, result.details
    assert result.details["missing_layers"] == [
        "memory cgroup (not offered (test))",
        "pids cgroup (not offered (test))",
    ]
    assert "child processes, memfd" in result.details["layers"]["system calls"]


# ----------------------------------------------------------------------------- 4: output size


def test_comparing_a_huge_one_line_output_is_cheap():
    # 3M tokens on one line against a one-token answer: split() and a Decimal per token took
    # ~60x the output's size in memory (3.8 GB for 60 MB).
    output = "1 " * 3_000_000
    tracemalloc.start()
    try:
        start = time.perf_counter()
        same = C.stdout_matches(output, "1\n")
        elapsed = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert same is False
    assert peak < 2 * len(output), peak  # one stripped copy, nothing per token
    assert elapsed < 5.0


def test_a_huge_output_with_as_many_lines_compares_lazily():
    numbers = "\n".join(["5"] * 3) + "\n"
    assert C.stdout_matches(numbers, "5\n5.0\n5\n")
    assert not C.stdout_matches("5 " * 100_000 + "\n5\n5\n", "5\n5\n5\n")


# ----------------------------------------------------------------------------- 5: threads


def test_a_thread_pool_of_eight_runs():
    program = (
        "from concurrent.futures import ThreadPoolExecutor\n"
        "with ThreadPoolExecutor(8) as pool:\n    print(sum(pool.map(lambda x: x * x, "
        "range(100))))\n"
    )
    for memory_mb in (256, 1024):  # glibc's per-thread arenas once took 64 MB of address space each
        result = grade(program, expect("328350"), memory_mb=memory_mb)
        assert result.score == 1.0, (memory_mb, result.details)


def test_a_thread_bomb_stops_at_the_task_limit():
    program = (
        "import threading, time\nstarted = 0\ntry:\n    for _ in range(1000):\n"
        "        threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n"
        "        started += 1\nexcept RuntimeError:\n    pass\n"
        f"print('bounded' if started < {C.PIDS_MAX} else started)\n"
    )
    result = grade(program, expect("bounded"))
    assert result.score == 1.0, result.details
