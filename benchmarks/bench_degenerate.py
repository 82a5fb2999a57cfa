"""Grading time of degenerate responses of growing size, and of huge vote keys (not a test).

    .venv/bin/python benchmarks/bench_degenerate.py [--sizes 10000 100000 1000000] [--timeout 1]
        [--key-digits 400000 1000000]

Each kind of response once broke a step that ran before the grader's deadline (a regex with
quadratic or exponential backtracking, a quadratic search): issue 25. For each kind and size it
prints the wall time of one in-process ``grade`` (math, strict), ``gpqa.grade`` or
``code.extract_code``, and the verdict. Every step before math-verify's deadline is linear, so
each time stays within the deadline plus a small constant, growing at most linearly with size.
Exits non-zero if one does not.

Issue 35 added 1 MB boxes of unicode (``½``, ``⅞``, ``√``, ``×``: their LaTeX rewrite once ran
before the deadline) and vote keys of 400k-1M digits (passk's rational conversion was quadratic,
maj@k's pair merge had no overall bound). Every cell prints CPU seconds too; the goal is at most
the timeout + 1 s of CPU per response and per vote key.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time

from pacs.rewards import code, gpqa
from pacs.rewards import math as M

SLACK_S = 0.5  # beyond the deadline: process noise on a shared machine


def kinds(n: int) -> dict[str, tuple[str, str]]:
    """name -> (grader, response of exactly ``n`` characters)."""
    shapes = {  # (grader, head, filler repeated, tail)
        "box of digits": ("math", "\\boxed{", "1", "}"),
        "box of digits, then a letter": ("math", "\\boxed{", "1", "x}"),
        "box of spaces, then a letter": ("math", "\\boxed{1", " ", "x}"),
        "box of thin spaces, then a letter": ("math", "\\boxed{1", "\u2009", "x}"),
        "spacing commands, then a percent": ("math", "\\boxed{1", "\\,", "x%}"),
        "degree mark, then spaces": ("math", "\\boxed{^", " ", "x}"),
        "digits, then an overline": ("math", "\\boxed{", "1", "x\\overline{3}}"),
        "repeating decimal, long period": ("math", "\\boxed{0.\\overline{", "3", "}}"),
        "a box, then many \\boxedx": ("math", "\\boxed{3}", "\\boxedx", ""),
        "box of \u00bd": ("math", "\\boxed{", "\u00bd", "}"),
        "box of \u215e": ("math", "\\boxed{", "\u215e", "}"),
        "box of \u221a": ("math", "\\boxed{", "\u221a", "}"),
        "box of \u00d7": ("math", "\\boxed{", "\u00d7", "}"),
        "prose, then a box": ("math", "", "word ", "\\boxed{5}"),
        "answer line, then spaces": ("gpqa", "ANSWER:", " ", "x"),
        "backtick runs": ("code", "", "`", ""),
        "many empty fences": ("code", "", "```\n", ""),
    }
    out = {}
    for name, (grader, head, filler, tail) in shapes.items():
        count = (n - len(head) - len(tail)) // len(filler)
        body = head + filler * count + tail
        out[name] = (grader, body + " " * (n - len(body)))
    return out


def grade_once(grader: str, response: str, timeout: float) -> str:
    if grader == "math":
        result = M.grade(response, "5", timeout=timeout)
        return f"{result.status}, {result.details.get('method', '-')}"
    if grader == "gpqa":
        return gpqa.grade(response, "A").status
    return "code found" if code.extract_code(response) else "no code"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    p.add_argument("--timeout", type=float, default=1.0)
    p.add_argument("--key-digits", type=int, nargs="+", default=[400_000, 1_000_000])
    args = p.parse_args(argv)
    M.grade("\\boxed{0.5}", "\\frac{1}{2}")  # import and warm math-verify outside the timing
    print(f"machine: {platform.machine()}, {platform.processor() or platform.platform()}")
    print(f"python {platform.python_version()}; math timeout {args.timeout} s\n")
    print("| response | " + " | ".join(f"{n:,} characters" for n in args.sizes) + " |")
    print("|---" * (len(args.sizes) + 1) + "|")
    failed = False
    for name in kinds(10):
        cells = []
        for n in args.sizes:
            grader, response = kinds(n)[name]
            wall, cpu = time.perf_counter(), time.process_time()
            verdict = grade_once(grader, response, args.timeout)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            failed |= min(wall, cpu) > args.timeout + SLACK_S
            cells.append(f"{wall * 1000:,.1f} ms, {cpu:.2f} s CPU ({verdict})")
        print(f"| {name} | " + " | ".join(cells) + " |")
    failed |= vote_keys(args.key_digits, args.timeout)
    return 1 if failed else 0


def vote_keys(sizes: list[int], timeout: float) -> bool:
    """CPU seconds of passk's vote-key steps on keys of ``sizes`` digits; True if one is slow."""
    from pacs.evaluation import passk
    from pacs.evaluation.passk import Problem

    print("\n| vote key | " + " | ".join(f"{n:,} digits" for n in sizes) + " |")
    print("|---" * (len(sizes) + 1) + "|")
    steps = {
        "normalise (maj@k key)": lambda key: M.normalize_answer(key),
        "rational conversion": lambda key: getattr(passk, "number_key", passk.rational_value)(key),
        "pair merge, 4 keys": lambda key: passk.merge_equal_answers(
            [Problem("p", [0.0] * 4, [key, key + "1", "\\sqrt{2}", "1" + key])],
            passk.math_verifier,
        ),
    }
    failed = False
    for name, step in steps.items():
        cells = []
        for n in sizes:
            key = "7" * n
            cpu = time.process_time()
            step(key)
            cpu = time.process_time() - cpu
            failed |= cpu > timeout + 1.0 + SLACK_S
            cells.append(f"{cpu:.2f} s CPU")
        print(f"| {name} | " + " | ".join(cells) + " |")
    return failed


if __name__ == "__main__":
    sys.exit(main())
