"""The package's import graph has no circle, and its units sit in declared layers.

Every ``import``/``from ... import`` of a ``pacs`` module counts, at module level, inside a
function (a lazy import is still a dependency) or under ``if TYPE_CHECKING:`` (a circle of
annotations is still a circle: a protocol breaks it). The graph is read with ``ast``, and stdlib
``graphlib`` finds a cycle.
"""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# The package's units (top-level modules and subpackages; ``pacs`` is the package's own
# ``__init__``), lowest layer first. A unit imports only units of LOWER layers, never one beside
# it or above it (docs/design.md#layout).
LAYERS: list[tuple[str, set[str]]] = [
    ("foundations", {"pacs", "io", "layout", "loss_modes", "numerics", "progress"}),
    (
        "math, methods, rewards",
        {"core_algos", "causal_lm", "methods", "rewards", "fingerprint", "fetch"},
    ),
    ("config and data", {"config", "data"}),
    ("metric names", {"metrics_log"}),
    ("the CPU engine and the evaluation stages", {"tiny", "evaluation"}),
    ("report and the verl engine", {"report", "verl_plugin"}),
    ("drivers", {"model_eval", "explore", "preflight", "slurm_profile"}),
    ("plans over the drivers", {"budget"}),
]


def module_names(src: Path) -> dict[str, Path]:
    """``pacs.x.y`` -> file, packages named by their ``__init__.py``."""
    names = {}
    for path in src.rglob("*.py"):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def imported_names(tree: ast.AST, package: str) -> list[str]:
    """Dotted names a module imports, anywhere. ``from a import b`` gives ``a.b``: the
    module ``a.b`` when there is one, else (a name defined in ``a``) it resolves to ``a``."""
    found: list[str] = []
    todo = [tree]
    while todo:
        node = todo.pop()
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


def unit_of(module: str) -> str:
    """``pacs.a.b`` -> ``a``; the package itself -> ``pacs``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layer_violations(graph: dict[str, set[str]], layers: list[tuple[str, set[str]]]) -> list[str]:
    """``a -> b (module -> module)`` for every import of a unit that is not in a lower layer."""
    rank = {unit: i for i, (_, units) in enumerate(layers) for unit in units}
    found = []
    for module, deps in sorted(graph.items()):
        for dep in sorted(deps):
            a, b = unit_of(module), unit_of(dep)
            if a != b and not rank[b] < rank[a]:
                found.append(f"{a} -> {b} ({module} -> {dep})")
    return found


def test_every_unit_has_one_layer():
    units = {unit_of(m) for m in import_graph(SRC)}
    declared = [u for _, layer in LAYERS for u in layer]
    assert len(declared) == len(set(declared))
    assert units == set(declared)


def test_units_import_only_lower_layers():
    assert layer_violations(import_graph(SRC), LAYERS) == []


def test_a_layer_violation_is_named(tmp_path):
    pkg = tmp_path / "pacs"
    (pkg / "low").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "__init__.py").write_text("from pacs import high\n")
    (pkg / "high.py").write_text("from pacs.low import x\n")
    (pkg / "side.py").write_text("import pacs.high\n")
    layers = [("low", {"pacs", "low"}), ("high", {"high", "side"})]
    assert layer_violations(import_graph(tmp_path), layers) == [
        "low -> high (pacs.low -> pacs.high)",
        "side -> high (pacs.side -> pacs.high)",
    ]


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
    assert graph["pacs.c"] == {"pacs.a"}  # annotations count too
    cycle = find_cycle(graph)
    assert cycle is not None and set(cycle) == {"pacs.a", "pacs.b"}


@pytest.mark.parametrize(
    "level,package,expected", [(1, "pacs.x", "pacs.x.m.f"), (2, "pacs.x", "pacs.m.f")]
)
def test_relative_imports_resolve_from_their_package(level, package, expected):
    tree = ast.parse(f"from {'.' * level}m import f\n")
    assert expected in imported_names(tree, package)


def private_imports(src: Path) -> list[str]:
    """``module: name`` of every private name (``_x``) of a pacs module imported from outside
    the package that holds it: a private name is its package's own business."""
    found = []
    for module, path in sorted(module_names(src).items()):
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for name in imported_names(ast.parse(path.read_text()), package):
            parts = name.split(".")
            private = [
                i for i, p in enumerate(parts) if p.startswith("_") and not p.startswith("__")
            ]
            owner = ".".join(parts[: private[0]]) if private else None
            if parts[0] == "pacs" and owner is not None and owner != package:
                found.append(f"{module}: {name}")
    return found


def test_no_module_imports_another_packages_private_names(tmp_path):
    assert private_imports(SRC) == []
    (tmp_path / "pacs" / "a").mkdir(parents=True)
    (tmp_path / "pacs" / "a" / "x.py").write_text("from pacs.a import _ok\nfrom . import _fine\n")
    (tmp_path / "pacs" / "b.py").write_text("from pacs.a.x import _helper\nimport pacs.a._mod\n")
    assert sorted(private_imports(tmp_path)) == ["pacs.b: pacs.a._mod", "pacs.b: pacs.a.x._helper"]
