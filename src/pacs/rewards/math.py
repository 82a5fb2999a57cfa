"""Math answer grader: last ``\\boxed{}`` against the gold, fast path then math-verify.

Extraction (``extraction=``):
- ``"strict"`` (default): the content of the LAST ``\\boxed{...}`` / ``\\fbox{...}`` (balanced
  braces). No box, an empty box, or an unclosed last box (a truncated response) is
  ``no_answer``. A bare number in prose is never an answer.
- ``"official"``: the official PACS reward (ritzz-ai/PACS ``src/reward_function.py``):
  math-verify parses the whole response with its default fallbacks, so "the answer is 13 but I
  think 12" scores as 13 and two boxes parse as a set. Kept so a run can match the paper.

Comparison (strict): both sides are first put in canonical form (:func:`canonical`: thousands
separators of any kind removed from a grouped number, a trailing percent sign dropped, a
repeating decimal ``0.\\overline{3}`` written as its fraction), then (1) a fast path that may
only say "equal" (identical after light normalisation, or the same decimal number); (2) an
answer whose digits stand apart with only spacing between them ("1 2", "1\\,00") is wrong, as
math-verify would read it as a product; (3) otherwise math-verify ``verify(gold, answer)``, gold
first, rounding floats at no fewer decimals than either side writes. docs/design.md §8 lists
every deliberate difference from the official scorer (``extraction="official"`` keeps it).

Time bound: every math-verify call runs under a deadline (status ``timeout``, score 0):
- ``workers >= 1``: worker processes, each item killed after ``timeout`` + a small grace;
- ``workers == 0`` on the main thread: in this process under a SIGALRM deadline (math-verify's
  own mechanism: it interrupts Python code; only a worker process also bounds long C calls);
- ``workers == 0`` on any other thread: the item goes to a shared worker process, because
  signals cannot reach other threads (math-verify there would fail every item silently).
"""

from __future__ import annotations

import atexit
import re
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from math import isfinite  # the standard library's math (this module is pacs.rewards.math)
from numbers import Integral, Real
from typing import Any

from pacs.rewards._mathjob import MathJob
from pacs.rewards.result import STATUSES, GradeResult

EXTRACTIONS = ("strict", "official")
DEFAULT_TIMEOUT_S = 5.0
# Extra wall time a worker gets beyond its own in-process deadline before it is killed.
KILL_GRACE_S = 0.5
# Address-space cap of a grader worker: a runaway sympy expansion fails there, not in the machine.
WORKER_MEMORY_MB = 4096
SHARED_WORKERS = 2

_BOX_COMMANDS = ("\\boxed", "\\fbox")
_BRACE_OR_ESCAPE = re.compile(r"\\.|[{}]", re.DOTALL)


# ----------------------------------------------------------------------------- extraction


def extract_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` or ``\\fbox{...}``; None if absent or unclosed.

    Braces are balanced (``\\{`` and ``\\}`` do not count); ``\\boxed 5`` (no braces) gives the
    token up to the next space or ``$``.
    """
    end = len(text)
    while True:
        start = max(text.rfind(cmd, 0, end) for cmd in _BOX_COMMANDS)
        if start < 0:
            return None
        pos = start + len(next(c for c in _BOX_COMMANDS if text.startswith(c, start)))
        if pos < len(text) and text[pos].isalpha():  # "\fboxsep": another command, not a box
            end = start
            continue
        break
    while pos < len(text) and text[pos] in " \t":
        pos += 1
    if pos >= len(text):
        return None
    if text[pos] != "{":
        return _unbraced_token(text, pos)
    return _balanced_content(text, pos)


def _balanced_content(text: str, open_pos: int) -> str | None:
    depth = 0
    # Visit only braces and escapes (a backslash and the character after it: \{ and \} are text).
    for match in _BRACE_OR_ESCAPE.finditer(text, open_pos):
        token = match.group()
        if token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
            if depth == 0:
                return text[open_pos + 1 : match.start()]
    return None


def _unbraced_token(text: str, pos: int) -> str | None:
    match = re.match(r"[^\s$]+", text[pos:])
    return match.group(0) if match else None


# ----------------------------------------------------------------------------- normalisation

_SPACING = re.compile(r"\\[,;:! ]|\\q?quad\b|~")
_TEXT_WRAPPERS = re.compile(r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mbox)\s*\{([^{}]*)\}")
_DEGREES = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|°")
_FRAC_DIGITS = re.compile(r"\\frac\s*(\d)\s*(\d)")
_THOUSANDS = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")
# A space not between two letters/digits means nothing ("x + 1"); "1 2" and "\\pi r" keep theirs.
_LONE_SPACE = re.compile(r"(?<![A-Za-z0-9]) | (?![A-Za-z0-9])")


def normalize_answer(s: str) -> str:
    """Light, meaning-preserving normalisation (fast-path equality and maj@k votes).

    Drops ``$``, ``\\left``/``\\right``, spacing commands, ``\\text{}``-style wrappers, degree
    marks, a trailing period, thousands separators of a plain number; ``\\dfrac``/``\\tfrac`` ->
    ``\\frac``, ``\\frac12`` -> ``\\frac{1}{2}``. Whitespace goes except between two letters or
    digits, so "1 2" does not become "12".
    """
    s = s.strip().strip("$").strip()
    s = s.replace("\\left", "").replace("\\right", "")
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = s.replace("{,}", ",")
    s = _SPACING.sub(" ", s)
    s = _TEXT_WRAPPERS.sub(r"\1", s)
    s = _DEGREES.sub("", s)
    s = _FRAC_DIGITS.sub(r"\\frac{\1}{\2}", s)
    s = " ".join(s.split())
    if _THOUSANDS.fullmatch(s.rstrip(".")):  # before spaces go: "3, 100" is a list, not 3100
        s = s.replace(",", "")
    return _LONE_SPACE.sub("", s).rstrip(".")


# Thousands separators: a comma, spacing commands, "~", "{,}" and (thin, no-break) spaces.
_SEPARATOR = r"(?:,|\\[,;: ]|~|\{,\}|[ \u2009\u202f\u00a0])"
_GROUPED = re.compile(rf"[+-]?\d{{1,3}}(?:({_SEPARATOR})\d{{3}})(?:\1\d{{3}})*(?:\.\d+)?")
_PERCENT = re.compile(r"(?:\s|\\[,;:! ]|~)*\\?%$")
_REPEATING = re.compile(r"(\d*)\.(\d*)\\overline\s*(?:\{(\d+)\}|(\d))")
# Digits apart with only spacing between them: math-verify multiplies them ("1\,000" = 0).
_SPACED_DIGITS = re.compile(r"\d(?:\s|\\[,;:! ]|~|[\u2009\u202f\u00a0])+\d")


def canonical(s: str) -> str:
    r"""Number notations math-verify misreads, rewritten (strict mode; docs/design.md §8).

    ``1\,000\,000``, ``1~000``, ``1{,}000``, ``1 000`` (one separator kind, groups of three)
    -> ``1000000``...; ``25\%`` -> ``25`` (a percentage compares as its number);
    ``0.1\overline{6}`` -> ``\frac{1}{6}``. Anything else is returned stripped, unchanged.
    """
    s = _PERCENT.sub("", s.strip().strip("$").strip()).strip()
    match = _GROUPED.fullmatch(s)
    if match:
        s = s.replace(match.group(1), "")
    return _REPEATING.sub(_repeating_fraction, s)


def _repeating_fraction(match: re.Match) -> str:
    whole, fixed, repeat = match.group(1) or "0", match.group(2), match.group(3) or match.group(4)
    # 0.1(6): (16 - 1) / 90; whole + (fixed repeat - fixed) / (10^len(fixed) * (10^len(rep) - 1))
    denominator = (10 ** len(repeat) - 1) * 10 ** len(fixed)
    numerator = int(whole) * denominator + int(fixed + repeat) - int(fixed or "0")
    value = Fraction(numerator, denominator)
    if value.denominator == 1:
        return str(value.numerator)
    return f"\\frac{{{value.numerator}}}{{{value.denominator}}}"


def spaced_digits(s: str) -> bool:
    """Whether two digits stand apart with only spacing between them (never a number)."""
    return bool(_SPACED_DIGITS.search(s))


def normalize_gold(gold: Any) -> str:
    """Canonical gold string: integer-valued golds as plain integers, LaTeX kept as given.

    "025" -> "25" (AIME zero padding), 27.0 -> "27" (AMC floats), 7 -> "7"; "\\frac{1}{2}" stays.
    """
    if isinstance(gold, bool) or gold is None:
        raise ValueError(f"gold answer {gold!r} is not a number or a string")
    if isinstance(gold, Integral):
        return str(int(gold))
    if isinstance(gold, Real):
        value = float(gold)
        if not isfinite(value):
            raise ValueError(f"gold answer {gold!r} is not a finite number")
        return str(int(value)) if value.is_integer() else repr(value)
    if not isinstance(gold, str):
        raise TypeError(
            f"gold answer {gold!r} has type {type(gold).__name__}, expected str or number"
        )
    text = gold.strip()
    if not text:
        raise ValueError("gold answer is empty")
    match = re.fullmatch(r"([+-]?)0*(\d+?)(?:\.0*)?", text)
    if match:  # by text: int() refuses more than 4300 digits, and a gold may have more
        digits = match.group(2)
        return digits if digits == "0" or match.group(1) != "-" else "-" + digits
    return text


# ----------------------------------------------------------------------------- fast path


def _as_decimal(s: str) -> Decimal | None:
    if not _DECIMAL.fullmatch(s):
        return None
    try:
        return Decimal(s)
    except InvalidOperation:
        return None


def _both_numbers(gold: str, answer: str) -> bool:
    g, a = normalize_answer(gold), normalize_answer(answer)
    return _as_decimal(g) is not None and _as_decimal(a) is not None


def fast_equal(gold: str, answer: str) -> bool:
    """True only when the two are surely equal; False means "not decided here"."""
    g, a = normalize_answer(gold), normalize_answer(answer)
    if not g or not a:
        return False
    if g == a:
        return True
    g_num, a_num = _as_decimal(g), _as_decimal(a)
    return g_num is not None and a_num is not None and g_num == a_num


# ----------------------------------------------------------------------------- grading


def _check_extraction(extraction: str) -> None:
    if extraction not in EXTRACTIONS:
        raise ValueError(f"extraction must be one of {EXTRACTIONS}, got {extraction!r}")


def _check_timeout(timeout: float) -> None:
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")


def _prepare(response: str, gold: Any, extraction: str, timeout: float):
    """A final GradeResult when extraction or the fast path decides, else a MathJob."""
    if not isinstance(response, str):
        raise TypeError(f"response has type {type(response).__name__}, expected str")
    gold_text = normalize_gold(gold)
    if extraction == "official":
        return MathJob(gold_text, response, None, "official", timeout)
    extracted = extract_boxed(response)
    if extracted is None or not extracted.strip():
        return GradeResult(0.0, None, "no_answer")
    extracted = extracted.strip()
    gold_form, answer_form = canonical(gold_text), canonical(extracted)
    if fast_equal(gold_form, answer_form):
        return GradeResult(1.0, extracted, "ok", {"method": "fast"})
    if _both_numbers(gold_form, answer_form):  # two different plain numbers: surely unequal
        return GradeResult(0.0, extracted, "ok", {"method": "fast"})
    if spaced_digits(answer_form):
        return GradeResult(0.0, extracted, "ok", {"method": "spaced digits"})
    return MathJob(gold_form, answer_form, extracted, "strict", timeout)


def grade(
    response: str, gold: Any, extraction: str = "strict", timeout: float = DEFAULT_TIMEOUT_S
) -> GradeResult:
    """Grade one response against its gold answer. Safe from any thread; never hangs."""
    return grade_many([response], [gold], workers=0, timeout=timeout, extraction=extraction)[0]


def grade_many(
    responses: Sequence[str],
    golds: Sequence[Any],
    workers: int = 2,
    timeout: float = DEFAULT_TIMEOUT_S,
    extraction: str = "strict",
) -> list[GradeResult]:
    """Grade ``responses[i]`` against ``golds[i]``; results in input order.

    ``workers >= 1``: that many worker processes with a per-item hard deadline. Like any
    multiprocessing user, a script that calls this needs the ``if __name__ == "__main__":`` guard.
    ``workers == 0``: in this process (main thread) or a shared worker process (other threads).
    Only items the fast path leaves undecided reach math-verify, each distinct one once.
    """
    _check_extraction(extraction)
    _check_timeout(timeout)
    if len(responses) != len(golds):
        raise ValueError(f"{len(responses)} responses but {len(golds)} golds")
    if workers < 0:
        raise ValueError(f"workers must be >= 0, got {workers}")
    prepared = []
    for i, (response, gold) in enumerate(zip(responses, golds)):
        try:
            prepared.append(_prepare(response, gold, extraction, timeout))
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"item {i}: {exc}") from None
    todo = [i for i, p in enumerate(prepared) if not isinstance(p, GradeResult)]
    for i, result in zip(todo, _run_jobs([prepared[i] for i in todo], workers, timeout)):
        prepared[i] = result
    return prepared


def _run_jobs(jobs: list, workers: int, timeout: float) -> list[GradeResult]:
    # The samples of a problem repeat the same few answers: verify each distinct job once.
    unique = list(dict.fromkeys(jobs))
    verdicts = dict(zip(unique, _run_unique_jobs(unique, workers, timeout)))
    return [verdicts[job] for job in jobs]


def _run_unique_jobs(jobs: list, workers: int, timeout: float) -> list[GradeResult]:
    if not jobs:
        return []
    from pacs.rewards import _mathverify
    from pacs.rewards._pool import DeadlinePool

    if workers >= 1:
        pool = DeadlinePool(
            _mathverify.run_job,
            workers,
            timeout + KILL_GRACE_S,
            preload=[_mathverify.__name__],
            memory_mb=WORKER_MEMORY_MB,
        )
        try:
            outcomes = pool.map(jobs)
        finally:
            pool.close()
        return [_from_outcome(job, outcome) for job, outcome in zip(jobs, outcomes)]
    if threading.current_thread() is threading.main_thread():
        return [_mathverify.run_job(job) for job in jobs]
    runner = _shared_runner()
    return [_from_outcome(job, runner.run(job, job.timeout + KILL_GRACE_S)) for job in jobs]


def _from_outcome(job, outcome: tuple[str, Any]) -> GradeResult:
    kind, value = outcome
    if kind == "ok":
        return value
    if kind == "timeout":
        return GradeResult(0.0, job.extracted, "timeout", {"method": "math_verify", "killed": True})
    return GradeResult(0.0, job.extracted, "error", {"error": f"{kind}: {value}"})


_SHARED = None
_SHARED_LOCK = threading.Lock()


def _shared_runner():
    """Worker processes for items graded off the main thread (created on first use)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            from pacs.rewards import _mathverify
            from pacs.rewards._pool import SharedRunner

            _SHARED = SharedRunner(
                _mathverify.run_job,
                SHARED_WORKERS,
                DEFAULT_TIMEOUT_S + KILL_GRACE_S,
                preload=[_mathverify.__name__],
                memory_mb=WORKER_MEMORY_MB,
            )
            atexit.register(_SHARED.close)
        return _SHARED


def summarize(results: Iterable[GradeResult]) -> dict[str, Any]:
    """``{"n", "mean_score", "ok", "no_answer", "timeout", "error"}`` (mean_score None if n = 0)."""
    results = list(results)
    counts = Counter(r.status for r in results)
    n = len(results)
    summary: dict[str, Any] = {
        "n": n,
        "mean_score": sum(r.score for r in results) / n if n else None,
    }
    summary.update({status: counts.get(status, 0) for status in STATUSES})
    return summary


# ----------------------------------------------------------------------------- verl adapter


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Any = None,
    extraction: str = "strict",
    timeout: float = DEFAULT_TIMEOUT_S,
    **verl_kwargs: Any,
) -> dict[str, Any]:
    """verl ``reward.custom_reward_function``: ``{"score", "extracted", "status"}``.

    ``extraction`` and ``timeout`` can be set through ``custom_reward_function.reward_kwargs``.
    verl 0.9.1 calls this from an executor thread, which ``grade`` handles. Other keyword
    arguments verl passes (``reward_router_address``, ``reward_model_tokenizer``) are not used.
    """
    result = grade(solution_str, ground_truth, extraction=extraction, timeout=timeout)
    return {"score": result.score, "extracted": result.extracted, "status": result.status}
