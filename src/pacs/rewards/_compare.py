"""Comparing what a program produced with a test's expected output, in bounded time and memory.

Whatever a program prints or returns, the comparison ends in True or False: it never raises and
never builds a structure much larger than the output itself.

- stdin tests (LiveCodeBench's rule): both outputs stripped and split into lines, each line
  stripped; lines equal as text or, token by token, as ``Decimal`` numbers ("1.0" == "1"). A
  NaN token (``NaN``, ``sNaN``) equals nothing. The line counts are compared first (one pass in
  C), so only an output with as many lines as the expected one is split, and tokens are read
  lazily, stopping at the first difference.
- functional tests: the returned value arrives as JSON text and is parsed with
  :func:`parse_json`, which gives integers of any length (``Decimal`` past Python's int-string
  limit, compared exactly) and reports nesting too deep to parse as a ``ValueError``.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from typing import Any

# Python refuses str -> int beyond 4300 digits; longer integers become Decimals (exact, and
# == compares a Decimal with an int exactly).
_INT_DIGITS = 4000
_TOKEN = re.compile(r"\S+")


def _parse_int(text: str) -> int | Decimal:
    return int(text) if len(text) <= _INT_DIGITS else Decimal(text)


def parse_json(text: str | bytes) -> Any:
    """``json.loads`` for untrusted text; every failure is a ``ValueError`` saying why."""
    try:
        return json.loads(text, parse_int=_parse_int)
    except RecursionError:
        raise ValueError("nested deeper than the JSON parser's recursion limit") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg})") from None


def values_equal(got: Any, expected: Any) -> bool:
    """``got == expected`` (LiveCodeBench's rule), False where the comparison itself fails."""
    try:
        return bool(got == expected)
    except (RecursionError, InvalidOperation, TypeError, ValueError):
        return False


def _as_number(token: str) -> Decimal | None:
    try:
        number = Decimal(token)
    except (InvalidOperation, ValueError):
        return None
    return None if number.is_nan() else number


def _same_numbers(got: str, want: str) -> bool:
    """Token by token as Decimals; reads at most one token more than ``want`` holds."""
    wanted = want.split()
    count = 0
    for match in _TOKEN.finditer(got):
        if count == len(wanted):
            return False
        g, w = _as_number(match.group()), _as_number(wanted[count])
        if g is None or w is None or g != w:
            return False
        count += 1
    return count == len(wanted)


def stdout_matches(actual: str, expected: str) -> bool:
    """LiveCodeBench's stdin comparison (see the module docstring)."""
    got, want = actual.strip(), expected.strip()
    if got.count("\n") != want.count("\n"):
        return False
    start = 0
    for want_line in want.split("\n"):
        end = got.find("\n", start)
        end = len(got) if end < 0 else end
        got_line, want_line = got[start:end].strip(), want_line.strip()
        start = end + 1
        if got_line != want_line and not _same_numbers(got_line, want_line):
            return False
    return True
