"""Every code name the docs cite resolves against the code, and the docs stay within their budgets.

The docs are README.md and docs/*.md (the committed reports aside: they are generated). A cited name
is one inside backticks (or a command in a fenced block), of one of these kinds:

- ``module``: ``pacs.x.y`` (a module, or a name at the top of one; a call ``pacs.x.f(a, b=1)`` must
  name parameters ``f`` has);
- ``short``: a dotted name without ``pacs.``: ``core_algos.real_loss``, ``loss.LABEL_LOSSES``,
  ``launch.logs`` (a module named by its last parts, then a name in it), ``PacsSpec.grad_clip``
  (a class of ours, then an attribute of it or of its bases);
- ``config``: a key path of a profile config, ``train.max_new_tokens``, ``models.<m>.path``,
  walked through the spec classes of ``pacs.config`` (a key that moved, in ``MOVED_KEYS``, counts);
- ``class`` / ``constant``: ``MissingBranch``, ``SFT_THREADS`` (a constant may be an environment
  variable the code reads by name);
- ``metric`` / ``identifier``: a snake_case name, a metric of ``pacs.metrics_log``
  (``psi_abs_mean``) or any identifier or string of the code (``reset_due``, ``ds_rounds``);
- ``path``, ``make`` (a target of the Makefile), ``flag`` (``python -m pacs.x --flag``: in that
  module's source; a lone ``--flag``: anywhere in the code), ``anchor`` (a markdown link's
  ``file.md#heading``, in the docs and, as ``docs/x.md#heading``, in code, configs and tests).

Names that belong to verl, vLLM, torch and other tools are in an explicit allow-list (``FOREIGN``,
``FOREIGN_PREFIXES``); an entry that our code defines, or that no doc cites, fails too. The
resolver reads the code statically from a root folder, so the mutation tests below rename one
name of each kind in a copy of the code and check that its citation then fails.
"""

from __future__ import annotations

import ast
import re
import shutil
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PATH_ROOTS = ("src/", "tests/", "configs/", "docs/", "benchmarks/", "workflow/", "notebooks/")
# Where a name may be defined or read: the code and the tests (the docs cite fixtures), not the
# docs; Python files under src/, tests/ and benchmarks/ by their syntax tree, the others as text.
CODE_GLOBS = ("workflow/**/*", "configs/**/*.yaml", "tools/**/*", "envs/**/*")
CODE_FILES = ("Snakefile", "Makefile", "pyproject.toml", "environment.yml")
# Where code cites the docs by anchor.
CITING_GLOBS = (
    "src/**/*.py",
    "tests/**/*.py",
    "configs/**/*.yaml",
    "workflow/**/*.smk",
    "benchmarks/**/*.py",
)
CITING_FILES = ("Snakefile", "Makefile")
LINE_BUDGETS = {"docs/design.md": 550, "docs/testing.md": 150}
TOTAL_DOCS_BUDGET = 2200

# Names the docs cite that belong to verl, vLLM, torch and other tools and that our code never
# spells: not ours to resolve. Only what would fail without it (a test keeps the list so).
FOREIGN = {
    "TrainingWorker.train_mini_batch",  # verl
    "config.global_batch_info",  # verl's policy-loss config
    "verl.plugins",  # verl's entry-point group
    "data.train_files",  # a verl data key
    "layer.weight",  # vLLM
    "--loss_type",  # ms-swift (REAL's other implementation)
    "TimeoutException",  # math-verify
    "xdist_group",  # pytest-xdist
    "Flags",  # SLURM's slurm.conf
    "max_rss",  # a column of Snakemake's benchmark files
}
# Hydra keys of verl's trainer config, and dotted names of libraries.
FOREIGN_PREFIXES = ("actor.", "+actor_rollout_ref.", "algorithm.", "trainer.", "optim.")
FOREIGN_PREFIXES += ("ray.", "scipy.", "np.", "torch.", "vllm.", "importlib.", "signal.")
FILE_SUFFIX = re.compile(
    r"\.(md|py|json|jsonl|csv|ya?ml|txt|pt|parquet|sif|def|smk|lock|err|gz|ipynb|png|pdf|tex|"
    r"html|cfg|toml|sh|partial|log|safetensors|cff)$"
)

SPAN = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"(?ms)^```[a-z]*\n(.*?)^```")
DOTTED = re.compile(r"(?<![\w./-])pacs(?:\.\w+)+(?:\([^()]*\))?")
ROOTS_ALT = "|".join(map(re.escape, PATH_ROOTS))
PATH = re.compile(rf"(?<![\w./-])((?:{ROOTS_ALT})[\w./<>*{{}}-]*)")
MAKE = re.compile(r"^make ([a-z][\w-]*)")
PYTHON_M = re.compile(r"python -m (pacs(?:\.\w+)*)(.*)")
FLAG = re.compile(r"(?<![\w-])(--[a-z][\w-]*)")
SHORT = re.compile(r"^\+?[A-Za-z_]\w*(?:\.(?:[A-Za-z_]\w*|<\w+>))+(?:\(.*\))?$")
CLASS = re.compile(r"^_?[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*$")
CONSTANT = re.compile(r"^_?[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
# Slash-separated spans that are folders or prose, not logged keys.
NOT_METRIC = (*PATH_ROOTS, "results/", "figures/", "tables/", "and/", "name/")
METRIC_KEY = re.compile(r"^[a-z_]+(?:/[\w<>{},]+)+$")
SNAKE = re.compile(r"^_?[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")  # 5 characters or more (not x_1)
LINK = re.compile(r"\]\(([^()\s]+)\)")
CODE_ANCHOR = re.compile(r"(?<![\w/.-])((?:docs/)?[\w-]+\.md)#([\w\-ψ]+)")


# ------------------------------------------------------------------------------ the code, indexed


@dataclass
class Code:
    """What the code under ``root`` defines and names, read statically."""

    root: Path
    modules: dict[str, Path] = field(default_factory=dict)  # pacs.x.y -> file
    classes: dict[str, dict[str, ast.expr | None]] = field(
        default_factory=dict
    )  # attr -> annotation
    bases: dict[str, list[str]] = field(default_factory=dict)
    aliases: dict[str, ast.expr] = field(default_factory=dict)  # top-level X = ... of every module
    words: set[str] = field(default_factory=set)  # identifiers and words of strings and code files
    metrics: set[str] = field(default_factory=set)  # string constants of pacs.metrics_log
    moved_keys: set[str] = field(default_factory=set)  # MOVED_KEYS of pacs.config.load


def _class_attrs(node: ast.ClassDef) -> dict[str, ast.expr | None]:
    attrs: dict[str, ast.expr | None] = {}
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            attrs[item.name] = None
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            attrs[item.target.id] = item.annotation
        elif isinstance(item, ast.Assign):
            attrs.update({t.id: None for t in item.targets if isinstance(t, ast.Name)})
    return attrs


def _strings(tree: ast.AST) -> list[str]:
    """String constants that are not docstrings."""
    docstrings = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    return [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
    ]


def _index_python(code: Code, path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            # classes of one name in several modules: their attributes together
            code.classes.setdefault(node.name, {}).update(_class_attrs(node))
            bases = [ast.unparse(b).split("[")[0] for b in node.bases]
            code.bases.setdefault(node.name, []).extend(bases)
        for attr in ("name", "id", "attr", "arg"):
            value = getattr(node, attr, None)
            if isinstance(value, str):
                code.words.add(value)
    for node in tree.body:
        if isinstance(node, ast.Assign):
            code.aliases.update({t.id: node.value for t in node.targets if isinstance(t, ast.Name)})
    strings = _strings(tree)
    for text in strings:
        code.words.update(re.findall(r"[\w-]+", text))
    if path.name == "metrics_log.py":
        code.metrics.update(s for s in strings if SNAKE.match(s) or s.isidentifier())
    moved = code.aliases.get("MOVED_KEYS") if path.name == "load.py" else None
    if isinstance(moved, ast.Dict):
        code.moved_keys.update(".".join(ast.literal_eval(k)) for k in moved.keys if k is not None)


@cache
def code_index(root: Path = ROOT) -> Code:
    code = Code(root)
    for path in sorted((root / "src").rglob("*.py")):
        parts = list(path.relative_to(root / "src").with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        code.modules[".".join(parts)] = path
        code.words.update(parts)
        _index_python(code, path)
    for path in sorted([*(root / "tests").rglob("*.py"), *(root / "benchmarks").rglob("*.py")]):
        code.words.add(path.stem)
        if path.name != Path(__file__).name:
            _index_python(code, path)
    others = [
        p for g in CODE_GLOBS for p in root.glob(g) if p.is_file() and "__pycache__" not in p.parts
    ]
    for path in [*others, *(root / f for f in CODE_FILES)]:
        if path.is_file():
            code.words.update(
                re.findall(r"[\w-]+", path.read_text(encoding="utf-8", errors="replace"))
            )
    return code


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


def module_file(dotted: str, root: Path = ROOT) -> Path | None:
    """``pacs.x.y`` -> its file (a module or a package's ``__init__.py``), else None."""
    base = (root / "src").joinpath(*dotted.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py", base / "__main__.py"):
        if path.is_file():
            return path
    return None


def parameters(node: ast.AST) -> set[str] | None:
    """A function's parameter names; None: not a function."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = node.args
        return {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x}
    return None


# ------------------------------------------------------------------------------ resolving names


def class_attr(code: Code, cls: str, attr: str, seen: frozenset = frozenset()) -> bool | None:
    """Whether ``cls`` (or a base of ours) has ``attr``; None: ``cls`` is not ours."""
    if cls not in code.classes or cls in seen:
        return None
    if attr in code.classes[cls]:
        return True
    return any(class_attr(code, b, attr, seen | {cls}) for b in code.bases.get(cls, []))


def classes_named(code: Code, expr: ast.AST | None, depth: int = 0) -> list[str]:
    """The classes of ours an annotation (or an alias of one) names."""
    if expr is None or depth > 3:
        return []
    found = []
    for node in ast.walk(expr):
        if isinstance(node, ast.Name):
            if node.id in code.classes:
                found.append(node.id)
            elif node.id in code.aliases:
                found += classes_named(code, code.aliases[node.id], depth + 1)
    return found


def config_problem(code: Code, key: str) -> str | None:
    """Why a config key path does not resolve through ``Profile``'s spec classes, or None."""
    if ".".join(key.split(".")[:2]) in code.moved_keys:
        return None
    parts, current, i = key.split("."), ["Profile"], 0
    while i < len(parts) and current:  # below a field of no class of ours: free-form, not walked
        have = [code.classes[c] for c in current if c in code.classes]
        annotations = [attrs[parts[i]] for attrs in have if parts[i] in attrs]
        if not annotations:
            return f"no key {parts[i]} under {'.'.join(parts[:i]) or 'the top'}"
        current = [c for a in annotations for c in classes_named(code, a)]
        dict_valued = any(a is not None and "dict[" in ast.unparse(a) for a in annotations)
        i += 2 if dict_valued else 1  # a dict's own keys are names the config chooses
    return None


def short_problem(code: Code, name: str) -> str | None:
    """Why a dotted name without ``pacs.`` does not resolve, or None."""
    parts = name.split("(")[0].lstrip("+").split(".")
    for cut in range(len(parts) - 1, 0, -1):  # a module named by its last parts
        suffix = "." + ".".join(parts[:cut])
        matches = [m for m in code.modules if m.endswith(suffix)]
        if matches:
            rest = parts[cut:]
            path = code.modules[matches[0]]
            if rest[0] not in top_level(path) and not any(
                m.endswith(suffix + "." + rest[0]) for m in code.modules
            ):
                return f"{rest[0]} is not defined in {'/'.join(matches[0].split('.'))}"
            if len(rest) > 1 and class_attr(code, rest[0], rest[1]) is False:
                return f"{rest[0]} has no attribute {rest[1]}"
            return None
    owner = class_attr(code, parts[0], parts[1])
    if owner is None:
        return "neither a module nor a class of ours"
    return None if owner else f"{parts[0]} has no attribute {parts[1]}"


def dotted_problem(ref: str, root: Path = ROOT) -> str | None:
    """Why a ``pacs.…`` citation does not resolve, or None."""
    name, _, call = ref.partition("(")
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        path = module_file(".".join(parts[:cut]), root)
        if path is not None:
            break
    else:
        return "no such module"
    rest = parts[cut:]
    if not rest:
        return None
    node = top_level(path).get(rest[0])
    if node is None:
        return f"{rest[0]} is not defined in {path.relative_to(root)}"
    params = parameters(node) if call and len(rest) == 1 else None
    if params is not None:
        cited = [a.split("=")[0].strip() for a in call.rstrip(")").split(",")]
        unknown = [a for a in cited if a.isidentifier() and a not in params]
        if unknown:
            return f"{rest[0]} has no parameter {', '.join(unknown)}"
    return None


def path_problem(ref: str, root: Path = ROOT) -> str | None:
    ref = ref.rstrip(".,;:)").split(":")[0]
    if any(ch in ref for ch in "<>*{}") or "…" in ref:
        return None  # a pattern, not one file
    return None if (root / ref).exists() else "no such file"


@cache
def make_targets(root: Path = ROOT) -> set[str]:
    text = (root / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"(?m)^([a-z][\w-]*):", text))


def heading_anchor(title: str) -> str:
    """GitHub's anchor of a markdown heading."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """Every heading anchor of a markdown file (fenced blocks aside)."""
    body = FENCE.sub("", path.read_text(encoding="utf-8"))
    return frozenset(heading_anchor(h) for h in re.findall(r"(?m)^#{1,6} (.+?)\s*$", body))


# ------------------------------------------------------------------------------ citations


def span_kind(span: str, code: Code) -> tuple[str, str] | None:
    """(kind, name) of a backtick span that is one name (a trailing ``: value`` or ``=value``
    aside), or None."""
    head = re.split(r"(?<=\w): |=", span, maxsplit=1)[0].strip()
    if head.startswith("--"):
        return ("flag", head.split()[0]) if re.fullmatch(r"--[a-z][\w-]*( .*)?", head) else None
    if METRIC_KEY.match(head) and not head.startswith(NOT_METRIC) and not FILE_SUFFIX.search(head):
        return "metric", head  # a logged key: actor/pacs_<stat>/mb<i>, pacs/groups/refilled
    if " " in head or head.startswith("pacs.") or FILE_SUFFIX.search(head) or "/" in head:
        return None
    if SHORT.match(head):
        first = head.lstrip("+").split(".")[0]
        return ("config" if first in code.classes["Profile"] else "short", head.split("(")[0])
    if CLASS.match(head):
        return "class", head
    if CONSTANT.match(head):
        return "constant", head
    if SNAKE.match(head) and len(head) >= 5:
        return ("metric" if head in code.metrics else "identifier"), head
    return None


def references(text: str, code: Code) -> list[tuple[str, str]]:
    """(kind, name) of every code name cited in a markdown text."""
    found = []
    for span in SPAN.findall(FENCE.sub("", text)):
        found += [("module", m) for m in DOTTED.findall(span)]
        found += [("path", p) for p in PATH.findall(span)]
        whole = span_kind(span.strip(), code)
        found += [whole] if whole else []
        found += commands(span)
    for block in FENCE.findall(text):
        for line in block.splitlines():
            found += commands(line.strip())
    found += [("anchor", target) for target in LINK.findall(text) if not target.startswith("http")]
    return found


def commands(line: str) -> list[tuple[str, str]]:
    """``make target`` and the flags of ``python -m pacs.x`` on one command line."""
    found = []
    make = MAKE.match(line)
    if make:
        found.append(("make", make.group(1)))
    command = PYTHON_M.search(line)
    if command:
        found += [("flag", f"{command.group(1)} {f}") for f in FLAG.findall(command.group(2))]
    return found


def foreign(name: str) -> bool:
    return name in FOREIGN or name.startswith(FOREIGN_PREFIXES)


def anchor_problem(target: str, doc: Path) -> str | None:
    """Why a markdown link ``file.md#anchor`` (relative to ``doc``) does not resolve, or None."""
    if re.match(r"[a-z]+://", target):
        return None
    file, _, anchor = target.partition("#")
    path = (doc.parent / file).resolve() if file else doc
    if not path.exists():
        return "no such file"
    if path.suffix != ".md" or not anchor:
        return None
    return None if anchor in anchors(path) else f"no heading #{anchor} in {path.name}"


def flag_problem(name: str, code: Code) -> str | None:
    if " " not in name:
        return None if name in FOREIGN or name in code.words else "no such flag in the code"
    module, flag = name.split(" ")
    if flag == "--help":
        return None  # argparse's own
    path = module_file(module, code.root)
    if path is None:
        return "no such module"
    package = path.name in ("__init__.py", "__main__.py")
    sources = sorted(path.parent.rglob("*.py")) if package else [path]
    word = re.compile(rf"(?<![\w-]){re.escape(flag)}(?![\w-])")
    return (
        None if any(word.search(p.read_text(encoding="utf-8")) for p in sources) else "no such flag"
    )


def problem(kind: str, name: str, code: Code, doc: Path = ROOT / "README.md") -> str | None:
    """Why one citation does not resolve against ``code``, or None."""
    if kind == "anchor":
        return anchor_problem(name, doc)
    if kind == "flag":
        return flag_problem(name, code)
    if kind in ("module", "path", "make"):
        checks = {"module": dotted_problem, "path": path_problem}
        if kind == "make":
            return None if name in make_targets(code.root) else "no such make target"
        return checks[kind](name, code.root)
    if foreign(name):
        return None
    if kind == "metric" and "/" in name:  # each plain part of a logged key is named in the code
        parts = [p for p in re.split(r"[/{},]", name) if p and "<" not in p and len(p) > 2]
        missing = [p for p in parts if p not in code.words]
        return f"{', '.join(missing)} not in the code" if missing else None
    if kind in ("class", "constant", "metric", "identifier"):
        return None if name.lstrip("_") in code.words or name in code.words else "not in the code"
    why = config_problem(code, name) if kind == "config" else None
    if kind == "short" or why:
        other = short_problem(code, name)
        why = None if other is None else (why or other)
    return why


def broken_references(docs: list[Path], root: Path = ROOT) -> tuple[list[str], dict[str, int]]:
    """``doc: kind name (why)`` for every citation that does not resolve, and how many of each
    kind were checked."""
    code = code_index(root)
    broken, counts = [], {}
    for doc in docs:
        for kind, name in references(doc.read_text(encoding="utf-8"), code):
            counts[kind] = counts.get(kind, 0) + 1
            why = problem(kind, name, code, doc)
            if why:
                where = doc.relative_to(ROOT) if doc.is_relative_to(ROOT) else doc.name
                broken.append(f"{where}: {kind} {name} ({why})")
    return broken, counts


def code_citations(root: Path = ROOT) -> list[tuple[Path, str, str]]:
    """(file, doc, anchor) of every ``docs/x.md#anchor`` citation in code, configs and tests."""
    files = [p for g in CITING_GLOBS for p in root.glob(g)] + [root / f for f in CITING_FILES]
    found = []
    for path in sorted(set(files)):
        if path.is_file() and path.name != Path(__file__).name:
            for doc, anchor in CODE_ANCHOR.findall(path.read_text(encoding="utf-8")):
                found.append((path, doc if doc.startswith("docs/") else f"docs/{doc}", anchor))
    return found


# ------------------------------------------------------------------------------ the tests


def test_every_code_name_the_docs_cite_exists():
    broken, counts = broken_references(DOCS)
    print("citations checked, by kind:", dict(sorted(counts.items())))
    assert counts.get("module", 0) > 50 and counts.get("short", 0) > 20
    assert all(counts.get(k, 0) > 5 for k in ("config", "class", "metric", "make", "anchor"))
    assert broken == [], "\n".join(broken)


def test_every_docs_anchor_cited_in_code_resolves():
    citations = code_citations()
    assert len(citations) > 100  # code, configs and tests cite the docs by anchor
    assert broken_code_citations() == []


# Files whose owners had work in progress when code moved to anchors (issue 49): they still cite
# design.md by section number. The list may only shrink: an entry that no longer does fails too.
NUMBERED_PENDING: set[str] = set()
NUMBERED = re.compile(r"design(?:\.md)?,? ?§ ?\d")


def test_code_and_docs_cite_the_design_by_anchor_not_by_section_number():
    files = [p for g in CITING_GLOBS for p in ROOT.glob(g)] + [ROOT / f for f in CITING_FILES]
    found: dict[str, list[int]] = {}
    for path in sorted({*files, *DOCS}):
        if path.is_file() and path.name != Path(__file__).name:
            lines = path.read_text(encoding="utf-8").splitlines()
            hits = [i for i, line in enumerate(lines, 1) if NUMBERED.search(line)]
            if hits:
                found[path.relative_to(ROOT).as_posix()] = hits
    assert {f: hits for f, hits in found.items() if f not in NUMBERED_PENDING} == {}
    assert sorted(NUMBERED_PENDING - set(found)) == []  # converted: remove it from the list


def test_design_md_stays_within_its_line_budget():
    assert (
        len((ROOT / "docs" / "design.md").read_text().splitlines())
        <= LINE_BUDGETS["docs/design.md"]
    )


def test_the_docs_stay_within_their_line_budgets():
    lengths = {d.relative_to(ROOT).as_posix(): len(d.read_text().splitlines()) for d in DOCS}
    over = {f: (lengths[f], limit) for f, limit in LINE_BUDGETS.items() if lengths[f] > limit}
    assert over == {}
    assert sum(lengths.values()) <= TOTAL_DOCS_BUDGET, lengths


def test_the_allow_list_holds_only_foreign_names_the_docs_cite():
    """Each entry is cited by a doc and would fail without the list; no prefix is unused."""
    code = code_index()
    cited = {name for doc in DOCS for _, name in references(doc.read_text(encoding="utf-8"), code)}
    assert sorted(FOREIGN - cited) == []  # no doc cites it any more: remove it
    assert sorted(n for n in FOREIGN if n in code.words) == []  # our code names it: not needed
    assert [p for p in FOREIGN_PREFIXES if not any(n.startswith(p) for n in cited)] == []


def test_a_bare_make_lists_every_command_with_its_time():
    """``help`` is the default target and names every phony target, each with a time or
    "unmeasured"."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"(?m)^\.DEFAULT_GOAL := help$", text)
    phony = set(re.findall(r"[\w-]+", text.split(".PHONY:", 1)[1].split("\n.DEFAULT_GOAL")[0]))
    recipe = text.split("\nhelp:\n", 1)[1].split("\n\n", 1)[0]
    listed = set(re.findall(r"(?<=[ ,])([a-z][\w-]+)(?=[ ,])", recipe))
    assert sorted(phony - listed - {"help"}) == []
    timed = re.compile(r"\d+ (?:min|h|s)\b|unmeasured|seconds|a server")
    lines = [ln for ln in recipe.splitlines() if re.match(r"\s*@echo '  [a-z]", ln)]
    assert len(lines) >= 18 and [ln for ln in lines if not timed.search(ln)] == []


def test_the_design_contents_list_every_section():
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    listed = re.findall(r"\]\(#([^)]+)\)", text.split("## Contents", 1)[1].split("\n## ", 1)[0])
    sections = [a for a in re.findall(r"(?m)^#{2,3} (.+)$", FENCE.sub("", text))]
    assert listed == [heading_anchor(h) for h in sections if h != "Contents"]


def broken_code_citations(root: Path = ROOT) -> list[str]:
    return [
        f"{path.relative_to(root)}: {doc}#{anchor}"
        for path, doc, anchor in code_citations(root)
        if not (root / doc).is_file() or anchor not in anchors(root / doc)
    ]


# ------------------------------------------------------------------------------ mutation checks

# One rename of each kind, as a refactor would make it (every whole-word use in the code copied):
# (kind, the citation in a doc, the word renamed, its new name, the file to edit or "*": all).
RENAMES = [
    ("module", "`pacs.core_algos.group_scores(x, group_size, score)`", "group_scores", "*"),
    ("short", "`core_algos.real_loss`", "real_loss", "*"),
    ("short", "`loss.LABEL_LOSSES`", "LABEL_LOSSES", "*"),
    ("short", "`PacsSpec.grad_clip`", "    grad_clip: GradClip = None", "src/pacs/methods.py"),
    ("config", "`train.max_new_tokens: 48`", "    max_new_tokens:", "src/pacs/config/sections.py"),
    ("class", "`MissingBranch`", "MissingBranch", "*"),
    ("constant", "`SFT_THREADS`", "SFT_THREADS", "*"),
    ("metric", "`psi_abs_mean`", "psi_abs_mean", "*"),
    ("metric", "`pacs/groups/refilled`", "refilled", "*"),
    ("identifier", "`reset_due`", "reset_due", "*"),
    ("make", "`make test-fast`", "test-fast", "*"),
    ("flag", "`python -m pacs.model_eval --from-env`", "--from-env", "*"),
    ("flag", "`--engine-retries`", "--engine-retries", "*"),
    ("path", "`src/pacs/tiny/sft.py`", "src/pacs/tiny/sft.py", "file"),
]
COPIED = (
    "src",
    "tests",
    "benchmarks",
    "workflow",
    "configs",
    "tools",
    "Snakefile",
    "Makefile",
    "pyproject.toml",
)


def renamed(word: str) -> str:
    return word.replace(word.strip().split(":")[0].strip(), word.strip().split(":")[0] + "_gone")


def mutated_copy(tmp: Path) -> Path:
    """A copy of the code with every rename of ``RENAMES`` made."""
    root = tmp / "code"
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, root / name)
    files = [p for p in root.rglob("*") if p.is_file()]
    for _, _, word, where in RENAMES:
        if where == "file":
            (root / word).unlink()
            continue
        targets = files if where == "*" else [root / where]
        pattern = re.compile(
            rf"(?<![\w-]){re.escape(word)}(?![\w-])" if where == "*" else re.escape(word)
        )
        for path in targets:
            if path.is_file():
                text = path.read_text(encoding="utf-8", errors="replace")
                path.write_text(pattern.sub(renamed(word), text), encoding="utf-8")
    return root


def test_a_rename_of_each_kind_breaks_its_citation(tmp_path):
    """Each citation resolves against the code; in a copy with its name renamed it fails, and
    a citation of a name left alone still resolves there."""
    doc, kept = tmp_path / "d.md", tmp_path / "kept.md"
    doc.write_text("\n".join(citation for _, citation, _, _ in RENAMES) + "\n")
    kept.write_text("`pacs.core_algos.pacs_loss`, `train.lr`, `make reproduce`, `psi_std`\n")
    cited = [references(c, code_index())[-1] for _, c, _, _ in RENAMES]  # (kind, name)
    assert [kind for kind, _ in cited] == [kind for kind, *_ in RENAMES]
    assert broken_references([doc, kept])[0] == []
    broken, _ = broken_references([doc, kept], mutated_copy(tmp_path))
    assert [b.split(": ", 1)[1].split(" (")[0].split(" ", 1)[1] for b in broken] == [
        name for _, name in cited
    ]
    assert {kind for kind, *_ in RENAMES} >= {
        "module", "short", "config", "class", "constant", "metric", "identifier", "make", "flag",
        "path",
    }  # fmt: skip


def test_a_renamed_heading_breaks_its_links_and_code_citations(tmp_path):
    (tmp_path / "docs").mkdir()
    design = tmp_path / "docs" / "design.md"
    design.write_text("# D\n\n## Gradient clipping\n\ntext\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text('"""Why: docs/design.md#gradient-clipping."""\n')
    doc = tmp_path / "docs" / "r.md"
    doc.write_text("[clip](design.md#gradient-clipping)\n")
    assert broken_code_citations(tmp_path) == []
    assert broken_references([doc], ROOT)[0] == []
    design.write_text("# D\n\n## Clipping\n\ntext\n")
    anchors.cache_clear()
    assert broken_code_citations(tmp_path) == ["src/m.py: docs/design.md#gradient-clipping"]
    assert broken_references([doc], ROOT)[0] == [
        "r.md: anchor design.md#gradient-clipping (no heading #gradient-clipping in design.md)"
    ]


def test_a_stale_citation_is_named(tmp_path):
    doc = tmp_path / "d.md"
    doc.write_text(
        "`pacs.core_algos.group_scores(x, group_size, method)`, `pacs.core_algos.nothing`, "
        "`pacs.nowhere`, `src/pacs/gone.py`, `make nothing`, `python -m pacs.report --nope`, "
        "`core_algos.nothing`, `train.nothing: 3`, `NoSuchClass`, `no_such_metric`, "
        "`pacs.core_algos.group_scores(x, group_size, score)`, `make test`, `src/pacs/io.py:12`, "
        "`core_algos.pacs_loss`, `models.<m>.sft.steps`, `method_defaults.pacs.beta`, "
        "[a](nowhere.md), [b](#nowhere)"
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
        "short core_algos.nothing (nothing is not defined in pacs/core_algos)",
        "config train.nothing (no key nothing under train)",
        "class NoSuchClass (not in the code)",
        "identifier no_such_metric (not in the code)",
        "anchor nowhere.md (no such file)",
        "anchor #nowhere (no heading #nowhere in d.md)",
    ]
