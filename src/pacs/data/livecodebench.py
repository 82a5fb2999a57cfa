"""LiveCodeBench (code generation) -> prepared rows with ``task="code"``.

Source columns (the original LCB schema): question_title, question_content, platform,
question_id, contest_date, starter_code, difficulty, public_test_cases (a JSON string of
``[{input, output, testtype}]``), metadata (a JSON string; ``func_name`` for functional tests)
and, in the HF release files, private_test_cases.

``private_test_cases`` is either plain JSON or, in ``code_generation_lite``, base64 of zlib of a
pickled JSON string (as decoded by the official ``lcb_runner``). The blob is inflated to at most
``MAX_DECODED_MB`` and its pickle may hold one string and nothing else (checked opcode by opcode
before it is loaded): a crafted file cannot run code here, nor make a zlib bomb or shared memo
references cost more than about 3x that bound. A row's tests, public and private together, are
bounded before they are built: at most ``MAX_ROW_TEST_MB`` of JSON text (measured before
parsing) and ``MAX_ROW_TESTS`` JSON objects (counted while parsing); the kept rows of a file
together at most ``MAX_FILE_TEST_MB`` (or ``FILE_EXPANSION`` times the file's size) and
``MAX_FILE_TESTS`` (a ``DataError`` naming the row and field that crossed it). ``metadata``
must be a JSON object and its ``func_name`` a Python identifier.

Rows: ``problem_id = "livecodebench/<question_id>"``, ``tests`` = public then private tests,
``fn_name`` = metadata's ``func_name`` (or null: stdin problems), ``starter_code``, ``answer = ""``,
``problem`` = question_content, and the user turn in LiveCodeBench's own generation template
(question, then either the starter code or a stdin/stdout instruction, then a request for a
fenced python block).

The paper's window keeps problems with ``PAPER_WINDOW[0] <= contest_date < PAPER_WINDOW[1]``;
the number of rows outside it is reported as ``dropped``.
"""

from __future__ import annotations

import base64
import binascii
import json
import keyword
import pickle
import pickletools
import zlib
from collections.abc import Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any

from pacs.data.benchmarks import check_unique_ids, require, require_str, user_prompt
from pacs.data.errors import DataError

PAPER_WINDOW = (date(2024, 7, 1), date(2025, 1, 1))
TEST_TYPES = ("stdin", "functional")

# LiveCodeBench lcb_runner's generic code-generation template (prompts/code_generation.py).
FORMAT_WITH_STARTER = (
    "You will use the following starter code to write the solution to the problem and enclose your "
    "code within delimiters."
)
FORMAT_WITHOUT_STARTER = (
    "Read the inputs from stdin solve the problem and write the answer to stdout (do not directly "
    "test on the sample inputs). Enclose your code within delimiters as follows. Ensure that when "
    "the python program runs, it reads the inputs, runs the algorithm and writes output to STDOUT."
)


def build_code_prompt(question: str, starter_code: str) -> str:
    """The user turn: question, format instruction with starter code or a stub, answer request."""
    text = f"### Question:\n{question}\n\n"
    if starter_code:
        text += f"### Format: {FORMAT_WITH_STARTER}\n```python\n{starter_code}\n```\n\n"
    else:
        text += f"### Format: {FORMAT_WITHOUT_STARTER}\n```python\n# YOUR CODE HERE\n```\n\n"
    return text + "### Answer: (use the provided format with backticks)\n\n"


# What one test field may decode to: a zlib bomb stops here (1.9 MB of base64 inflated to
# 1.5 GB). Peak memory per field is about 3x this: the inflated bytes, the string the pickle
# holds and its JSON parse.
MAX_DECODED_MB = 256
# LiveCodeBench pickles one JSON string (lcb_runner: json.loads(pickle.loads(...))). Any other
# opcode is refused before unpickling: no globals (no code runs), and no memo references that
# make one 8 MB string hundreds of tests.
_STRING_PICKLE_OPS = {
    "PROTO", "FRAME", "STOP", "MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT",
    "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE",
    "SHORT_BINBYTES", "BINBYTES", "BINBYTES8",
}  # fmt: skip
_STRING_PICKLE_MAX_OPS = 16


def _inflate(data: bytes) -> bytes:
    """zlib-decompress at most MAX_DECODED_MB; more is a ValueError, not an out-of-memory."""
    limit = MAX_DECODED_MB << 20
    inflater = zlib.decompressobj()
    out = inflater.decompress(data, limit + 1)
    if len(out) > limit or inflater.unconsumed_tail:
        raise ValueError(f"it decompresses to more than {MAX_DECODED_MB} MB")
    return out


def _string_pickle(blob: bytes) -> str | bytes:
    """The one string a LiveCodeBench pickle holds; anything else is a ValueError."""
    for count, (opcode, _, _) in enumerate(pickletools.genops(blob)):
        if opcode.name not in _STRING_PICKLE_OPS:
            raise ValueError(f"the pickle holds {opcode.name}, not only one JSON string")
        if count >= _STRING_PICKLE_MAX_OPS:  # a string needs a handful; more is padding
            raise ValueError(f"the pickle has more than {_STRING_PICKLE_MAX_OPS} opcodes")
    payload = pickle.loads(blob)
    if not isinstance(payload, str | bytes):
        kind = type(payload).__name__  # a ValueError: callers report every decoding failure so
        raise ValueError(f"the pickle holds a {kind}, not a JSON string")  # noqa: TRY004
    return payload


# A row's tests, all its fields together, are checked before they are built: Python objects
# cost ~10x their JSON text for tiny tests (0.95 MB of base64 once held 5 million tests), and
# rows under the per-field cap still add up (12 rows of 240 MB: a MemoryError under 3 GB).
MAX_ROW_TESTS = 100_000
MAX_ROW_TEST_MB = 256


# ... and the rows of a file add up too (8 rows of one 200 MB test each, a 2.2 MB file, ended in
# an unnamed MemoryError): all rows of a file together hold at most MAX_FILE_TEST_MB of test text,
# or FILE_EXPANSION times the file's own size when that is more (a real release file of a few GB
# holds its tests compressed), and MAX_FILE_TESTS tests.
MAX_FILE_TEST_MB = 1024
FILE_EXPANSION = 32
MAX_FILE_TESTS = 5_000_000


class FileBudget:
    """What is left of one file's test budget, across its rows."""

    def __init__(self, file: Any) -> None:
        try:
            size = Path(file).stat().st_size if isinstance(file, str | Path) else 0
        except OSError:
            size = 0
        self.limit_chars = max(MAX_FILE_TEST_MB << 20, FILE_EXPANSION * size)
        self.chars, self.objects = self.limit_chars, MAX_FILE_TESTS

    def take(self, chars: int, objects: int) -> None:
        self.chars -= chars
        self.objects -= objects
        if self.chars < 0:
            raise ValueError(
                f"the file's tests, this row's and the rows before it, exceed "
                f"{self.limit_chars >> 20} MB of text (MAX_FILE_TEST_MB = {MAX_FILE_TEST_MB}, or "
                f"{FILE_EXPANSION}x the file's size); refused before they are built"
            )
        if self.objects < 0:
            raise ValueError(
                f"the file's rows hold more than {MAX_FILE_TESTS:,} tests (JSON objects) together"
            )


class RowBudget:
    """What is left of one row's test budget: characters of JSON text and JSON objects, each
    also taken from its file's budget when it has one."""

    def __init__(self, file_budget: FileBudget | None = None) -> None:
        self.chars = MAX_ROW_TEST_MB << 20
        self.objects = MAX_ROW_TESTS
        self.file_budget = file_budget

    def take_text(self, size: int) -> None:
        self.chars -= size
        if self.chars < 0:
            raise ValueError(
                f"the row's tests exceed {MAX_ROW_TEST_MB} MB of text (public and private "
                "together); refused before they are built"
            )
        if self.file_budget is not None:
            self.file_budget.take(size, 0)

    def take_object(self, obj: dict) -> dict:
        """json's object_hook: counts every JSON object while it is parsed, so a row of millions
        of tiny tests stops at the cap instead of filling memory."""
        self.objects -= 1
        if self.objects < 0:
            raise ValueError(f"the row holds more than {MAX_ROW_TESTS:,} tests (JSON objects)")
        if self.file_budget is not None:
            self.file_budget.take(0, 1)
        return obj


def tests_json_text(raw: str) -> str:
    """The JSON text of a test field: the field itself when it reads as JSON, else
    LiveCodeBench's base64(zlib(pickle(json string))) decoded (at most MAX_DECODED_MB)."""
    if _looks_like_json(raw):
        return raw
    try:
        payload = _string_pickle(_inflate(base64.b64decode(raw, validate=True)))
    except (binascii.Error, zlib.error, pickle.UnpicklingError, EOFError, ValueError) as err:
        raise ValueError(
            "neither JSON nor LiveCodeBench's base64 of zlib of a pickle "
            f"({type(err).__name__}: {err})"
        ) from None
    return payload.decode("utf-8") if isinstance(payload, bytes) else payload


def _looks_like_json(raw: str) -> bool:
    # Decided by the first character: parsing to find out would build the tests before their
    # budget is checked. A zlib stream's base64 starts with "e" (its header byte 0x78).
    head = raw.lstrip()[:1]
    return (
        head in ("[", "{", '"', "-") or head.isdigit() or raw.strip() in ("null", "true", "false")
    )


def decode_test_cases(raw: str, budget: RowBudget | None = None) -> Any:
    """Plain JSON, or base64(zlib(pickle(json string))) as in code_generation_lite; the text's
    size and its objects counted against ``budget`` (a fresh row's if None) while parsing."""
    budget = RowBudget() if budget is None else budget
    text = tests_json_text(raw)
    budget.take_text(len(text))
    try:
        return json.loads(text, object_hook=budget.take_object)
    except json.JSONDecodeError as err:
        raise ValueError(f"neither JSON ({err.msg} at column {err.colno}) nor base64") from None
    except RecursionError:
        raise ValueError("nested too deeply to read as JSON") from None


def _parse_tests(
    file: Any, i: int, raw: Any, column: str, budget: RowBudget
) -> list[dict[str, str]]:
    try:
        if isinstance(raw, str):
            tests = decode_test_cases(raw, budget)
        else:  # already parsed (a parquet column): its count still counts
            tests = raw
            for _ in range(len(raw) if isinstance(raw, list) else 0):
                budget.take_object({})
    except (ValueError, RecursionError, UnicodeDecodeError) as err:
        raise DataError(file, f"cannot decode test cases: {err}", i, column) from None
    if not isinstance(tests, list):
        raise DataError(file, f"expected a list of tests, got {type(tests).__name__}", i, column)
    out = []
    for j, test in enumerate(tests, start=1):
        if not isinstance(test, dict) or not all(
            k in test for k in ("input", "output", "testtype")
        ):
            raise DataError(file, f"test {j} lacks input/output/testtype", i, column)
        if test["testtype"] not in TEST_TYPES:
            raise DataError(file, f"test {j} has unknown testtype {test['testtype']!r}", i, column)
        for key in ("input", "output"):
            if not isinstance(test[key], str):
                kind = type(test[key]).__name__
                raise DataError(file, f"test {j}: {key!r} must be a string, got {kind}", i, column)
        out.append({"input": test["input"], "output": test["output"], "testtype": test["testtype"]})
    return out


def check_gradable(file: Any, i: int, tests: list[dict[str, str]], fn_name: str | None) -> None:
    """The grader's own check of the tests (functional inputs and outputs are JSON it can read),
    run here so a bad test fails preparation rather than grading."""
    from pacs.rewards.code import check_tests

    try:
        check_tests(tests, fn_name)
    except (TypeError, ValueError) as err:
        raise DataError(file, f"a test the grader cannot use: {err}", i, "tests") from None


def _metadata(file: Any, i: int, rec: dict[str, Any]) -> dict[str, Any]:
    raw = rec.get("metadata")
    if raw is None or raw == "":
        return {}
    try:
        meta = json.loads(raw) if isinstance(raw, str) else raw
    except (json.JSONDecodeError, RecursionError) as err:
        raise DataError(file, f"metadata is not a JSON object: {err}", i, "metadata") from None
    if not isinstance(meta, dict):
        kind = "null" if meta is None else type(meta).__name__
        raise DataError(file, f"metadata must be a JSON object, got {kind}", i, "metadata")
    return meta


def _fn_name(file: Any, i: int, rec: dict[str, Any], tests: list[dict[str, str]]) -> str | None:
    fn_name = _metadata(file, i, rec).get("func_name")
    if fn_name in (None, ""):
        if any(t["testtype"] == "functional" for t in tests):
            raise DataError(file, "functional tests need metadata.func_name", i, "metadata")
        return None
    # The harness calls Solution().<func_name>: anything but a name fails every response.
    if not isinstance(fn_name, str) or not fn_name.isidentifier() or keyword.iskeyword(fn_name):
        shown = repr(fn_name)[:80]
        raise DataError(file, f"func_name {shown} is not a Python identifier", i, "metadata")
    return fn_name


def _contest_date(file: Any, i: int, rec: dict[str, Any]) -> date:
    value = require(file, i, rec, "contest_date")
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    try:
        return datetime.fromisoformat(str(value)).date()
    except ValueError as err:
        raise DataError(file, f"not an ISO date: {value!r}", i, "contest_date") from err


def convert_row(
    file: Any, i: int, rec: dict[str, Any], file_budget: FileBudget | None = None
) -> dict[str, Any]:
    """One LCB record -> one prepared row (its tests also taken from ``file_budget``)."""
    question = require_str(file, i, rec, "question_content")
    qid = str(require(file, i, rec, "question_id")).strip()
    budget = RowBudget(file_budget)  # public and private tests together
    public = require(file, i, rec, "public_test_cases")
    tests = _parse_tests(file, i, public, "public_test_cases", budget)
    if rec.get("private_test_cases"):
        tests += _parse_tests(file, i, rec["private_test_cases"], "private_test_cases", budget)
    if not tests:
        raise DataError(file, "no tests", i, "public_test_cases")
    starter = rec.get("starter_code") or ""
    fn_name = _fn_name(file, i, rec, tests)
    check_gradable(file, i, tests, fn_name)
    return {
        "problem_id": f"livecodebench/{qid}",
        "benchmark": "livecodebench",
        "task": "code",
        "prompt": user_prompt(build_code_prompt(question, starter)),
        "answer": "",
        "problem": question,
        "tests": tests,
        "fn_name": fn_name,
        "starter_code": starter,
    }


def convert_records(
    records: Sequence[dict[str, Any]], file: Any, window: tuple[date, date] | None = PAPER_WINDOW
) -> tuple[list[dict[str, Any]], list[int], int]:
    """Rows inside ``window`` (all if None), the source row of each, and the count left out."""
    rows, kept, dropped = [], [], 0
    file_budget = FileBudget(file)  # the kept rows' tests together
    for i, rec in enumerate(records):
        if window is not None and not window[0] <= _contest_date(file, i, rec) < window[1]:
            dropped += 1
            continue
        rows.append(convert_row(file, i, rec, file_budget))
        kept.append(i)
    return rows, kept, dropped


def check_nonempty(
    file: Any, rows: Sequence[dict[str, Any]], window: tuple[date, date] | None, dropped: int
) -> None:
    if rows:
        return
    if window is None:
        raise DataError(file, "no rows")
    raise DataError(
        file,
        f"no problem has a contest_date in [{window[0]}, {window[1]}) "
        f"(all {dropped} rows outside); "
        "choose another window (--start-date/--end-date) or --all-dates",
    )


def convert_livecodebench(
    records: Sequence[dict[str, Any]], file: Any, window: tuple[date, date] | None = PAPER_WINDOW
) -> tuple[list[dict[str, Any]], int]:
    """Rows with ``window[0] <= contest_date < window[1]`` (all rows if ``window`` is None) and
    the number of rows left out by the window."""
    if not records:
        raise DataError(file, "no rows")
    rows, kept, dropped = convert_records(records, file, window)
    check_nonempty(file, rows, window, dropped)
    check_unique_ids(file, rows, kept)
    return rows, dropped
