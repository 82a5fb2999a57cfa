"""Fixtures shared by every test folder."""

from __future__ import annotations

import os
import random
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

import pytest
import yaml
from filelock import FileLock, Timeout

from pacs.io import atomic_open

from .cpu_groups import FileGroups

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
# Stages run by the tests (and their Snakemake subprocesses) keep their progress lines off the
# terminal of whoever runs pytest (pacs.progress.ConsoleBar).
os.environ.setdefault("PACS_CONSOLE_PROGRESS", "0")
# Ray's node registration may wait this long (PACS_RAY_START_WAIT_S; 300 s by default): on 2
# loaded cores a local node once took longer than 300 s. A safety net for the suite, not a goal.
os.environ.setdefault("PACS_RAY_START_WAIT_S", "900")
# OpenMP threads that wait for work sleep instead of spinning. The suite runs many torch processes
# on 2 cores at once, and a spinning thread burns the CPU another process needs: the verl smoke's
# base build (2-thread SFT) beside two busy loops took 99 CPU-s spinning, 55 passive, with the same
# weights (docs/testing.md). Set before torch is imported; inherited by every subprocess (Snakemake
# jobs, launches and their Ray workers, SLURM jobs, vLLM).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


# The slowest test files first (measured: docs/testing.md). make test runs pytest-xdist with
# `--dist loadfile --no-loadscope-reorder`: a file is one unit on one worker (its module-scoped
# fixtures, e.g. a DAG run, are built once), taken in this order, so the long ones start at once
# and the short ones fill the gaps beside them. (xdist's loadgroup cannot be used: with pytest 9.2
# its xdist_group marks are silently ignored.) What several files share is built once per run
# across workers by built_once below.
LONGEST_FIRST = (
    "tests/slurm/test_verl_dag.py",
    "tests/slurm/test_smoke_dag.py",
    "tests/pipeline/test_science.py",
    "tests/verl_plugin/test_baselines_smoke.py",
    "tests/pipeline/test_smoke.py",
    "tests/slurm/test_accounting.py",
    "tests/slurm/test_pending_reason.py",
    "tests/evaluation/test_evaluate.py",
    "tests/tiny/test_baselines.py",
    "tests/notebooks/test_explore_notebook.py",
)


def _rank(item: pytest.Item) -> int:
    path = Path(str(item.fspath)).relative_to(REPO_ROOT).as_posix()
    starts = [i for i, prefix in enumerate(LONGEST_FIRST) if path.startswith(prefix)]
    return starts[0] if starts else len(LONGEST_FIRST)


def pytest_collection_modifyitems(config, items):
    """Test files ordered longest first (stable otherwise): xdist hands them out in this order."""
    items.sort(key=_rank)


# CPU seconds per test file, printed after the slowest tests: the suite is CPU-bound on 2 cores
# (docs/testing.md), so this, more than wall time, says what a file costs. Counted: the test's
# process and every child it waited for (subprocesses, Snakemake's jobs, vLLM's engine core);
# not SLURM's jobs (slurmd starts them) nor Ray processes that no test process reaped.
CPU_PROPERTY = "cpu_s"
CPU_BY_FILE: dict[str, float] = {}  # filled in the process that reports (xdist's controller)


def _cpu_s() -> float:
    own, kids = (
        resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _timed_phase(item: pytest.Item):
    start = _cpu_s()
    try:
        return (yield)
    finally:  # xdist sends user_properties to the controller with the phase's report
        item.user_properties.append((CPU_PROPERTY, _cpu_s() - start))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    _enter_file_group(item)
    return (yield from _timed_phase(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    return (yield from _timed_phase(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    return (yield from _timed_phase(item))


def pytest_runtest_logreport(report):
    """The teardown report carries all three phases' CPU (item.user_properties accumulates)."""
    if report.when != "teardown":
        return
    cpu = sum(value for name, value in report.user_properties if name == CPU_PROPERTY)
    path = report.nodeid.split("::")[0]
    CPU_BY_FILE[path] = CPU_BY_FILE.get(path, 0.0) + cpu


# Where the worker may make cgroup v1 cpuacct groups (root), each file's figure is instead what
# every process it started used, Ray's and SLURM's included (tests/cpu_groups.py).
FILE_GROUPS: list[FileGroups | None] = []  # this process's, made when it runs its first test
GROUP_CPU_BY_FILE: dict[str, tuple[float, int]] = {}  # the reporting process's, from every worker
GROUPS_OUTPUT = "cpu_groups"


def _enter_file_group(item: pytest.Item) -> None:
    if not FILE_GROUPS:
        FILE_GROUPS.append(FileGroups.here())
    if FILE_GROUPS[0] is not None:
        FILE_GROUPS[0].enter(item.nodeid.split("::")[0])


def pytest_sessionfinish(session):
    if not FILE_GROUPS or FILE_GROUPS[0] is None:
        return
    totals = FILE_GROUPS[0].finish()
    if hasattr(session.config, "workeroutput"):  # an xdist worker: the controller reports
        session.config.workeroutput[GROUPS_OUTPUT] = totals
    else:
        _add_group_totals(totals)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    _add_group_totals(getattr(node, "workeroutput", {}).get(GROUPS_OUTPUT, {}))


def _add_group_totals(totals: dict) -> None:
    """Summed: without --dist loadfile one file's tests may run on several workers."""
    for path, (cpu, left) in totals.items():
        before_cpu, before_left = GROUP_CPU_BY_FILE.get(path, (0.0, 0))
        GROUP_CPU_BY_FILE[path] = (before_cpu + cpu, before_left + left)


def pytest_addoption(parser):
    parser.addoption(
        "--cpu-table",
        metavar="PATH",
        help="write every test file's CPU seconds to PATH (TSV; make test: logs/test-cpu-*.tsv)",
    )


def pytest_terminal_summary(terminalreporter, config):
    if GROUP_CPU_BY_FILE:
        title = "CPU seconds per test file (every process it started: a cpuacct cgroup per file)"
        totals = {path: cpu for path, (cpu, _) in GROUP_CPU_BY_FILE.items()}
    else:
        title = "CPU seconds per test file (test processes and their children)"
        totals = CPU_BY_FILE
    ranked = sorted(totals.items(), key=lambda kv: -kv[1])
    if not ranked:
        return
    if config.getoption("--cpu-table"):
        _write_cpu_table(Path(config.getoption("--cpu-table")), ranked, title)
    whole = sum(cpu for _, cpu in ranked)
    terminalreporter.write_sep("=", title)
    for path, cpu in ranked[:25]:
        left = GROUP_CPU_BY_FILE.get(path, (0, 0))[1]
        note = f"  ({left} processes still running at the end)" if left else ""
        terminalreporter.write_line(f"{cpu:9.1f} s {100 * cpu / whole:5.1f} %  {path}{note}")
    terminalreporter.write_line(f"{whole:9.1f} s in all, {len(ranked)} files")


def _write_cpu_table(path: Path, ranked: list[tuple[str, float]], title: str) -> None:
    """Every file's row (the terminal shows 25), written whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(path) as out:
        out.write(f"# {title}\nfile\tcpu_s\tprocesses_left\n")
        for name, cpu in ranked:
            out.write(f"{name}\t{cpu:.1f}\t{GROUP_CPU_BY_FILE.get(name, (0, 0))[1]}\n")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real benchmark copies in ../shared/data; skip the test when they are absent."""
    if not (SHARED_DATA / "MANIFEST.tsv").is_file():
        pytest.skip(f"real data not found at {SHARED_DATA} (../shared/data beside the repo root)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


# What Snakemake reads from a clone: the entry point, its rules, configs and the slurm profile
# (`slurm` is a link into workflow/). Not results/ or paper_figures/.
WORKFLOW_FILES = ("Snakefile", "environment.yml", "slurm", "workflow", "configs")


def copy_workflow(dest: Path) -> Path:
    """The repo's workflow files copied into ``dest``, as in a fresh clone: Snakemake run there
    sees none of the outputs a `make reproduce` left in the repo, and writes none into it."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW_FILES:
        src = REPO_ROOT / name
        if src.is_symlink():
            (dest / name).symlink_to(src.readlink())
        elif src.is_dir():
            shutil.copytree(src, dest / name, symlinks=True)
        else:
            shutil.copy2(src, dest / name)
    return dest


def local_slurm_profile(work: Path, partition: str = "debug", account: str = "pacs") -> Path:
    """``work/slurm``: the shipped SLURM profile with the two values it asks a user to set
    (partition, account) filled in for tools/local_slurm.sh's cluster, in place of the link
    ``copy_workflow`` made (the shipped profile itself stays untouched)."""
    shipped = REPO_ROOT / "workflow" / "profiles" / "slurm" / "config.yaml"
    profile = yaml.safe_load(shipped.read_text())
    profile["default-resources"].update(slurm_partition=partition, slurm_account=account)
    link = work / "slurm"
    if link.is_symlink() or link.is_file():
        link.unlink()
    elif link.is_dir():
        shutil.rmtree(link)
    link.mkdir()
    (link / "config.yaml").write_text(yaml.safe_dump(profile))
    return link


@pytest.fixture(scope="module")
def workflow_copy(tmp_path_factory) -> Path:
    """A fresh-clone copy of the workflow (:func:`copy_workflow`), one per test module."""
    return copy_workflow(tmp_path_factory.mktemp("workflow"))


@pytest.fixture(scope="module")
def local_slurm_workflow(tmp_path_factory) -> Path:
    """A workflow copy whose ``slurm`` profile is set up for the local cluster
    (:func:`local_slurm_profile`), one per test module."""
    work = copy_workflow(tmp_path_factory.mktemp("slurm_workflow"))
    local_slurm_profile(work)
    return work


# Set by `make test` to one fresh folder for both suites (the main suite and the engine tests,
# two pytest runs in two environments): what built_once builds there is built once for both.
SHARED_BUILDS = "PACS_TEST_SHARED_DIR"


def built_once(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """``build(folder)`` run once per pytest run, however many xdist workers ask (the first one
    builds under a file lock, the others wait and reuse it), or once per ``make test`` for both
    of its pytest runs (``$PACS_TEST_SHARED_DIR``); a build that failed is retried. Callers read
    the folder and write their own outputs elsewhere."""
    folder = _shared_root(tmp_path_factory) / f"built-{name}"
    with FileLock(f"{folder}.lock"):
        if not (folder / ".built").is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            build(folder)
            (folder / ".built").touch()
    return folder


@pytest.fixture(scope="session")
def build_once(tmp_path_factory) -> Callable[[str, Callable[[Path], None]], Path]:
    """``build_once(name, build)``: :func:`built_once` for the fixtures of other conftests."""
    return lambda name, build: built_once(tmp_path_factory, name, build)


# Memory is what limits how much of the suite runs at once: a verl launch is a local Ray cluster of
# about ten processes that import torch (about 5 GB together), a vLLM engine on CPU about 2.5 GB,
# and when the main suite's verl runs, the engine tests' verl-with-vLLM chain and two vLLM engines
# overlapped (22.8 GB of 24, measured), Ray's memory monitor killed a run. Heavy work therefore
# takes units of a budget shared by every worker and both suites of a `make test` (file locks),
# about 2 GB a unit: MEMORY_UNITS in all, beside the pytest workers themselves.
MEMORY_UNITS = int(os.environ.get("PACS_TEST_MEMORY_UNITS", "7"))
UNITS = {  # what each kind of heavy work takes
    "verl_vllm_chain": 4,  # verl's trainer with its Ray cluster and a vLLM rollout engine
    "verl_two_nodes": 4,  # verl on two Ray nodes, through SLURM
    "verl": 3,  # verl's trainer with its local Ray cluster (HF rollout)
    "vllm_engine": 2,  # one vLLM engine on CPU (KV cache capped: tests/engine/conftest.py)
    "dag": 1,  # a Snakemake DAG of tiny-engine jobs (at most 2 at a time)
    "job": 1,  # one process loading a tiny model (an HF generation)
}


@contextmanager
def _memory_units(root: Path, units: int, total: int = MEMORY_UNITS) -> Iterator[None]:
    """Hold ``units`` of the ``total`` unit locks under ``root`` while the block runs: all of them
    or none (taken together, released together, retried after a random pause so that a large
    request is not starved for ever). Only leaf work may run inside (a subprocess, an engine),
    never a fixture that may itself wait, so no holder waits on another."""
    root.mkdir(parents=True, exist_ok=True)
    units = min(units, total)
    locks = [FileLock(str(root / f"memory-unit-{i}.lock")) for i in range(total)]
    while True:
        held = []
        for lock in locks:
            if len(held) == units:
                break
            try:
                lock.acquire(timeout=0)
            except Timeout:
                continue
            held.append(lock)
        if len(held) == units:
            try:
                yield
            finally:
                for lock in held:
                    lock.release()
            return
        for lock in held:
            lock.release()
        time.sleep(0.2 + random.random())


# The kinds that start a Ray cluster: one at a time on the machine. Two local clusters collide on
# Ray's fixed default ports (the dashboard agent's 52365), and under load a raylet that waits
# for its agent gives up ("unexpected system state" in WaitForDashboardAgentPorts), after which
# the launch waits for a node that will never register (seen in two fresh-clone runs). Checked in
# issue 52: two local ray.init clusters (no dashboard) started side by side while a third held
# the port; both agents gave it up after 3 s of retries and both ran. The crash seen was a
# `ray start` head's. The lock stays until a whole fresh-clone run shows that it can go (it
# costs wall time, not CPU).
RAY_KINDS = ("verl_vllm_chain", "verl_two_nodes", "verl")


@contextmanager
def _heavy(root: Path, kind: str) -> Iterator[None]:
    """The Ray lock first (for RAY_KINDS), then the memory units: one order everywhere, and no
    holder of units ever waits for the Ray lock."""
    ray_lock = FileLock(str(root / "ray-cluster.lock")) if kind in RAY_KINDS else nullcontext()
    with ray_lock, _memory_units(root, UNITS[kind]):
        yield


@pytest.fixture(scope="session")
def heavy_slot(tmp_path_factory) -> Callable[[str], AbstractContextManager[None]]:
    """``with heavy_slot(kind): ...`` runs heavy work of ``kind`` (a key of UNITS) once its
    memory units are free (see MEMORY_UNITS), and a Ray cluster once no other runs."""
    root = _shared_root(tmp_path_factory)
    return lambda kind: _heavy(root, kind)


@pytest.fixture(scope="session")
def run_launch(heavy_slot) -> Callable[..., None]:
    """``run_launch(argv, log, timeout=1200, kind="verl")``: one launch (verl's trainer with its
    local Ray; ``kind="job"`` for a generation) once its ``heavy_slot`` is free, its output in
    ``log``; what it left running is stopped after it, and nothing else (``owned_env``); a failure
    shows the log's tail. The timeout is a safety net, not a time goal."""
    from pacs.verl_plugin.cluster.owner import owned_env

    def run(args: list[str], log: Path, timeout: int = 1200, kind: str = "verl") -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with heavy_slot(kind), log.open("w") as fh, owned_env(env) as owned:
            proc = subprocess.run(
                args, check=False, stdout=fh, stderr=subprocess.STDOUT, env=owned, timeout=timeout
            )
        if proc.returncode != 0:
            tail = "\n".join(log.read_text().splitlines()[-60:])
            pytest.fail(f"{' '.join(args[:4])} ... exited {proc.returncode}; log tail:\n{tail}")

    return run


def _shared_root(tmp_path_factory) -> Path:
    """Where built_once and heavy_slot keep their folders and locks: ``make test``'s folder for
    both suites, else this pytest run's."""
    return Path(os.environ.get(SHARED_BUILDS) or _run_root(tmp_path_factory))


def _run_root(tmp_path_factory) -> Path:
    """The folder shared by every xdist worker of this pytest run."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _build_verl_smoke_base(out: Path) -> None:
    log = out.parent / f"{out.name}.log"
    with log.open("w") as fh:
        code = subprocess.run(
            [sys.executable, "-m", "pacs.tiny.smoke", "--config", str(VERL_SMOKE)]
            + ["--out", str(out)],
            stdout=fh, stderr=subprocess.STDOUT, timeout=900, check=False,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        ).returncode  # fmt: skip
    if code != 0:
        pytest.fail(f"pacs.tiny.smoke exited {code}:\n{log.read_text()[-3000:]}")


VERL_SMOKE = REPO_ROOT / "configs" / "verl_smoke.yaml"


@pytest.fixture(scope="session")
def verl_smoke_base(tmp_path_factory) -> Path:
    """The verl smoke's inputs (``python -m pacs.tiny.smoke --config configs/verl_smoke.yaml``):
    ``data/`` (train.parquet, test.jsonl) and the SFT-warmed ``model/base``, built once per run
    for every test that trains verl on it (on CPU, through SLURM, with verl's vLLM rollout) or
    samples it with vLLM. Read-only: copy to change."""
    return built_once(tmp_path_factory, "verl_smoke_base", _build_verl_smoke_base)


def _run_smoke_dag(work: Path) -> None:
    copy_workflow(work)
    venv_bin = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": f"{venv_bin}:{os.environ.get('PATH', '')}", "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", "--configfile", "configs/smoke.yaml"],
        cwd=work, env=env, capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        logs = sorted((work / "results" / "smoke" / "logs").rglob("*.log"), key=os.path.getmtime)
        tails = "\n".join(f"--- {p}\n{p.read_text()[-2000:]}" for p in logs[-3:])
        pytest.fail(f"the smoke DAG failed:\n{result.stderr[-4000:]}{tails}")


@pytest.fixture(scope="session")
def smoke_dag(tmp_path_factory, heavy_slot) -> Path:
    """A fresh-clone copy of the workflow after one whole smoke DAG run (configs/smoke.yaml:
    data, SFT base, 7 trainings, evaluation, report), once per pytest run: every test that reads
    its outputs (tests/pipeline/test_smoke.py, the make-eval comparison) shares it. Read-only:
    dry runs (``-n``) only, and outputs written elsewhere."""

    def build(work: Path) -> None:
        with heavy_slot("dag"):
            _run_smoke_dag(work)

    return built_once(tmp_path_factory, "smoke_dag", build)
