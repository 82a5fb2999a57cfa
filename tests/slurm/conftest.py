"""A real SLURM cluster on this machine for the tests in this folder (tools/local_slurm.sh):
one slurmctld, nodes n1 and n2 (96 CPUs, 8 fake H200 GPUs each), no accounting. Needs root and
Debian's slurm-wlm + munge. When they are missing, the tests install them with apt-get only if
PACS_APT=1 says they may (`make test PACS_APT=1`; CI's .ci/run sets it), saying so first; without it
they skip, naming the variable."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tools" / "local_slurm.sh"
BINARIES = ("slurmctld", "slurmd", "munged", "mungekey", "sbatch", "scontrol", "squeue")
ACCOUNTING_BINARIES = ("slurmdbd", "mariadbd", "mariadb-install-db", "mariadb-admin", "sacctmgr")
APT = "PACS_APT"  # =1: these tests may apt-get install what they miss; otherwise they skip
INSTALL_NOTICE = (
    "tests/slurm: SLURM is not installed here; installing Debian's slurm-wlm and munge now, as "
    f"{APT}=1 allows (tools/local_slurm.sh install: apt-get update; apt-get install "
    "--no-install-recommends slurm-wlm munge; they stay installed)."
)
ACCOUNTING_NOTICE = (
    "tests/slurm: slurmdbd and MariaDB are not installed here; installing Debian's slurmdbd and "
    f"mariadb-server now, as {APT}=1 allows (tools/local_slurm.sh install-accounting; their "
    "system services are kept from starting; they stay installed)."
)


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "slurm: runs jobs on a real local SLURM cluster (root; installs slurm-wlm); "
        "deselect with -m 'not slurm'",
    )


def pytest_collection_modifyitems(items):
    """Every test here is marked slurm."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.slurm)


def etc_digest() -> dict[str, str]:
    """Every regular file under /etc with its content hash (symlinks by their target)."""
    out = {}
    for root, _dirs, files in os.walk("/etc"):
        for name in files:
            path = os.path.join(root, name)
            try:
                if os.path.islink(path):
                    out[path] = "-> " + os.readlink(path)
                else:
                    out[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            except OSError:
                out[path] = "unreadable"
    return out


def _announce(config, text: str) -> None:
    """``text`` on the terminal now, past pytest's output capture."""
    capture = config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        sys.stderr.write(f"\n{text}\n")
        sys.stderr.flush()


def _install(config, binaries: tuple[str, ...], what: str, command: str, notice: str) -> str | None:
    """Install what provides ``binaries`` with ``tools/local_slurm.sh COMMAND`` (apt-get) when
    PACS_APT=1 allows it, saying so first; why not (a reason to skip), or None when they are there."""
    missing = [b for b in binaries if not shutil.which(b)]
    if not missing:
        return None
    if os.environ.get(APT) != "1":
        return (
            f"{what} is not installed ({', '.join(missing)} missing); "
            f"{APT}=1 lets the tests install it with apt-get (make test {APT}=1)"
        )
    if not shutil.which("apt-get"):
        return (
            f"{what} is not installed and there is no apt-get to install it ({', '.join(missing)})"
        )
    _announce(config, notice)
    result = subprocess.run(
        ["bash", str(SCRIPT), command], capture_output=True, text=True, timeout=900, check=False
    )
    if result.returncode != 0:
        pytest.fail(
            f"tools/local_slurm.sh {command} failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}"
        )
    return None


def _host_problem(config, accounting: bool = False) -> str | None:
    """Why this machine cannot host the cluster, or None; installs the packages when it can
    (saying so first) when PACS_APT=1."""
    if not sys.platform.startswith("linux"):
        return "a local SLURM cluster needs Linux"
    if os.geteuid() != 0:
        return "a local SLURM cluster needs root (slurmd starts job steps as the submitting user)"
    problem = _install(config, BINARIES, "SLURM", "install", INSTALL_NOTICE)
    if problem or not (accounting or os.environ.get(APT) == "1"):
        return problem
    # With PACS_APT=1 the accounting packages come now too, before any cluster's /etc snapshot: a
    # later install (a test module with accounting run by the same worker while its session
    # cluster is up) would change /etc under that cluster and fail its teardown check.
    accounting_problem = _install(
        config, ACCOUNTING_BINARIES, "SLURM accounting", "install-accounting", ACCOUNTING_NOTICE
    )
    return accounting_problem if accounting else None


def _run_cluster(config, accounting: bool):
    """Start a cluster (``tools/local_slurm.sh up``), yield its SLURM_CONF and folder; afterwards
    stop it and check that none of its processes is left and that /etc is unchanged."""
    problem = _host_problem(config, accounting)
    if problem:
        pytest.skip(problem)
    etc_before = etc_digest()
    # A short path: munged's socket path must fit a unix socket name.
    cluster_dir = Path(
        subprocess.check_output(["mktemp", "-d", "/tmp/pacs-slurm.XXXX"], text=True).strip()
    )
    up = subprocess.run(
        ["bash", str(SCRIPT), "up", str(cluster_dir), *(["--accounting"] if accounting else [])],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if up.returncode != 0:
        logs = "".join(
            f"\n--- {p}\n{p.read_text()[-1500:]}" for p in sorted((cluster_dir / "log").glob("*"))
        )
        subprocess.run(["bash", str(SCRIPT), "down", str(cluster_dir)], check=False, timeout=180)
        pytest.fail(f"tools/local_slurm.sh up failed:\n{up.stderr[-2000:]}{logs}")
    yield {"SLURM_CONF": str(cluster_dir / "etc" / "slurm.conf"), "dir": cluster_dir}
    subprocess.run(["bash", str(SCRIPT), "down", str(cluster_dir)], check=True, timeout=300)
    marked = [p for p in os.listdir("/proc") if p.isdigit() and _marked(p, cluster_dir)]
    assert not marked, f"cluster processes left after down: {marked}"
    # One walk of /etc after (it was one walk per file: 1,083 walks, about 15 CPU-s a teardown)
    etc_after = etc_digest()
    changed = {
        k for k in etc_before.keys() | etc_after.keys() if etc_before.get(k) != etc_after.get(k)
    }
    assert not changed, f"/etc changed while the cluster ran: {sorted(changed)}"
    shutil.rmtree(cluster_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def slurm_cluster(pytestconfig):
    """SLURM_CONF of a running two-node cluster without accounting (job states from squeue)."""
    yield from _run_cluster(pytestconfig, accounting=False)


@pytest.fixture(scope="module")
def slurm_accounting_cluster(pytestconfig):
    """SLURM_CONF of a two-node cluster with accounting: its own slurmdbd and MariaDB (job states
    from sacct; MinJobAge=2, so squeue soon forgets an ended job)."""
    yield from _run_cluster(pytestconfig, accounting=True)


def submit_env(cluster: dict) -> dict[str, str]:
    """The environment to submit with: the cluster's SLURM_CONF, this venv first on PATH, no
    SLURM_* of any outer job, the hub off."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SRUN_", "SBATCH_"))}
    env.update(
        SLURM_CONF=cluster["SLURM_CONF"],
        PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
        HF_HUB_OFFLINE="1",
        PYTHONUNBUFFERED="1",
    )
    return env


def _marked(pid: str, cluster_dir: Path) -> bool:
    try:
        return f"PACS_LOCAL_SLURM={cluster_dir}".encode() in Path(
            f"/proc/{pid}/environ"
        ).read_bytes().split(b"\0")
    except OSError:
        return False


@pytest.fixture(scope="module")
def slurm_accounting_env(slurm_accounting_cluster) -> dict[str, str]:
    """The environment to submit to the accounting cluster with (:func:`submit_env`)."""
    return submit_env(slurm_accounting_cluster)


@pytest.fixture(scope="session")
def slurm_env(slurm_cluster) -> dict[str, str]:
    """The environment to submit to the session's cluster with (:func:`submit_env`)."""
    return submit_env(slurm_cluster)


@pytest.fixture(scope="session")
def slurm_jobs(slurm_env):
    """() -> every job slurmctld still knows (MinJobAge=600 keeps finished ones): id, state,
    comment (the SLURM executor puts the rule's name there), node count."""

    def jobs() -> list[dict[str, str]]:
        out = subprocess.run(
            ["squeue", "-h", "-t", "all", "-o", "%i|%T|%k|%D"],
            env=slurm_env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        rows = [line.split("|") for line in out.splitlines() if line.strip()]
        return [{"id": r[0], "state": r[1], "comment": r[2], "nodes": r[3]} for r in rows]

    return jobs
