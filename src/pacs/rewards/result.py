"""The verdict every grader returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STATUSES = ("ok", "no_answer", "timeout", "error")


def is_correct(score: float) -> bool:
    """A sample counts as correct (pass@k, maj@k, the diversity and path statistics) when its
    score is 1."""
    return score >= 1.0


@dataclass(frozen=True)
class GradeResult:
    """One graded response.

    score: in [0, 1] (1.0 = correct). extracted: the answer the grader compared, or None.
    status: "ok" (graded), "no_answer" (nothing to grade, score 0), "timeout" (score 0),
    "error" (the grader failed on this item, score 0). details: grader-specific extras.
    """

    score: float
    extracted: str | None
    status: str
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"GradeResult.status {self.status!r} is not one of {STATUSES}")
        if not 0.0 <= self.score <= 1.0:
            raise ValueError(f"GradeResult.score {self.score!r} is outside [0, 1]")
        if self.status != "ok" and self.score != 0.0:
            raise ValueError(
                f"GradeResult with status {self.status!r} must score 0, got {self.score}"
            )
