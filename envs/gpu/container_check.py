"""What the image must do before it runs a rule, run by envs/gpu/pacs.def's %test (and, its
compiler and Triton parts, by tests/test_container.py in the engine env on any machine):

    python envs/gpu/container_check.py [--only cc,triton,imports,commit]

- ``cc``: the C compiler builds and runs a tiny C program;
- ``triton``: Triton's own CPU-side build path (``triton.runtime.build.compile_module_from_src``,
  which JIT-builds the CUDA launcher of every kernel with that compiler and Python's headers)
  compiles a small extension module, which is imported and called;
- ``imports``: the GPU env's packages import (torch, vLLM, verl, flash-attn, this package);
- ``commit``: the package records the commit the image was built from (``PACS_CODE_COMMIT``),
  not "no commit known".

Prints one line per part; exits 1 when one fails. None of this needs a GPU.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

C_PROGRAM = '#include <stdio.h>\nint main(void) { printf("%d\\n", 6 * 7); return 0; }\n'
# A CPython extension as Triton builds its launchers: one function, through Python's C API.
TRITON_MODULE = """
#include <Python.h>
static PyObject *answer(PyObject *self, PyObject *args) { return PyLong_FromLong(6 * 7); }
static PyMethodDef methods[] = {{"answer", answer, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "pacs_triton_probe", NULL, -1, methods};
PyMODINIT_FUNC PyInit_pacs_triton_probe(void) { return PyModule_Create(&module); }
"""


def check_cc() -> str:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise RuntimeError("no C compiler (cc, gcc) on the PATH: Triton cannot build launchers")
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp) / "probe.c", Path(tmp) / "probe"
        src.write_text(C_PROGRAM)
        subprocess.run([cc, str(src), "-o", str(exe)], check=True, capture_output=True)
        out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    if out.strip() != "42":
        raise RuntimeError(f"the compiled probe printed {out!r}, not 42")
    return f"{cc} compiled and ran a C program"


def check_triton() -> str:
    import triton
    from triton.runtime.build import compile_module_from_src

    with tempfile.TemporaryDirectory() as cache:
        os.environ["TRITON_CACHE_DIR"] = cache  # a fresh build, not a cached module
        module = compile_module_from_src(TRITON_MODULE, "pacs_triton_probe")
        value = module.answer()
    if value != 42:
        raise RuntimeError(f"the module Triton built returned {value!r}, not 42")
    return f"triton {triton.__version__} built and loaded an extension module"


def check_imports() -> str:
    import flash_attn
    import torch
    import verl
    import vllm

    import pacs  # noqa: F401

    return (
        f"torch {torch.__version__} (CUDA {torch.version.cuda}), vllm {vllm.__version__}, "
        f"verl {verl.__version__}, flash-attn {flash_attn.__version__}, pacs"
    )


def check_commit() -> str:
    from pacs.fingerprint import code_commit

    commit = code_commit()
    if not commit:
        raise RuntimeError("the package records no commit: PACS_CODE_COMMIT is not set")
    return f"pacs records commit {commit}"


CHECKS = {"cc": check_cc, "triton": check_triton, "imports": check_imports, "commit": check_commit}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", default=",".join(CHECKS), help=f"comma-separated of {list(CHECKS)}")
    names = p.parse_args(argv).only.split(",")
    failed = 0
    for name in names:
        try:
            print(f"PASS  {name}: {CHECKS[name]()}")
        except Exception as exc:  # noqa: BLE001 - every failure is reported, then the exit code
            failed += 1
            print(f"FAIL  {name}: {exc!r}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
