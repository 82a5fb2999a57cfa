"""Checks of the limits a caller gives a grader (time, memory): one message names the argument.

A limit must be a finite number in ``(0, maximum]``: ``inf`` ("no limit") cannot be armed as a
timer (``setitimer`` and ``poll`` overflow), NaN compares false with everything, and a limit of
0 or less would time out every item. Booleans are refused, though Python counts them as numbers.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

# One day: longer than any grading item may take, small enough for every timer API.
MAX_SECONDS = 24 * 3600.0
# One TiB in MB: more than any machine gives a sandbox, small enough to shift into bytes.
MAX_MEGABYTES = 1 << 20


def check_seconds(name: str, value: object, maximum: float = MAX_SECONDS) -> float:
    """``value`` as a float, or a ValueError/TypeError that names ``name``."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number of seconds, got {value!r}")
    seconds = float(value)
    if not (math.isfinite(seconds) and 0 < seconds <= maximum):
        raise ValueError(
            f"{name} must be > 0 seconds and at most {maximum:g} (a finite number), got {value!r}"
        )
    return seconds


def check_megabytes(name: str, value: object, maximum: int = MAX_MEGABYTES) -> int:
    """``value`` as an int, or a ValueError/TypeError that names ``name``."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be a whole number of megabytes, got {value!r}")
    if not 0 < value <= maximum:
        raise ValueError(f"{name} must be > 0 and at most {maximum} megabytes, got {value!r}")
    return int(value)
