"""Hostile programs against the code sandbox, as a markdown table (not a test).

    .venv/bin/python benchmarks/attack_table.py [--rootless] [--out docs/sandbox_attacks.md]

Grades each attack through :func:`pacs.rewards.code.grade` (memory_mb=256, 6 s) and prints one
row per attack: the class of issue 18 it belongs to (1 crash the grader, 2 forge a result, 3 hold
memory outside the limit, 4 make the comparison expensive, 5 threads and fork bombs; "own" for
the others), whether it was contained (the attack's own criterion, stated in the table), the
verdict, the grader's wall seconds, and what was left behind (processes still naming the
sandbox's folder, files with the attack's token in /tmp and /dev/shm, cgroups left). Run as root
it grades as root and then, with ``--rootless`` implied by ``--out``, again as the user nobody
(through ``setpriv`` and a system Python, like tests/rewards/test_sandbox_attacks.py). Exits
non-zero if any attack was not contained.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

LIBC = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
MB = 256  # memory_mb of every attack; the memory cgroup allows MB + 64 scratch + 64 overhead
BOUND = MB + 128
STDIN = [{"input": "3 4\n", "output": "7\n", "testtype": "stdin"}]
FUNCTIONAL = [{"input": "[1, 2]\n3", "output": "[1, 2, 3]", "testtype": "functional"}]


def expect(text: str) -> list[dict]:
    return [{"input": "", "output": text, "testtype": "stdin"}]


def bounded(var: str = "held") -> str:
    return f"print('bounded' if {var} <= {BOUND} else {var})\n"


HELD = {
    "memfd 17 x 60 MB": "held = 0\ntry:\n    for _ in range(17):\n        fd = os.memfd_create('x')\n        for _ in range(60):\n            os.write(fd, b'x' * (1 << 20))\n            held += 1\nexcept OSError:\n    pass\n",
    "SysV shm 8 x 128 MB": "libc.shmat.restype = ctypes.c_void_p\nheld = 0\nfor _ in range(8):\n    sid = libc.shmget(0, 128 << 20, 0o1600)\n    if sid < 0:\n        break\n    addr = libc.shmat(sid, None, 0)\n    if addr in (None, 2 ** 64 - 1):\n        break\n    ctypes.memset(addr, 1, 128 << 20)\n    libc.shmdt(ctypes.c_void_p(addr))\n    held += 128\n",
    "2,500 filled socketpairs": "held = 0\nchunk = b'x' * 65536\nfor _ in range(2500):\n    pair = (ctypes.c_int * 2)()\n    if libc.socketpair(1, 1, 0, pair) != 0:\n        break\n    while libc.send(pair[0], chunk, len(chunk), 0x40) > 0:\n        held += 1 / 16\n",
    "500 pipes of 1 MB": "held = 0\nchunk = b'x' * 65536\nfor _ in range(500):\n    fds = (ctypes.c_int * 2)()\n    if libc.pipe2(fds, 0o4000) != 0:\n        break\n    libc.fcntl(fds[1], 1031, 1 << 20)\n    while libc.write(fds[1], chunk, len(chunk)) > 0:\n        held += 1 / 16\n",
    "nested user namespace + 1 GB tmpfs": "held = 0\nchunk = b'x' * (1 << 20)\nuid, gid = os.getuid(), os.getgid()\ndef put(name, text):\n    fd = libc.open(f'/proc/self/{name}'.encode(), 1)\n    libc.write(fd, text.encode(), len(text))\n    libc.close(fd)\nlibc.prctl(4, 1, 0, 0, 0)\nif libc.unshare(0x10000000 | 0x00020000) == 0:\n    put('setgroups', 'deny')\n    put('uid_map', f'0 {uid} 1')\n    put('gid_map', f'0 {gid} 1')\n    libc.mount(b'none', b'/tmp', b'tmpfs', 0, b'size=1g')\n    for k in range(8):\n        fd = libc.open(f'/tmp/f{k}'.encode(), 0o101, 0o600)\n        for _ in range(60):\n            if libc.write(fd, chunk, len(chunk)) != len(chunk):\n                break\n            held += 1\n",
    "fork 20 x 200 MB (ctypes)": "import time\nkids = []\nfor _ in range(20):\n    pid = libc.fork()\n    if pid == 0:\n        x = b'x' * (200 << 20)\n        time.sleep(3)\n        libc._exit(0)\n    if pid < 0:\n        break\n    kids.append(pid)\ntime.sleep(2)\ndef rss(pid):\n    try:\n        return sum(int(l.split()[1]) for l in open(f'/proc/{pid}/status') if l.startswith('VmRSS')) / 1024\n    except OSError:\n        return 0\nheld = sum(map(rss, kids))\n",
}  # fmt: skip


def attacks(token: str) -> list[dict]:
    """name, class, program, tests, fn_name, the test that says 'contained', and what it means."""
    rows = [
        _attack("prints sNaN", "1", "print('sNaN')", STDIN, verdict=("fail",)),
        _attack(
            "returns a list nested 3,000 deep",
            "1",
            "def f(a, b):\n    x = []\n    for _ in range(3000):\n        x = [x]\n    return x",
            FUNCTIONAL,
            "f",
            verdict=("fail",),
        ),
        _attack(
            "5,000-digit line on every fd",
            "1",
            _every_fd("'9' * 5000") + "print(7)",
            STDIN,
            verdict=("pass",),
        ),
        _attack(
            "100,000 brackets on every fd",
            "1",
            _every_fd("'[' * 100000") + "print(7)",
            STDIN,
            verdict=("pass",),
        ),
        _attack(
            "forged 'done' record, no function",
            "2",
            _every_fd('\'{"status": "done", "result": "[1, 2, 3]"}\'') + "os._exit(0)",
            FUNCTIONAL,
            "f",
            score=0.0,
        ),
        _attack(
            "truncates every fd, wrong answer",
            "2",
            "import os\nfor fd in range(3, 64):\n    try:\n        os.ftruncate(fd, 0)\n    except "
            "OSError:\n        pass\nprint(8)",
            STDIN,
            verdict=("fail",),
        ),
        _attack(
            "forges its exit status, exits 3",
            "2",
            _every_fd("'{\"exit\": 0}'") + "print(7)\nos._exit(3)",
            STDIN,
            verdict=("runtime_error",),
        ),
    ]
    rows += [
        _attack(
            name, "3", LIBC + body + bounded(), expect("bounded"), verdict=("pass", "memory_error")
        )
        for name, body in HELD.items()
    ]
    rows += [
        _attack(
            "60 MB of output on one line",
            "4",
            "import sys\nsys.stdout.write('1 ' * 30_000_000)",
            STDIN,
            verdict=("fail",),
        ),
        _attack(
            "ThreadPoolExecutor(8)",
            "5",
            "from concurrent.futures import ThreadPoolExecutor\nwith ThreadPoolExecutor(8) as p:\n "
            "   print(sum(p.map(abs, range(100))))",
            expect("4950"),
            verdict=("pass",),
        ),
        _attack(
            "ctypes fork bomb",
            "5",
            LIBC + "while True:\n    libc.fork()",
            STDIN,
            verdict=("timeout", "runtime_error"),
        ),
        _attack(
            "thread bomb",
            "5",
            "import threading, time\nn = 0\ntry:\n    while n < 5000:\n        "
            "threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n        n += "
            "1\nexcept RuntimeError:\n    pass\nprint('bounded' if n < 100 else n)",
            expect("bounded"),
            verdict=("pass",),
        ),
    ]
    rows += _own_attacks(token)
    return rows


def _own_attacks(token: str) -> list[dict]:
    return [
        _attack("kill(-1, SIGKILL) for 2 s", "own", LIBC + "import time\nend = time.time() + 2\nwhile time.time() < end:\n    libc.kill(-1, 9)\nprint(7)", STDIN, verdict=("pass", "runtime_error")),
        _attack("setsid daemon outlives its program", "own", LIBC + "import time\nif libc.fork() == 0:\n    libc.setsid()\n    time.sleep(60)\nprint(7)", STDIN, verdict=("pass",)),
        _attack("files in /tmp and /dev/shm", "own", LIBC + f"for d in ('/tmp', '/dev/shm'):\n    fd = libc.open(f'{{d}}/{token}'.encode(), 0o101, 0o644)\n    libc.write(fd, b'x' * (1 << 20), 1 << 20)\nprint(7)", STDIN, verdict=("pass",)),
        _attack("fills the scratch tmpfs", "own", LIBC + "n = 0\nfor k in range(200):\n    fd = libc.open(f'/tmp/big{k}'.encode(), 0o101, 0o644)\n    for _ in range(10):\n        if libc.write(fd, b'x' * (1 << 20), 1 << 20) <= 0:\n            break\n        n += 1\nprint('bounded' if n <= 64 else n)", expect("bounded"), verdict=("pass",)),
        _attack("20,000 empty files (inodes)", "own", "import os\nn = 0\ntry:\n    while n < 20000:\n        open(f'f{n}', 'w').close()\n        n += 1\nexcept OSError:\n    pass\nprint('bounded' if n <= 4096 else n)", expect("bounded"), verdict=("pass",)),
        _attack("connects to the host's localhost", "own", LIBC + "import struct\nfd = libc.socket(2, 1, 0)\naddr = struct.pack('<HH4s8x', 2, 22 << 8, bytes([127, 0, 0, 1]))\nprint('refused' if libc.connect(fd, addr, 16) != 0 else 'connected')", expect("refused"), verdict=("pass",)),
        _attack("keyctl, io_uring, mq_open, ptrace", "own", LIBC + "calls = [libc.syscall(250, 0, 0), libc.syscall(425, 8, 0), libc.mq_open(b'/q', 0o100, 0o600, None), libc.ptrace(0, 0, 0, 0)]\nprint('denied' if all(c < 0 for c in calls) else calls)", expect("denied"), verdict=("pass",)),
        _attack("reads the grader's files", "own", "import os\nprint([os.path.exists(p) for p in ('/etc/shadow', '/etc/passwd', '/home', '/var', '/work/wt', '/sys/fs/cgroup')])", expect(str([False] * 6)), verdict=("pass",)),
        _attack("SIGSTOPs itself", "own", LIBC + "libc.raise_(19) if hasattr(libc, 'raise_') else libc.kill(os.getpid(), 19)\nprint(7)", STDIN, verdict=("timeout",)),
        _attack("64 MB of stderr", "own", "import sys\nsys.stderr.write('x' * (64 << 20))\nprint(7)", STDIN, verdict=("pass", "runtime_error")),
    ]  # fmt: skip


def _every_fd(text: str) -> str:
    return (
        f"import os\nfor fd in range(3, 64):\n    try:\n        os.write(fd, ({text}).encode() + "
        "b'\\n')\n"
        "    except OSError:\n        pass\n"
    )


def _attack(name, cls, program, tests, fn_name=None, verdict=None, score=None) -> dict:
    rule = f"score {score}" if score is not None else " or ".join(verdict)
    return {"name": name, "class": cls, "program": program, "tests": tests, "fn_name": fn_name,
            "verdict": list(verdict or []), "score": score, "rule": rule}  # fmt: skip


def run_one(attack: dict, root: Path, token: str) -> dict:
    from pacs.rewards import code

    start = time.monotonic()
    result = code.grade(
        f"```python\n{attack['program']}\n```", attack["tests"], attack["fn_name"], memory_mb=MB
    )
    seconds = time.monotonic() - start
    status = (result.details.get("tests_status") or [result.status])[0]
    contained = (
        result.score == attack["score"]
        if attack["score"] is not None
        else status in attack["verdict"]
    )
    error = (result.details.get("errors") or [result.details.get("error", "")])[0]
    return {
        "name": attack["name"], "class": attack["class"], "rule": attack["rule"],
        "contained": contained, "verdict": f"{status}: {error[:70]}".rstrip(": "),
        "seconds": round(seconds, 2), "leftovers": leftovers(root, token),
        "mode": result.details.get("sandbox", "?"),
        "missing": result.details.get("missing_layers", []),
    }  # fmt: skip


def leftovers(root: Path, token: str) -> list[str]:
    """Processes still naming the sandbox folder, the token's files, cgroups left by us."""
    time.sleep(0.2)
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if str(root).encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(f"process {pid}")
        except OSError:
            continue
    found += [str(p) for d in ("/tmp", "/dev/shm") for p in Path(d).glob(f"{token}*")]
    found += [str(p) for p in Path("/sys/fs/cgroup").glob(f"**/pacs-sandbox-{os.getpid()}-*")]
    return found


def grade_all() -> list[dict]:
    """Every attack in this process (root, or whoever runs it)."""
    root = Path(tempfile.mkdtemp(prefix="pacs-attacks-"))
    tempfile.tempdir = str(root)  # the sandboxes' folders, so leftover processes can be found
    token = f"pacs-attack-{uuid.uuid4().hex[:10]}"
    try:
        return [run_one(attack, root, token) for attack in attacks(token)]
    finally:
        for d in ("/tmp", "/dev/shm"):
            for p in Path(d).glob(f"{token}*"):
                p.unlink()
        tempfile.tempdir = None
        shutil.rmtree(root, ignore_errors=True)


def grade_as_nobody() -> list[dict]:
    """The same attacks run by the user nobody: the rootless sandbox."""
    python = next(
        (p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if os.path.exists(p)), None
    )
    if os.geteuid() != 0 or python is None or shutil.which("setpriv") is None:
        raise SystemExit(
            "--rootless needs root, setpriv and a system python3 the user nobody can run"
        )
    home = Path(tempfile.mkdtemp(prefix="pacs-rootless-"))
    home.chmod(0o777)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "TMPDIR": str(home),
           "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}  # fmt: skip
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    try:
        done = subprocess.run([*nobody, python, __file__, "--json"], capture_output=True,
                              text=True, env=env, timeout=1800, check=False)  # fmt: skip
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"the rootless run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def table(results: list[dict]) -> str:
    lines = [
        "| attack | class | contained (rule) | verdict | seconds | leftovers |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        verdict = r["verdict"].replace("|", "/").replace("\n", " ")
        contained = ("yes" if r["contained"] else "**NO**") + f" ({r['rule']})"
        left = ", ".join(r["leftovers"]) or "none"
        lines.append(
            f"| {r['name']} | {r['class']} | {contained} | {verdict} | {r['seconds']} | {left} |"
        )
    missing = sorted({m for r in results for m in r["missing"]})
    mode = results[0]["mode"] if results else "?"
    lines.append(f"\nSandbox mode: {mode}; missing layers: {', '.join(missing) or 'none'}.")
    return "\n".join(lines)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rootless", action="store_true", help="also grade as the user nobody")
    p.add_argument("--json", action="store_true", help="print the results as JSON (internal)")
    p.add_argument("--out", help="write the markdown (root and rootless tables) to this file")
    args = p.parse_args(argv)
    results = {"root" if os.geteuid() == 0 else "this user": grade_all()}
    if args.json:
        print(json.dumps(results.popitem()[1]))
        return 0
    if args.rootless or args.out:
        results["rootless (as nobody)"] = grade_as_nobody()
    text = "\n\n".join(f"### Graded as {who}\n\n{table(rows)}" for who, rows in results.items())
    print(text)
    if args.out:
        Path(args.out).write_text(HEADER + text + "\n", encoding="utf-8")
    return 0 if all(r["contained"] for rows in results.values() for r in rows) else 1


HEADER = """# The code sandbox against hostile programs

Written by `python benchmarks/attack_table.py --out docs/sandbox_attacks.md` (as root; the second
table is the same attacks graded by the user nobody, i.e. the rootless sandbox). Every attack runs
with `memory_mb=256` and the 6 s limit; "contained" states the attack's own criterion: the verdict
the sandbox must give, or for memory attacks that the program either held at most 384 MB (256 MB
plus the 64 MB scratch and 64 MB overhead the memory cgroup allows) or was stopped as a memory
error. Classes are issue 18's (1 crash the grader, 2 forge a result, 3 hold memory outside the
limit, 4 make the comparison expensive, 5 threads and fork bombs); "own" are further attacks.
Seconds are the grader's wall time for the one test on a shared 2-core machine.

"""


if __name__ == "__main__":
    sys.exit(main())
