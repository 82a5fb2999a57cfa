"""Math answer grader: last ``\\boxed{}`` against the gold, fast path then math-verify.

Extraction (``extraction=``):
- ``"strict"`` (default): the content of the LAST ``\\boxed{...}`` / ``\\fbox{...}`` (balanced
  braces). No box, an empty box, or an unclosed last box (a truncated response) is
  ``no_answer``. A bare number in prose is never an answer.
- ``"official"``: the official PACS reward (ritzz-ai/PACS ``src/reward_function.py``):
  math-verify parses the whole response with its default fallbacks, so "the answer is 13 but I
  think 12" scores as 13 and two boxes parse as a set. Kept so a run can match the paper.

Comparison (strict): both sides are first put in canonical form (:func:`canonical`: thousands
separators of any kind removed from a grouped number, a trailing percent sign dropped, a repeating
decimal ``0.\\overline{3}`` written as its fraction), then (1) a fast path that may only say "equal"
(identical after light normalisation, or the same decimal number); (2) an answer whose digits stand
apart with only spacing between them ("1 2", "1\\,00") is wrong, as math-verify would read it as a
product; (3) otherwise math-verify ``verify(gold, answer)``, gold first, rounding floats at no fewer
decimals than either side writes. docs/design.md#the-math-grader lists every
deliberate difference from the official scorer (``extraction="official"`` keeps it).

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

from pacs.rewards._limits import check_seconds
from pacs.rewards._mathjob import MathJob
from pacs.rewards._relation import expand_pm, read_answer
from pacs.rewards._unicode import unicode_to_latex
from pacs.rewards.result import STATUSES, GradeResult

EXTRACTIONS = ("strict", "official")
DEFAULT_TIMEOUT_S = 5.0
# Extra wall time a worker gets beyond its own in-process deadline before it is killed.
KILL_GRACE_S = 0.5
# Address-space cap of a grader worker: a runaway sympy expansion fails there, not in the machine.
WORKER_MEMORY_MB = 4096
SHARED_WORKERS = 2
# A response longer than this is not graded (status "timeout", details say why): far above any
# model output (32k tokens are ~130k characters), and every step before the deadline is linear.
MAX_RESPONSE_CHARS = 1_000_000
# An answer (box content) longer than this that the fast path left undecided does not go to
# math-verify (status "timeout"): its parse could not finish within any sensible deadline.
MAX_ANSWER_CHARS = 10_000

# The command, not followed by a letter ("\\fboxsep" is another command): (?![^\W\d_]) = no letter.
_BOX_COMMAND = re.compile(r"\\(?:boxed|fbox)(?![^\W\d_])")
_UNBRACED = re.compile(r"[^\s$]+")
_BRACE_OR_ESCAPE = re.compile(r"\\.|[{}]", re.DOTALL)


# ----------------------------------------------------------------------------- extraction


def extract_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` or ``\\fbox{...}``; None if absent or unclosed.

    Braces are balanced (``\\{`` and ``\\}`` do not count); ``\\boxed 5`` (no braces) gives the
    token up to the next space or ``$``. One pass over the text (``\\boxedx``, another command,
    is not a box however many there are).
    """
    command = last_box_command(text)
    if command is None:
        return None
    pos = command.end()
    while pos < len(text) and text[pos] in " \t":
        pos += 1
    if pos >= len(text):
        return None
    if text[pos] != "{":
        return _unbraced_token(text, pos)
    return _balanced_content(text, pos)


def last_box_command(text: str) -> re.Match | None:
    """The last ``\\boxed`` / ``\\fbox`` command (not ``\\fboxsep``), or None."""
    last = None
    for last in _BOX_COMMAND.finditer(text):
        pass
    return last


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
    match = _UNBRACED.match(text, pos)
    return match.group(0) if match else None


# ----------------------------------------------------------------------------- normalisation

_SPACING = re.compile(r"\\[,;:! ]|\\q?quad\b|~")
_TEXT_WRAPPERS = re.compile(r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mbox)\s*\{([^{}]*)\}")
# "\s*\{?\s*" would split a run of spaces every way (quadratic): the brace takes its own spaces.
_DEGREES = re.compile(r"\^\s*(?:\{\s*)?\\circ\s*\}?|°")
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
# A grouped number inside a longer answer ("x = 10\,080"), spacing separators only (a comma may
# be a list's): tried only where a run of digits starts (not after a separator, so a failed try
# is never repeated at the next group), the groups possessive: linear.
_SPACED_GROUPS = re.compile(
    r"(?<![\d.,;:~\u2009\u202f\u00a0])(?<!\\ )\d{1,3}(\\[,;: ]|~|[\u2009\u202f\u00a0])\d{3}"
    r"(?:\1\d{3})*+(?![\d.])"
)
# ",\!" (a comma with a negative thin space: "10,\!080") is a comma; "\!" alone is nothing.
_NEGATIVE_SPACE = re.compile(r",\\!\s*|\\!")
# A currency sign before the number ("\$32,\!348") is dropped, like a percent sign after it.
# A number before "(" or "e^" multiplies it: written out, since math-verify reads "41 e^0" and
# "41 (1)" as 42 (a mixed number's reading of juxtaposition).
_JUXTAPOSED = re.compile(r"(?<=\d)[ \t]*(?=\(|e\^)")
# Every pattern that starts with a run of digits (or may) is anchored where the run starts,
# (?<!\d): tried at every digit of a long run, its backtracking made canonical() quadratic.
_REPEATING = re.compile(r"(?<!\d)(\d*)\.(\d*)\\overline\s*(?:\{(\d+)\}|(\d))")
# A repeating decimal is turned into a fraction only up to this many digits (int() refuses more
# than 4300); a longer one is left as written, for math-verify under the deadline.
REPEATING_DIGITS = 1000
_E_NOTATION = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)[eE][+-]?\d{1,4}")
# e-notation is written out only for exponents this small (10^±300: floats' range).
E_NOTATION_EXPONENT = 300
_PERCENT_TAIL = ("\\%", "%")
# The spacing before a percent sign, read on the reversed text (one anchored match in C: the
# token-by-token loop it replaces cost 0.46 s on a 0.66 MB run of "\\,", issue 47).
_TRAILING_SPACING_REVERSED = re.compile(r"(?:[,;:! ]\\|~|\s)*")
# Digits apart with only spacing between them: math-verify multiplies them ("1\,000" = 0).
# \s already holds the thin and no-break spaces: listing them again made the alternatives
# overlap, and the backtracking exponential (30 thin spaces between a digit and a letter: hours).
_SPACED_DIGITS = re.compile(r"\d(?:\s|\\[,;:! ]|~)+\d")


def canonical(s: str) -> str:
    r"""Number notations math-verify misreads, rewritten (strict mode; docs/grading_policy.md).

    ``1\,000\,000``, ``1~000``, ``1{,}000``, ``1 000`` (one separator kind, groups of three)
    -> ``1000000``...; ``25\%`` -> ``25`` (a percentage compares as its number);
    ``0.1\overline{6}`` -> ``\frac{1}{6}``; ``1.5e3`` -> ``1500``; unicode ``½``, ``√2``, ``π``,
    ``x²``, ``−`` -> LaTeX. Anything else is returned stripped, unchanged. Linear in ``len(s)``.
    """
    s = _strip_percent(s.strip().strip("$").strip())
    if not s.isascii():
        s = unicode_to_latex(s)
    if "\\!" in s:
        s = _NEGATIVE_SPACE.sub(lambda m: "," if m.group()[0] == "," else "", s)
    if s.startswith("\\$"):
        s = s[2:].lstrip()
    if "\\" in s or "~" in s or not s.isascii():  # the only separators joined here
        s = _SPACED_GROUPS.sub(lambda m: m.group().replace(m.group(1), ""), s)
    match = _GROUPED.fullmatch(s)
    if match:
        s = s.replace(match.group(1), "")
    if is_e_notation(s):
        s = positional_decimal(s)
    if "(" in s or "e^" in s:
        s = _JUXTAPOSED.sub(" \\\\cdot ", s)
    return _REPEATING.sub(_repeating_fraction, s) if "\\overline" in s else s


def _strip_percent(s: str) -> str:
    """``25 \\% `` -> ``25``: a trailing percent sign and the spacing before it. One anchored
    match on the reversed text: a regex anchored at the end is tried at every position
    (quadratic on many spaces)."""
    for tail in _PERCENT_TAIL:
        if s.endswith(tail):
            head = s[: len(s) - len(tail)]
            break
    else:
        return s
    spacing = _TRAILING_SPACING_REVERSED.match(head[::-1]).end()
    return head[: len(head) - spacing].strip()


def is_e_notation(s: str) -> bool:
    """A plain number in e-notation: ``1.5e3``, ``-2E-07`` (no spaces, nothing else)."""
    return _E_NOTATION.fullmatch(s) is not None


def positional_decimal(s: str) -> str:
    """``1.5e3`` -> ``1500``, ``1e-05`` -> ``0.00001``; a huge exponent stays as written."""
    value = Decimal(s)
    if abs(value.adjusted()) > E_NOTATION_EXPONENT:
        return s
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _repeating_fraction(match: re.Match) -> str:
    whole, fixed, repeat = match.group(1) or "0", match.group(2), match.group(3) or match.group(4)
    if len(whole) + len(fixed) + len(repeat) > REPEATING_DIGITS:
        return match.group(0)
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

    "025" -> "25" (AIME zero padding), 27.0 -> "27" (AMC floats), 1e-05 -> "0.00001" (a float
    in positional notation), 7 -> "7"; "\\frac{1}{2}" stays. A gold the grader cannot use
    (:func:`gold_defect`: only math delimiters, unbalanced braces) is a ValueError.
    """
    if isinstance(gold, bool) or gold is None:
        raise ValueError(f"gold answer {gold!r} is not a number or a string")
    if isinstance(gold, Integral):
        return str(int(gold))
    if isinstance(gold, Real):
        value = float(gold)
        if not isfinite(value):
            raise ValueError(f"gold answer {gold!r} is not a finite number")
        return str(int(value)) if value.is_integer() else float_text(value)
    if not isinstance(gold, str):
        raise TypeError(
            f"gold answer {gold!r} has type {type(gold).__name__}, expected str or number"
        )
    text = gold.strip()
    defect = gold_defect(text)
    if defect:
        raise ValueError(f"gold answer {text[:80]!r} {defect}")
    return plain_integer(text) or text


def float_text(value: float) -> str:
    """A float's shortest repr in positional notation: 1e-05 -> "0.00001" (repr writes
    e-notation, which math-verify reads as 1·e^-5)."""
    text = repr(value)
    return positional_decimal(text) if "e" in text else text


def plain_integer(text: str) -> str | None:
    """``"+007"``/``"007.00"`` -> ``"7"``, ``"-0"`` -> ``"0"``; None for anything else. By
    text, one pass: ``int()`` refuses more than 4300 digits, and a gold may have more."""
    sign = text[:1] if text[:1] in ("+", "-") else ""
    whole, dot, fraction = text[len(sign) :].partition(".")
    if not (whole.isascii() and whole.isdigit()) or (dot and fraction.strip("0")):
        return None
    digits = whole.lstrip("0") or "0"
    return "-" + digits if sign == "-" and digits != "0" else digits


_DELIMITERS = (("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))


def gold_defect(text: str) -> str | None:
    """Why the grader cannot use this gold text, or None: empty, only math delimiters (``$$``:
    every response would grade ``error``), or braces that do not balance."""
    inner = text.strip()
    for left, right in _DELIMITERS:
        if inner.startswith(left) and inner.endswith(right) and len(inner) >= len(left + right):
            inner = inner[len(left) : len(inner) - len(right)].strip()
    if not inner.strip("$").strip():
        return "is empty" if not text.strip() else "holds only math delimiters, no answer"
    depth = 0
    for match in _BRACE_OR_ESCAPE.finditer(inner):
        depth += {"{": 1, "}": -1}.get(match.group(), 0)
        if depth < 0:
            break
    return None if depth == 0 else "has braces that do not balance"


# ----------------------------------------------------------------------------- fast path


def _as_decimal(s: str) -> Decimal | None:
    if not _DECIMAL.fullmatch(s):
        return None
    try:
        return Decimal(s)
    except InvalidOperation:
        return None


def fast_equal(gold: str, answer: str) -> bool:
    """True only when the two are surely equal; False means "not decided here"."""
    return _fast_compare(normalize_answer(gold), normalize_answer(answer)) is True


def _fast_compare(g: str, a: str) -> bool | None:
    """On normalised forms: True (surely equal), False (two different plain numbers), or None."""
    if not g or not a:
        return None
    if g == a:
        return True
    g_num, a_num = _as_decimal(g), _as_decimal(a)
    if g_num is None or a_num is None:
        return None
    return g_num == a_num


# ----------------------------------------------------------------------------- grading


def _check_extraction(extraction: str) -> None:
    if extraction not in EXTRACTIONS:
        raise ValueError(f"extraction must be one of {EXTRACTIONS}, got {extraction!r}")


def _too_long(what: str, size: int, limit: int, extracted: str | None) -> GradeResult:
    reason = f"the {what} has {size:,} characters; at most {limit:,} are graded"
    return GradeResult(0.0, extracted, "timeout", {"method": "length cap", "reason": reason})


def _prepare(response: str, gold_text: str, extraction: str, timeout: float):
    """A final GradeResult when a cap, extraction or the fast path decides, else a MathJob.

    Linear in ``len(response)``: this runs before any deadline.
    """
    if len(response) > MAX_RESPONSE_CHARS:
        return _too_long("response", len(response), MAX_RESPONSE_CHARS, None)
    if extraction == "official":
        return MathJob(gold_text, response, None, "official", timeout)
    extracted = extract_boxed(response)
    if extracted is None or not extracted.strip():
        return GradeResult(0.0, None, "no_answer")
    extracted = extracted.strip()
    if len(extracted) > MAX_ANSWER_CHARS and not extracted.isascii():
        # Unicode's LaTeX rewrite grows the box (× is 7 characters) and ran before the deadline
        # (1 MB of ½: 2 s); no such box can be decided by the fast path.
        return _too_long("answer", len(extracted), MAX_ANSWER_CHARS, extracted)
    gold_form, answer_form = canonical(gold_text), canonical(extracted)
    equal = _fast_compare(normalize_answer(gold_form), normalize_answer(answer_form))
    if equal is not None:  # equal, or two different plain numbers: surely unequal
        return GradeResult(1.0 if equal else 0.0, extracted, "ok", {"method": "fast"})
    if spaced_digits(answer_form):
        return GradeResult(0.0, extracted, "ok", {"method": "spaced digits"})
    if len(answer_form) > MAX_ANSWER_CHARS:
        return _too_long("answer", len(answer_form), MAX_ANSWER_CHARS, extracted)
    return _read(expand_pm(gold_form, answer_form), answer_form, extracted, timeout)


def _read(gold_form: str, answer_form: str, extracted: str, timeout: float):
    """The box read as a structure (docs/grading_policy.md, "Relations and candidate lists"):
    a structural verdict, a fast verdict on its answer side, or a MathJob with its claims."""
    reading = read_answer(answer_form, gold_form)
    if reading.verdict is not None:
        details = {"method": reading.verdict, "reason": reading.reason}
        return GradeResult(0.0, extracted, "ok", details)
    claims = []
    for left, right, rounding in reading.claims:
        left, right = canonical(left), canonical(right)
        same = _fast_compare(normalize_answer(left), normalize_answer(right))
        if same is False and rounding is None:  # two different plain numbers: a false relation
            reason = f"a false relation: {right[:40]!r} is not {left[:40]!r}"
            return GradeResult(0.0, extracted, "ok", {"method": "relation", "reason": reason})
        if same is not True:
            claims.append((left, right, rounding))
    answer = canonical(reading.answer)
    if answer != answer_form:
        equal = _fast_compare(normalize_answer(gold_form), normalize_answer(answer))
        if equal is False or (equal and not claims):
            return GradeResult(1.0 if equal else 0.0, extracted, "ok", {"method": "fast"})
        if spaced_digits(answer):
            return GradeResult(0.0, extracted, "ok", {"method": "spaced digits"})
    return MathJob(gold_form, answer, extracted, "strict", timeout, tuple(claims))


def _prepare_or_error(response: str, gold_text: str, extraction: str, timeout: float):
    """:func:`_prepare`; whatever it raises on one response is that response's verdict."""
    try:
        return _prepare(response, gold_text, extraction, timeout)
    except Exception as exc:  # noqa: BLE001 - one response must never fail its batch
        error = f"{type(exc).__name__}: {str(exc)[:200]}"
        return GradeResult(0.0, None, "error", {"method": "prepare", "error": error})


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
    timeout = check_seconds("timeout", timeout)
    if len(responses) != len(golds):
        raise ValueError(f"{len(responses)} responses but {len(golds)} golds")
    if workers < 0:
        raise ValueError(f"workers must be >= 0, got {workers}")
    gold_texts = []
    for i, (response, gold) in enumerate(zip(responses, golds)):
        try:  # the caller's mistakes (a response that is not text, a gold we cannot use) raise
            if not isinstance(response, str):
                raise TypeError(f"response has type {type(response).__name__}, expected str")
            gold_texts.append(normalize_gold(gold))
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"item {i}: {exc}") from None
    prepared = [
        _prepare_or_error(response, gold_text, extraction, timeout)
        for response, gold_text in zip(responses, gold_texts)
    ]
    todo = [i for i, p in enumerate(prepared) if not isinstance(p, GradeResult)]
    for i, result in zip(todo, _run_jobs([prepared[i] for i in todo], workers, timeout)):
        prepared[i] = result
    return prepared


def _run_jobs(jobs: list, workers: int, timeout: float) -> list[GradeResult]:
    # The samples of a problem repeat the same few answers: verify each distinct job once.
    unique = list(dict.fromkeys(jobs))
    verdicts = dict(zip(unique, _run_unique_jobs(unique, workers, timeout)))
    return [verdicts[job] for job in jobs]


def load_math_verify() -> None:
    """Import math-verify now (it is heavy), so that a timed region that grades does not pay for
    its import."""
    from pacs.rewards import _mathverify  # noqa: F401


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
