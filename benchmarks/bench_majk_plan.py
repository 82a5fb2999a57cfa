"""Benchmark: maj@k's equivalence plan with many distinct answers in one problem (issue 47).

    python benchmarks/bench_majk_plan.py [--distinct 9000]

Writes a graded file of one math problem whose samples give ``--distinct`` different answers
(expressions, so no two join as plain numbers and every pair is a candidate), runs the whole
passk stage on it (real math verifier, no bootstrap) and prints the CPU seconds of this process
and its children, the peak memory, and the file's size. Target: < 5 s of CPU at 9,000 distinct
answers (the plan that built every pair took 29.9 s and 3.2 GB).
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import tempfile
import time
from pathlib import Path

from pacs.evaluation import passk


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def write_graded(path: Path, distinct: int) -> None:
    with path.open("w", encoding="utf-8") as f:
        for i in range(distinct):
            answer = f"x^{{{i}}} + \\frac{{y}}{{{i + 1}}}"
            row = {
                "problem_id": "p0",
                "sample_idx": i,
                "finish_reason": "stop",
                "task": "math",
                "score": 0.0,
                "extracted": answer,
                "status": "ok",
            }
            f.write(json.dumps(row) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--distinct", type=int, default=9000)
    args = parser.parse_args()
    passk.math_verifier([])  # math-verify's import, outside the measurement
    with tempfile.TemporaryDirectory() as tmp:
        graded = Path(tmp) / "graded.jsonl"
        write_graded(graded, args.distinct)
        size = graded.stat().st_size
        cpu0, wall0 = cpu_seconds(), time.perf_counter()
        doc, _ = passk.compute(graded, benchmark="b", model="m", run="r", seed=0, n_boot=0)
        cpu, wall = cpu_seconds() - cpu0, time.perf_counter() - wall0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"CPU: {cpu_model()}")
    print(f"graded file: {size / 1e6:.2f} MB, 1 problem, {args.distinct:,} distinct answers")
    print(f"passk stage: {cpu:.2f} s CPU ({wall:.2f} s wall), peak RSS {peak_mb:.0f} MB")
    verdict = "met" if cpu < 5 else "MISSED"
    print(f"maj@1 = {doc['maj_at_k'][0]['value']}; target < 5 s of CPU: {verdict}")


if __name__ == "__main__":
    main()
