"""Code-shape rules of the team (BRIEF / docs/design.md §3), checked on the source itself."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
MAX_FUNCTION_LINES = 60


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


def test_no_function_in_src_exceeds_60_lines():
    assert long_functions(SRC) == []


def test_the_walk_finds_long_functions_and_methods(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(60))
    (tmp_path / "m.py").write_text(
        f"def short():\n    return 1\n\n\ndef long():\n{body}\n\n\n"
        f"class C:\n    @property\n    def method(self):\n{body.replace('    ', '        ')}\n"
    )
    assert long_functions(tmp_path) == ["m.py:5 long (61 lines)", "m.py:70 method (61 lines)"]
    assert long_functions(tmp_path, limit=61) == []
