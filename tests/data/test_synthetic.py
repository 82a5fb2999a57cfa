"""The synthetic tasks' package (pacs.data.synthetic): the arithmetic task of the tiny profile,
and the one task dispatcher."""

from __future__ import annotations

import json
import random
import re

import pytest

from pacs import PROMPT_SUFFIX
from pacs.data.synthetic import write_task_splits
from pacs.data.synthetic.arithmetic import make_problem, make_splits
from pacs.io import sha256_file

ROW_KEYS = {"problem_id", "benchmark", "task", "prompt", "answer", "problem", "solution"}
STEP_RE = re.compile(r"(\d+)([+-])(\d+)=(\d+)\.")


def _replay(row: dict) -> int:
    """Check every equation of the solution and that they chain; return the final value."""
    steps = STEP_RE.findall(row["solution"])
    assert steps, row["solution"]
    value = int(steps[0][0])
    assert row["problem"].split(" has ")[1].startswith(f"{value} ")
    for left, op, operand, result in steps:
        assert int(left) == value
        value = value + int(operand) if op == "+" else value - int(operand)
        assert value == int(result) and value >= 0
    return value


def test_make_problem_row_format_and_arithmetic():
    rng = random.Random(0)
    for _ in range(300):
        row = make_problem(rng)
        assert set(row) == ROW_KEYS
        assert row["benchmark"] == "synthetic" and row["task"] == "math"
        assert row["prompt"] == [{"role": "user", "content": row["problem"] + PROMPT_SUFFIX}]
        assert row["problem"].endswith("have now?")
        assert row["solution"].endswith(f"The answer is \\boxed{{{row['answer']}}}.")
        assert _replay(row) == int(row["answer"])
        assert 2 <= len(STEP_RE.findall(row["solution"])) <= 3
        assert row["problem_id"].startswith("synthetic/")


@pytest.mark.parametrize("steps,max_operand", [(1, 5), (4, 9), (3, 200)])
def test_difficulty_knobs(steps, max_operand):
    rng = random.Random(1)
    for _ in range(100):
        row = make_problem(rng, min_steps=steps, max_steps=steps, max_operand=max_operand)
        eqs = STEP_RE.findall(row["solution"])
        assert len(eqs) == steps
        assert all(1 <= int(operand) <= max_operand for _, _, operand, _ in eqs)
        assert 1 <= int(eqs[0][0]) <= max_operand
        _replay(row)


def test_bad_knobs_are_rejected():
    with pytest.raises(ValueError, match="min_steps"):
        make_problem(random.Random(0), min_steps=3, max_steps=2)
    with pytest.raises(ValueError, match="max_operand"):
        make_problem(random.Random(0), max_operand=0)
    with pytest.raises(ValueError, match="n_test"):
        make_splits(0, 1, 1, -1)


def test_too_small_problem_space_raises():
    # 1 step, operands in 1..1: only a handful of distinct texts exist.
    with pytest.raises(ValueError, match="distinct problems"):
        make_splits(0, 500, 0, 0, min_steps=1, max_steps=1, max_operand=1)


def test_splits_deterministic_disjoint_and_sized():
    a = make_splits(7, n_sft=400, n_train=100, n_test=50)
    b = make_splits(7, n_sft=400, n_train=100, n_test=50)
    c = make_splits(8, n_sft=400, n_train=100, n_test=50)
    assert a == b
    assert a["test"] != c["test"]
    assert {k: len(v) for k, v in a.items()} == {"sft": 400, "train": 100, "test": 50}
    texts = [{r["problem"] for r in a[s]} for s in ("sft", "train", "test")]
    assert sum(map(len, texts)) == 550  # no duplicates inside or across splits
    for split, rows in a.items():
        assert [r["problem_id"] for r in rows] == [
            f"synthetic/{split}/{i}" for i in range(len(rows))
        ]


def test_test_split_does_not_depend_on_other_sizes():
    small = make_splits(3, n_sft=10, n_train=10, n_test=30)
    big = make_splits(3, n_sft=2000, n_train=300, n_test=30)
    assert small["test"] == big["test"]


def test_prompt_and_solution_are_short():
    rows = make_splits(0, 0, 0, 200)["test"]
    # docs/design.md#the-tiny-profile: ~47-token prompts and ~26-token solutions with a digit-level
    # BPE; bound chars.
    assert max(len(r["prompt"][0]["content"]) for r in rows) < 260
    assert max(len(r["solution"]) for r in rows) < 80


@pytest.mark.slow  # imports torch through pacs.tiny.build (seconds on a loaded machine)
def test_solutions_fit_the_tiny_generation_budget(repo_root):
    """With the tiny profile's tokenizer, every solution plus eos fits in train.max_new_tokens."""
    from pacs.config import load_config
    from pacs.tiny.build import build_tokenizer, corpus_from_rows

    cfg = load_config(repo_root / "configs" / "default.yaml")
    budget = cfg["train"]["max_new_tokens"]
    knobs = {k: cfg["data"]["synthetic"][k] for k in ("min_steps", "max_steps", "max_operand")}
    splits = make_splits(cfg["data"]["synthetic"]["seed"], 4000, 0, 300, **knobs)
    tok = build_tokenizer(
        corpus_from_rows(splits["sft"]), cfg["models"]["tiny"]["build"]["vocab_size"]
    )
    lengths = [
        len(tok(r["solution"], add_special_tokens=False)["input_ids"]) for r in splits["test"]
    ]
    assert max(lengths) + 1 <= budget - 4, (max(lengths), budget)


def test_write_splits_files_and_manifests(tmp_path):
    sizes = {"seed": 5, "n_sft": 20, "n_train": 10, "n_test": 5}
    paths = write_task_splits(tmp_path / "syn", **sizes, max_operand=30)
    assert set(paths) == {"sft", "train", "test"}
    expected = make_splits(5, 20, 10, 5, max_operand=30)
    for split, path in paths.items():
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        assert rows == expected[split]
        manifest = json.loads((tmp_path / "syn" / f"{split}.manifest.json").read_text())
        assert manifest["rows"] == len(rows) and manifest["source"] == "synthetic"
        assert manifest["sha256"] == sha256_file(path)
        assert manifest["params"]["max_operand"] == 30 and manifest["params"]["seed"] == 5
    assert not [p for p in (tmp_path / "syn").iterdir() if p.name.endswith(".tmp")]


def test_boxed_answers_grade_correct():
    from pacs.rewards.math import grade

    rows = make_splits(11, 0, 0, 60)["test"]
    for row in rows:
        result = grade(row["solution"], row["answer"])
        assert result.status == "ok" and result.score == 1.0, (row, result)
        assert result.extracted == row["answer"]
        assert grade(row["solution"], str(int(row["answer"]) + 1)).score == 0.0


def test_one_dispatcher_writes_either_task_and_records_its_params(tmp_path):
    """write_task_splits picks the task by name; the manifests' params are those the two task
    writers recorded before the package (arithmetic: no ``task`` key): outputs keep their bytes."""
    sizes = {"seed": 2, "n_sft": 6, "n_train": 4, "n_test": 3}
    arith = write_task_splits(tmp_path / "a", "arithmetic", **sizes, max_steps=2, min_terms=None)
    paths = write_task_splits(tmp_path / "p", "paths", **sizes, max_operand=20, min_steps=None)
    params = [
        json.loads((p["test"].with_name("test.manifest.json")).read_text())["params"]
        for p in (arith, paths)
    ]
    assert params[0] == {"seed": 2, "min_steps": 2, "max_steps": 2, "max_operand": 50}
    assert list(params[1].items()) == [
        ("task", "paths"),
        ("seed", 2),
        ("min_terms", 3),
        ("max_terms", 3),
        ("max_operand", 20),
    ]
    assert all("quantities" in json.loads(line) for line in paths["test"].read_text().splitlines())
    expected = r"unknown synthetic task 'trees'; expected one of \('arithmetic', 'paths'\)"
    with pytest.raises(ValueError, match=expected):
        write_task_splits(tmp_path / "t", "trees", **sizes)
    assert not (tmp_path / "t").exists()
