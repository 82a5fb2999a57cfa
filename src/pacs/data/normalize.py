"""Gold-answer normalisation: integer-valued answers become canonical integer strings.

``25`` and ``"025"`` become ``"25"``; ``27.0`` and ``"27.0"`` become ``"27"``; ``" 7 "`` becomes
``"7"``. Any other answer (LaTeX such as ``\\frac{1}{2}``, intervals, words) is kept as given,
only stripped of surrounding whitespace. Booleans, NaN, infinities and empty strings are errors.

Benchmarks whose answers are integers by construction (AIME: 0-999) also go through
:func:`integer_answer`, which refuses anything else (``"abc"``, ``12.5``, ``1000``).
"""

from __future__ import annotations

import math
import re
from typing import Any

from pacs.data.errors import DataError

_INT_RE = re.compile(r"[+-]?\d+")
_INT_FLOAT_RE = re.compile(r"([+-]?\d+)\.0*")


def normalize_answer(value: Any, *, file: Any, row: int, field: str = "answer") -> str:
    """Canonical gold string for ``value``; raise :class:`DataError` naming file, row and field."""
    if isinstance(value, bool) or value is None:
        raise DataError(file, f"expected a number or a string, got {value!r}", row, field)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise DataError(file, f"answer is {value!r}", row, field)
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise DataError(file, "answer is empty", row, field)
        if _INT_RE.fullmatch(text):
            return str(int(text))
        match = _INT_FLOAT_RE.fullmatch(text)
        return str(int(match.group(1))) if match else text
    # numpy scalars and the like
    if hasattr(value, "item"):
        return normalize_answer(value.item(), file=file, row=row, field=field)
    raise DataError(file, f"expected a number or a string, got {type(value).__name__}", row, field)


def integer_answer(
    value: Any,
    low: int,
    high: int | None,
    *,
    file: Any,
    row: int,
    field: str = "answer",
    what: str = "answers",
) -> str:
    """:func:`normalize_answer`, then require an integer in ``[low, high]`` (``high`` None: no
    upper bound); ``"025"`` is 25. The error names file, row and field, and the rule."""
    answer = normalize_answer(value, file=file, row=row, field=field)
    in_range = (
        _INT_RE.fullmatch(answer) and low <= int(answer) and (high is None or int(answer) <= high)
    )
    if not in_range:
        bounds = f"from {low} to {high}" if high is not None else f">= {low}"
        raise DataError(file, f"{what} are integers {bounds}, got {value!r}", row, field)
    return answer
