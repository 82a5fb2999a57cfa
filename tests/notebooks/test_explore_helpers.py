"""The pieces of the results notebook (pacs.explore, pacs.explore.browser), on hand-made cases."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pacs.config import parse_profile
from pacs.explore import compare, inferred_config, seed_curves, smooth
from pacs.explore.browser import (
    ALL_PROBLEMS,
    answer_span,
    highlight_answer,
    last_box,
    render_page,
    select,
)
from pacs.rewards.math import extract_boxed


def test_smooth_is_tensorboards_debiased_ema():
    values = np.array([1.0, 0.0, 0.0, 4.0])
    w = 0.5
    # by hand: last = 0.5, 0.25, 0.125, 2.0625; debias 1 - 0.5**n = 0.5, 0.75, 0.875, 0.9375
    assert smooth(values, w) == pytest.approx([1.0, 1 / 3, 1 / 7, 2.2])
    assert smooth(values, 0.0) == pytest.approx(values)
    with_gap = smooth(np.array([2.0, math.nan, 2.0]), 0.9)
    assert math.isnan(with_gap[1]) and with_gap[[0, 2]] == pytest.approx([2.0, 2.0])


def test_seed_curves_average_the_smoothed_seeds():
    frame = pd.DataFrame(
        {
            "run": "pacs",
            "seed": [0, 0, 1, 1],
            "step": [1, 2, 1, 2],
            "reward_mean": [0.0, 1.0, 1.0, 1.0],
        }
    )
    out = seed_curves(frame, "reward_mean", weight=0.5).set_index("step")
    # seed 0 smoothed: 0, 2/3; seed 1: 1, 1
    assert list(out["mean"]) == pytest.approx([0.5, 5 / 6])
    assert list(out["low"]) == pytest.approx([0.0, 2 / 3]) and list(out["high"]) == [1.0, 1.0]
    assert list(out["seeds"]) == [2, 2]


def test_compare_counts_wins_and_applies_the_sign_test():
    problems = [f"p{i}" for i in range(10)]
    a = pd.Series([1.0] * 7 + [0.0] + [0.5, 0.5], index=problems)
    b = pd.Series([0.5] * 7 + [1.0] + [0.5, 0.5], index=problems)
    cmp = compare(a, b, "pacs", "grpo")
    assert (cmp.wins, cmp.losses, cmp.ties) == (7, 1, 2)
    assert cmp.p_value == pytest.approx(18 / 256)  # P(X <= 1 or X >= 7), X ~ Bin(8, 1/2)
    assert cmp.mean_diff == pytest.approx((7 * 50 - 100) / 10)
    assert "no significant difference at α = 0.05" in cmp.statement()
    strong = compare(pd.Series([1.0] * 9), pd.Series([0.0] * 9), "pacs", "grpo")
    assert strong.p_value == pytest.approx(2 / 512)
    assert "pacs is significantly better" in strong.statement()
    assert (
        "grpo is significantly better"
        in compare(pd.Series([0.0] * 9), pd.Series([1.0] * 9), "pacs", "grpo").statement()
    )


def test_last_box_takes_the_last_balanced_box():
    assert last_box(r"so \boxed{3} no, \boxed{\frac{1}{2}} done") == r"\frac{1}{2}"
    assert last_box(r"The answer is \boxed") is None and last_box(r"\boxed{12") is None
    assert last_box("no box") is None and last_box(None) is None and last_box(float("nan")) is None
    assert last_box(r"\fbox{7} then \fboxsep") == "7"  # the grader's reading: \fbox counts


def test_highlight_escapes_and_marks_the_box_the_grader_reads():
    text = r"1<2 so \boxed{\frac{1}{2}} & \boxed{3}."
    assert highlight_answer(text) == r"1&lt;2 so \boxed{\frac{1}{2}} &amp; <mark>\boxed{3}</mark>."
    # an unclosed last box: the grader reads no answer, so nothing is marked
    assert highlight_answer(r"a<b \boxed{1} \boxed{2") == r"a&lt;b \boxed{1} \boxed{2"
    assert highlight_answer(r"\boxed{\boxed{1}}") == r"\boxed{<mark>\boxed{1}</mark>}"
    assert highlight_answer(r"so \boxed 12$ ok") == r"so <mark>\boxed 12</mark>$ ok"


@pytest.mark.parametrize(
    "text",
    [
        r"\boxed{a \} b}!",
        r"x \boxed {{1}} z",
        r"\fbox{7} \fboxsep",
        r"\boxed{1} then \boxed{\frac{\sqrt{2}}{2}} \quad done",
        r"\\boxed{5}",
    ],
)
def test_the_marked_span_is_the_graders_box(text):
    start, end = answer_span(text)
    assert text[start] == "\\" and extract_boxed(text[start:end]) == extract_boxed(text)
    assert extract_boxed(text[start + 1 :]) != extract_boxed(text)  # no later box start
    assert extract_boxed(text[start : end - 1]) != extract_boxed(text)  # nothing shorter holds it


def _graded() -> pd.DataFrame:
    rows = [
        {
            "problem_id": f"b/{p}",
            "sample_idx": s,
            "response": f"\\boxed{{{s}}}",
            "score": float(s == p),
            "extracted": None if s == 2 else str(s),
            "status": "ok",
            "box": str(s),
            "correct": s == p,
        }
        for p in range(3)
        for s in range(3)
    ]
    return pd.DataFrame(rows)


def test_select_filters_problem_and_verdict():
    g = _graded()
    assert len(select(g)) == 9 and len(select(g, ALL_PROBLEMS)) == 9
    assert list(select(g, "b/1").sample_idx) == [0, 1, 2]
    assert list(select(g, None, True).problem_id) == ["b/0", "b/1", "b/2"]
    assert list(select(g, "b/1", False).sample_idx) == [0, 2]


def test_render_page_pages_and_says_where_it_is():
    g = _graded()
    problems = {"b/0": {"answer": "0", "prompt": [{"role": "user", "content": "what <is> 0?"}]}}
    first = render_page(g, problems, page=0, per_page=4, title="m · b · pacs seed 0")
    assert "m · b · pacs seed 0 — page 1 of 3, responses 1–4 of 9" in first
    assert first.count('class="pacs-response') == 4 and "what &lt;is&gt; 0?" in first
    last = render_page(g, problems, page=7, per_page=4)  # clamped to the last page
    assert "page 3 of 3, responses 9–9 of 9" in last
    # sample 2 of problem b/2: the grader extracted nothing -> an em dash, not "None" or "nan"
    assert "graded answer <b>—</b>" in last and "nan" not in last and "None" not in last
    assert "No response matches" in render_page(g.iloc[:0], problems)


def test_inferred_config_names_methods_and_ablations():
    class R:
        passk = pd.DataFrame({"run": ["base", "pacs", "pacs_beta2", "pacs_noweight", "ppo", "odd"]})
        metrics = pd.DataFrame({"run": ["pacs_score_grpo"]})
        curves = pd.DataFrame({"run": []})

    cfg = inferred_config("x", R)
    runs = cfg["runs"]
    assert runs["pacs"] == {"method": "pacs", "ablation": "main", "label": "pacs"}
    assert (
        runs["pacs_beta2"]["ablation"] == "beta" and runs["pacs_noweight"]["ablation"] == "weight"
    )
    assert runs["pacs_score_grpo"]["ablation"] == "score" and runs["ppo"]["method"] == "ppo"
    assert "odd" not in runs and "base" not in runs
    spec = parse_profile(cfg, "inferred")  # a valid profile: the template's other sections
    assert spec.profile == "x" and spec.runs["pacs_noweight"].method.name == "pacs"


def test_the_loss_panel_gives_each_objective_its_own_axes():
    """MethodTraits.loss_title: PACS's BCE (ln 2 marked), REAL's log-sum-exp, the surrogates."""
    from types import SimpleNamespace

    from pacs.explore.curves import loss_panels

    methods = {"pacs": "pacs", "grpo": "grpo", "ppo": "ppo", "dapo": "dapo", "real": "real"}
    runs = {name: SimpleNamespace(method=m) for name, m in methods.items()}
    profile = SimpleNamespace(ctx=SimpleNamespace(runs=runs))
    panels = loss_panels(profile, ["real", "dapo", "ppo", "grpo", "pacs"], {"loss"})
    assert [(t, c, rs) for t, c, rs, _ in panels] == [
        ("PACS: class-balanced BCE", "loss", ["pacs"]),
        ("GRPO / PPO / DAPO: clipped surrogate", "loss", ["grpo", "ppo", "dapo"]),
        ("REAL: anchored log-sum-exp", "loss", ["real"]),
    ]
    assert panels[0][3] == pytest.approx(math.log(2)) and panels[2][3] is None
    assert loss_panels(profile, ["grpo"], set()) == []  # no loss column, no panel
