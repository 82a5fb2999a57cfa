"""The code sandbox: hostile programs are contained, reported in time, and leave nothing behind."""

from __future__ import annotations

import socket
import time

import pytest

from pacs.rewards import code as C

LIMIT = 1.0  # the tests of the wall limit
# Every other test: a limit no program here comes near, so that a loaded machine (the harness's
# start-up counts against the limit) cannot turn its verdict into a timeout.
PATIENT = 10.0
# Our wall limit, plus the time to empty a process group that refills itself, plus slack.
BOUND = LIMIT + C.STARTUP_GRACE_S + C.GROUP_KILL_S + 1.0
STDIN_TEST = [{"input": "3 4\n", "output": "7\n", "testtype": "stdin"}]


def run(program: str, tests=None, **kwargs) -> tuple[C.CodeResult, float]:
    start = time.monotonic()
    result = C.run_tests(
        program, tests or STDIN_TEST, timeout_s=kwargs.pop("timeout_s", PATIENT), **kwargs
    )
    return result, time.monotonic() - start


def test_a_correct_program_passes_and_a_wrong_one_fails():
    assert run("a, b = map(int, input().split())\nprint(a + b)")[0] == C.CodeResult(
        True, ["pass"], [""]
    )
    result, _ = run("a, b = map(int, input().split())\nprint(a * b)")
    assert result == C.CodeResult(False, ["fail"], ["wrong answer"])


def test_while_true_times_out():
    result, elapsed = run("while True:\n    pass", timeout_s=LIMIT)
    assert result.tests_status == ["timeout"] and elapsed < BOUND


def test_allocating_8_gb_is_a_memory_error():
    result, elapsed = run("x = bytearray(8 * 1024 ** 3)\nprint(7)", timeout_s=LIMIT)
    assert result.tests_status == ["memory_error"] and elapsed < BOUND


def test_os_fork_bomb_is_blocked():
    result, elapsed = run("import os\nwhile True:\n    os.fork()", timeout_s=LIMIT)
    assert result.tests_status == ["runtime_error"] and "os.fork is disabled" in result.errors[0]
    assert elapsed < BOUND


def test_ctypes_fork_bomb_is_contained_and_cleaned_up(private_tmp, leftover_processes):
    # Bypasses the Python guard: libc fork() directly. The sandbox's pids cgroup (and RLIMIT_NPROC
    # of its own uid) caps it, and the whole PID namespace dies at the limit.
    bomb = "import ctypes\nlibc = ctypes.CDLL(None)\nwhile True:\n    libc.fork()\n"
    result, elapsed = run(bomb, timeout_s=LIMIT)
    assert result.tests_status == ["timeout"] and elapsed < BOUND
    assert leftover_processes(private_tmp, wait_s=5.0) == []


def test_os_system_is_blocked_and_its_command_never_runs(tmp_path):
    marker = tmp_path / "os_system_ran"
    result, _ = run(f"import os\nos.system('touch {marker}')\nprint(7)")
    assert result.tests_status == ["runtime_error"] and "os.system is disabled" in result.errors[0]
    result, _ = run(f"import subprocess\nsubprocess.run(['touch', '{marker}'])\nprint(7)")
    assert result.tests_status == ["runtime_error"]
    assert not marker.exists()


@pytest.mark.parametrize(
    "writer",
    [
        "open({path!r}, 'w').write('x')",
        "import pathlib\npathlib.Path({path!r}).write_text('x')",
        "import _io\n_io.FileIO({path!r}, 'w').write(b'x')",
        "import os\nos.close(os.open({path!r}, os.O_CREAT | os.O_WRONLY))",
    ],
)
def test_writing_outside_the_sandbox_directory_does_not_happen(tmp_path, writer):
    target = tmp_path / "escaped.txt"
    result, _ = run(writer.format(path=str(target)) + "\nprint(7)")
    assert result.tests_status == ["runtime_error"]
    assert "outside the sandbox directory" in result.errors[0]
    assert not target.exists()


def test_a_libc_write_to_a_machine_path_lands_nowhere_on_the_machine(tmp_path):
    # The guard is bypassed; the machine's folders are not in the sandbox's filesystem at all.
    target = tmp_path / "escaped_via_libc.txt"
    program = (
        f"import ctypes\nfd = ctypes.CDLL(None).open({str(target).encode()!r}, 0o101, 0o644)\n"
        "print(7 if fd < 0 else 'opened')"
    )
    result, _ = run(program)
    assert result.tests_status == ["pass"]  # libc open() failed: the guard was bypassed
    assert not target.exists()


def test_scratch_files_in_the_working_directory_are_allowed():
    result, _ = run(
        "open('scratch.txt', 'w').write('12')\nprint(int(open('scratch.txt').read()) - 5)"
    )
    assert result.passed


def test_socket_to_localhost_is_refused():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(0.5)
        port = server.getsockname()[1]
        result, _ = run(
            f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)\nprint(7)"
        )
        assert result.tests_status == ["runtime_error"]
        assert "network access is disabled" in result.errors[0]
        with pytest.raises(socket.timeout):
            server.accept()  # nothing ever connected


def test_network_namespace_has_no_interfaces_but_loopback():
    program = (
        "lines = open('/proc/self/net/dev').readlines()[2:]\n"
        "print([line.split(':')[0].strip() for line in lines])"
    )
    result, _ = run(program, [{"input": "", "output": "['lo']", "testtype": "stdin"}])
    assert result.passed


def test_sandbox_layers_on_this_machine():
    # Every kernel layer is required: a machine that cannot give one refuses
    # (test_sandbox_attacks.py); cgroups are used where offered, and their absence is reported.
    from pacs.rewards import _cgroup

    layers = C.sandbox_layers()
    assert {k: layers[k] for k in C.LAYERS} == C.LAYERS
    assert layers["system calls"].startswith("seccomp: new namespaces")
    assert layers["open files"] == f"RLIMIT_NOFILE {C.NOFILE}"
    offered = {
        name for name, h in _cgroup.hierarchies().items() if isinstance(h, _cgroup.Hierarchy)
    }
    assert ("cgroup v" in layers["memory"]) == ("memory" in offered)
    assert ("cgroup v" in layers["processes"]) == ("pids" in offered)
    assert len(layers["missing"]) == 2 - len(offered)


def test_a_forged_status_line_does_not_beat_the_clock():
    # The status fd number is on the harness's command line; writing "done" there, then hanging,
    # must still be a timeout.
    forger = (
        "import os\nfor fd in range(3, 64):\n    try:\n"
        '        os.write(fd, b\'{"status": "done"}\\n\')\n    except OSError:\n        pass\n'
        "print(7)\nwhile True:\n    pass"
    )
    assert run(forger, timeout_s=LIMIT)[0].tests_status == ["timeout"]


def test_a_broken_sandbox_is_an_error_not_a_verdict(monkeypatch, tmp_path):
    C.sandbox_layers()  # the machine is fine; only this sandbox run breaks
    monkeypatch.setattr(C, "HARNESS", tmp_path / "missing_harness.py")
    result = C.grade("```python\nprint(7)\n```", STDIN_TEST)
    assert (
        result.status == "error"
        and "sandbox failed before the program ran" in result.details["error"]
    )
    seen = C._Seen([{"sandbox_error": "capset failed"}], b"", b"", "", False, 0)
    with pytest.raises(C.SandboxError, match="capset failed"):
        C.judge(seen, {"testtype": "stdin", "output": ""})


def test_too_little_memory_to_run_is_the_programs_failure():
    result, _ = run("print(7)", memory_mb=16)
    assert result.tests_status in (["runtime_error"], ["memory_error"])


def test_exit_after_printing_counts_as_finished():
    # LiveCodeBench ignores SystemExit: print, then exit(), is a normal end.
    assert run("print(7)\nexit()")[0].passed
    assert run("import sys\nprint(7)\nsys.exit(1)")[0].passed


def test_exceptions_and_syntax_errors_are_runtime_errors():
    result, _ = run("raise ValueError('boom')")
    assert result.tests_status == ["runtime_error"] and result.errors[0] == "ValueError: boom"
    assert run("def f(:\n")[0].tests_status == ["runtime_error"]


def test_each_test_is_reported_separately():
    tests = [
        {"input": "1 2\n", "output": "3\n"},
        {"input": "2 2\n", "output": "5\n"},
        {"input": "0 0\n", "output": "0\n"},
    ]
    result, _ = run(
        "a, b = map(int, input().split())\nif a == 2:\n    while True: pass\nprint(a + b)",
        tests,
        timeout_s=LIMIT,
    )
    assert result.tests_status == ["pass", "timeout", "pass"] and not result.passed


FUNCTIONAL = [{"input": "[1, 2]\n3", "output": "[1, 2, 3]", "testtype": "functional"}]


def test_functional_tuple_counts_as_list():
    program = (
        "class Solution:\n"
        "    def f(self, a: List[int], b: int) -> List[int]:\n"
        "        return tuple(a + [b])"
    )
    assert run(program, FUNCTIONAL, fn_name="f")[0].passed


def test_functional_top_level_function():
    assert run("def f(a, b):\n    return a + [b]", FUNCTIONAL, fn_name="f")[0].passed


def test_functional_return_value_cannot_rig_equality():
    program = (
        "class Solution:\n"
        "    def f(self, a, b):\n"
        "        class Anything:\n"
        "            def __eq__(self, other):\n"
        "                return True\n"
        "        return Anything()"
    )
    result, _ = run(program, FUNCTIONAL, fn_name="f")
    assert result.tests_status == ["fail"] and "not JSON serializable" in result.errors[0]


def test_functional_prints_do_not_matter():
    program = (
        "class Solution:\n    def f(self, a, b):\n        print('debug')\n        return a + [b]"
    )
    assert run(program, FUNCTIONAL, fn_name="f")[0].passed


@pytest.mark.parametrize(
    ("actual", "expected", "same"),
    [
        ("YES\nNO\n", "YES\nNO", True),
        ("  YES  \n\nNO\n\n", "YES\n\nNO", True),  # per-line and surrounding whitespace
        ("1.0 2\n", "1 2.00\n", True),  # numbers compare as decimals, token by token
        ("YES\nNO\n", "YES\nYES\n", False),
        ("1 2 3\n", "1 2\n", False),
        ("0.30000000000000004\n", "0.3\n", False),  # Decimal, not float tolerance (as LCB)
        ("YES\n", "YES\nNO\n", False),
    ],
)
def test_stdout_matches(actual, expected, same):
    assert C.stdout_matches(actual, expected) is same


@pytest.mark.parametrize(
    ("response", "code"),
    [
        ("text\n```python\nprint(1)\n```\nmore\n```python\nprint(2)\n```\n", "print(2)\n"),
        ("```\nprint(3)\n```", "print(3)\n"),
        (
            "```py\nprint(4)\n```\n```\nplain\n```",
            "print(4)\n",
        ),  # a python block beats an untagged one
        ("```text\nnot code\n```", None),
        ("```python\nprint(5)\n", None),  # unclosed fence
        ("no code at all", None),
    ],
)
def test_extract_code(response, code):
    assert C.extract_code(response) == code


@pytest.mark.parametrize(
    ("tests", "fn_name", "message"),
    [
        ([], None, "no tests given"),
        (
            [{"input": 3, "output": "3"}],
            None,
            "test 1: field 'input' must be a string",
        ),  # TypeError
        ([{"input": "1", "output": "1", "testtype": "web"}], None, "test 1: field 'testtype'"),
        ([{"input": "1", "output": "1", "testtype": "functional"}], None, "no fn_name"),
        (
            [{"input": "[1,", "output": "1", "testtype": "functional"}],
            "f",
            r"test 1: input line 1 is not JSON",
        ),
    ],
)
def test_bad_tests_are_named(tests, fn_name, message):
    with pytest.raises((TypeError, ValueError), match=message):
        C.run_tests("print(1)", tests, fn_name)


def test_grade_wraps_run_tests():
    good = C.grade(
        "```python\na, b = map(int, input().split())\nprint(a + b)\n```",
        STDIN_TEST,
        timeout_s=LIMIT,
    )
    assert (good.score, good.status, good.details["tests_status"]) == (1.0, "ok", ["pass"])
    missing = C.grade("I would use a loop.", STDIN_TEST)
    assert (missing.score, missing.status, missing.details["tests_status"]) == (
        0.0,
        "no_answer",
        [],
    )


def test_a_large_input_arrives_whole_through_the_pipe_or_is_dropped_unread():
    # 8 MB is far beyond a pipe's buffer: the parent feeds it while the program reads.
    numbers = " ".join(["123456789"] * 800_000)
    tests = [{"input": numbers + "\n", "output": str(123456789 * 800_000)}]
    result, elapsed = run("print(sum(map(int, input().split())))", tests, timeout_s=6.0)
    assert result.passed, result.errors
    # A program that never reads its stdin ends at once; the feeding does not hang the grader.
    unread = [{"input": numbers + "\n", "output": "7"}]
    result, elapsed = run("print(7)", unread, timeout_s=6.0)
    assert result.passed and elapsed < 3.0
