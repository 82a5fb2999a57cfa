"""Issue 35: a 1 MB box of unicode is refused before its LaTeX rewrite (which ran before the
deadline: 1.6-2.8 s of CPU for a box of ``½``, ``⅞``, ``√`` or ``×``)."""

from __future__ import annotations

import time

import pytest

from pacs.rewards import math as M

SYMBOLS = ["\u00bd", "\u215e", "\u221a", "\u00d7"]


@pytest.mark.parametrize("symbol", SYMBOLS)
def test_a_long_unicode_box_meets_the_answer_cap_first(symbol, monkeypatch):
    def no_rewrite(text):
        raise AssertionError("the unicode rewrite ran on a box over the answer cap")

    monkeypatch.setattr(M, "unicode_to_latex", no_rewrite)
    response = "\\boxed{" + symbol * 999_000 + "}"  # a 1 MB response
    cpu = time.process_time()
    result = M.grade(response, "5", timeout=1.0)
    assert time.process_time() - cpu < 1.0
    assert (result.score, result.status, result.details["method"]) == (0.0, "timeout", "length cap")
    assert "the answer has 999,000 characters" in result.details["reason"]


def test_a_short_unicode_box_is_still_read():
    assert M.grade("\\boxed{\u00bd}", "\\frac{1}{2}").score == 1.0
    box = "\\boxed{" + "\u00bd" * (M.MAX_ANSWER_CHARS + 1) + "}"
    assert M.grade(box, "5").details["method"] == "length cap"
