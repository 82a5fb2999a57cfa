"""A cancelled or preempted SLURM job fails its rule (pacs.slurm_profile.read_ended_states), here
on the locked executor plugin's own status loop, ``Executor.check_active_jobs``, fed the states
sacct gives on a cluster with accounting. Fast: no cluster (tests/slurm/test_accounting.py
cancels a real job)."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

import pytest

from pacs.slurm_profile import ended_state, read_ended_states

plugin = pytest.importorskip("snakemake_executor_plugin_slurm")


@pytest.mark.parametrize(
    ("sacct", "requeue", "seen"),
    [
        ("CANCELLED by 0", False, "CANCELLED"),
        ("CANCELLED by 1000", False, "CANCELLED"),
        ("CANCELLED+", False, "CANCELLED"),  # sacct's mark of a truncated column
        ("PREEMPTED", False, "CANCELLED"),
        ("PREEMPTED", True, "PREEMPTED"),  # requeue: SLURM resumes it, the executor waits
        ("NODE_FAIL", False, "NODE_FAIL"),
        ("COMPLETED", False, "COMPLETED"),
        ("RUNNING", False, "RUNNING"),
    ],
)
def test_each_sacct_state_becomes_one_the_executor_knows(sacct, requeue, seen):
    assert ended_state(sacct, requeue) == seen


class _Limiter:
    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        return False


def _executor(requeue: bool = False) -> SimpleNamespace:
    """What ``Executor.check_active_jobs`` reads of its executor, with the reports recorded."""
    settings = SimpleNamespace(
        init_seconds_before_status_checks=1,
        status_attempts=1,
        requeue=requeue,
        keep_successful_logs=True,
    )
    reports: list[tuple[str, str]] = []
    return SimpleNamespace(
        workflow=SimpleNamespace(executor_settings=settings),
        logger=logging.getLogger("test_ended_states"),
        status_rate_limiter=_Limiter(),
        run_uuid="run",
        get_status_command=lambda: "squeue",
        next_seconds_between_status_checks=1,
        _preemption_warning=False,
        _status_query_calls=0,
        _status_query_failures=0,
        _status_query_total_seconds=0.0,
        _status_query_min_seconds=None,
        _status_query_max_seconds=0.0,
        _status_query_cycle_rows=[],
        report_job_success=lambda job: reports.append((job.external_jobid, "success")),
        report_job_error=lambda job, msg, aux_logs: reports.append((job.external_jobid, msg)),
        reports=reports,
    )


def _check(executor, states: dict[str, str]) -> list[str]:
    """One pass of the plugin's status loop over jobs in ``states``: the ids still running."""
    jobs = [SimpleNamespace(external_jobid=j, aux={}) for j in states]

    async def run() -> list[str]:
        gen = plugin.Executor.check_active_jobs(executor, jobs)
        return [job.external_jobid async for job in gen]

    return asyncio.run(run())


@pytest.fixture
def sacct_says(monkeypatch):
    """Make the plugin's status query return the given states (as sacct would on a cluster with
    accounting), with no SLURM command run; the patched plugin is restored afterwards."""

    def install(states: dict[str, str]) -> None:
        async def query(command, logger):
            return dict(states), 0.01

        monkeypatch.setattr(plugin, "query_job_status", query)
        monkeypatch.setattr(plugin, "is_query_tool_available", lambda tool: False)
        monkeypatch.setattr(plugin, "get_min_job_age", lambda: 600)

    return install


STATES = {"7": "CANCELLED by 0", "8": "PREEMPTED", "9": "RUNNING", "10": "COMPLETED"}


def test_without_the_fix_the_executor_waits_on_a_cancelled_job_forever(sacct_says):
    """The bug, on the plugin as locked: the cancelled and the preempted job stay "running"."""
    sacct_says(STATES)
    executor = _executor()
    assert _check(executor, STATES) == ["7", "8", "9"]
    assert executor.reports == [("10", "success")]


def test_a_cancelled_or_preempted_job_fails_its_rule(sacct_says, caplog):
    sacct_says(STATES)
    assert read_ended_states(SimpleNamespace(requeue=False), plugin)
    executor = _executor()
    with caplog.at_level(logging.WARNING, logger="test_ended_states"):
        assert _check(executor, STATES) == ["9"]
        _check(executor, STATES)  # the next pass logs nothing new
    failed = {job: msg for job, msg in executor.reports if msg != "success"}
    assert set(failed) == {"7", "8"} and "SLURM status is: 'CANCELLED'" in failed["7"]
    told = [r.getMessage() for r in caplog.records if "ended as" in r.getMessage()]
    assert told == [
        "SLURM job 7 ended as 'CANCELLED by 0': counted as CANCELLED",
        "SLURM job 8 ended as 'PREEMPTED': counted as CANCELLED",
    ]


def test_with_requeue_a_preempted_job_is_left_to_slurm(sacct_says):
    sacct_says(STATES)
    read_ended_states(SimpleNamespace(requeue=True), plugin)
    assert _check(_executor(requeue=True), STATES) == ["8", "9"]


def test_installed_once_and_refused_on_a_plugin_without_the_query(sacct_says):
    sacct_says(STATES)
    read_ended_states(SimpleNamespace(requeue=False), plugin)
    wrapped = plugin.query_job_status
    read_ended_states(SimpleNamespace(requeue=False), plugin)
    assert plugin.query_job_status is wrapped
    with pytest.raises(RuntimeError, match="written for 2.8.0"):
        read_ended_states(SimpleNamespace(), SimpleNamespace())


def test_the_status_loop_calls_the_query_we_wrap():
    """check_active_jobs must look the query up in the plugin's module (a later release that
    imports it elsewhere would make the wrapper miss silently)."""
    import inspect

    source = inspect.getsource(plugin.Executor.check_active_jobs)
    assert "await query_job_status(" in source
