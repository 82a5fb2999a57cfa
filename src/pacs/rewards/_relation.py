"""A boxed answer read as a structure: relations, hedges and candidate lists.

docs/grading_policy.md ("Relations and candidate lists") is the policy; this module reads a box
into it. The reading never depends on spacing, wrappers or an operator's spelling: spacing and
``\\left``/``\\right`` go first, then the box is split at its top-level relation operators.
Pure text work, linear in the box's length (it runs before any deadline); the comparisons it
needs (a side equal to the answer) travel to math-verify as the claims of a MathJob.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import NamedTuple

EQUALITY, APPROX, ARROW, ORDER, MEMBER = "equality", "approximation", "arrow", "order", "member"
_FAMILIES = {
    EQUALITY: "= == := =: \\coloneqq \\eqqcolon \\equiv \\doteq \\triangleq",
    APPROX: "\\approx \\approxeq \\simeq \\sim \\cong",
    ARROW: "\\to \\rightarrow \\longrightarrow \\Rightarrow \\Longrightarrow \\implies \\mapsto "
    "\\longmapsto \\iff \\Leftrightarrow \\Longleftrightarrow \\therefore",
    ORDER: "< > <= >= \\le \\leq \\ge \\geq \\leqslant \\geqslant \\lt \\gt \\ne \\neq \\notin",
    MEMBER: "\\in",
}
FAMILY = {op: family for family, ops in _FAMILIES.items() for op in ops.split()}

# One token at a time: a command, an escaped character, a two-character operator, a bracket.
_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|:=|=:|==|<=|>=|[=<>{}()\[\],;]", re.DOTALL)
_OPEN, _CLOSE = frozenset("{([") | {"\\{"}, frozenset("})]") | {"\\}"}
_SPACING = re.compile(r"\\\\|\\[,;:! ]|~")  # "\\\\" (a matrix's row break) is kept
_WIDE_SPACE = re.compile(r"\\q?quad(?![A-Za-z])")
_SIZING = re.compile(r"\\(?:left|right|[bB]igg?[lr]?|displaystyle)(?![A-Za-z])")
_HEDGE_WORD = re.compile(
    r"(?<![A-Za-z\\])(?i:or|nor|either|maybe|perhaps|possibly|probably|otherwise|alternatively"
    r"|unless|versus|vs|instead)(?![A-Za-z])|\\(?:lor|vee|pm|mp)(?![A-Za-z])"
)
_AND_WORD = re.compile(r"(?<![A-Za-z\\])(?i:and)(?![A-Za-z])")
# Roots joined by words against a gold of several values ("x = 1 \text{ or } x = -2"): a list.
_JOIN_WORD = re.compile(r"\\text\s*\{\s*(?i:or|and)\s*\}|(?<=\s)(?i:or|and)(?=\s)")
# Thousands separators inside a box ("x = 1,000"): removed only against a one-value gold.
# "5 \\, i" (spacing gone): the imaginary unit after its coefficient.
_SPACED_I = re.compile(r"(\d) +i(?![A-Za-z])")
_THOUSANDS = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d,])")
# A choice label before the value ("\textbf{(C)}\ 42", "(C) 42"): dropped (AMC answers).
_LABEL = re.compile(
    r"(?:\\(?:textbf|text|textrm|mathrm|mathbf)\s*\{\s*\(\s*([A-E])\s*\)\s*\}|\(([A-E])\))"
    r"(?:\s|\\[ ,;:]|~)*"
)
# A number inside a text wrapper beside another value ("42 \text{ (43)}"): a hedge without a word.
_TEXT_NUMBER = re.compile(r"\\(?:text\w*|mbox|mathrm|mathsf)\s*\{[^{}\d]*\d[^{}]*\}")
_WORD_WRAPPER = re.compile(
    r"\\(?:text|textbf|textit|textrm|mathrm|mathsf|mathbf|mbox|operatorname)\s*\{[^{}]*\}"
)
_COMMAND = re.compile(r"\\[A-Za-z]+")
_WORD = re.compile(r"[A-Za-z]{3,}")
_LETTER = re.compile(r"[A-Za-z]")
_DECORATED = (
    r"\\(?:mathbf|vec|boldsymbol|bm|overline|overrightarrow|hat|widehat|bar|tilde|dot|mathcal"
    r"|mathit|mathrm|text)\{[^{}]*\}"
)
_BARE_NAME = re.compile(
    rf"(?:m?\\(?:angle|measuredangle|triangle)[A-Za-z]+|{_DECORATED}|[A-Za-z]|\\[A-Za-z]+)'*"
    r"(?:_\{?\w+\}?)?(?:\([^()]*\))?"
)
# A name's subscripts, superscripts and arguments (x_1, a^{2}, f(3)): their digits are not values.
_SCRIPT = re.compile(r"[_^]\s*(?:\{[^{}]*\}|\\[A-Za-z]+|.)", re.DOTALL)
_ARGUMENT = re.compile(r"(?<=[A-Za-z}'])\([^()]*\)")
_ENVIRONMENT = re.compile(r"\\(?:begin|end)\s*\{[A-Za-z*]*\}")
# Commands that write a value, not a name (every other command, \theta or \angle, names).
_VALUE_COMMAND_NAMES = (
    "pi infty sqrt frac dfrac tfrac cdot times div circ degree left right log ln lg exp sin cos "
    "tan cot sec csc arcsin arccos arctan sinh cosh tanh binom dbinom tbinom emptyset varnothing "
    "displaystyle quad qquad text textrm textit textbf mathrm mathsf operatorname mbox"
)
VALUE_COMMANDS = frozenset(_VALUE_COMMAND_NAMES.split())
_PLAIN_DECIMAL = re.compile(r"[+-]?\d+(?:\.\d+)?")


class Reading(NamedTuple):
    """What a box means against its gold.

    ``verdict``: ``"hedge"``, ``"list"`` or ``"relation"`` (score 0, decided here; ``reason``
    says why) or None (compare ``answer`` with the gold, and every claim ``(a, b, rounding)``
    must hold: ``a`` equals ``b``, at ``rounding`` decimals, None meaning the usual rounding).
    """

    verdict: str | None
    reason: str
    answer: str
    claims: tuple[tuple[str, str, int | None], ...] = ()


def read_answer(answer: str, gold: str) -> Reading:
    """The reading of a (canonical) box ``answer`` against a (canonical) ``gold``."""
    answer = strip_label(answer, gold)
    one_value = not _list_gold(gold)
    if not one_value and not _HEDGE_WORD.search(gold):  # roots joined by words: a list
        joined = _JOIN_WORD.sub(",", answer).strip()
        if not joined.startswith(",") and not joined.endswith(","):  # "1, 2 or": a hedge
            answer = joined
    verdict = _unreadable(answer, gold)
    if verdict is not None:
        return verdict
    gold_ops = _relation_count(gold)
    if gold_ops:  # a gold that holds a relation: math-verify compares the whole box
        return _read_against_relation(answer, gold_ops)
    text = clean(answer)
    if one_value:
        text = _THOUSANDS.sub(lambda m: m.group().replace(",", ""), text)
        if _AND_WORD.search(text) or len(_top_items(text)) > 1:
            return Reading("list", "several values in the box against a gold of one value", answer)
    gold_has_names = _has_letter(gold)
    items = [item for item in _top_items(text) if item]
    if len(items) > 1:  # a list against a list gold: each item's relation must be true
        claims, values = [], []
        for item in items:
            sides = relations(unwrap(item))[0]
            claims += _equality_claims(sides, gold_has_names)
            named = [side for side in sides if is_value(side, gold_has_names)]
            values.append(named[-1] if named else sides[-1])
        return Reading(None, "", ", ".join(values), tuple(claims))
    return _read_relation(text, unwrap(text), gold_has_names)


@lru_cache(maxsize=4096)
def _relation_count(gold: str) -> int:
    """How many top-level relations the gold holds (golds repeat over a problem's samples)."""
    return len(relations(clean(gold))[1])


def _unreadable(answer: str, gold: str) -> Reading | None:
    """A hedge (a word, an operator, a second number in a text wrapper) or a symbol the grader
    cannot read: the verdict, else None."""
    hedge = None if _HEDGE_WORD.search(gold) else _HEDGE_WORD.search(answer)
    if hedge:
        return Reading("hedge", f"the box hedges between answers ({hedge.group()!r})", answer)
    aside = None if _TEXT_NUMBER.search(gold) else _TEXT_NUMBER.search(answer)
    if aside and _TEXT_NUMBER.sub(" ", answer).strip():
        return Reading("hedge", f"a second value in words ({aside.group()[:40]!r})", answer)
    if not answer.isascii():
        for char in answer:
            if ord(char) > 127 and unicodedata.category(char) == "Sm" and char not in gold:
                return Reading("relation", f"a symbol the grader does not read ({char!r})", answer)
    return None


def expand_pm(gold: str, answer: str) -> str:
    """A gold with one ``\\pm`` as the set of its two values (``1 \\pm \\sqrt{19}`` ->
    ``\\{1 + \\sqrt{19}, 1 - \\sqrt{19}\\}``) when the answer writes them out (no ``\\pm``)."""
    if gold.count("\\pm") != 1 or "\\pm" in answer or "\\mp" in answer:
        return gold
    inner = gold[2:-2] if gold.startswith("\\{") and gold.endswith("\\}") else gold
    items = _top_items(inner)
    index = next((i for i, item in enumerate(items) if "\\pm" in item), None)
    if index is None:
        return gold
    head, _, tail = (part.strip() for part in items[index].partition("\\pm"))
    if not tail or any(depth == 0 and m.group() in "+-" for m, depth in _tokens_with_signs(tail)):
        return gold  # "1 \\pm x + y": where the second term ends is not written
    values = [f"{head or 0} + {tail}", f"{head or 0} - {tail}"]
    return "\\{" + ", ".join(items[:index] + values + items[index + 1 :]) + "\\}"


def _tokens_with_signs(text: str):
    depth = 0
    for match in re.finditer(r"\\[A-Za-z]+|\\.|[{}()\[\]+-]", text):
        token = match.group()
        if token in _CLOSE:
            depth = max(depth - 1, 0)
        yield match, depth
        if token in _OPEN:
            depth += 1


def strip_label(answer: str, gold: str) -> str:
    """Without a leading choice label (``\\textbf{(C)}\\ 42`` -> ``42``) unless the gold is one
    or nothing follows the label."""
    label = _LABEL.match(answer)
    if label is None or label.end() == len(answer) or _LABEL.search(gold):
        return answer
    return answer[label.end() :]


def _read_against_relation(answer: str, gold_ops: int) -> Reading:
    """A chain of equalities longer than the gold's (``x = 6 = 5`` against ``x = 5``): every
    side after the first must equal the last; the first and the last are the answer."""
    sides, ops = relations(unwrap(clean(answer)))
    if len(ops) <= gold_ops or any(FAMILY[op] != EQUALITY for op in ops):
        return Reading(None, "", answer)
    claims = tuple((sides[-1], side, None) for side in sides[1:-1])
    return Reading(None, "", f"{sides[0]} = {sides[-1]}", claims)


def clean(text: str) -> str:
    """Spacing, sizing commands and trailing punctuation gone; ``\\quad`` a list separator."""
    text = text.replace("{,}", ",").replace(",\\!", ",").replace("\\!", "")
    text = _WIDE_SPACE.sub(",", text)
    text = _SIZING.sub("", _SPACING.sub(lambda m: m.group() if m.group() == "\\\\" else " ", text))
    text = _SPACED_I.sub(r"\1i", text)
    return text.strip().rstrip(" .,;")


def _list_gold(gold: str) -> bool:
    """A gold of several values: a tuple, set, interval or list (a comma or semicolon, a union)."""
    return "," in gold or ";" in gold or "\\cup" in gold or "\\{" in gold


def _tokens(text: str):
    """(token match, depth before it) for every token; depth never below 0."""
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in _CLOSE:
            depth = max(depth - 1, 0)
        yield match, depth
        if token in _OPEN:
            depth += 1


def _top_items(text: str) -> list[str]:
    """The top-level items of ``text`` split at commas and semicolons."""
    items, start = [], 0
    for match, depth in _tokens(text):
        if depth == 0 and match.group() in (",", ";"):
            items.append(text[start : match.start()])
            start = match.end()
    items.append(text[start:])
    return [item.strip() for item in items]


def relations(text: str) -> tuple[list[str], list[str]]:
    """(sides, operators) of ``text`` split at its top-level relation operators."""
    sides, ops, start = [], [], 0
    for match, depth in _tokens(text):
        if depth == 0 and match.group() in FAMILY:
            sides.append(text[start : match.start()].strip())
            ops.append(match.group())
            start = match.end()
    sides.append(text[start:].strip())
    return sides, ops


def unwrap(text: str) -> str:
    """Without the braces around the whole, or the parentheses/brackets around a whole
    relation (``(43 = 42)``; ``(1, 2)`` is a tuple and stays). One pass: linear."""
    partner, inner_op, inner_comma, stack = {}, set(), set(), []
    for match, depth in _tokens(text):
        token = match.group()
        if token in _OPEN:
            stack.append(match.start())
        elif token in _CLOSE and stack:
            partner[stack.pop()] = match.end()
        elif stack and token in FAMILY:
            _mark_through_braces(text, stack, inner_op)
        elif stack and token in (",", ";"):
            inner_comma.add(stack[-1])
    start, end = 0, len(text)
    while start < end and partner.get(start) == end:
        brace = text[start] == "{"
        if not brace and (start not in inner_op or start in inner_comma or text[start] == "\\"):
            break
        start, end = start + 1, end - 1
        while start < end and text[start] == " ":
            start += 1
        while end > start and text[end - 1] == " ":
            end -= 1
    return text[start:end].strip()


def _mark_through_braces(text: str, stack: list[int], marked: set[int]) -> None:
    """Mark the innermost open bracket as holding a relation, and the one around it while the
    inner one is a brace (``({43 = 42})``: braces are only grouping)."""
    for start in reversed(stack):
        marked.add(start)
        if text[start] != "{":
            return


def _has_letter(side: str) -> bool:
    """Whether a side names a variable: a letter beyond words, units and LaTeX commands."""
    core = _WORD.sub(" ", _COMMAND.sub(" ", _WORD_WRAPPER.sub(" ", side)))
    return _LETTER.search(core) is not None


def is_value(side: str, gold_has_names: bool) -> bool:
    """A side that states a value (not a name or a label) against this kind of gold."""
    if not _WORD_WRAPPER.sub("", side).strip():
        return False
    if gold_has_names:  # an expression gold: only a bare name (y, f(x), a_n) is a name
        return _BARE_NAME.fullmatch(side.replace(" ", "")) is None
    return not is_name(side)


def is_name(side: str) -> bool:
    """A side that names what is asked (docs/grading_policy.md): no number outside its
    subscripts, superscripts and arguments (``x_1``, ``f(3)``; ``43 e^0`` and ``43 cm`` are
    values), and a letter or a name command (``\\theta``, ``\\angle ABC``, ``\\mathbf{v}``)."""
    core = _ARGUMENT.sub(" ", _SCRIPT.sub(" ", _ENVIRONMENT.sub(" ", side)))
    if any(char.isdigit() for char in core):
        return False
    bare = _WORD_WRAPPER.sub(" ", core)
    if bare.strip():  # words in a wrapper beside something else are its unit (\pi \text{ cm})
        core = bare
    for command in _COMMAND.findall(core):
        if command[1:] not in VALUE_COMMANDS:
            return True
    return _LETTER.search(_COMMAND.sub(" ", core)) is not None


def _equality_claims(sides: list[str], gold_has_names: bool) -> list[tuple]:
    """Every value side of an equality (no approximations) must equal the last one."""
    values = [side for side in sides if is_value(side, gold_has_names)]
    return [(values[-1], value, None) for value in values[:-1]]


def _clauses(sides: list[str], ops: list[str]) -> list[tuple[list[str], list[str]]]:
    """The relation split at its arrows: [(sides, ops)] per clause."""
    clauses, cur_sides, cur_ops = [], [sides[0]], []
    for op, side in zip(ops, sides[1:]):
        if FAMILY[op] == ARROW:
            clauses.append((cur_sides, cur_ops))
            cur_sides, cur_ops = [side], []
        else:
            cur_sides.append(side)
            cur_ops.append(op)
    clauses.append((cur_sides, cur_ops))
    return clauses


def _read_relation(answer: str, text: str, gold_has_names: bool) -> Reading:
    sides, ops = relations(text)
    if not ops:
        return Reading(None, "", answer)
    *earlier, (sides, ops) = _clauses(sides, ops)
    claims = []
    for clause_sides, clause_ops in earlier:
        if not clause_ops and is_value(clause_sides[0], gold_has_names):
            return Reading("relation", "a second value before an arrow", answer)
        cut = _first_approx(clause_ops)
        claims += _equality_claims(clause_sides[: cut + 1], gold_has_names)
    families = {FAMILY[op] for op in ops}
    if ORDER in families:
        return Reading("relation", "an inequality is not a value", answer)
    if MEMBER in families:
        if len(ops) == 1 and not is_value(sides[0], gold_has_names) and sides[1]:
            return Reading(None, "", sides[1], tuple(claims))
        return Reading("relation", "a membership claim is not a value", answer)
    if not ops:
        return Reading(None, "", sides[0], tuple(claims))
    cut = _first_approx(ops)
    exact, approximations = sides[: cut + 1], sides[cut + 1 :]
    values = [side for side in exact if is_value(side, gold_has_names)]
    result = values[-1] if values else exact[-1]
    claims += [(result, value, None) for value in values[:-1]]
    claims += [
        (result, value, _approx_rounding(value))
        for value in approximations
        if is_value(value, gold_has_names)
    ]
    return Reading(None, "", result, tuple(claims))


def _first_approx(ops: list[str]) -> int:
    """Index of the side before the first approximation (the last side if none)."""
    return next((i for i, op in enumerate(ops) if FAMILY[op] == APPROX), len(ops))


def _approx_rounding(side: str) -> int | None:
    """Decimal places a plain decimal number writes (``0.333`` -> 3; ``3`` -> 0); None for any
    other side (``\\frac{3}{4} \\approx \\frac{3}{5}`` is an exact claim, false)."""
    if not _PLAIN_DECIMAL.fullmatch(side):
        return None
    return len(side.partition(".")[2])
