"""Tests mirror ``src/``: every unit of ``src/pacs`` has its place under ``tests/``.

The rule: a subpackage ``pacs/<pkg>/`` has a folder ``tests/<pkg>/``; a top-level module
``pacs/<m>.py`` has ``tests/test_<m>.py`` or a folder ``tests/<m>/``. A few units are tested in a
place named otherwise, listed in :data:`TESTED_IN` with the reason. The place must hold a test file
that names the unit (``pacs.<unit>`` or ``from pacs import <unit>``), so an empty folder or a stale
entry does not count.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# unit -> its tests, relative to tests/ (a file or a folder), where they are not named after it.
TESTED_IN = {
    "core_algos": "core",  # the pure math, checked against hand-computed cases and verl's own code
    "methods": "config/test_methods.py",  # the method specs are read as part of the config
    "loss_modes": "config/test_methods.py",  # the modes both methods and core_algos take
    "fetch": "pipeline/test_fetch.py",  # fetching runs as a stage of the workflow
    "model_eval": "evaluation",  # `make eval` drives the evaluation stages; tested beside them
    "explore": "notebooks",  # the notebook's helpers, tested with the notebook
    "slurm_profile": "slurm",  # needs the (local) SLURM cluster the slurm tests start
}


def units(src: Path) -> list[str]:
    """The top-level modules and subpackages of the package ``src`` (``__init__`` aside)."""
    modules = [p.stem for p in src.glob("*.py") if p.stem not in ("__init__", "__main__")]
    packages = [p.name for p in src.iterdir() if (p / "__init__.py").is_file()]
    return sorted(modules + packages)


def expected_place(tests: Path, unit: str, is_package: bool, tested_in: dict[str, str]) -> Path:
    """Where the tests of ``unit`` belong."""
    if unit in tested_in:
        return tests / tested_in[unit]
    return tests / unit if is_package else tests / f"test_{unit}.py"


def names_unit(path: Path, unit: str) -> bool:
    """Whether ``path`` (a test file, or any test file under a folder) refers to ``pacs.<unit>``."""
    pattern = re.compile(rf"\bpacs\.{unit}\b|\bfrom pacs import [\w\s,()]*\b{unit}\b")
    files = [path] if path.is_file() else sorted(path.rglob("*.py")) if path.is_dir() else []
    return any(pattern.search(f.read_text(encoding="utf-8")) for f in files)


def untested_units(src: Path, tests: Path, tested_in: dict[str, str]) -> list[str]:
    """``unit -> expected place`` for every unit without tests where the rule says, plus every
    :data:`TESTED_IN` entry whose unit no longer exists."""
    found = units(src)
    missing = []
    for unit in found:
        place = expected_place(tests, unit, (src / unit).is_dir(), tested_in)
        # A module may have a folder of tests instead of one file.
        in_folder = unit not in tested_in and names_unit(tests / unit, unit)
        if not (names_unit(place, unit) or in_folder):
            missing.append(f"{unit} -> tests/{place.relative_to(tests)}")
    stale = [unit for unit in tested_in if unit not in found]
    missing += [f"{unit}: listed in TESTED_IN, not in src" for unit in stale]
    return missing


def test_every_module_and_package_of_src_has_its_tests():
    assert untested_units(ROOT / "src" / "pacs", ROOT / "tests", TESTED_IN) == []


def test_the_rule_finds_what_lacks_tests(tmp_path):
    src, tests = tmp_path / "src", tmp_path / "tests"
    for folder in (src / "pkg", src / "bare", tests / "pkg", tests / "bare", tests / "elsewhere"):
        folder.mkdir(parents=True)
    for name in (
        "pkg/__init__.py",
        "bare/__init__.py",
        "__init__.py",
        "io.py",
        "cli.py",
        "math.py",
        "orphan.py",
    ):
        (src / name).write_text("")
    (tests / "pkg" / "test_a.py").write_text("from pacs.pkg.a import f\n")
    (tests / "bare" / "conftest.py").write_text("import os\n")  # a folder that never names it
    (tests / "test_io.py").write_text("from pacs import core, io\n")
    (tests / "cli").mkdir()
    (tests / "cli" / "test_main.py").write_text("import pacs.cli\n")  # a folder for a module
    (tests / "elsewhere" / "test_m.py").write_text("from pacs import (\n    math,\n)\n")
    tested_in = {"math": "elsewhere", "gone": "elsewhere"}
    assert units(src) == ["bare", "cli", "io", "math", "orphan", "pkg"]
    assert untested_units(src, tests, tested_in) == [
        "bare -> tests/bare",
        "orphan -> tests/test_orphan.py",
        "gone: listed in TESTED_IN, not in src",
    ]
