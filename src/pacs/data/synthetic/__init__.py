"""The synthetic tasks of the tiny engine, and the one place that picks a task by name.

- :mod:`pacs.data.synthetic.arithmetic`: add/subtract word problems (the tiny profile,
  docs/design.md#the-tiny-profile);
- :mod:`pacs.data.synthetic.paths`: add k quantities in any order, k! solution paths
  (docs/design.md#the-science-profile);
- :mod:`pacs.data.synthetic.hard_split`: the stage writing that task's hard held-out split;
- :mod:`pacs.data.synthetic.splits`: how every task's splits are filled and written;
- :mod:`pacs.data.synthetic.words`: the names and objects both tasks draw from.

A task module gives ``make_problem``, ``make_splits(seed, n_sft, n_train, n_test, **knobs)``,
its ``DEFAULT_KNOBS`` and the ``MANIFEST_PARAMS`` its manifests record.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

from pacs.data.synthetic import arithmetic, paths
from pacs.data.synthetic.splits import write_splits

TASKS: dict[str, ModuleType] = {"arithmetic": arithmetic, "paths": paths}


def task_module(task: str) -> ModuleType:
    """The module of the task named ``task`` (``data.synthetic.task``)."""
    if task not in TASKS:
        raise ValueError(f"unknown synthetic task {task!r}; expected one of {tuple(TASKS)}")
    return TASKS[task]


def write_task_splits(
    out_dir: str | Path,
    task: str = "arithmetic",
    *,
    seed: int,
    n_sft: int,
    n_train: int,
    n_test: int,
    **knobs: Any,
) -> dict[str, Path]:
    """Write ``{sft,train,test}.jsonl`` plus a manifest each for ``task``; return the paths.

    ``knobs``: the task's own (``DEFAULT_KNOBS`` fills the rest). The fields of
    ``data.synthetic`` may be passed whole: a knob of the other task is None there and is dropped.
    """
    module = task_module(task)
    knobs = {k: v for k, v in knobs.items() if v is not None}
    splits = module.make_splits(seed, n_sft, n_train, n_test, **knobs)
    params = {**module.MANIFEST_PARAMS, "seed": seed, **module.DEFAULT_KNOBS, **knobs}
    return write_splits(out_dir, splits, params)
