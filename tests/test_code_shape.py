"""Code-shape rules of the team (BRIEF / docs/design.md#layout), checked on the source itself."""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
TESTS = Path(__file__).resolve().parent
MAX_FUNCTION_LINES = 60
MAX_FILE_LINES = 650
# Files the length limit does not apply to, with the reason.
LONG_FILES_ALLOWED = {
    # the sandbox's child process: one self-contained file it runs by path, importing nothing of
    # the package, so it cannot be split into modules
    "pacs/rewards/_sandbox_harness.py",
}
# Test functions over the limit, each to be split by the owner of its suite; the list may only
# shrink (an entry that is no longer long fails too).
LONG_TEST_FUNCTIONS_PENDING: set[str] = set()


def long_functions(root: Path, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    """``path:line name (N lines)`` of every function or method longer than ``limit`` lines,
    counted from its ``def`` line (decorators excluded) to its last line."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > limit:
                    found.append(
                        f"{path.relative_to(root)}:{node.lineno} {node.name} ({length} lines)"
                    )
    return found


def long_files(root: Path, limit: int = MAX_FILE_LINES, allowed=frozenset()) -> list[str]:
    """``path (N lines)`` of every ``.py`` file under ``root`` over ``limit`` lines, ``allowed``
    (paths relative to ``root``) aside."""
    found = []
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        n = len(path.read_text().splitlines())
        if n > limit and name not in allowed:
            found.append(f"{name} ({n} lines)")
    return found


def test_no_function_in_src_exceeds_60_lines():
    assert long_functions(SRC) == []


def test_no_test_function_exceeds_60_lines():
    found = {
        f"{where.split(':')[0]} {rest.split(' ')[0]}"
        for where, rest in (entry.split(" ", 1) for entry in long_functions(TESTS))
    }
    assert found - LONG_TEST_FUNCTIONS_PENDING == set()
    assert LONG_TEST_FUNCTIONS_PENDING - found == set(), "split: drop it from the pending list"


def test_no_file_in_src_exceeds_650_lines():
    assert long_files(SRC, allowed=LONG_FILES_ALLOWED) == []


def test_the_allowed_long_files_exist():
    assert all((SRC / name).is_file() for name in LONG_FILES_ALLOWED)


def test_the_file_walk_counts_lines(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n" * 651)
    (tmp_path / "b.py").write_text("x = 1\n" * 650)
    assert long_files(tmp_path) == ["a.py (651 lines)"]
    assert long_files(tmp_path, allowed={"a.py"}) == []


def test_the_walk_finds_long_functions_and_methods(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(60))
    (tmp_path / "m.py").write_text(
        f"def short():\n    return 1\n\n\ndef long():\n{body}\n\n\n"
        f"class C:\n    @property\n    def method(self):\n{body.replace('    ', '        ')}\n"
    )
    assert long_functions(tmp_path) == ["m.py:5 long (61 lines)", "m.py:70 method (61 lines)"]
    assert long_functions(tmp_path, limit=61) == []


# Top-level names used by no code but their definition, each with the reason it stays.
UNUSED_NAMES_ALLOWED = {
    "compute_policy_loss_real": "registered with verl by its decorator; verl calls it by name",
}


def unused_top_level_names(root: Path) -> list[str]:
    """``path:line name`` of each top-level function, class or constant of ``src`` that no file
    of the repository names but its own definition (``main`` and dunders aside)."""
    code = [root / "Snakefile", *root.glob("workflow/**/*.smk"), *root.glob("notebooks/*.ipynb")]
    for folder in ("src", "tests", "benchmarks", "tools"):
        code += [p for p in (root / folder).rglob("*") if p.suffix in (".py", ".sh")]
    words: dict[str, int] = {}
    for path in code:
        if path.is_file() and path.name != Path(__file__).name:  # not this list of names
            for word in re.findall(r"\w+", path.read_text(errors="replace")):
                words[word] = words.get(word, 0) + 1
    found = []
    for path in sorted((root / "src").rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = [node.name]
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [t.id for t in targets if isinstance(t, ast.Name)]
            else:
                continue
            for name in names:
                if name != "main" and not name.startswith("__") and words.get(name, 0) <= 1:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {name}")
    return found


def test_no_top_level_name_is_dead(tmp_path):
    root = SRC.parent
    unused = [u for u in unused_top_level_names(root) if u.split()[-1] not in UNUSED_NAMES_ALLOWED]
    assert unused == []
    assert all(any(u.endswith(" " + n) for u in unused_top_level_names(root)) for n in
               UNUSED_NAMES_ALLOWED)  # fmt: skip
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text("LIVE = 1\nDEAD = 2\n\n\ndef f():\n    return LIVE\n")
    assert unused_top_level_names(tmp_path) == ["src/m.py:2 DEAD", "src/m.py:5 f"]
