"""Synthetic multi-step add/subtract word problems: the tiny profile's task (docs/design.md §6).

Example (2 steps)::

    problem:  Mia has 12 apples. She buys 7 more and then gives away 5.
              How many apples does Mia have now?
    solution: 12+7=19. 19-5=14. The answer is \\boxed{14}.

Sized for the tiny profile (docs/design.md §6: 48 new tokens at most, a ~384-token BPE with one token
per digit). With that tokenizer trained on the SFT split (seed 1234, default knobs) a prompt is
~60 tokens (chat template and the paper's suffix included) and a solution ~31 tokens, at most
~40: equations are written without spaces, which keeps even 3-step solutions well inside the
48-token budget (with spaces the longest took 48 tokens plus eos).

Every intermediate value stays non-negative. Difficulty knobs: ``min_steps``/``max_steps`` (the
number of add/subtract operations, each drawn uniformly) and ``max_operand`` (the start value and
every operand lie in ``1..max_operand``).

Row format (docs/formats.md): ``problem_id, benchmark="synthetic", task="math", prompt, answer,
problem, solution``. :func:`make_problem` gives a content-hash id ``synthetic/<sha1[:12]>``;
:func:`make_splits` renumbers rows as ``synthetic/<split>/<i>``.

Splits are deterministic in ``seed`` and disjoint by problem text. Each split draws from its own
random stream (seeded by ``seed`` and the split name) and the splits are filled in the order
test, train, sft, skipping any text already taken. So the test set depends only on the seed, the
knobs and ``n_test``: growing the SFT split never changes the held-out problems.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pacs import PROMPT_SUFFIX
from pacs.data.files import write_with_manifest
from pacs.io import write_jsonl

SPLITS = ("sft", "train", "test")
DEFAULT_KNOBS = {"min_steps": 2, "max_steps": 3, "max_operand": 50}
# Filling order: the held-out split first, so it never depends on the sizes of the others.
_FILL_ORDER = ("test", "train", "sft")

# A handful of short words: the tiny profile's ~384-token BPE merges each into one or two tokens.
NAMES = (
    ("Mia", "She"),
    ("Tom", "He"),
    ("Ann", "She"),
    ("Sam", "He"),
    ("Zoe", "She"),
    ("Ben", "He"),
)
OBJECTS = (
    ("apple", "apples"),
    ("pen", "pens"),
    ("card", "cards"),
    ("coin", "coins"),
    ("book", "books"),
    ("shell", "shells"),
)
ADD_PHRASES = ("buys {n} more", "finds {n} more", "gets {n} more")
SUB_PHRASES = ("gives away {n}", "loses {n}", "sells {n}")


def _check_knobs(min_steps: int, max_steps: int, max_operand: int) -> None:
    if not 1 <= min_steps <= max_steps:
        raise ValueError(
            f"need 1 <= min_steps <= max_steps, got min_steps={min_steps}, max_steps={max_steps}"
        )
    if max_operand < 1:
        raise ValueError(f"need max_operand >= 1, got {max_operand}")


def _noun(n: int, obj: tuple[str, str]) -> str:
    return obj[0] if n == 1 else obj[1]


def _draw_steps(
    rng: random.Random, start: int, n_steps: int, max_operand: int
) -> list[tuple[str, int]]:
    """Draw ``n_steps`` (op, operand) pairs; subtraction never takes the running value below 0."""
    steps, value = [], start
    for _ in range(n_steps):
        op = "+" if value == 0 else rng.choice("+-")
        operand = rng.randint(1, max_operand if op == "+" else min(value, max_operand))
        value = value + operand if op == "+" else value - operand
        steps.append((op, operand))
    return steps


def _join_clauses(clauses: list[str]) -> str:
    if len(clauses) == 1:
        return clauses[0]
    if len(clauses) == 2:
        return f"{clauses[0]} and then {clauses[1]}"
    return ", ".join(clauses[:-1]) + f", and then {clauses[-1]}"


def _render(name: str, pronoun: str, obj: tuple[str, str], start: int, clauses: list[str]) -> str:
    return (
        f"{name} has {start} {_noun(start, obj)}. {pronoun} {_join_clauses(clauses)}. "
        f"How many {obj[1]} does {name} have now?"
    )


def _solution(start: int, steps: list[tuple[str, int]]) -> tuple[str, int]:
    sentences, value = [], start
    for op, operand in steps:
        new = value + operand if op == "+" else value - operand
        sentences.append(f"{value}{op}{operand}={new}.")
        value = new
    sentences.append(f"The answer is \\boxed{{{value}}}.")
    return " ".join(sentences), value


def make_problem(
    rng: random.Random, min_steps: int = 2, max_steps: int = 3, max_operand: int = 50
) -> dict[str, Any]:
    """One synthetic problem as a prepared-benchmark row (docs/formats.md) with ``solution``."""
    _check_knobs(min_steps, max_steps, max_operand)
    name, pronoun = rng.choice(NAMES)
    obj = rng.choice(OBJECTS)
    start = rng.randint(1, max_operand)
    steps = _draw_steps(rng, start, rng.randint(min_steps, max_steps), max_operand)
    clauses = [
        rng.choice(ADD_PHRASES if op == "+" else SUB_PHRASES).format(n=operand)
        for op, operand in steps
    ]
    problem = _render(name, pronoun, obj, start, clauses)
    solution, answer = _solution(start, steps)
    return {
        "problem_id": "synthetic/" + hashlib.sha1(problem.encode()).hexdigest()[:12],
        "benchmark": "synthetic",
        "task": "math",
        "prompt": [{"role": "user", "content": problem + PROMPT_SUFFIX}],
        "answer": str(answer),
        "problem": problem,
        "solution": solution,
    }


def _fill_split(
    make: Callable[..., dict[str, Any]], rng_key: str, split: str, n: int, seen: set[str], knobs: dict
) -> list[dict[str, Any]]:
    rng = random.Random(rng_key)
    rows: list[dict[str, Any]] = []
    max_attempts = 50 * n + 1000
    for _ in range(max_attempts):
        if len(rows) == n:
            break
        row = make(rng, **knobs)
        if row["problem"] in seen:
            continue
        seen.add(row["problem"])
        row["problem_id"] = f"synthetic/{split}/{len(rows)}"
        rows.append(row)
    if len(rows) < n:
        raise ValueError(
            f"{rng_key.split(':')[0]} split {split!r}: only {len(rows)} of {n} distinct problems "
            f"after {max_attempts} draws with {knobs}; raise max_operand, or ask for fewer rows"
        )
    return rows


def fill_splits(
    make: Callable[..., dict[str, Any]], family: str, seed: int, sizes: dict[str, int], knobs: dict
) -> dict[str, list[dict[str, Any]]]:
    """Splits ``sizes`` (split -> rows) of problems ``make(rng, **knobs)``, disjoint by problem
    text, deterministic in ``seed``; ``family`` keys each split's RNG (``family:seed:split``).
    The test split is drawn first, so it does not depend on the sizes of the others."""
    for split, n in sizes.items():
        if n < 0:
            raise ValueError(f"n_{split} must be >= 0, got {n}")
    seen: set[str] = set()
    filled = {
        split: _fill_split(make, f"{family}:{seed}:{split}", split, sizes[split], seen, knobs)
        for split in _FILL_ORDER
    }
    return {split: filled[split] for split in SPLITS}


def make_splits(
    seed: int,
    n_sft: int,
    n_train: int,
    n_test: int,
    min_steps: int = 2,
    max_steps: int = 3,
    max_operand: int = 50,
) -> dict[str, list[dict[str, Any]]]:
    """Splits ``{"sft", "train", "test"}``, disjoint by problem text, deterministic in ``seed``."""
    _check_knobs(min_steps, max_steps, max_operand)
    knobs = {"min_steps": min_steps, "max_steps": max_steps, "max_operand": max_operand}
    sizes = {"sft": n_sft, "train": n_train, "test": n_test}
    return fill_splits(make_problem, "pacs-synthetic", seed, sizes, knobs)


def write_splits(
    out_dir: str | Path, seed: int, n_sft: int, n_train: int, n_test: int, **knobs: int
) -> dict[str, Path]:
    """Write ``{sft,train,test}.jsonl`` plus a ``<split>.manifest.json`` each; return the paths."""
    splits = make_splits(seed, n_sft, n_train, n_test, **knobs)
    out_dir = Path(out_dir)
    params = {"seed": seed, **DEFAULT_KNOBS, **knobs}
    paths: dict[str, Path] = {}
    for split, rows in splits.items():
        paths[split] = write_with_manifest(
            out_dir / f"{split}.jsonl",
            rows,
            write_jsonl,
            benchmark="synthetic",
            source="synthetic",
            extra={"split": split, "params": params},
        )
    return paths


def write_task_splits(out_dir: str | Path, task: str = "arithmetic", **params: Any) -> dict[str, Path]:
    """Write the splits of either task family (``task``: arithmetic | paths) from the fields of
    ``data.synthetic``; a knob of the other family is None there and is dropped."""
    knobs = {k: v for k, v in params.items() if v is not None}
    if task == "paths":
        from pacs.data import paths_task  # imports this module

        return paths_task.write_splits(out_dir, **knobs)
    return write_splits(out_dir, **knobs)
