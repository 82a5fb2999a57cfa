"""The math-verify step of the math grader, under a deadline we enforce ourselves.

math-verify 0.9.0 times out with ``signal.alarm`` and swallows its own ``TimeoutException`` into
"wrong" (score 0 with no trace). We call it with those timeouts disabled and wrap the whole
comparison (gold parse, answer parse, verify) in one ``setitimer`` deadline that raises
``DeadlineExceeded``, a ``BaseException`` math-verify's ``except Exception`` cannot swallow. So a
timeout is reported as a timeout. Signals only reach the main thread: callers on other threads
must run ``run_job`` in a worker process (see :mod:`pacs.rewards.math`), where the parent's hard
deadline also covers C code that a signal cannot interrupt.
"""

from __future__ import annotations

import re
import signal
import sys
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager

import math_verify.grader
import math_verify.parser
from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify
from sympy import Integer

from pacs.rewards._limits import check_seconds
from pacs.rewards._mathjob import FLOAT_ROUNDING, MathJob, float_rounding
from pacs.rewards.result import GradeResult

# We disable math-verify's own timeouts on purpose (our deadline replaces them); silence the
# one-time warning it logs about that.
math_verify.parser.TIMEOUT_WARNING_SHOWN = True
math_verify.grader.TIMEOUT_WARNING_SHOWN = True

# The official PACS reward (src/reward_function.py): gold "\boxed{gt}" parsed as LaTeX; the whole
# response parsed with expression then LaTeX targets; verify with precision 6 (official mode;
# strict mode rounds at the decimals written, see _mathjob.float_rounding).
GOLD_TARGETS = (LatexExtractionConfig(),)
OFFICIAL_PRED_TARGETS = (ExprExtractionConfig(), LatexExtractionConfig())
_PLAIN_INTEGER = re.compile(r"[+-]?\d{1,50}")


# After the deadline the alarm repeats at this interval until the block ends: an exception the
# handler raises inside a finaliser or a GC weakref callback is only printed by Python ("Exception
# ignored in ..."), and without a repeat the block would then run unbounded (seen in CI: a 1 MB
# parse ran 98 s past a 1 s deadline). A bare ``except:`` in a library would swallow it too.
REFIRE_S = 0.1


class DeadlineExceeded(BaseException):
    """Raised by our SIGALRM handler; BaseException so library ``except Exception`` passes it on."""


class _Block:
    """Whether a ``deadline`` block is running: the handler raises only then."""

    active = False


def _raise_deadline(signum, frame):
    # A repeat (or a first alarm) that lands outside the block, before it was marked active or
    # after the mark was cleared, does nothing: it can never reach the caller's own code.
    if _Block.active:
        raise DeadlineExceeded()


def _swallowed_deadline_refires(hook):
    """An unraisable hook that re-arms the alarm at once for a swallowed ``DeadlineExceeded``.

    Other unraisable exceptions go to ``hook``. Ours never reach it: it is control flow, not an
    error, and a repeat alarm landing inside a slow hook (pytest's formats a traceback) would
    break the hook itself. Outside a block (someone kept this hook) it arms nothing.
    """

    def unraisable_hook(unraisable):
        if isinstance(unraisable.exc_value, DeadlineExceeded):
            if _Block.active:
                signal.setitimer(signal.ITIMER_REAL, 1e-3, REFIRE_S)
            return
        hook(unraisable)

    return unraisable_hook


@contextmanager
def deadline(seconds: float):
    """Raise ``DeadlineExceeded`` in the block after ``seconds``, again every ``REFIRE_S``.

    Main thread only; blocks do not nest. A timer the caller had armed (verl's
    ``compute_score_timeout`` uses SIGALRM too) is re-armed afterwards with its remaining time,
    and its handler and unraisable hook are restored on every path.
    """
    seconds = check_seconds("timeout", seconds)
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("deadline() needs the main thread; run the job in a worker process")
    if _Block.active:
        raise RuntimeError("deadline() blocks do not nest")
    old_unraisable_hook = sys.unraisablehook
    old_handler = signal.getsignal(signal.SIGALRM)
    old_delay, old_interval = 0.0, 0.0
    start = time.monotonic()
    try:
        signal.signal(signal.SIGALRM, _raise_deadline)
        sys.unraisablehook = _swallowed_deadline_refires(old_unraisable_hook)
        old_delay, old_interval = signal.setitimer(signal.ITIMER_REAL, seconds, REFIRE_S)
        # Marked active only now: an alarm that fired already (a tiny timeout) did nothing, and
        # the repeat REFIRE_S later raises inside the block.
        _Block.active = True
        yield
    finally:
        # First thing: from here on an alarm does nothing, so the cleanup below always runs.
        # (CPython runs a signal handler only at its eval-breaker checks; a pending alarm could
        # still raise at the yield before we get here, which is inside the block: a timeout.)
        _Block.active = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        if old_handler is not None:  # None: a handler set from C, which Python cannot restore
            signal.signal(signal.SIGALRM, old_handler)
        sys.unraisablehook = old_unraisable_hook
        if old_delay > 0:
            remaining = old_delay - (time.monotonic() - start)
            # 1 ms rather than 0: a zero delay would disarm the caller's timer instead of firing it.
            signal.setitimer(signal.ITIMER_REAL, max(remaining, 1e-3), old_interval)


class SizedCache:
    """Least recently used entries, bounded by an estimate of their bytes rather than their count.

    ``weight(key)`` estimates an entry's bytes; an entry heavier than ``max_entry`` is not kept.
    """

    def __init__(self, max_bytes: int, max_entry: int, weight) -> None:
        self.max_bytes, self.max_entry, self._weight = max_bytes, max_entry, weight
        self._items: OrderedDict = OrderedDict()
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key, default=None):
        if key not in self._items:
            return default
        self._items.move_to_end(key)
        return self._items[key]

    def put(self, key, value) -> None:
        size = self._weight(key)
        if size > self.max_entry or key in self._items:
            return
        self._items[key] = value
        self.bytes += size
        while self.bytes > self.max_bytes:
            old, _ = self._items.popitem(last=False)
            self.bytes -= self._weight(old)

    def clear(self) -> None:
        self._items.clear()
        self.bytes = 0


# Per entry: the key's characters plus ~300 bytes of tuple, dict slot and str headers. A parsed
# gold (a sympy tree) is larger than its text: counted at 32 bytes per character.
ENTRY_OVERHEAD = 300
VERDICT_CACHE_BYTES = 32 << 20
GOLD_CACHE_BYTES = 32 << 20
_VERDICTS = SizedCache(
    VERDICT_CACHE_BYTES,
    1 << 20,
    lambda key: ENTRY_OVERHEAD * (1 + len(key[2])) + len(key[0]) + len(key[1]) + len(str(key[2])),
)
_GOLDS = SizedCache(GOLD_CACHE_BYTES, 1 << 20, lambda gold: ENTRY_OVERHEAD + 32 * len(gold))


def _parse_gold(gold: str) -> tuple:
    # Golds repeat across the n samples of a problem: parse each once per process.
    parsed = _GOLDS.get(gold)
    if parsed is None:
        parsed = tuple(parse_boxed(gold))
        _GOLDS.put(gold, parsed)
    return parsed


def parse_boxed(content: str) -> list:
    """math-verify's parse of ``\\boxed{content}``; plain integers built directly.

    The LaTeX parser costs ~1-3 ms and dominates a comparison; for a plain integer its result is
    exactly ``[Integer(n), content]`` (pinned by a test), which we build in microseconds.
    """
    if _PLAIN_INTEGER.fullmatch(content):
        return [Integer(int(content)), content]
    return parse("\\boxed{" + content + "}", list(GOLD_TARGETS), parsing_timeout=None)


def _official_extracted(parsed: list) -> str | None:
    # parse() returns [sympy object, matched string]; the string is what the model wrote.
    strings = [p for p in parsed if isinstance(p, str)]
    return strings[-1] if strings else None


def compare(job: MathJob) -> GradeResult:
    """Parse and verify with no deadline of its own (the caller sets one)."""
    gold = _parse_gold(job.gold)
    if not gold:
        return GradeResult(
            0.0,
            job.extracted,
            "error",
            {"error": f"math-verify cannot parse the gold {job.gold[:200]!r}"},
        )
    if job.mode == "strict":
        correct = _strict_verdict(job)
        return GradeResult(1.0 if correct else 0.0, job.extracted, "ok", {"method": "math_verify"})
    answer = parse(job.answer, list(OFFICIAL_PRED_TARGETS), parsing_timeout=None)
    if not answer:
        return GradeResult(0.0, None, "no_answer", {"method": "math_verify"})
    correct = verify(list(gold), answer, float_rounding=FLOAT_ROUNDING, timeout_seconds=None)
    return GradeResult(
        1.0 if correct else 0.0, _official_extracted(answer), "ok", {"method": "math_verify"}
    )


def _strict_verdict(job: MathJob) -> bool:
    # The n samples of a problem repeat the same few answers: verify each (gold, answer) once.
    key = (job.gold, job.answer, job.claims)
    verdict = _VERDICTS.get(key)
    if verdict is None:
        verdict = all(_claim_holds(*claim) for claim in job.claims) and verify(
            list(_parse_gold(job.gold)),
            parse_boxed(job.answer),
            float_rounding=float_rounding(job.gold, job.answer),
            timeout_seconds=None,
        )
        _VERDICTS.put(key, verdict)
    return verdict


def _claim_holds(left: str, right: str, rounding: int | None) -> bool:
    """A relation's side equals its answer (``1 = 2`` does not): docs/grading_policy.md.
    math-verify alone compares an equation by its right side, so ``\\boxed{1=2}`` scored 1."""
    rounding = float_rounding(left, right) if rounding is None else rounding
    return verify(
        parse_boxed(left), parse_boxed(right), float_rounding=rounding, timeout_seconds=None
    )


def run_job(job: MathJob) -> GradeResult:
    """``compare`` under a ``job.timeout`` deadline; never raises (main thread of its process)."""
    try:
        with deadline(job.timeout):
            return compare(job)
    except DeadlineExceeded:
        return GradeResult(0.0, job.extracted, "timeout", {"method": "math_verify"})
    except Exception as exc:  # noqa: BLE001 - a grader bug on one item must not stop a batch
        # Only the type: str() of a sympy-laden exception can itself take very long.
        return GradeResult(0.0, job.extracted, "error", {"error": type(exc).__name__})


def _warm_up() -> None:
    # The first LaTeX parse builds the ANTLR parser (~0.5 s, partly in C, where no signal lands).
    # Doing it at import keeps that out of every deadline, and a fork server that preloads this
    # module hands warm workers out.
    verify(list(_parse_gold("\\frac{1}{2}")), parse_boxed("0.5"), timeout_seconds=None)


_warm_up()
