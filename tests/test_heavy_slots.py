"""The suite's own throttle (tests/conftest.py): at most HEAVY_SLOTS heavy process trees at once,
across threads here as across xdist workers and both suites (file locks)."""

from __future__ import annotations

import threading
import time

from .conftest import _heavy_slot


def test_no_more_holders_than_slots_and_every_one_runs(tmp_path):
    running, peak, done = [0], [0], []
    guard = threading.Lock()

    def work(i: int) -> None:
        with _heavy_slot(tmp_path, slots=2):
            with guard:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            time.sleep(0.3)
            with guard:
                running[0] -= 1
        done.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(done) == [0, 1, 2, 3, 4]
    assert peak[0] == 2


def test_a_slot_is_released_when_the_block_fails(tmp_path):
    try:
        with _heavy_slot(tmp_path, slots=1):
            raise RuntimeError("the launch failed")
    except RuntimeError:
        pass
    with _heavy_slot(tmp_path, slots=1):  # would wait forever if the failed holder kept it
        pass
