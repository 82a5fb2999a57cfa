"""A synthetic task with many valid solution paths: add k quantities in any order (design §10).

Example (k = 3)::

    problem:  Mia has 3 bags of pens with 12, 7 and 25 pens. How many pens does Mia have in all?
    solution: 25+12=37. 37+7=44. The answer is \\boxed{44}.

Every order of the k quantities gives a correct solution, so a problem has k! solution *paths*:
the path of a response is the order in which its equation chain combines the quantities
(``25+12`` and ``12+25`` are different paths). The SFT split shows a uniformly random order per
row, so the SFT base spreads its probability over all k! paths; RL can keep that spread or
collapse it onto a few orders, and :func:`parse_path` reads back exactly which order a response
took. The verifier stays the math grader on the boxed sum.

The quantities of a problem are distinct (a path is then unambiguous) and lie in
``1..max_operand``; ``min_terms``/``max_terms`` bound k. Rows are the prepared-benchmark format
of :mod:`pacs.data.synthetic.arithmetic` (benchmark ``synthetic``) plus ``quantities`` (the
values in prompt order), so every later stage treats the two families alike. Splits are
deterministic in ``seed``, disjoint by problem text and filled test, train, sft
(:mod:`pacs.data.synthetic.splits`).
"""

from __future__ import annotations

import random
import re
from typing import Any

from pacs import PROMPT_SUFFIX
from pacs.data.synthetic.splits import fill_splits
from pacs.data.synthetic.words import NAMES, OBJECTS

DEFAULT_KNOBS = {"min_terms": 3, "max_terms": 3, "max_operand": 50}
# What the manifests' ``params`` record besides the seed and knobs.
MANIFEST_PARAMS: dict[str, Any] = {"task": "paths"}
CONTAINERS = ("bags", "boxes", "jars")
_EQUATION = re.compile(r"(\d+)\+(\d+)=(\d+)")
_NUMBER_WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}


def _check_knobs(min_terms: int, max_terms: int, max_operand: int) -> None:
    if not 2 <= min_terms <= max_terms <= 6:
        raise ValueError(
            f"need 2 <= min_terms <= max_terms <= 6, got min_terms={min_terms}, "
            f"max_terms={max_terms}"
        )
    if max_operand < max_terms:
        raise ValueError(
            f"need max_operand >= max_terms (distinct quantities), got max_operand={max_operand}, "
            f"max_terms={max_terms}"
        )


def _list_text(values: list[int]) -> str:
    return ", ".join(str(v) for v in values[:-1]) + f" and {values[-1]}"


def render_problem(name: str, obj: tuple[str, str], container: str, values: list[int]) -> str:
    return (
        f"{name} has {_NUMBER_WORDS[len(values)]} {container} of {obj[1]} with "
        f"{_list_text(values)} {obj[1]}. How many {obj[1]} does {name} have in all?"
    )


def solution_for(order: list[int]) -> str:
    """The equation chain that adds ``order`` left to right, then the boxed total."""
    sentences, total = [], order[0]
    for value in order[1:]:
        sentences.append(f"{total}+{value}={total + value}.")
        total += value
    return " ".join([*sentences, f"The answer is \\boxed{{{total}}}."])


def make_problem(
    rng: random.Random, min_terms: int = 3, max_terms: int = 3, max_operand: int = 50
) -> dict[str, Any]:
    """One problem row; its ``solution`` adds the quantities in a uniformly random order."""
    _check_knobs(min_terms, max_terms, max_operand)
    name, _ = rng.choice(NAMES)
    obj, container = rng.choice(OBJECTS), rng.choice(CONTAINERS)
    values = rng.sample(range(1, max_operand + 1), rng.randint(min_terms, max_terms))
    problem = render_problem(name, obj, container, values)
    return {
        "problem_id": "",  # numbered by make_splits
        "benchmark": "synthetic",
        "task": "math",
        "prompt": [{"role": "user", "content": problem + PROMPT_SUFFIX}],
        "answer": str(sum(values)),
        "problem": problem,
        "solution": solution_for(rng.sample(values, len(values))),
        "quantities": values,
    }


def parse_path(response: str, quantities: list[int]) -> tuple[int, ...] | None:
    """The order in which ``response`` adds ``quantities``, or None when it is no such chain.

    A path is read from the ``a+b=c`` equations in order: the first gives two quantities, each
    later one must continue from the previous result (``c+x=...``) with a new quantity, and every
    quantity must be used exactly once. Sums are not checked here (the verifier grades the
    answer); a chain is a path because of the order it takes, not because its arithmetic is right.
    """
    eqs = [tuple(int(x) for x in m) for m in _EQUATION.findall(response)]
    if len(eqs) != len(quantities) - 1:
        return None
    path = [eqs[0][0], eqs[0][1]]
    for (left, value, _), (_, _, prev_result) in zip(eqs[1:], eqs[:-1]):
        if left != prev_result:
            return None
        path.append(value)
    if sorted(path) != sorted(quantities):
        return None
    return tuple(path)


def make_splits(seed: int, n_sft: int, n_train: int, n_test: int, **knobs: int) -> dict:
    """Splits ``{"sft", "train", "test"}``, disjoint by problem text, deterministic in ``seed``."""
    knobs = {**DEFAULT_KNOBS, **knobs}
    _check_knobs(**knobs)
    sizes = {"sft": n_sft, "train": n_train, "test": n_test}
    return fill_splits(make_problem, "pacs-paths", seed, sizes, knobs)
