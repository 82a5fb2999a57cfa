"""Throughput of the LiveCodeBench code sandbox (not a test).

    .venv/bin/python benchmarks/bench_sandbox.py [--programs N] [--tests T] [--workers 1 2]
        [--baseline main] [--rounds 2]

Grades ``--programs`` responses of ``--tests`` stdin tests each through
:func:`pacs.rewards.grade_rows` (so programs run ``workers`` at a time, as in an evaluation): a
mix of correct programs, wrong ones and ones that raise, each a few lines like most LCB answers.
Every test is one sandboxed process, so the figure that matters is seconds per test.

Prints wall milliseconds per test and per program, and the CPU milliseconds the sandbox's
processes used per test (steadier than wall time on a busy machine), for each worker count;
exits non-zero if any grade is not what the mix says it should be (a broken sandbox would show
as errors).

``--baseline REV`` also grades the same rows with the sandbox of git revision REV (its
``code.py`` and ``_sandbox_harness.py``, loaded from ``git show``), alternating the two for
``--rounds`` rounds in this one run, and prints the ratio of the per-test times.
"""

from __future__ import annotations

import argparse
import importlib.util
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pacs.rewards import code

REPO = Path(__file__).resolve().parents[1]

PROGRAMS = {
    # kind: (program, score it must get)
    "correct": ("n = int(input())\nprint(sum(map(int, input().split())) % n)\n", 1.0),
    "wrong": ("n = int(input())\nprint(sum(map(int, input().split())))\n", 0.0),
    "raises": ("n = int(input())\nraise ValueError(n)\n", 0.0),
}
KINDS = ["correct", "correct", "wrong", "raises"]


def make_rows(n_programs: int, n_tests: int) -> tuple[list[dict], list[str], list[float]]:
    """Rows of ``n_tests`` stdin tests (sum mod n), responses and the scores they must get."""
    tests = []
    for t in range(n_tests):
        n = 7 + t
        values = list(range(t, t + 50))
        tests.append(
            {"input": f"{n}\n{' '.join(map(str, values))}\n", "output": f"{sum(values) % n}\n"}
        )
    rows, responses, expected = [], [], []
    for i in range(n_programs):
        program, score = PROGRAMS[KINDS[i % len(KINDS)]]
        rows.append({"task": "code", "tests": tests, "fn_name": None, "problem_id": f"p{i}"})
        responses.append(f"My solution:\n```python\n{program}```\n")
        expected.append(score)
    return rows, responses, expected


def _children_cpu_s() -> float:
    """CPU seconds of every reaped sandbox process: a figure that other load barely changes."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def load_sandbox(revision: str, folder: Path):
    """The code grader of git ``revision`` as a module (its harness beside it)."""
    for name in ("code.py", "_sandbox_harness.py"):
        text = subprocess.run(
            ["git", "show", f"{revision}:src/pacs/rewards/{name}"],
            cwd=REPO, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        (folder / name).write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"sandbox_{revision}", folder / "code.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def grade_with(sandbox, rows, responses, workers: int) -> list:
    """What grade_rows does for code rows: ``workers`` programs at once, each test sandboxed."""

    def one(i: int):
        return sandbox.grade(responses[i], rows[i]["tests"], rows[i]["fn_name"])

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, range(len(rows))))


def measure(name, sandbox, rows, responses, expected, workers, n_tests) -> tuple[float, bool]:
    cpu_before = _children_cpu_s()
    start = time.perf_counter()
    results = grade_with(sandbox, rows, responses, workers)
    elapsed = time.perf_counter() - start
    cpu = (_children_cpu_s() - cpu_before) / n_tests
    wrong = sum(r.score != want for r, want in zip(results, expected))
    print(
        f"{name:>10} workers={workers}: {elapsed / n_tests * 1000:.1f} ms per test "
        f"({cpu * 1000:.1f} ms CPU in the sandbox's processes), "
        f"{elapsed / len(rows) * 1000:.1f} ms per program; statuses "
        f"{dict(Counter(r.status for r in results))}; {wrong} scores not as expected"
    )
    return elapsed / n_tests, wrong > 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--programs", type=int, default=24)
    p.add_argument("--tests", type=int, default=3, help="stdin tests per program")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--baseline", help="git revision whose sandbox to time beside this one")
    p.add_argument("--rounds", type=int, default=2, help="alternations with --baseline")
    args = p.parse_args(argv)
    rows, responses, expected = make_rows(args.programs, args.tests)
    n_tests = args.programs * args.tests
    print(f"sandbox layers: {code.sandbox_layers()}")  # the one-off probe, outside the timing
    with tempfile.TemporaryDirectory() as folder:
        sandboxes = {"this tree": code}
        if args.baseline:
            sandboxes[args.baseline] = load_sandbox(args.baseline, Path(folder))
            sandboxes[args.baseline].sandbox_layers()
        failed, times = False, {}
        for _ in range(args.rounds if args.baseline else 1):
            for workers in args.workers:
                for name, sandbox in sandboxes.items():
                    per_test, bad = measure(
                        name, sandbox, rows, responses, expected, workers, n_tests
                    )
                    times.setdefault((name, workers), []).append(per_test)
                    failed |= bad
    if args.baseline:
        for workers in args.workers:
            new, old = min(times["this tree", workers]), min(times[args.baseline, workers])
            print(f"workers={workers}: best per-test time {new * 1000:.1f} ms "
                  f"vs {old * 1000:.1f} ms at {args.baseline}: x{new / old:.2f}")  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
