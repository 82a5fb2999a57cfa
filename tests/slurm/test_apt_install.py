"""What the SLURM tests do on a host without SLURM (tests/slurm/conftest.py): without PACS_APT=1
they install nothing and skip, naming the variable; run as root with apt-get and PACS_APT=1 they
say, before installing, that they install Debian's slurm-wlm and munge. Run in a pytest of their own whose PATH
holds no SLURM binary and an apt-get that only records that it was called."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ONE_TEST = "tests/slurm/test_smoke_dag.py::test_the_report_is_written"
FAKE_APT = '#!/bin/sh\necho "FAKE-APT-GET $*" >> "$APT_LOG"\necho "FAKE-APT-GET $*"\nexit 1\n'

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the install path is taken as root only")


def run_without_slurm(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess, Path]:
    """pytest on one SLURM test with a PATH of bash, id and a recording apt-get only."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "id"):
        (bin_dir / tool).symlink_to(subprocess.check_output(["which", tool], text=True).strip())
    (bin_dir / "apt-get").write_text(FAKE_APT)
    (bin_dir / "apt-get").chmod(0o755)
    log = tmp_path / "apt.log"
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("PACS_APT", "SLURM_"))}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", ONE_TEST, "-rs", "-p", "no:cacheprovider"],
        cwd=REPO,
        env={**keep, "PATH": str(bin_dir), "APT_LOG": str(log), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # one stream: the notice's place among the rest of the output
        text=True,
        timeout=600,
        check=False,
    )
    return result, log


def test_root_says_it_installs_slurm_before_apt_get_runs(tmp_path):
    result, log = run_without_slurm(tmp_path, PACS_APT="1")
    out = result.stdout
    notice = out.find("tests/slurm: SLURM is not installed here; installing Debian's slurm-wlm")
    assert notice >= 0, out[-3000:]
    assert "as PACS_APT=1 allows" in out
    assert log.read_text().splitlines() == [
        "FAKE-APT-GET update -qq"
    ]  # it did try, after saying so
    assert notice < out.find("FAKE-APT-GET update"), out[-3000:]
    assert result.returncode == 1 and "tools/local_slurm.sh install failed" in out


def test_without_pacs_apt_the_slurm_tests_skip_naming_the_variable(tmp_path):
    result, log = run_without_slurm(tmp_path)
    out = result.stdout
    assert result.returncode == 0 and "1 skipped" in out, out[-3000:]
    assert "SLURM is not installed (slurmctld, slurmd" in out
    assert "PACS_APT=1 lets the tests install it with apt-get (make test PACS_APT=1)" in out
    assert not log.exists()  # apt-get never ran
    assert "installing Debian's slurm-wlm" not in out
