"""One hostile response never stalls or fails its batch (issue 25).

Classes: an exception on one response is its verdict; every step before the deadline is linear
(degenerate responses of 200k characters grade in well under a second); long responses get a
verdict from a stated cap; bad limits are refused naming the argument; the deadline leaves no
handler, timer or hook behind, whatever the timeout; the verdict cache is bounded by size.
"""

from __future__ import annotations

import random
import re
import signal
import sys
import time

import pytest

from pacs.rewards import _mathverify, code, gpqa, grade_rows
from pacs.rewards import math as M
from pacs.rewards._mathjob import MathJob
from pacs.rewards._mathverify import DeadlineExceeded, SizedCache, deadline
from pacs.rewards._pool import DeadlinePool, SharedRunner

SIZE = 200_000
FAST_S = 1.0  # a linear pass over 200k characters takes milliseconds; quadratic took minutes


@pytest.fixture(scope="module", autouse=True)
def warm_math_verify():
    M.grade("\\boxed{0.5}", "\\frac{1}{2}")


def _alarm_state():
    return (
        signal.getsignal(signal.SIGALRM),
        signal.getitimer(signal.ITIMER_REAL),
        sys.unraisablehook,
    )


# ----------------------------------------------------------------------------- class 1


def test_an_exception_on_one_response_is_its_verdict(monkeypatch):
    real = M.canonical

    def canonical(s):
        if "boom" in s:
            raise RuntimeError("canonical broke")
        return real(s)

    monkeypatch.setattr(M, "canonical", canonical)
    responses = ["\\boxed{3}", "\\boxed{boom}", "\\boxed{4}"]
    results = M.grade_many(responses, ["3", "3", "3"], workers=0)
    assert [(r.score, r.status) for r in results] == [(1.0, "ok"), (0.0, "error"), (0.0, "ok")]
    assert results[1].details["error"] == "RuntimeError: canonical broke"
    rows = [{"task": "math", "answer": "3"}] * 3
    assert [r.status for r in grade_rows(rows, responses, workers=0)] == ["ok", "error", "ok"]
    score = M.compute_score("math", "\\boxed{boom}", "3")
    assert score == {"score": 0.0, "extracted": None, "status": "error"}


@pytest.mark.parametrize("digits", [4_301, 20_000])
def test_a_repeating_decimal_past_the_int_limit_gets_a_verdict(digits):
    response = "\\boxed{0.\\overline{" + "3" * digits + "}}"
    for result in (
        M.grade(response, "\\frac{1}{3}", timeout=1.0),
        M.grade_many([response, "\\boxed{1}"], ["\\frac{1}{3}", "1"], workers=0, timeout=1.0)[0],
        grade_rows([{"task": "math", "answer": "\\frac{1}{3}"}], [response], workers=0)[0],
    ):
        assert result.score == 0.0 and result.status in ("ok", "timeout")
    assert M.compute_score("math", response, "2")["score"] == 0.0


# ----------------------------------------------------------------------------- class 2


def _degenerate(size: int) -> dict[str, tuple[str, str]]:
    """name -> (response, gold): each broke a regex or a loop before (quadratic or worse)."""
    n = size
    return {
        "box of digits": ("\\boxed{" + "1" * n + "}", "5"),
        "box of digits then a letter": ("\\boxed{" + "1" * n + "x}", "5"),
        "box of spaces then a letter": ("\\boxed{1" + " " * n + "x}", "5"),
        "box of spaces then a percent": ("\\boxed{1" + "\\," * (n // 2) + "x%}", "5"),
        "thin spaces between a digit and a letter": ("\\boxed{1" + "\u2009" * n + "x}", "5"),
        "digits before an overline": ("\\boxed{" + "1" * n + "x\\overline{3}}", "5"),
        "digits before a vulgar fraction": ("\\boxed{" + "1" * n + "x½}", "5"),
        "digits before an e": ("\\boxed{" + "1" * n + "e}", "5"),
        "a box then many boxedx": ("\\boxed{3}" + "\\boxedx" * (n // 7), "3"),
        "degree mark then spaces": ("\\boxed{^" + " " * n + "x}", "5"),
        "prose then a box": ("word " * (n // 5) + "\\boxed{5}", "5"),
    }


@pytest.mark.parametrize("name", list(_degenerate(10)))
def test_degenerate_responses_grade_fast(name):
    response, gold = _degenerate(SIZE)[name]
    start = time.monotonic()
    result = M.grade(response, gold, timeout=1.0)
    assert time.monotonic() - start < FAST_S + 1.0, name  # + the deadline, if math-verify ran
    assert result.status in ("ok", "timeout", "no_answer")


def test_normalisation_alone_is_linear():
    for name, (response, _) in _degenerate(SIZE).items():
        content = M.extract_boxed(response) or ""
        start = time.monotonic()
        form = M.canonical(content)
        M.normalize_answer(form)
        M.spaced_digits(form)
        M.normalize_gold(content[:SIZE] + "x") if content else None
        assert time.monotonic() - start < FAST_S, name


def test_a_long_gold_of_digits_is_normalised_in_linear_time():
    start = time.monotonic()
    assert M.normalize_gold("0" * SIZE + "7.000") == "7"
    assert M.normalize_gold("1" * SIZE + "x") == "1" * SIZE + "x"
    assert time.monotonic() - start < FAST_S


def test_a_response_over_the_cap_gets_a_verdict_at_once():
    response = "x" * M.MAX_RESPONSE_CHARS + "\\boxed{5}"
    for extraction in M.EXTRACTIONS:
        start = time.monotonic()
        result = M.grade(response, "5", extraction=extraction, timeout=1.0)
        assert time.monotonic() - start < FAST_S
        assert (result.score, result.status) == (0.0, "timeout")
        assert result.details["method"] == "length cap"
        assert "1,000,001" not in result.details["reason"]
        assert f"at most {M.MAX_RESPONSE_CHARS:,}" in result.details["reason"]


def test_an_answer_over_the_cap_does_not_reach_math_verify(monkeypatch):
    monkeypatch.setattr(_mathverify, "verify", None)  # would raise if called
    result = M.grade("\\boxed{" + "x+" * M.MAX_ANSWER_CHARS + "1}", "5", timeout=1.0)
    assert (result.status, result.details["method"]) == ("timeout", "length cap")
    # A long answer the fast path decides is still graded: equal to a long gold.
    long_gold = "7" * (3 * M.MAX_ANSWER_CHARS)
    assert M.grade("\\boxed{" + long_gold + "}", long_gold).score == 1.0


def test_gpqa_and_code_extraction_are_linear():
    start = time.monotonic()
    assert gpqa.grade("answer:" + " " * SIZE + "x", "A").status == "no_answer"
    assert gpqa.grade("answer:" + " *" * SIZE + "B", "B").score == 1.0
    assert code.extract_code("`" * SIZE) is None
    assert code.extract_code("```\n" * (SIZE // 4)) is None
    assert code.extract_code("```python" + "`" * SIZE + "\nx=1\n```") == "x=1\n"
    assert time.monotonic() - start < FAST_S


_OLD_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)```", re.DOTALL)


def test_fenced_blocks_read_as_the_regex_they_replace():
    rng = random.Random(25)
    for _ in range(3000):
        text = "".join(
            rng.choice(["`", "``", "```", "\n", "py", "thon", " ", "x"]) for _ in range(20)
        )
        old = [(m.group(1).lower(), m.group(2)) for m in _OLD_FENCE.finditer(text)]
        assert code.fenced_blocks(text) == old, repr(text)


def _old_extract_boxed(text):
    end = len(text)
    while True:
        start = max(text.rfind(cmd, 0, end) for cmd in ("\\boxed", "\\fbox"))
        if start < 0:
            return None
        pos = start + (6 if text.startswith("\\boxed", start) else 5)
        if pos < len(text) and text[pos].isalpha():
            end = start
            continue
        break
    while pos < len(text) and text[pos] in " \t":
        pos += 1
    if pos >= len(text):
        return None
    if text[pos] != "{":
        match = re.match(r"[^\s$]+", text[pos:])
        return match.group(0) if match else None
    return M._balanced_content(text, pos)


def test_box_extraction_reads_as_the_loop_it_replaces():
    rng = random.Random(4)
    parts = ["\\boxed", "\\fbox", "\\boxedx", "{", "}", "\\{", "1", " ", "$", "x", "\\fboxsep"]
    for _ in range(3000):
        text = "".join(rng.choice(parts) for _ in range(12))
        assert M.extract_boxed(text) == _old_extract_boxed(text), repr(text)


# ----------------------------------------------------------------------------- class 3

BAD_SECONDS = [float("inf"), float("-inf"), float("nan"), 0, -1.0, 1e9, True, "1"]


@pytest.mark.parametrize("value", BAD_SECONDS, ids=repr)
def test_bad_math_timeouts_are_refused_naming_the_argument(value):
    before = _alarm_state()
    for call in (
        lambda: M.grade("\\boxed{1}", "1", timeout=value),
        lambda: M.grade_many(["\\boxed{1}"], ["1"], workers=1, timeout=value),
        lambda: M.compute_score("math", "\\boxed{x^2}", "1", timeout=value),
    ):
        with pytest.raises((TypeError, ValueError), match="^timeout must be"):
            call()
    with pytest.raises((TypeError, ValueError), match="^timeout must be"), deadline(value):
        pass
    assert _alarm_state() == before


@pytest.mark.parametrize("value", BAD_SECONDS, ids=repr)
def test_bad_pool_timeouts_are_refused_naming_the_argument(value):
    with pytest.raises((TypeError, ValueError), match="^item_timeout must be"):
        DeadlinePool(abs, workers=1, item_timeout=value)
    with pytest.raises((TypeError, ValueError), match="^item_timeout must be"):
        SharedRunner(abs, workers=0, item_timeout=value)


@pytest.mark.parametrize(
    "limits,name",
    [({"timeout_s": v}, "timeout_s") for v in BAD_SECONDS]
    + [({"memory_mb": v}, "memory_mb") for v in (float("inf"), float("nan"), 0, -5, 1.5, True)],
    ids=repr,
)
def test_bad_code_limits_are_refused_naming_the_argument(limits, name):
    tests = [{"input": "", "output": "", "testtype": "stdin"}]
    # Refused before the response is looked at, even one with no code in it.
    for response in ("no code here", "```python\nprint()\n```"):
        with pytest.raises((TypeError, ValueError), match=f"^{name} must be"):
            code.grade(response, tests, **limits)
    with pytest.raises((TypeError, ValueError), match=f"^{name} must be"):
        code.run_tests("print()", tests, **limits)


SLOW = "\\boxed{9^{9^{9^9}}}"  # math-verify cannot finish it: the deadline must end it


@pytest.mark.parametrize("timeout", [1e-9, 1e-6, 1e-4, 1e-3, 0.05])
def test_tiny_timeouts_leave_nothing_behind(timeout):
    before = _alarm_state()
    for _ in range(3):
        result = M.grade(SLOW, "1", timeout=timeout)
        assert (result.score, result.status) == (0.0, "timeout")
        assert M.grade("\\boxed{\\frac{2}{4}}", "0.5", timeout=timeout).status in ("ok", "timeout")
    assert _alarm_state() == before
    # No repeat alarm lands later in the caller's own code.
    end = time.monotonic() + 3 * _mathverify.REFIRE_S
    while time.monotonic() < end:
        pass


def test_a_tiny_deadline_raises_inside_its_block_only():
    before = _alarm_state()
    with pytest.raises(DeadlineExceeded), deadline(1e-9):
        end = time.monotonic() + 2.0
        while time.monotonic() < end:
            pass
    assert _alarm_state() == before
    time.sleep(3 * _mathverify.REFIRE_S)  # a leftover repeat would raise here


def test_a_stray_alarm_outside_any_block_does_nothing():
    # The handler is ours only inside a block; called outside one (a repeat that was already
    # pending when the block ended) it must not raise.
    _mathverify._raise_deadline(signal.SIGALRM, None)


def test_thousands_of_grades_add_no_hook_wrappers():
    before = _alarm_state()
    for i in range(2000):
        M.grade(f"\\boxed{{x^{i % 7}}}", "x", timeout=1.0)
    assert _alarm_state() == before


def test_deadline_blocks_do_not_nest():
    with deadline(5.0), pytest.raises(RuntimeError, match="do not nest"), deadline(1.0):
        pass


# ----------------------------------------------------------------------------- class 6


def test_the_sized_cache_is_bounded_by_bytes_not_entries():
    cache = SizedCache(1 << 20, 1 << 18, weight=lambda key: 300 + len(key))
    for i in range(500):
        cache.put("y" * 100_000 + str(i), True)
        assert cache.bytes <= 1 << 20
    assert len(cache) == (1 << 20) // (300 + 100_003)
    cache.put("z" * (1 << 18), True)  # heavier than one entry may be: not kept
    assert cache.get("z" * (1 << 18)) is None
    assert cache.get("y" * 100_000 + "499") is True  # the newest stay


def test_the_verdict_cache_stays_within_its_bytes(monkeypatch):
    assert _mathverify._VERDICTS.max_bytes == _mathverify.VERDICT_CACHE_BYTES
    small = SizedCache(2 << 20, 1 << 20, _mathverify._VERDICTS._weight)
    monkeypatch.setattr(_mathverify, "_VERDICTS", small)
    monkeypatch.setattr(_mathverify, "verify", lambda *a, **k: False)
    monkeypatch.setattr(_mathverify, "parse_boxed", lambda content: [content])
    for i in range(200):  # 100 KB boxes: the case
        _mathverify._strict_verdict(MathJob("5", "y" * 100_000 + str(i), None, "strict", 5.0))
    assert 0 < small.bytes <= 2 << 20 and len(small) < 25
