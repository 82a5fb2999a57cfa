"""Throughput of the LiveCodeBench code sandbox (not a test).

    .venv/bin/python benchmarks/bench_sandbox.py [--programs N] [--tests T] [--workers 1 2]

Grades ``--programs`` responses of ``--tests`` stdin tests each through
:func:`pacs.rewards.grade_rows` (so programs run ``workers`` at a time, as in an evaluation): a
mix of correct programs, wrong ones and ones that raise, each a few lines like most LCB answers.
Every test is one sandboxed process, so the figure that matters is seconds per test.

Prints wall milliseconds per test and per program, and the CPU milliseconds the sandbox's
processes used per test (steadier than wall time on a busy machine), for each worker count;
exits non-zero if any grade is not what the mix says it should be (a broken sandbox would show
as errors).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections import Counter

from pacs.rewards import code, grade_rows

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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--programs", type=int, default=24)
    p.add_argument("--tests", type=int, default=3, help="stdin tests per program")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = p.parse_args(argv)
    rows, responses, expected = make_rows(args.programs, args.tests)
    print(f"sandbox layers: {code.sandbox_layers()}")  # the one-off probe, outside the timing
    failed = False
    for workers in args.workers:
        cpu_before = _children_cpu_s()
        start = time.perf_counter()
        results = grade_rows(rows, responses, workers=workers)
        elapsed = time.perf_counter() - start
        n_tests = args.programs * args.tests
        cpu = (_children_cpu_s() - cpu_before) / n_tests
        wrong = sum(r.score != want for r, want in zip(results, expected))
        print(
            f"workers={workers}: {elapsed / n_tests * 1000:.1f} ms per test "
            f"({cpu * 1000:.1f} ms CPU in the sandbox's processes), "
            f"{elapsed / args.programs * 1000:.1f} ms per program ({elapsed:.2f} s for "
            f"{args.programs} programs x {args.tests} tests); statuses "
            f"{dict(Counter(r.status for r in results))}; {wrong} scores not as expected"
        )
        failed |= wrong > 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
