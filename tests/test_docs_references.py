"""Every code name the docs cite exists: modules and their names, call parameters, files, make
targets and the flags of ``python -m pacs.…`` commands.

The docs are README.md and docs/*.md (the committed reports aside: they are generated). A cited
name is one inside backticks: ``pacs.x.y`` (a module, or a name defined at the top of one,
``pacs.x.y.name``; a call ``pacs.x.f(a, b=1)`` must name parameters ``f`` has), a path under
src/, tests/, configs/, docs/, benchmarks/, workflow/ or notebooks/, ``make target`` and
``python -m pacs.x --flag`` (the flag must appear in the module's source).
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PATH_ROOTS = ("src/", "tests/", "configs/", "docs/", "benchmarks/", "workflow/", "notebooks/")

SPAN = re.compile(r"`([^`\n]+)`")
DOTTED = re.compile(r"(?<![\w./-])pacs(?:\.\w+)+(?:\([^()]*\))?")
ROOTS_ALT = "|".join(map(re.escape, PATH_ROOTS))
PATH = re.compile(rf"(?<![\w./-])((?:{ROOTS_ALT})[\w./<>*{{}}-]*)")
MAKE = re.compile(r"^make ([a-z][\w-]*)")
PYTHON_M = re.compile(r"python -m (pacs(?:\.\w+)*)(.*)")
FLAG = re.compile(r"(?<![\w-])(--[a-z][\w-]*)")


def module_file(dotted: str) -> Path | None:
    """``pacs.x.y`` -> its file (a module or a package's ``__init__.py``), else None."""
    base = SRC.joinpath(*dotted.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py", base / "__main__.py"):
        if path.is_file():
            return path
    return None


@cache
def top_level(path: Path) -> dict[str, ast.AST]:
    """Names defined at the top of a module (functions, classes, assignments, imports)."""
    names: dict[str, ast.AST] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update({t.id: node for t in targets if isinstance(t, ast.Name)})
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update({(a.asname or a.name).split(".")[0]: node for a in node.names})
    return names


def parameters(node: ast.AST) -> set[str] | None:
    """A function's (or a class's ``__init__``-less dataclass's) parameter names; None: unknown."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = node.args
        return {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x}
    return None


def dotted_problem(ref: str) -> str | None:
    """Why a ``pacs.…`` citation does not resolve, or None."""
    name, _, call = ref.partition("(")
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        path = module_file(".".join(parts[:cut]))
        if path is not None:
            break
    else:
        return "no such module"
    rest = parts[cut:]
    if not rest:
        return None
    node = top_level(path).get(rest[0])
    if node is None:
        return f"{rest[0]} is not defined in {path.relative_to(ROOT)}"
    params = parameters(node) if call and len(rest) == 1 else None
    if params is not None:
        cited = [a.split("=")[0].strip() for a in call.rstrip(")").split(",")]
        unknown = [a for a in cited if a.isidentifier() and a not in params]
        if unknown:
            return f"{rest[0]} has no parameter {', '.join(unknown)}"
    return None


def path_problem(ref: str) -> str | None:
    ref = ref.rstrip(".,;:)").split(":")[0]
    if any(ch in ref for ch in "<>*{}") or "…" in ref:
        return None  # a pattern, not one file
    return None if (ROOT / ref).exists() else "no such file"


@cache
def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"(?m)^([a-z][\w-]*):", text))


def references(text: str) -> list[tuple[str, str]]:
    """(kind, name) of every code name cited in a markdown text."""
    found = []
    for span in SPAN.findall(text):
        found += [("module", m) for m in DOTTED.findall(span)]
        found += [("path", p) for p in PATH.findall(span)]
        make = MAKE.match(span)
        if make:
            found.append(("make", make.group(1)))
        command = PYTHON_M.search(span)
        if command:
            found += [("flag", f"{command.group(1)} {f}") for f in FLAG.findall(command.group(2))]
    return found


def problem(kind: str, name: str) -> str | None:
    if kind == "module":
        return dotted_problem(name)
    if kind == "path":
        return path_problem(name)
    if kind == "make":
        return None if name in make_targets() else "no such make target"
    module, flag = name.split(" ")
    if flag == "--help":
        return None  # argparse's own
    path = module_file(module)
    if path is None:
        return "no such module"
    package = path.name in ("__init__.py", "__main__.py")
    sources = sorted(path.parent.rglob("*.py")) if package else [path]
    return None if any(flag in p.read_text(encoding="utf-8") for p in sources) else "no such flag"


def broken_references(docs: list[Path]) -> tuple[list[str], int]:
    """``doc: kind name (why)`` for every citation that does not resolve, and how many were
    checked."""
    broken, checked = [], 0
    for doc in docs:
        for kind, name in references(doc.read_text(encoding="utf-8")):
            checked += 1
            why = problem(kind, name)
            if why:
                where = doc.relative_to(ROOT) if doc.is_relative_to(ROOT) else doc.name
                broken.append(f"{where}: {kind} {name} ({why})")
    return broken, checked


def test_every_code_name_the_docs_cite_exists():
    broken, checked = broken_references(DOCS)
    assert checked > 250  # the scan finds the citations
    assert broken == []


def test_a_stale_citation_is_named(tmp_path):
    doc = tmp_path / "d.md"
    doc.write_text(
        "`pacs.core_algos.group_scores(x, group_size, method)`, `pacs.core_algos.nothing`, "
        "`pacs.nowhere`, `src/pacs/gone.py`, `make nothing`, `python -m pacs.report --nope`, "
        "`pacs.core_algos.group_scores(x, group_size, score)`, `make test`, `src/pacs/io.py:12`"
    )
    broken = [b.split(": ", 1)[1] for b in broken_references([doc])[0]]
    assert broken == [
        (
            "module pacs.core_algos.group_scores(x, group_size, method) (group_scores has no "
            "parameter method)"
        ),
        "module pacs.core_algos.nothing (nothing is not defined in src/pacs/core_algos.py)",
        "module pacs.nowhere (nowhere is not defined in src/pacs/__init__.py)",
        "path src/pacs/gone.py (no such file)",
        "make nothing (no such make target)",
        "flag pacs.report --nope (no such flag)",
    ]


def heading_anchor(title: str) -> str:
    """GitHub's anchor of a markdown heading."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def test_the_design_contents_list_every_section():
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    body = re.sub(r"(?ms)^```.*?^```", "", text)
    headings = re.findall(r"(?m)^#{2,3} (.+)$", body)
    listed = re.findall(r"(?m)^ *- \[.+\]\(#([^)]+)\)$", text)
    assert listed == [heading_anchor(h) for h in headings if h != "Contents"]
