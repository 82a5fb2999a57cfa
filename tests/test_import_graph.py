"""The package's import graph has no circle.

Every ``import``/``from ... import`` of a ``pacs`` module counts, at module level or inside a
function (a lazy import is still a dependency), except under ``if TYPE_CHECKING:`` (annotations
only, never run). The graph is read with ``ast``, and stdlib ``graphlib`` finds a cycle.
"""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def module_names(src: Path) -> dict[str, Path]:
    """``pacs.x.y`` -> file, packages named by their ``__init__.py``."""
    names = {}
    for path in src.rglob("*.py"):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported_names(tree: ast.AST, package: str) -> list[str]:
    """Dotted names a module imports, TYPE_CHECKING aside. ``from a import b`` gives ``a.b``: the
    module ``a.b`` when there is one, else (a name defined in ``a``) it resolves to ``a``."""
    found: list[str] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            todo.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            found += [f"{base}.{alias.name}" for alias in node.names]
        todo.extend(ast.iter_child_nodes(node))
    return found


def import_graph(src: Path) -> dict[str, set[str]]:
    """module -> the ``pacs`` modules it imports (a name resolves to its longest known module)."""
    modules = module_names(src)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps = set()
        for dotted in imported_names(ast.parse(path.read_text(encoding="utf-8")), package):
            while dotted and dotted not in modules:
                dotted = dotted.rpartition(".")[0]
            if dotted and dotted != name:
                deps.add(dotted)
        graph[name] = deps
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as err:
        return list(err.args[1])
    return None


def test_the_pacs_import_graph_has_no_circle():
    graph = import_graph(SRC)
    assert len(graph) > 50  # the scan found the package
    assert find_cycle(graph) is None


def test_a_circle_is_found_even_through_a_lazy_import(tmp_path):
    pkg = tmp_path / "pacs"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pacs import b\n")
    (pkg / "b.py").write_text("def f():\n    from pacs.a import g\n")
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pacs import a\n"
    )
    graph = import_graph(tmp_path)
    assert graph["pacs.c"] == set()  # annotations only
    cycle = find_cycle(graph)
    assert cycle is not None and set(cycle) == {"pacs.a", "pacs.b"}


@pytest.mark.parametrize(
    "level,package,expected", [(1, "pacs.x", "pacs.x.m.f"), (2, "pacs.x", "pacs.m.f")]
)
def test_relative_imports_resolve_from_their_package(level, package, expected):
    tree = ast.parse(f"from {'.' * level}m import f\n")
    assert expected in imported_names(tree, package)
