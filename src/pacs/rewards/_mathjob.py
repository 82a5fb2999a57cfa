"""The unit of work the math grader hands to math-verify, and the rules both sides share.

Kept apart from :mod:`pacs.rewards.math` (the API) and :mod:`pacs.rewards._mathverify` (the
heavy math-verify step) so that neither imports the other's module at import time: ``math``
imports ``_mathverify`` lazily, and both import this.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# The official PACS reward verifies with float_rounding=6: 0.0000002 then equals 0.0000001. We round
# at no fewer decimals than either side writes
# (docs/design.md#the-math-grader).
FLOAT_ROUNDING = 6
# Only the digits after the point count; no "\d*" before it (quadratic on a long digit run).
_DECIMALS = re.compile(r"\.(\d+)")


class MathJob(NamedTuple):
    """One comparison left to math-verify (picklable: it travels to worker processes)."""

    gold: str  # canonical gold (LaTeX or integer string)
    answer: str  # strict: the canonical content of the last box; official: the whole response
    extracted: str | None  # what the response wrote (reported, never compared)
    mode: str  # "strict" | "official"
    timeout: float
    # strict: (a, b, rounding) that must hold besides answer == gold: a side of a relation in the
    # box equals its answer (rounding None: the usual rounding; docs/grading_policy.md)
    claims: tuple[tuple[str, str, int | None], ...] = ()


def float_rounding(gold: str, answer: str) -> int:
    """Decimal places at which math-verify may round a float: FLOAT_ROUNDING, or more when
    either side writes more (so 0.0000002 != 0.0000001 and 0.0000001 != 0)."""
    written = [len(m.group(1)) for m in _DECIMALS.finditer(gold + " " + answer)]
    return max([FLOAT_ROUNDING, *written])
