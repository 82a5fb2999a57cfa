"""The suite's own memory budget (tests/conftest.py): heavy work takes units of MEMORY_UNITS, all
or none, across threads here as across xdist workers and both suites (file locks)."""

from __future__ import annotations

import threading
import time

from .conftest import _heavy, _memory_units


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


def test_one_ray_cluster_at_a_time_while_other_work_runs_beside_it(tmp_path):
    spans: dict[str, tuple[float, float]] = {}

    def work(name: str, kind: str) -> None:
        with _heavy(tmp_path, kind):
            start = time.monotonic()
            time.sleep(0.4)
            spans[name] = (start, time.monotonic())

    jobs = [("verl-a", "verl"), ("verl-b", "verl_two_nodes"), ("dag", "dag")]
    threads = [threading.Thread(target=work, args=job) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    (a0, a1), (b0, b1) = spans["verl-a"], spans["verl-b"]
    assert a1 <= b0 or b1 <= a0  # the two Ray clusters never overlap
    d0, d1 = spans["dag"]
    assert d0 < max(a1, b1) and d1 > min(a0, b0)  # the DAG ran beside one of them
