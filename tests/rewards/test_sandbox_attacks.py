"""Hostile programs against the code sandbox, each graded through the public grading functions.

Every test here is an attack that worked on the sandbox before it had a private filesystem view,
PID namespace, uid and scratch space (issue 12): reading the tests, killing or outliving the
programs graded beside it, and leaving files in the machine's /tmp and /dev/shm.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from pacs.rewards import code as C
from pacs.rewards import grade_rows

LIBC = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
SUM_TEST = [{"input": "3 4\n", "output": "7\n", "testtype": "stdin"}]
SUM = "a, b = map(int, input().split())\n"


def grade(program: str, tests=None, **limits):
    start = time.monotonic()
    result = C.grade(f"```python\n{program}\n```", tests or SUM_TEST, **limits)
    return result, time.monotonic() - start


def expect_output(text: str) -> list[dict]:
    return [{"input": "", "output": text, "testtype": "stdin"}]


@pytest.fixture
def token():
    """A unique name for the files an attack tries to leave behind; removed whatever happens."""
    name = f"pacs-attack-{uuid.uuid4().hex[:12]}"
    yield name
    for folder in ("/tmp", "/dev/shm"):
        for path in Path(folder).glob(f"{name}*"):
            path.unlink()


# ----------------------------------------------------------------------------- 1: reading the tests


def test_a_program_cannot_find_the_tests_on_disk_and_print_the_answer(tmp_path):
    # The attack that scored 1.0: walk the disk for the benchmark JSONL, look the input up in it,
    # print the expected output. The expected output is random, so only a lookup can produce it.
    secret = uuid.uuid4().hex
    tests = [{"input": "question 17\n", "output": f"{secret}\n", "testtype": "stdin"}]
    bench = tmp_path / "bench" / "lcb_tests.jsonl"
    bench.parent.mkdir()
    bench.write_text(json.dumps(tests[0]) + "\n", encoding="utf-8")
    program = (
        "import json, os, sys\n"
        "question = sys.stdin.read()\n"
        f"for folder, _, names in os.walk({str(tmp_path)!r}):\n"
        "    for name in names:\n"
        "        for line in open(os.path.join(folder, name)):\n"
        "            row = json.loads(line)\n"
        "            if row['input'] == question:\n"
        "                print(row['output'])\n"
        "                raise SystemExit\n"
        "print('not found')\n"
    )
    result, _ = grade(program, tests)
    assert (result.score, result.status, result.details["tests_status"]) == (0.0, "ok", ["fail"])


def test_a_program_cannot_read_the_real_benchmark_file(shared_data):
    # The same attack on the real LiveCodeBench copy, by the path a walk of /work finds.
    path = shared_data / "livecodebench" / "mavencoder_lcb_release_v1_public.jsonl"
    with path.open(encoding="utf-8") as f:
        row = next(r for r in map(json.loads, f) if r["question_id"] == "1873_A")
    tests = json.loads(row["public_test_cases"])
    program = (
        "import json, sys\n"
        "question = sys.stdin.read()\n"
        "try:\n"
        f"    rows = [json.loads(line) for line in open({str(path)!r})]\n"
        "except OSError:\n"
        "    rows = []\n"
        "for row in rows:\n"
        "    for test in json.loads(row['public_test_cases']):\n"
        "        if test['input'] == question:\n"
        "            print(test['output'])\n"
        "            raise SystemExit\n"
        "print('no tests found')\n"
    )
    result, _ = grade(program, tests)
    assert (result.score, result.status) == (0.0, "ok")
    assert result.details["tests_status"] == ["fail"] * len(tests)


def test_etc_shadow_and_the_rest_of_the_machine_are_out_of_sight(tmp_path):
    # Each of these exists on the machine (the sandbox folder of this very test too).
    probes = ["/etc/shadow", "/etc/passwd", "/etc/hostname", "/var", "/sys/kernel", str(tmp_path)]
    probes += [str(C.HARNESS), str(Path(sys.executable).parent)]
    assert all(os.path.lexists(path) for path in probes)
    program = (
        "import os\n"
        f"for path in {probes!r}:\n"
        "    print(path, 'visible' if os.path.lexists(path) else 'absent')\n"
        "print(sorted(os.listdir('/')))\nprint(sorted(os.listdir('/etc')))\n"
    )
    # The root holds /usr and its symlinks, the interpreter's prefix, and the sandbox's own.
    top = {"etc", "proc", "dev", "tmp", "work"}
    top |= {
        name
        for name in ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
        if os.path.lexists(f"/{name}")
    }
    top |= {Path(sys.base_prefix).resolve().parts[1]}
    etc = sorted(name for name in ("ld.so.cache", "localtime") if os.path.exists(f"/etc/{name}"))
    expected = "\n".join([f"{path} absent" for path in probes] + [str(sorted(top)), str(etc)])
    result, _ = grade(program, expect_output(expected))
    assert result.score == 1.0, result.details


def test_only_the_standard_library_is_importable():
    # Before, the grader's own virtualenv (and through it this repository) was importable.
    program = (
        "try:\n    import pacs\n    print('pacs from', pacs.__file__)\n"
        "except ModuleNotFoundError:\n    print('stdlib only')\n"
        "import heapq, fractions, sqlite3, decimal\n"
        "quit()\n"  # the site module is off, the harness provides exit() and quit()
    )
    result, _ = grade(program, expect_output("stdlib only"))
    assert result.score == 1.0, result.details


def test_the_program_holds_no_capability_at_all():
    # Before: CapEff kept CAP_DAC_READ_SEARCH (read any file) and the bounding set was full.
    program = (
        "fields = dict(line.split(':') for line in open('/proc/self/status'))\n"
        "names = ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']\n"
        "print(' '.join(str(int(fields[name], 16)) for name in names))\n"
        "print(fields['NoNewPrivs'].strip())\n"
        "print(open('/proc/self/oom_score_adj').read())\n"  # killed first when memory runs out
    )
    result, _ = grade(program, expect_output("0 0 0 0 0\n1\n1000"))
    assert result.score == 1.0, result.details


def test_the_program_sees_no_process_but_its_own():
    program = (
        "import os\n"
        "pids = [p for p in os.listdir('/proc') if p.isdigit()]\n"
        "print(len(pids), os.getpid() == int(pids[0]))\n"
    )
    result, _ = grade(program, expect_output("1 True"))
    assert result.score == 1.0, result.details


def test_the_graders_command_line_and_environment_are_out_of_reach(monkeypatch):
    # A grader-side process with a secret in its argv and environment (root's environ was already
    # private; argv of every process was world-readable through /proc).
    secret = f"PACS-SECRET-{uuid.uuid4().hex}"
    monkeypatch.setenv("PACS_GRADER_SECRET", secret)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", secret], env=dict(os.environ)
    )
    program = (
        "import os\n"
        "found = 'nothing'\n"
        "for pid in filter(str.isdigit, os.listdir('/proc')):\n"
        "    for part in ('cmdline', 'environ'):\n"
        "        try:\n"
        "            data = open(f'/proc/{pid}/{part}', 'rb').read()\n"
        "        except OSError:\n"
        "            continue\n"
        "        for word in data.split(b'\\0'):\n"
        "            if b'PACS-SECRET-' in word:\n"
        "                found = word.decode().split('=')[-1]\n"
        "print(found)\n"
    )
    try:
        result, _ = grade(program, expect_output(secret))
    finally:
        holder.kill()
        holder.wait()
    assert (result.score, result.details["tests_status"]) == (0.0, ["fail"])


# ----------------------------------------------------------------------------- 2: harming others


VICTIM = SUM + "import time\ntime.sleep({sleep})\nprint(a + b)\n"
KILL_EVERYTHING = (
    LIBC
    + "import time\nend = time.time() + {seconds}\nwhile time.time() < end:\n"
    + ("    libc.kill(-1, 9)\n    time.sleep(0.01)\n")
)


def _code_row(program: str, pid: str) -> tuple[dict, str]:
    row = {"task": "code", "tests": SUM_TEST, "fn_name": None, "problem_id": pid}
    return row, f"```python\n{program}\n```"


def test_kill_minus_one_does_not_reach_a_program_graded_beside_it(private_tmp, leftover_processes):
    victim = _code_row(VICTIM.format(sleep=1.0), "victim")
    attacker = _code_row(KILL_EVERYTHING.format(seconds=2.0) + "print(7)\n", "attacker")
    results = grade_rows([victim[0], attacker[0]], [victim[1], attacker[1]], workers=2)
    assert results[0].score == 1.0, results[0].details
    assert leftover_processes(private_tmp) == []


def test_a_setsid_daemon_dies_with_its_program_and_spares_the_next_ones(
    private_tmp, leftover_processes
):
    # The daemon leaves the process group and kills everything it can for 4 s; before, it failed
    # the next three correct programs.
    daemon = (
        LIBC
        + "import time\nparent = libc.getpid()\n"
        + "if libc.fork() == 0:\n    libc.setsid()\n"
        + "    while libc.getppid() == parent:  # spare its own program: strike once it is done\n"
        + "        time.sleep(0.01)\n"
        + "\n".join("    " + line for line in KILL_EVERYTHING.format(seconds=4.0).splitlines()[2:])
        + "\nelse:\n    print(7)\n"
    )
    result, _ = grade(daemon, timeout_s=2.0)
    assert result.score == 1.0, result.details
    for _ in range(3):
        result, _ = grade(VICTIM.format(sleep=0.3))
        assert result.score == 1.0, result.details
    assert leftover_processes(private_tmp) == []


def test_a_sleeping_child_does_not_outlive_its_program(private_tmp, leftover_processes):
    # RLIMIT_CPU never stops a sleeper; only killing the program's whole namespace does.
    sleeper = LIBC + "import time\nif libc.fork() == 0:\n    libc.setsid()\n    time.sleep(60)\n"
    result, _ = grade(sleeper + "else:\n    print(7)\n")
    assert result.score == 1.0, result.details
    assert leftover_processes(private_tmp, wait_s=1.0) == []


def test_a_fork_bomb_leaves_the_threads_of_the_program_beside_it_alone(
    private_tmp, leftover_processes
):
    # A thread for deep recursion is a common competitive-programming idiom; when every sandbox
    # shared one uid, a fork bomb used up its process limit and the thread could not start.
    bomb = LIBC + "while True:\n    libc.fork()\n"
    victim = (
        SUM
        + "import threading, time\ntime.sleep(0.5)\n"
        + "t = threading.Thread(target=lambda: print(a + b))\nt.start()\nt.join()\n"
    )
    rows = [_code_row(bomb, "bomb"), _code_row(victim, "victim")]
    results = grade_rows([r[0] for r in rows], [r[1] for r in rows], workers=2)
    assert results[0].details["tests_status"] == ["timeout"]
    assert results[1].score == 1.0, results[1].details
    assert leftover_processes(private_tmp) == []


def test_a_ctypes_fork_bomb_holds_at_most_nproc_processes(private_tmp, leftover_processes):
    # Each process may use memory_mb of address space, so this bounds the memory a bomb holds.
    program = (
        LIBC
        + "import time\nforked = 0\n"
        + "for _ in range(100):\n"
        + "    pid = libc.fork()\n"
        + "    if pid == 0:\n        time.sleep(30)\n        libc._exit(0)\n"
        + "    forked += pid > 0\n"
        + f"print('bounded' if forked < {C.NPROC} else forked)\n"
    )
    result, _ = grade(program, expect_output("bounded"))
    assert result.score == 1.0, result.details
    assert leftover_processes(private_tmp) == []


def test_a_program_cannot_write_into_the_work_dir_of_another(private_tmp):
    victim = (
        SUM
        + "import time\nopen('scratch.txt', 'w').write(str(a + b))\ntime.sleep(1.0)\n"
        + "print(open('scratch.txt').read())\n"
    )
    pattern = f"{private_tmp}/pacs-sandbox-*/t*/work/scratch.txt"
    vandal = (
        LIBC
        + "import glob, time\nend = time.time() + 2.0\nwhile time.time() < end:\n"
        + f"    for path in glob.glob({pattern!r}):\n"
        + "        fd = libc.open(path.encode(), 0o1001)\n"  # O_WRONLY | O_TRUNC
        + "        libc.write(fd, b'666', 3)\n        libc.close(fd)\n"
        + "    time.sleep(0.01)\nprint(7)\n"
    )
    rows = [_code_row(victim, "victim"), _code_row(vandal, "vandal")]
    results = grade_rows([r[0] for r in rows], [r[1] for r in rows], workers=2)
    assert results[0].score == 1.0, results[0].details


# ----------------------------------------------------------------------------- 3: /tmp and /dev/shm


def test_sqlite_in_tmp_lands_in_a_private_place_removed_afterwards(token):
    # sqlite3 opens files in C, past the Python guard; before, the file stayed in the real /tmp.
    program = (
        "import sqlite3\n"
        f"db = sqlite3.connect('/tmp/{token}.db')\n"
        "db.execute('create table t (x)')\ndb.execute('insert into t values (7)')\ndb.commit()\n"
        "print(db.execute('select x from t').fetchone()[0])\n"
    )
    result, _ = grade(program, expect_output("7"))
    assert result.score == 1.0, result.details  # it worked, somewhere private
    assert list(Path("/tmp").glob(f"{token}*")) == []


def test_dev_shm_and_tmp_are_size_limited_and_removed_afterwards(token):
    # Before: 5 x 50 MB stayed in the machine's RAM-backed /dev/shm after the program ended.
    program = (
        LIBC
        + "chunk = b'x' * (1 << 20)\nwritten = 0\n"
        + "for folder in ('/dev/shm', '/tmp'):\n"
        + "    for k in range(5):\n"
        + f"        fd = libc.open(f'{{folder}}/{token}-{{k}}'.encode(), 0o101, 0o644)\n"
        + "        for _ in range(50):\n"
        + "            if fd < 0 or libc.write(fd, chunk, len(chunk)) != len(chunk):\n"
        + "                break\n"
        + "            written += 1\n"
        + "        libc.close(fd)\n"
        + f"print('limited' if written <= {C.SCRATCH_MB} else written)\n"
    )
    result, _ = grade(program, expect_output("limited"))
    assert result.score == 1.0, result.details
    assert list(Path("/dev/shm").glob(f"{token}*")) == []
    assert list(Path("/tmp").glob(f"{token}*")) == []


# ----------------------------------------------------------------------------- other attacks


def test_huge_stdout_is_cut_off_and_leaves_nothing(private_tmp):
    result, elapsed = grade("import sys\nwhile True:\n    sys.stdout.write('x' * (1 << 20))\n")
    assert result.details["tests_status"] == ["runtime_error"]
    assert f"output larger than {C.OUTPUT_LIMIT_MB} MB" in result.details["errors"][0]
    assert elapsed < 6.0 + C.STARTUP_GRACE_S
    assert list(private_tmp.iterdir()) == []  # the 64 MB of output went with the sandbox folder


def test_a_libc_socket_reaches_nothing():
    # The Python socket guard is bypassed; the private network namespace still holds.
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(0.5)
        port = server.getsockname()[1]
        program = (
            LIBC
            + "import struct\nfd = libc.socket(2, 1, 0)\n"
            + f"addr = struct.pack('!HH4s8x', 2, {port}, bytes([127, 0, 0, 1]))\n"
            + "addr = struct.pack('<H', 2) + addr[2:]\n"
            + "print('refused' if libc.connect(fd, addr, 16) != 0 else 'connected')\n"
        )
        result, _ = grade(program, expect_output("refused"))
        assert result.score == 1.0, result.details
        with pytest.raises(socket.timeout):
            server.accept()


def test_the_program_cannot_regain_privileges_in_a_new_user_namespace():
    # unshare(CLONE_NEWUSER) would give it a full capability set over a namespace of its own;
    # with nothing of the machine mounted inside the sandbox that reveals nothing, but it is
    # the usual first step of kernel exploits, so check that mounting still fails.
    program = (
        LIBC
        + "if libc.unshare(0x10000000 | 0x00020000) == 0:\n"  # CLONE_NEWUSER | CLONE_NEWNS
        + "    libc.mount(b'none', b'/tmp', b'tmpfs', 0, None)\n"
        + "import os\n"
        + "print('/work visible' if os.path.exists('/work/main') else 'nothing new')\n"
    )
    result, _ = grade(program, expect_output("nothing new"))
    assert result.score == 1.0, result.details


def test_grading_in_parallel_threads_stays_correct(private_tmp, leftover_processes):
    # Each sandbox gets a uid and namespace of its own; many at once must not collide.
    good = SUM + "print(a + b)\n"
    rows = [_code_row(good if i % 2 == 0 else good.replace("+", "*"), f"p{i}") for i in range(8)]
    results = grade_rows([r[0] for r in rows], [r[1] for r in rows], workers=4)
    assert [r.score for r in results] == [1.0, 0.0] * 4
    assert leftover_processes(private_tmp) == []


def test_a_machine_without_namespaces_refuses_to_grade():
    # Root without CAP_SYS_ADMIN (as in an unprivileged container) cannot unshare or mount: the
    # grader must say so, not run the program with fewer layers.
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is not installed")
    script = (
        "from pacs.rewards import code as C\n"
        "try:\n"
        "    C.grade('```python\\nprint(7)\\n```', [{'input': '', 'output': '7'}])\n"
        "except C.SandboxUnavailable as exc:\n"
        "    print('refused:', exc)\n"
    )
    done = subprocess.run(
        [setpriv, "--bounding-set=-sys_admin", sys.executable, "-c", script],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.startswith("refused: the code sandbox cannot run on this machine"), done
    assert "unshare" in done.stdout and "Operation not permitted" in done.stdout


# Run as nobody: grades the attacks it reads on stdin, the first two side by side.
ROOTLESS_GRADER = """
import json, sys
from pacs.rewards import code as C, grade_rows
attacks = json.load(sys.stdin)
rows = [{"task": "code", "tests": [{"input": "", "output": a["output"]}]} for a in attacks]
results = grade_rows(rows, [f"```python\\n{a['program']}\\n```" for a in attacks], workers=2)
print(json.dumps({
    "layers": C.sandbox_layers(),
    "results": {a["name"]: [r.score, r.details["tests_status"], r.details["sandbox"]]
                for a, r in zip(attacks, results)},
}))
"""


def _rootless_attacks(secret: Path, token: str) -> list[dict]:
    caps = "CapPrm', 'CapEff', 'CapBnd', 'CapAmb"
    hidden = ["/work/main", "/etc/shadow", str(secret)]
    programs = {
        "victim": (VICTIM.format(sleep=1.0).replace(SUM, "a, b = 3, 4\n"), "7"),
        "kill -1": (KILL_EVERYTHING.format(seconds=2.0) + "print(7)\n", "7"),
        "capabilities": (
            "f = dict(line.split(':') for line in open('/proc/self/status'))\n"
            + f"print(' '.join(str(int(f[n], 16)) for n in ['{caps}']))",
            "0 0 0 0",
        ),
        "filesystem": (
            f"import os\nprint([os.path.exists(p) for p in {hidden!r}])",
            "[False, False, False]",
        ),
        "/dev/shm": (
            LIBC + f"fd = libc.open(b'/dev/shm/{token}', 0o101, 0o644)\nprint(fd >= 0)",
            "True",
        ),
        "sleeper": (
            LIBC + "import time\nif libc.fork() == 0:\n    time.sleep(60)\nelse:\n    print(7)",
            "7",
        ),
    }
    return [{"name": k, "program": p, "output": o} for k, (p, o) in programs.items()]


def _python_for_nobody() -> str | None:
    """A system Python 3.11+ that an unprivileged user may run (ours may sit under /root)."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.path.exists(candidate):
            done = subprocess.run(
                [
                    "setpriv",
                    "--reuid=65534",
                    "--regid=65534",
                    "--clear-groups",
                    candidate,
                    "-c",
                    "import sys; print(sys.version_info >= (3, 11))",
                ],
                check=False,
                capture_output=True,
                text=True,
            )
            if done.stdout.strip() == "True":
                return candidate
    return None


def test_rootless_mode_contains_the_attacks_and_marks_its_results(token, leftover_processes):
    # Started by a user other than root, the sandbox runs in a user namespace: every layer but
    # the private uid, and each result says so.
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to start the grader as the unprivileged user nobody")
    if int(Path("/proc/sys/user/max_user_namespaces").read_text()) == 0:
        pytest.skip("user namespaces are disabled on this machine (rootless mode cannot run)")
    python = _python_for_nobody()
    if python is None:
        pytest.skip("no Python >= 3.11 that the user nobody may run")
    home = Path(tempfile.mkdtemp(prefix="pacs-rootless-"))
    try:
        home.chmod(0o777)
        secret = home / "secret_tests.jsonl"
        secret.write_text("{}\n")
        secret.chmod(0o644)  # readable by nobody: only the sandbox's filesystem view hides it
        # nobody imports a copy of the package: the checkout may sit where nobody cannot read
        # (a clone under `mktemp -d` is mode 700)
        source = home / "src"
        shutil.copytree(
            Path(C.__file__).parents[1],
            source / "pacs",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(home),
            "TMPDIR": str(home),
            "PYTHONPATH": str(source),
        }
        nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        done = subprocess.run(
            [*nobody, python, "-c", ROOTLESS_GRADER],
            input=json.dumps(_rootless_attacks(secret, token)),
            check=False,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        got = json.loads(done.stdout)
        leftovers = leftover_processes(home)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert got["layers"]["uid"] == "the grading user's, as uid 0 of a user namespace"
    assert got["layers"]["capabilities"] == "none"
    for name, verdict in got["results"].items():
        assert verdict == [1.0, ["pass"], "rootless"], name
    assert list(Path("/dev/shm").glob(f"{token}*")) == []
    assert leftovers == []


def test_threads_keep_working_inside_the_sandbox():
    program = (
        "import threading, sys\nsys.setrecursionlimit(10 ** 6)\nthreading.stack_size(1 << 26)\n"
        "def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\n"
        "out = []\nt = threading.Thread(target=lambda: out.append(depth(100000)))\n"
        "t.start()\nt.join()\nprint(out[0])\n"
    )
    result, _ = grade(program, expect_output("100000"))
    assert result.score == 1.0, result.details


def test_the_program_cannot_forge_how_it_ended():
    # The outcome fd's number is on the harness's command line; the program never holds it, so
    # writing "exited 0" there and a "done" status line, then dying, is still a runtime error.
    forger = (
        "import os, sys\nprint(7)\n"
        "for fd, line in ((3, b'{\"exit\": 0}'), (int(sys.argv[3]), b'{\"exit\": 0}'),\n"
        '                 (int(sys.argv[2]), b\'{"status": "done"}\')):\n'
        "    try:\n        os.write(fd, line + b'\\n')\n    except OSError:\n        pass\n"
        "os._exit(3)\n"
    )
    result, _ = grade(forger)
    assert result.details["tests_status"] == ["runtime_error"]
    assert result.details["errors"][0].startswith("exit code 3")
