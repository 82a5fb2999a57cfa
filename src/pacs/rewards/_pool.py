"""Worker processes with a hard per-item deadline.

``concurrent.futures.ProcessPoolExecutor`` cannot kill one stuck task, so this module runs its own
workers: each item gets ``item_timeout`` seconds of wall time; a worker that overruns is killed
(SIGKILL), its item is reported as a timeout, and a fresh worker replaces it. Work that C code
holds (a huge sympy power, say) cannot escape this, unlike signal-based timeouts.

Workers come from the ``forkserver`` start method: they fork from a clean server process that has
already imported the job's module, so they start in milliseconds and never inherit the caller's
threads (torch, tokenizers, Ray), which makes plain ``fork`` unsafe.

A job function must be a module-level function (picklable by reference). Each item's outcome is
``(kind, value)``: ``("ok", return value)``, ``("timeout", None)``, ``("error", message)`` when
the function raised, or ``("crash", message)`` when the worker died.
"""

from __future__ import annotations

import multiprocessing
import queue
import resource
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from multiprocessing.connection import wait
from typing import Any

from pacs.rewards._limits import MAX_SECONDS, check_seconds

Outcome = tuple[str, Any]

_READY = "ready"
# Seconds a new worker may take to report ready (the first one also starts the fork server).
START_TIMEOUT_S = 120.0
# A worker that dies this many times in a row before becoming ready means the pool is broken.
MAX_START_FAILURES = 3
# An item's limit is the grader's own (at most MAX_SECONDS) plus a kill grace.
ITEM_TIMEOUT_MAX_S = MAX_SECONDS + 60.0


def _context(preload: Sequence[str]) -> multiprocessing.context.BaseContext:
    ctx = multiprocessing.get_context("forkserver")
    # Only effective before the fork server starts (the first pool of the process).
    ctx.set_forkserver_preload(list(preload))
    return ctx


def _worker_main(conn, job_fn: Callable[[Any], Any], memory_mb: int | None) -> None:
    # The parent handles Ctrl-C and kills us; a worker traceback per KeyboardInterrupt is noise.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if memory_mb:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    conn.send(_READY)
    while True:
        try:
            batch = conn.recv()
        except (EOFError, OSError):
            return
        if batch is None:
            return
        for key, job in batch:
            try:
                outcome: Outcome = ("ok", job_fn(job))
            except BaseException as exc:  # noqa: BLE001 - report any failure, keep serving
                outcome = ("error", type(exc).__name__)
            conn.send((key, outcome))


class _Worker:
    """One worker process and the parent's end of its pipe."""

    def __init__(self, ctx, job_fn: Callable, memory_mb: int | None) -> None:
        self.conn, child = ctx.Pipe(duplex=True)
        self.process = ctx.Process(
            target=_worker_main, args=(child, job_fn, memory_mb), daemon=True
        )
        self.process.start()
        child.close()
        self.started = time.monotonic()
        self.ready = False
        self.inflight: deque = deque()  # (key, job) sent and not yet answered, in order
        self.item_started = 0.0

    def take_ready(self) -> None:
        message = self.conn.recv()
        if message != _READY:
            raise RuntimeError(f"grader worker sent {message!r} instead of {_READY!r}")
        self.ready = True

    def send(self, batch: list) -> None:
        self.conn.send(batch)
        self.inflight.extend(batch)
        self.item_started = time.monotonic()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()

    def stop(self) -> None:
        """Ask an idle worker to exit; kill it if it does not."""
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.process.join(timeout=1)
        self.kill()


def _reap(worker: _Worker) -> int | None:
    """Exit code of a worker whose pipe closed (it may need a moment to be reaped)."""
    worker.process.join(timeout=5)
    return worker.process.exitcode


def _wait_ready(worker: _Worker, timeout: float) -> None:
    if not worker.conn.poll(timeout):
        worker.kill()
        raise RuntimeError(f"grader worker did not start within {timeout:.0f} s")
    try:
        worker.take_ready()
    except (EOFError, OSError) as exc:
        worker.kill()
        raise RuntimeError(
            f"grader worker died while starting (exit code {worker.process.exitcode})"
        ) from exc


class DeadlinePool:
    """``map`` a module-level function over items with ``workers`` processes, per-item deadline.

    Single-threaded driver: use one pool from one thread (``SharedRunner`` serves many threads).
    """

    def __init__(
        self,
        job_fn: Callable,
        workers: int,
        item_timeout: float,
        preload: Sequence[str] = (),
        memory_mb: int | None = None,
        max_chunk: int = 32,
    ) -> None:
        if workers < 1:
            raise ValueError(f"DeadlinePool needs workers >= 1, got {workers}")
        item_timeout = check_seconds("item_timeout", item_timeout, ITEM_TIMEOUT_MAX_S)
        self._ctx = _context(preload)
        self._job_fn = job_fn
        self._memory_mb = memory_mb
        self._item_timeout = item_timeout
        self._max_chunk = max_chunk
        self._start_failures = 0
        self._workers = [self._spawn() for _ in range(workers)]

    def _spawn(self) -> _Worker:
        return _Worker(self._ctx, self._job_fn, self._memory_mb)

    def close(self) -> None:
        for worker in self._workers:
            if worker.ready and not worker.inflight:
                worker.stop()
            else:
                worker.kill()
        self._workers = []

    def map(self, jobs: Sequence[Any]) -> list[Outcome]:
        """Outcomes in the order of ``jobs``."""
        results: list[Outcome | None] = [None] * len(jobs)
        pending = deque(enumerate(jobs))
        while pending or any(w.inflight for w in self._workers):
            self._dispatch(pending)
            self._collect(results, pending)
            self._expire(results, pending)
        return results  # type: ignore[return-value]

    def _chunk_size(self, n_pending: int) -> int:
        # Small chunks near the end keep both workers busy; large ones amortise the pipe round trip.
        return max(1, min(self._max_chunk, n_pending // (2 * len(self._workers))))

    def _dispatch(self, pending: deque) -> None:
        for worker in list(self._workers):
            if worker.ready and not worker.inflight and pending:
                size = self._chunk_size(len(pending))
                batch = [pending.popleft() for _ in range(min(size, len(pending)))]
                try:
                    worker.send(batch)
                except OSError:  # the idle worker died (OOM killer, say): its batch never ran
                    pending.extendleft(reversed(batch))
                    self._respawn(worker)

    def _next_wakeup(self) -> float:
        now = time.monotonic()
        times = [w.item_started + self._item_timeout for w in self._workers if w.inflight]
        times += [w.started + START_TIMEOUT_S for w in self._workers if not w.ready]
        return max(0.0, min(times) - now) if times else 0.0

    def _collect(self, results: list, pending: deque) -> None:
        conns = {w.conn: w for w in self._workers if w.inflight or not w.ready}
        for conn in wait(list(conns), timeout=self._next_wakeup()):
            worker = conns[conn]
            try:
                if not worker.ready:
                    worker.take_ready()
                    self._start_failures = 0
                    continue
                while worker.inflight and worker.conn.poll():
                    key, outcome = worker.conn.recv()
                    expected_key, _ = worker.inflight.popleft()
                    if key != expected_key:
                        raise RuntimeError(
                            f"grader worker answered item {key}, expected {expected_key}"
                        )
                    results[key] = outcome
                    worker.item_started = time.monotonic()
            except (EOFError, OSError):
                self._replace(
                    worker, results, pending, "crash", f"worker died (exit code {_reap(worker)})"
                )

    def _expire(self, results: list, pending: deque) -> None:
        now = time.monotonic()
        for worker in list(self._workers):
            if worker.inflight and now - worker.item_started > self._item_timeout:
                if worker.conn.poll():  # an answer arrived while we were busy: not a timeout
                    continue
                self._replace(worker, results, pending, "timeout", None)
            elif not worker.ready and now - worker.started > START_TIMEOUT_S:
                self._replace(worker, results, pending, "crash", "worker did not start")

    def _replace(self, worker: _Worker, results: list, pending: deque, kind: str, value) -> None:
        """Kill ``worker``: its current item gets ``(kind, value)``, the rest are queued again."""
        if worker.inflight:
            key, _ = worker.inflight.popleft()
            results[key] = (kind, value)
            pending.extendleft(reversed(worker.inflight))
            worker.inflight.clear()
        elif not worker.ready:
            self._start_failures += 1
            if self._start_failures >= MAX_START_FAILURES:
                raise RuntimeError(
                    f"grader workers failed to start {MAX_START_FAILURES} times in a row (last "
                    f"exit code {worker.process.exitcode}); a script that starts worker processes "
                    f"needs the `if __name__ == '__main__':` guard (multiprocessing re-imports it)"
                )
        self._respawn(worker)

    def _respawn(self, worker: _Worker) -> None:
        worker.kill()
        self._workers[self._workers.index(worker)] = self._spawn()


class SharedRunner:
    """Runs single items from any number of threads on a few long-lived workers.

    Each call checks out an idle worker, so up to ``workers`` items run at once; the others wait.
    """

    def __init__(
        self,
        job_fn: Callable,
        workers: int,
        item_timeout: float,
        preload: Sequence[str] = (),
        memory_mb: int | None = None,
    ) -> None:
        self._ctx = _context(preload)
        self._job_fn = job_fn
        self._memory_mb = memory_mb
        self.item_timeout = check_seconds("item_timeout", item_timeout, ITEM_TIMEOUT_MAX_S)
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._all: list[_Worker] = []
        self._lock = threading.Lock()
        for _ in range(workers):
            worker = _Worker(self._ctx, job_fn, memory_mb)
            self._all.append(worker)
        for worker in self._all:
            _wait_ready(worker, START_TIMEOUT_S)
            self._idle.put(worker)

    def run(self, job: Any, item_timeout: float | None = None) -> Outcome:
        timeout = self.item_timeout if item_timeout is None else item_timeout
        timeout = check_seconds("item_timeout", timeout, ITEM_TIMEOUT_MAX_S)
        worker = self._idle.get()
        try:
            try:
                worker.conn.send([(0, job)])
            except OSError:  # the idle worker died (OOM killer, say): the item never ran
                worker = self._fresh(worker)
                worker.conn.send([(0, job)])
            if worker.conn.poll(timeout):
                _, outcome = worker.conn.recv()
                return outcome
            worker = self._fresh(worker)
            return ("timeout", None)
        except (EOFError, OSError):
            code = _reap(worker)
            worker = self._fresh(worker)
            return ("crash", f"worker died (exit code {code})")
        finally:
            self._idle.put(worker)

    def _fresh(self, dead: _Worker) -> _Worker:
        dead.kill()
        worker = _Worker(self._ctx, self._job_fn, self._memory_mb)
        _wait_ready(worker, START_TIMEOUT_S)
        with self._lock:
            self._all[self._all.index(dead)] = worker
        return worker

    def close(self) -> None:
        with self._lock:
            for worker in self._all:
                worker.kill()
            self._all = []
