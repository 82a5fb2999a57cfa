"""The sandbox's cgroup discovery and limits, for cgroup v1 and v2 (fed text and folders: this
machine offers only one layout, so both are tested on files)."""

from __future__ import annotations

from pathlib import Path

from pacs.rewards import _cgroup as G

V1_MOUNTS = (
    "32 31 0:29 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
)
V1_OWN = "8:pids:/\n4:memory:/jobs/a1\n0::/\n"


def test_v1_hierarchies_are_found_under_this_process_group():
    found = G.discover(V1_MOUNTS, V1_OWN)
    assert found["memory"] == G.Hierarchy(
        "memory", 1, Path("/sys/fs/cgroup/memory/jobs/a1/pacs-sandbox")
    )
    assert found["pids"] == G.Hierarchy("pids", 1, Path("/sys/fs/cgroup/pids/pacs-sandbox"))


def test_v2_is_used_when_it_offers_the_controllers(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpu memory pids\n")
    mounts = f"41 31 0:38 / {tmp_path} rw,relatime - cgroup2 cgroup2 rw\n"
    found = G.discover(mounts, "0::/user.slice/job.scope\n")
    assert found == {
        c: G.Hierarchy(c, 2, tmp_path / "user.slice" / "job.scope") for c in ("memory", "pids")
    }
    delegated = G.discover(mounts, "0::/user.slice/job.scope\n", v2_base=str(tmp_path / "d"))
    assert delegated["memory"].base == tmp_path / "d"


def test_a_missing_controller_says_why(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("hugetlb\n")  # this machine's unified mount
    mounts = f"41 31 0:38 / {tmp_path} rw,relatime - cgroup2 cgroup2 rw\n"
    found = G.discover(mounts, "0::/\n")
    assert found["memory"] == "no cgroup hierarchy offers the memory controller"


def test_limits_and_oom_counts_in_both_versions(tmp_path):
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    for folder, files in ((v1, ["memory.memsw.limit_in_bytes"]), (v2, ["memory.swap.max"])):
        folder.mkdir()
        for name in files:
            (folder / name).write_text("max")
    G._set_limit(G.Hierarchy("memory", 1, tmp_path), v1, 384 << 20, 66)
    G._set_limit(G.Hierarchy("memory", 2, tmp_path), v2, 384 << 20, 66)
    G._set_limit(G.Hierarchy("pids", 2, tmp_path), v2, 384 << 20, 66)
    assert (v1 / "memory.limit_in_bytes").read_text() == str(384 << 20)
    assert (v1 / "memory.memsw.limit_in_bytes").read_text() == str(384 << 20)
    assert (v2 / "memory.max").read_text() == str(384 << 20)
    assert (v2 / "memory.swap.max").read_text() == "0"
    assert (v2 / "pids.max").read_text() == "66"
    (v1 / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    (v2 / "memory.events").write_text("low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n")
    assert G.TestCgroups({"memory": (1, v1)}).oom_kills() == 2
    assert G.TestCgroups({"memory": (2, v2)}).oom_kills() == 1
    assert G.TestCgroups(missing={"memory": "x"}).oom_kills() == 0
