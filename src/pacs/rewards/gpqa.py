"""GPQA multiple choice: CSV loader, deterministic option shuffle, prompt, letter grader.

The original GPQA CSV lists the correct answer in its own column; copies with pre-formatted
options always put it at "A". We shuffle the four options with a seed derived from the
question's Record ID (sha256), so the order is the same on every machine and run, and the gold
letter varies across questions. The prompt follows openai/simple-evals (GPQA) and asks for a
final line "ANSWER: X".
"""

from __future__ import annotations

import csv
import hashlib
import random
import re
import unicodedata
from pathlib import Path

from pacs.rewards.math import extract_boxed, last_box_command
from pacs.rewards.result import GradeResult

LETTERS = "ABCD"
REQUIRED_COLUMNS = (
    "Question",
    "Correct Answer",
    "Incorrect Answer 1",
    "Incorrect Answer 2",
    "Incorrect Answer 3",
    "Record ID",
)
OPTION_COLUMNS = REQUIRED_COLUMNS[1:5]  # the correct answer first: index 0 is the gold

PROMPT_TEMPLATE = (
    "Answer the following multiple choice question. The last line of your response should be of "
    "the following format: 'ANSWER: $LETTER' (without quotes) where LETTER is one of ABCD. "
    "Think step by step before answering.\n\n{question}\n\nA) {A}\nB) {B}\nC) {C}\nD) {D}"
)

# "ANSWER: B", "**Answer:** (B)", "Final answer: $B$"; the keyword in any case, the letter upper
# case and standing alone (so "Answer: A bit more work" is not an answer).
# No two runs of the same characters touch (the old "[ \t]*\**[ \t]*" split a run of spaces
# every way: quadratic).
_ANSWER_LINE = re.compile(r"(?i:answer)\**[ \t]*:(?:[ \t]|\*)*\$?\(?([A-D])\)?(?![A-Za-z0-9])")
# A hedge right after the chosen letter (docs/grading_policy.md): a connective, perhaps a
# qualifier, then another option standing alone, across wrappers ($, **, brackets) and line
# breaks: "A or B", "A (or B)", "A, or B", "A | B", "$A$ (or B)", "A or" + newline + "B".
# Each class is followed by a fixed token, so one match is linear in the text it scans.
_WRAP = r"[\s$*(\[{]*"
_CONNECTIVE = (
    r"(?:[,;/|&+]|\\(?:lor|vee|mid)(?![A-Za-z])"
    r"|(?i:and/or|or|and|nor|vs\.?|versus)(?![A-Za-z]))"
)
_QUALIFIER = r"(?i:maybe|possibly|perhaps|probably|else|alternatively|even|also)(?![A-Za-z])"
_HEDGE = re.compile(
    rf"[\s()\[\]{{}}$*]*{_CONNECTIVE}(?:{_WRAP}{_CONNECTIVE})?{_WRAP}(?:{_QUALIFIER}{_WRAP})?"
    r"(?:\\text\s*\{\s*)?\(?([A-D])\)?(?![A-Za-z0-9])"
)
# Any other option letter in the rest of the final answer (docs/grading_policy.md): up to the end
# of its sentence or line, at most ANSWER_TAIL characters. A letter counts unless it is part of a
# word or a number ("2D", "D-glucose") or follows a plain word ("Vitamin D"); after a symbol
# ("C (D)", "C - D", "C → D", "C ∨ D", "C，D") or a connective ("C unless D") it counts.
ANSWER_TAIL = 300
_TAIL_TOKEN = re.compile(r"[A-Za-z]+|\S")
_SENTENCE_END = re.compile(
    r"(?<!vs)(?<!\be\.g)(?<!\bi\.e)[.!?](?=\s|$)(?!\s*(?i:or|maybe|perhaps|possibly|alternatively"
    r"|otherwise|else|unless|and)(?![A-Za-z]))|\n"
)
_CONNECTIVE_WORDS = (
    "or and nor unless vs versus maybe perhaps possibly probably else otherwise alternatively "
    "also even either between if instead than then but not option options choice choices "
    "answer answers letter with plus minus to from"
)
CONNECTIVES = frozenset(_CONNECTIVE_WORDS.split())
_FIRST_LETTER = re.compile(r"\(?([A-D])\)?(?![A-Za-z0-9])")
_BOXED_LETTER = re.compile(r"\(?([A-D])\)?(?:[\s.:)].*)?", re.DOTALL)
_TEXT_WRAPPER = re.compile(r"\\(?:text|textbf|mathrm|mathbf)\s*\{([^{}]*)\}")


def names_another_letter(text: str, start: int, chosen: str) -> bool:
    """Whether the final answer's rest, ``text[start:]`` up to its sentence's end, names an
    option letter other than ``chosen`` (the rule above)."""
    tail = unicodedata.normalize("NFKC", text[start : start + ANSWER_TAIL])
    end = _SENTENCE_END.search(tail)
    tail = tail[: end.start()] if end else tail
    previous = None
    for match in _TAIL_TOKEN.finditer(tail):
        token = match.group()
        if token in LETTERS and token != chosen and _stands_alone(tail, match.start(), match.end()):
            after_word = previous is not None and previous.isascii() and previous.isalpha()
            if not after_word or previous.lower() in CONNECTIVES:
                return True
        previous = token
    return False


def _stands_alone(tail: str, start: int, end: int) -> bool:
    """Not glued to a digit ("2D") and not a prefix ("D-glucose", "D'")."""
    before = tail[start - 1] if start else " "
    after = tail[end : end + 2]
    if before.isdigit() or after[:1].isdigit() or after[:1] == "'":
        return False
    return not (after[:1] == "-" and after[1:2].isalpha())


def load_gpqa_csv(path: str | Path) -> list[dict[str, str]]:
    """Rows of an original-schema GPQA CSV (all columns kept, values as written).

    Raises ValueError naming the file, the row (1-based, header excluded) and the field when a
    required column is missing or a required value is empty.
    """
    path = Path(path)
    # newline="" lets the csv module handle line breaks inside quoted fields.
    with path.open(encoding="utf-8-sig", newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(
                f"{path}: header lacks required column(s) {missing}; found {reader.fieldnames}"
            )
        rows = []
        for row_number, row in enumerate(reader, start=1):
            _check_row(path, row_number, row)
            rows.append(dict(row))
    return rows


def _check_row(path: Path, row_number: int, row: dict) -> None:
    if None in row:  # csv.DictReader files surplus cells under the key None
        raise ValueError(f"{path}: row {row_number}: more cells than header columns")
    for column in REQUIRED_COLUMNS:
        value = row.get(column)
        if value is None or not value.strip():
            raise ValueError(f"{path}: row {row_number}: field {column!r} is empty")


def shuffle_seed(record_id: str) -> int:
    """A 32-bit seed from the Record ID: the same on every platform and Python version."""
    return int.from_bytes(hashlib.sha256(record_id.strip().encode("utf-8")).digest()[:4], "big")


def shuffle_options(row: dict) -> tuple[list[str], str, int]:
    """(options in A..D order, gold letter, seed) for one original-schema row."""
    for column in REQUIRED_COLUMNS:
        if not isinstance(row.get(column), str) or not row[column].strip():
            raise ValueError(
                f"GPQA row {row.get('Record ID')!r}: field {column!r} is missing or empty"
            )
    seed = shuffle_seed(row["Record ID"])
    order = random.Random(seed).sample(range(4), 4)
    choices = [row[c].strip() for c in OPTION_COLUMNS]
    options = [choices[i] for i in order]
    return options, LETTERS[order.index(0)], seed


def build_prompt(question: str, options: list[str]) -> str:
    """simple-evals style multiple-choice prompt ending with the four options."""
    if len(options) != 4:
        raise ValueError(f"GPQA prompt needs 4 options, got {len(options)}")
    return PROMPT_TEMPLATE.format(question=question.strip(), **dict(zip(LETTERS, options)))


def extract_choice(response: str) -> str | None:
    """The chosen letter: the last "ANSWER: X" or ``\\boxed{X}``, whichever comes later."""
    choice = _last_choice(response)
    return None if choice is None else choice[1]


def _last_choice(response: str) -> tuple[int, str, bool] | None:
    """(position, letter, hedged) of the last answer line or boxed letter; hedged: it names
    another option too ("ANSWER: A or B")."""
    candidates = []
    line = None
    for line in _ANSWER_LINE.finditer(response):
        pass
    if line is not None:
        hedged = _HEDGE.match(response, line.end(1)) is not None or names_another_letter(
            response, line.end(1), line.group(1)
        )
        candidates.append((line.start(), line.group(1), hedged))
    boxed = _boxed_letter(response)
    if boxed is not None:
        candidates.append(boxed)
    return max(candidates) if candidates else None


def _boxed_letter(response: str) -> tuple[int, str, bool] | None:
    command = last_box_command(response)
    content = extract_boxed(response) if command is not None else None
    if content is None:
        return None
    content = _TEXT_WRAPPER.sub(r"\1", content).strip()
    first = _FIRST_LETTER.match(content)
    if first and (
        _HEDGE.match(content, first.end(1))
        or names_another_letter(content, first.end(1), first.group(1))
    ):
        return command.start(), first.group(1), True
    match = _BOXED_LETTER.fullmatch(content)
    if not match:
        return None
    return command.start(), match.group(1), False


def grade(response: str, gold_letter: str) -> GradeResult:
    """Score 1.0 iff the extracted letter equals ``gold_letter``; no letter -> ``no_answer``."""
    if not isinstance(gold_letter, str) or len(gold_letter) != 1 or gold_letter not in LETTERS:
        raise ValueError(f"gold letter must be one of {list(LETTERS)}, got {gold_letter!r}")
    if not isinstance(response, str):
        raise TypeError(f"response has type {type(response).__name__}, expected str")
    choice = _last_choice(response)
    if choice is None:
        return GradeResult(0.0, None, "no_answer")
    _, letter, hedged = choice
    if hedged:  # naming two options is not choosing one
        return GradeResult(0.0, letter, "ok", {"hedged": True})
    return GradeResult(1.0 if letter == gold_letter else 0.0, letter, "ok")
