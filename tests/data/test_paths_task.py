"""The many-paths synthetic task (pacs.data.synthetic.paths)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import random
from collections import Counter
from pathlib import Path

import pytest

from pacs import PROMPT_SUFFIX
from pacs.config import load_profile
from pacs.data import cli
from pacs.data.synthetic import write_task_splits
from pacs.data.synthetic.paths import make_problem, make_splits, parse_path, solution_for
from pacs.io import read_jsonl
from pacs.rewards.math import grade

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_rows_are_correct_and_their_solution_is_a_path():
    rng = random.Random(0)
    for _ in range(300):
        row = make_problem(rng, min_terms=3, max_terms=4, max_operand=40)
        q = row["quantities"]
        assert 3 <= len(q) <= 4 and len(set(q)) == len(q) and all(1 <= v <= 40 for v in q)
        assert row["answer"] == str(sum(q))
        assert row["prompt"] == [{"role": "user", "content": row["problem"] + PROMPT_SUFFIX}]
        path = parse_path(row["solution"], q)
        assert path is not None and sorted(path) == sorted(q)
        assert grade(row["solution"], row["answer"]).score == 1.0


def test_solution_for_hand_computed():
    assert solution_for([22, 24, 8]) == "22+24=46. 46+8=54. The answer is \\boxed{54}."


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("22+24=46. 46+8=54. The answer is \\boxed{54}.", (22, 24, 8)),
        ("8+24=32. 32+22=54. The answer is \\boxed{54}.", (8, 24, 22)),
        ("8+24=33. 33+22=55. \\boxed{55}", (8, 24, 22)),  # the order counts, not the arithmetic
        ("22+24=46. 45+8=53. \\boxed{53}", None),  # the chain breaks
        ("22+24=46. 46+24=70. \\boxed{70}", None),  # a quantity used twice, one never
        ("22+24=46. The answer is \\boxed{54}.", None),  # too few equations
        ("22+24+8=54. \\boxed{54}", None),
        ("The answer is \\boxed{54}.", None),
    ],
)
def test_parse_path(response, expected):
    assert parse_path(response, [8, 22, 24]) == expected


def test_sft_orders_are_uniform_over_the_permutations():
    rows = make_splits(7, n_sft=6000, n_train=0, n_test=0, min_terms=3, max_terms=3)["sft"]
    orders = Counter(
        tuple(r["quantities"].index(v) for v in parse_path(r["solution"], r["quantities"]))
        for r in rows
    )
    assert set(orders) == set(itertools.permutations(range(3)))
    for count in orders.values():  # 1000 expected, sd ~ 29
        assert abs(count - 1000) < 150


def test_splits_are_disjoint_deterministic_and_numbered():
    a = make_splits(3, n_sft=50, n_train=30, n_test=20)
    assert a == make_splits(3, n_sft=50, n_train=30, n_test=20)
    texts = [r["problem"] for rows in a.values() for r in rows]
    assert len(texts) == len(set(texts)) == 100
    assert [r["problem_id"] for r in a["test"]] == [f"synthetic/test/{i}" for i in range(20)]
    assert make_splits(3, n_sft=5, n_train=3, n_test=20)["test"] == a["test"]


@pytest.mark.parametrize(
    "knobs",
    [{"min_terms": 1}, {"min_terms": 4, "max_terms": 3}, {"max_terms": 7}, {"max_operand": 2}],
)
def test_bad_knobs_are_refused(knobs):
    with pytest.raises(ValueError, match="need"):
        make_splits(0, 1, 1, 1, **knobs)


def test_cli_writes_the_paths_task(tmp_path):
    rc = cli.main(
        [
            "prepare-synthetic",
            "--out-dir",
            str(tmp_path),
            "--seed",
            "1",
            "--n-sft",
            "20",
            "--n-train",
            "10",
            "--n-test",
            "5",
            "--task",
            "paths",
            "--min-terms",
            "3",
            "--max-terms",
            "4",
            "--max-operand",
            "30",
        ]
    )
    assert rc == 0
    rows = [json.loads(x) for x in (tmp_path / "test.jsonl").read_text().splitlines()]
    assert len(rows) == 5 and all("quantities" in r for r in rows)
    manifest = json.loads((tmp_path / "test.manifest.json").read_text())
    assert manifest["params"]["task"] == "paths" and manifest["params"]["max_terms"] == 4


def test_the_science_profile_command_line_writes_manifested_splits(tmp_path):
    """The DAG's own arguments (SyntheticSpec.cli_args) through write_with_manifest: the manifest
    describes the renamed file and no staging file is left behind."""
    from pathlib import Path

    from pacs.config import load_profile
    from pacs.data.files import check_manifest

    spec = load_profile(Path(__file__).resolve().parents[2] / "configs" / "science.yaml")
    synthetic = dataclasses.replace(spec.data.synthetic, n_sft=30, n_train=10, n_test=5)
    rc = cli.main(["prepare-synthetic", "--out-dir", str(tmp_path), *synthetic.cli_args().split()])
    assert rc == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{s}{ext}" for s in ("sft", "train", "test") for ext in (".jsonl", ".manifest.json")
    )
    for split, n in (("sft", 30), ("train", 10), ("test", 5)):
        manifest = check_manifest(tmp_path / f"{split}.jsonl", required=True)
        assert manifest["rows"] == n and manifest["params"]["task"] == "paths"
        rows = [json.loads(x) for x in (tmp_path / f"{split}.jsonl").read_text().splitlines()]
        assert all(len(r["quantities"]) == 3 for r in rows)


@pytest.mark.parametrize(
    "config", sorted((REPO_ROOT / "configs").glob("*.yaml")), ids=lambda p: p.stem
)
def test_every_shipped_synthetic_section_writes_its_task(config, tmp_path):
    """``data.synthetic`` of every config, as the verl smoke builder passes it (all fields, the
    other task's knobs None), writes that task's splits."""
    spec = load_profile(config).data.synthetic
    if spec is None:
        pytest.skip(f"{config.name} has no synthetic task")
    small = dataclasses.replace(spec, n_sft=12, n_train=6, n_test=4)
    paths = write_task_splits(tmp_path, **dataclasses.asdict(small))
    rows = read_jsonl(paths["test"])
    assert len(rows) == 4
    assert all(("quantities" in r) == (spec.task == "paths") for r in rows)
