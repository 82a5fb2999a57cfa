"""Synthetic multi-step add/subtract word problems: the tiny profile's task
(docs/design.md#the-tiny-profile).

Example (2 steps)::

    problem:  Mia has 12 apples. She buys 7 more and then gives away 5.
              How many apples does Mia have now?
    solution: 12+7=19. 19-5=14. The answer is \\boxed{14}.

Sized for the tiny profile (docs/design.md#the-tiny-profile: 48 new tokens at most, a ~384-token BPE
with one token per digit). With that tokenizer trained on the SFT split (seed 1234, default knobs) a
prompt is ~60 tokens (chat template and the paper's suffix included) and a solution ~31 tokens, at
most ~40: equations are written without spaces, which keeps even 3-step solutions well inside the
48-token budget (with spaces the longest took 48 tokens plus eos).

Every intermediate value stays non-negative. Difficulty knobs: ``min_steps``/``max_steps`` (the
number of add/subtract operations, each drawn uniformly) and ``max_operand`` (the start value and
every operand lie in ``1..max_operand``).

Row format (docs/formats.md): ``problem_id, benchmark="synthetic", task="math", prompt, answer,
problem, solution``. :func:`make_problem` gives a content-hash id ``synthetic/<sha1[:12]>``;
:func:`make_splits` renumbers rows as ``synthetic/<split>/<i>``
(:mod:`pacs.data.synthetic.splits`).
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from pacs import PROMPT_SUFFIX
from pacs.data.synthetic.splits import fill_splits
from pacs.data.synthetic.words import NAMES, OBJECTS

DEFAULT_KNOBS = {"min_steps": 2, "max_steps": 3, "max_operand": 50}
# What the manifests' ``params`` record besides the seed and knobs: nothing (they predate tasks).
MANIFEST_PARAMS: dict[str, Any] = {}

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
