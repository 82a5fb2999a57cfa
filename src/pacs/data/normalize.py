"""Gold-answer normalisation: integer-valued answers become canonical integer strings.

``25`` and ``"025"`` become ``"25"``; ``27.0`` and ``"27.0"`` become ``"27"``; ``" 7 "`` becomes
``"7"``. Any other answer (LaTeX such as ``\\frac{1}{2}``, intervals, words) is kept as given,
only stripped of surrounding whitespace. Booleans, NaN, infinities, empty strings and text that
is not valid Unicode (a lone surrogate) are errors. Integers of any length are canonicalised as
text (Python refuses ``int()`` past 4300 digits; a 5,000-digit answer is still an answer).

The grader's rules for golds apply here, so that a bad gold fails preparation rather than every
response: text holding only math delimiters (``$$``) or braces that do not balance is refused;
a float or e-notation text is written out positionally (``1e-05`` -> ``"0.00001"``, which
``\\boxed{0.00001}`` matches; math-verify reads ``1e-05`` as 1·e^-5). docs/grading_policy.md.

Benchmarks whose answers are integers by construction (AIME: 0-999) also go through
:func:`integer_answer`, which refuses anything else (``"abc"``, ``12.5``, ``1000``).

``index`` is the row's 0-based position; errors show it counted from 1 (:class:`DataError`).
"""

from __future__ import annotations

import math
import re
from typing import Any

from pacs.data.errors import DataError
from pacs.rewards.math import float_text, gold_defect, is_e_notation, positional_decimal

_INT_RE = re.compile(r"[+-]?\d+")
_INT_FLOAT_RE = re.compile(r"([+-]?\d+)\.0*")


def canonical_integer(text: str) -> str:
    """``"+007"`` -> ``"7"``, ``"-0"`` -> ``"0"``: by text, so any number of digits works."""
    sign = "-" if text.startswith("-") else ""
    digits = text.lstrip("+-").lstrip("0") or "0"
    return sign + digits if digits != "0" else "0"


def normalize_answer(value: Any, *, file: Any, index: int, field: str = "answer") -> str:
    """Canonical gold string for ``value``; raise :class:`DataError` naming file, row and field."""
    if isinstance(value, bool) or value is None:
        raise DataError(file, f"expected a number or a string, got {value!r}", index, field)
    if isinstance(value, int):
        try:
            return canonical_integer(str(value))
        except ValueError:  # Python's int -> str limit (4300 digits)
            raise DataError(file, "integer too long to convert; give it as a string", index, field)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise DataError(file, f"answer is {value!r}", index, field)
        return str(int(value)) if value.is_integer() else float_text(value)
    if isinstance(value, str):
        return _normalize_text(value, file, index, field)
    if hasattr(value, "item"):  # numpy scalars and the like
        return normalize_answer(value.item(), file=file, index=index, field=field)
    raise DataError(
        file, f"expected a number or a string, got {type(value).__name__}", index, field
    )


def _normalize_text(value: str, file: Any, index: int, field: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise DataError(file, f"not valid Unicode ({err.reason})", index, field) from None
    text = value.strip()
    if not text:
        raise DataError(file, "answer is empty", index, field)
    defect = gold_defect(text)
    if defect:  # the grader could grade no response against it
        raise DataError(file, f"answer {_shown(text)} {defect}", index, field)
    if _INT_RE.fullmatch(text):
        return canonical_integer(text)
    match = _INT_FLOAT_RE.fullmatch(text)
    if match:
        return canonical_integer(match.group(1))
    return positional_decimal(text) if is_e_notation(text) else text


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 80 else f"{text[:40]!r}... ({len(text)} characters)"


def integer_answer(
    value: Any,
    low: int,
    high: int | None,
    *,
    file: Any,
    index: int,
    field: str = "answer",
    what: str = "answers",
) -> str:
    """:func:`normalize_answer`, then require an integer in ``[low, high]`` (``high`` None: no
    upper bound); ``"025"`` is 25. The error names file, row and field, and the rule."""
    answer = normalize_answer(value, file=file, index=index, field=field)
    if not (_INT_RE.fullmatch(answer) and _in_range(answer, low, high)):
        bounds = f"from {low} to {high}" if high is not None else f">= {low}"
        shown = repr(value) if len(str(value)) <= 80 else _shown(str(value))
        raise DataError(file, f"{what} are integers {bounds}, got {shown}", index, field)
    return answer


def _in_range(answer: str, low: int, high: int | None) -> bool:
    """``low <= int(answer) <= high`` without int() on a huge string (the bounds are small)."""
    if len(answer.lstrip("-")) > 30:
        return high is None and not answer.startswith("-")
    number = int(answer)
    return low <= number and (high is None or number <= high)
