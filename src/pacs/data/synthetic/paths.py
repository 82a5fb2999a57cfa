"""A synthetic task with many valid solution paths: add k quantities in any order
(docs/design.md#the-science-profile).

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

import itertools
import random
import re
from collections.abc import Sequence
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
    return problem_row(problem, values, rng.sample(values, len(values)))


def problem_row(
    problem: str, values: list[int], order: list[int], benchmark: str = "synthetic"
) -> dict[str, Any]:
    """The benchmark row of ``problem`` (quantities ``values``), its solution adding ``order``."""
    return {
        "problem_id": "",  # numbered by make_splits / make_hard_split
        "benchmark": benchmark,
        "task": "math",
        "prompt": [{"role": "user", "content": problem + PROMPT_SUFFIX}],
        "answer": str(sum(values)),
        "problem": problem,
        "solution": solution_for(order),
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


# ----------------------------------------------------------------------------- the hard split
# A held-out split harder by construction only (docs/design.md#the-paths-task-and-its-hard-split):
# the same problem text, quantities and solution format as the SFT split, with quantities from the
# upper part of its operand range, kept only when EVERY order of adding them carries at least
# ``min_carries`` times (so no path is an easy way round), each set of quantities in one problem
# only. Disjoint by problem text from the sft/train/test splits. The stage:
# :mod:`pacs.data.synthetic.hard_split`.

HARD_BENCHMARK = "synthetic_hard"
HARD_KNOBS = {"terms": 3, "min_operand": 36, "max_operand": 50, "min_carries": 3}


def carries(a: int, b: int) -> int:
    """How many digit positions carry when ``a + b`` (non-negative) is added by hand."""
    if a < 0 or b < 0:
        raise ValueError(f"carries: need non-negative integers, got {a} and {b}")
    count = carry = 0
    while a or b:
        carry = int(a % 10 + b % 10 + carry >= 10)
        count += carry
        a, b = a // 10, b // 10
    return count


def chain_carries(order: Sequence[int]) -> int:
    """Carries of the equation chain that adds ``order`` left to right (the solution's sums)."""
    total, count = order[0], 0
    for value in order[1:]:
        count += carries(total, value)
        total += value
    return count


def fewest_carries(values: Sequence[int]) -> int:
    """The fewest carries over every order of ``values``: whichever path a response takes, it
    carries at least this often."""
    return min(chain_carries(order) for order in itertools.permutations(values))


def canonical_solutions(values: Sequence[int]) -> dict[str, str]:
    """Path ("a-b-c", as :mod:`pacs.evaluation.paths` writes it) -> the solution text of that
    order, in the SFT split's format, for every one of the k! orders of ``values``."""
    return {
        "-".join(map(str, order)): solution_for(list(order))
        for order in itertools.permutations(values)
    }


def _check_hard_knobs(terms: int, min_operand: int, max_operand: int, min_carries: int) -> None:
    if not 2 <= terms <= 6:
        raise ValueError(f"need 2 <= terms <= 6, got terms={terms}")
    if not 1 <= min_operand <= max_operand - terms + 1:
        raise ValueError(
            f"need 1 <= min_operand <= max_operand - terms + 1 (distinct quantities), got "
            f"min_operand={min_operand}, max_operand={max_operand}, terms={terms}"
        )
    if min_carries < 0:
        raise ValueError(f"need min_carries >= 0, got {min_carries}")


def hard_value_sets(terms: int, min_operand: int, max_operand: int, min_carries: int) -> list:
    """Every set of ``terms`` distinct quantities in ``min_operand..max_operand`` (ascending
    tuples, in order) that carries at least ``min_carries`` times along every path."""
    _check_hard_knobs(terms, min_operand, max_operand, min_carries)
    pool = itertools.combinations(range(min_operand, max_operand + 1), terms)
    return [s for s in pool if fewest_carries(s) >= min_carries]


def make_hard_problem(rng: random.Random, values: Sequence[int]) -> dict:
    """One hard row of the quantities ``values``, in random prompt order, random wording."""
    name, _ = rng.choice(NAMES)
    obj, container = rng.choice(OBJECTS), rng.choice(CONTAINERS)
    values = rng.sample(list(values), len(values))
    problem = render_problem(name, obj, container, values)
    return problem_row(problem, values, rng.sample(values, len(values)), HARD_BENCHMARK)


def make_hard_split(seed: int, n: int, taken: set[str], **knobs: int) -> list[dict]:
    """``n`` hard rows (``synthetic_hard/<i>``), deterministic in ``seed`` and the knobs: ``n``
    distinct sets of quantities drawn without replacement from :func:`hard_value_sets` (no two
    problems share their numbers), each worded so that its text is not in ``taken`` (the other
    splits' texts)."""
    knobs = {**HARD_KNOBS, **knobs}
    value_sets = hard_value_sets(**knobs)
    if n > len(value_sets):
        raise ValueError(
            f"hard split: {n} problems asked for, but only {len(value_sets)} sets of quantities "
            f"satisfy {knobs}"
        )
    rng = random.Random(f"pacs-paths-hard:{seed}")
    rows: list[dict] = []
    for values in rng.sample(value_sets, n):
        for _ in range(1000):
            row = make_hard_problem(rng, values)
            if row["problem"] not in taken:
                break
        else:
            raise ValueError(f"hard split: every wording of {values} drawn is in another split")
        rows.append({**row, "problem_id": f"{HARD_BENCHMARK}/{len(rows)}"})
    return rows
