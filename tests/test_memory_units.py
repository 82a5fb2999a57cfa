"""The suite's own memory budget (tests/conftest.py): heavy work takes units of MEMORY_UNITS, all
or none, across threads here as across xdist workers and both suites (file locks)."""

from __future__ import annotations

import threading
import time

from .conftest import _memory_units


def test_the_units_held_never_exceed_the_budget_and_every_holder_runs(tmp_path):
    held, peak, done = [0], [0], []
    guard = threading.Lock()
    sizes = [3, 1, 2, 3, 1, 2]  # units asked by each worker, out of 4

    def work(i: int) -> None:
        with _memory_units(tmp_path, sizes[i], total=4):
            with guard:
                held[0] += sizes[i]
                peak[0] = max(peak[0], held[0])
            time.sleep(0.3)
            with guard:
                held[0] -= sizes[i]
        done.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(sizes))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(done) == list(range(len(sizes)))
    assert 3 <= peak[0] <= 4  # two holders at once at least, never over the budget


def test_a_slot_is_released_when_the_block_fails(tmp_path):
    try:
        with _memory_units(tmp_path, 2, total=2):
            raise RuntimeError("the launch failed")
    except RuntimeError:
        pass
    with _memory_units(tmp_path, 2, total=2):  # would wait for ever if the failed holder kept it
        pass
