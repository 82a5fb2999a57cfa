"""Path statistics of correct responses (pacs.evaluation.paths)."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from pacs.data.synthetic import path_stats as S
from pacs.evaluation import paths as P


def test_plugin_entropy_hand_computed():
    assert S.plugin_entropy([2]) == 0.0
    assert S.plugin_entropy([1, 1]) == pytest.approx(math.log(2))
    assert S.plugin_entropy([1] * 6) == pytest.approx(math.log(6))
    assert S.plugin_entropy([3, 1]) == pytest.approx(
        -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    )


def test_pairwise_disagreement_hand_computed():
    assert S.pairwise_disagreement([1, 1]) == 1.0
    assert S.pairwise_disagreement([3]) == 0.0
    assert S.pairwise_disagreement([2, 2]) == pytest.approx(1 - 4 / 12)  # 4 of 6 pairs differ
    with pytest.raises(ValueError):
        S.pairwise_disagreement([1])


def _compositions(m, k):
    for bars in itertools.combinations(range(m + k - 1), k - 1):
        yield [b - a - 1 for a, b in zip((-1, *bars), (*bars, m + k - 1))]


def _multinomial(counts, probs):
    m = sum(counts)
    return math.exp(
        math.lgamma(m + 1)
        + sum(c * math.log(p) - math.lgamma(c + 1) for c, p in zip(counts, probs))
    )


@pytest.mark.parametrize("m", [2, 3, 5])
def test_pairwise_disagreement_is_unbiased_for_gini_simpson(m):
    probs = [0.5, 0.3, 0.2]
    expected = sum(_multinomial(c, probs) * S.pairwise_disagreement(c) for c in _compositions(m, 3))
    assert expected == pytest.approx(1 - sum(p * p for p in probs))


def test_expected_plugin_entropy_hand_computed_and_against_simulation():
    # Two equally likely paths, m = 2: H = 0 w.p. 1/2, ln 2 w.p. 1/2.
    assert S.expected_plugin_entropy([0.5, 0.5], 2) == pytest.approx(0.5 * math.log(2))
    assert S.expected_plugin_entropy([0.5, 0.5], 1) == 0.0
    rng = np.random.default_rng(0)
    draws = rng.multinomial(8, [1 / 6] * 6, size=20000)
    sim = np.mean([S.plugin_entropy(list(c)) for c in draws])
    assert S.expected_plugin_entropy([1 / 6] * 6, 8) == pytest.approx(sim, abs=0.01)
    assert S.expected_plugin_entropy([1 / 6] * 6, 8) < math.log(6)  # biased low


def test_problem_stats_subsample_uses_the_first_responses():
    paths = [(1, 2), (1, 2), (2, 1), (2, 1), (2, 1)]
    s = S.problem_stats(paths, subsample=2)
    assert s["path_entropy_sub"] == 0.0  # the first two agree
    assert s["path_diversity"] == pytest.approx(1 - (2 + 6) / 20)
    assert S.problem_stats(paths[:1], 2) == {
        "path_diversity": None,
        "path_entropy": None,
        "path_entropy_sub": None,
    }


def test_rollout_path_stats_hand_computed():
    q = [[1, 2, 3]] * 4 + [[4, 5, 6]] * 4
    texts = [
        "1+2=3. 3+3=6.",
        "2+1=3. 3+3=6.",
        "1+2=3. 3+3=6.",
        "wrong",
        "4+5=9. 9+6=15.",
        "4+5=9. 9+6=15.",
        "nonsense",
        "x",
    ]
    scores = [1, 1, 1, 0, 1, 1, 1, 0]  # group 2's third correct response has no path
    out = S.rollout_path_stats(texts, scores, q, 4)
    assert out["path_diversity"] == pytest.approx((2 / 3 + 0.0) / 2)
    h1 = -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3))
    assert out["path_entropy"] == pytest.approx(h1 / 2)
    assert S.rollout_path_stats(texts[:4], [0, 0, 0, 0], q[:4], 4) == {
        "path_diversity": None,
        "path_entropy": None,
    }


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_stage_end_to_end(tmp_path):
    _write(
        tmp_path / "test.jsonl",
        [
            {"problem_id": "a", "quantities": [1, 2, 3]},
            {"problem_id": "b", "quantities": [4, 5, 6]},
        ],
    )
    texts = {
        ("a", 0): "1+2=3. 3+3=6.",
        ("a", 1): "3+2=5. 5+1=6.",
        ("a", 2): "6",
        ("b", 0): "4+5=9. 9+6=15.",
        ("b", 1): "x",
    }
    scores = {("a", 0): 1, ("a", 1): 1, ("a", 2): 1, ("b", 0): 1, ("b", 1): 0}
    _write(
        tmp_path / "graded.jsonl",
        [
            {"problem_id": p, "sample_idx": i, "response": t, "score": scores[p, i]}
            for (p, i), t in texts.items()
        ],
    )
    doc = P.main(
        [
            "--graded",
            str(tmp_path / "graded.jsonl"),
            "--benchmark-file",
            str(tmp_path / "test.jsonl"),
            "--out",
            str(tmp_path / "paths.json"),
            "--model",
            "tiny",
            "--run",
            "pacs",
            "--seed",
            "0",
            "--subsample",
            "2",
        ]
    )
    assert doc["per_problem"]["a"] == {
        "n": 3,
        "c": 3,
        "paths": ["1-2-3", "3-2-1"],
        "unparsed_correct": 1,
    }
    assert doc["path_diversity"] == 1.0 and doc["path_diversity_problems"] == 1
    assert doc["path_entropy"] == pytest.approx(math.log(2))
    assert doc["n_correct"] == 4 and doc["unparsed_correct"] == 1
    assert json.loads((tmp_path / "paths.json").read_text())["run"] == "pacs"


def test_stage_names_file_and_line_of_a_bad_row(tmp_path):
    _write(
        tmp_path / "test.jsonl",
        [{"problem_id": "a", "quantities": [1, 2]}, {"problem_id": "b", "quantities": "12"}],
    )
    with pytest.raises(P.FormatError, match=r"test.jsonl:2: field 'quantities'"):
        P.load_quantities(tmp_path / "test.jsonl")


def test_expected_plugin_entropy_with_a_path_of_zero_probability():
    assert S.expected_plugin_entropy([0.5, 0.5, 0.0], 2) == pytest.approx(0.5 * math.log(2))
