"""Grading from threads gives the main thread's results (math-verify's signal timeout cannot)."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

from pacs.rewards import math as M


def _items(n: int) -> tuple[list[str], list[str]]:
    """A mix where about half the items need math-verify (other forms, wrong answers)."""
    rng = random.Random(7)
    responses, golds = [], []
    for i in range(n):
        a = rng.randint(1, 50)
        kind = i % 5
        if kind == 0:
            responses.append(f"steps... \\boxed{{{a}}}")  # fast path
            golds.append(str(a))
        elif kind == 1:
            responses.append(f"so \\boxed{{{a / 4}}}")  # decimal vs fraction: math-verify
            golds.append(f"\\frac{{{a}}}{{4}}")
        elif kind == 2:
            responses.append(f"so \\boxed{{\\frac{{{a}}}{{{a + 1}}}}}")  # wrong fraction
            golds.append(f"\\frac{{{a + 1}}}{{{a}}}")
        elif kind == 3:
            responses.append(f"the answer is {a}")  # no box
            golds.append(str(a))
        else:
            responses.append(f"\\boxed{{\\frac{{{2 * a}}}{{2}}}}")  # an unsimplified fraction:
            golds.append(str(a))  # math-verify (an assignment `x = a` is read by the fast path now)
    return responses, golds


def test_threads_give_the_main_thread_results():
    responses, golds = _items(200)
    expected = [M.grade(r, g) for r, g in zip(responses, golds)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(M.grade, responses, golds))
    assert got == expected
    # Not trivially equal: math-verify really ran from the threads and said "equal".
    assert sum(r.score == 1.0 and r.details.get("method") == "math_verify" for r in got) >= 60


def test_verl_adapter_from_an_executor_thread():
    # verl 0.9.1's reward loop calls compute_score through run_in_executor, i.e. from a thread.
    with ThreadPoolExecutor(max_workers=1) as pool:
        out = pool.submit(M.compute_score, "math500", "\\boxed{0.5}", "\\frac{1}{2}").result()
    assert out == {"score": 1.0, "extracted": "0.5", "status": "ok"}


def test_grade_many_workers_zero_from_a_thread():
    responses, golds = _items(20)
    with ThreadPoolExecutor(max_workers=1) as pool:
        got = pool.submit(M.grade_many, responses, golds, 0).result()
    assert got == M.grade_many(responses, golds, workers=0)
