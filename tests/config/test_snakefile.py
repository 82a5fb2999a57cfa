"""pacs.config.snakefile: the config snapshot the stages read, written only when it changes."""

from __future__ import annotations

import yaml

from pacs.config import write_snapshot


def test_the_snapshot_is_written_once_as_plain_yaml(tmp_path):
    path = tmp_path / "results" / "tiny" / "config.yaml"
    raw = {"profile": "tiny", "seeds": {"main": (0, 1)}}
    assert write_snapshot(raw, path) == str(path)
    assert path.read_text() == "profile: tiny\nseeds:\n  main:\n  - 0\n  - 1\n"
    assert yaml.safe_load(path.read_text()) == {"profile": "tiny", "seeds": {"main": [0, 1]}}
    assert [p.name for p in path.parent.iterdir()] == ["config.yaml"]  # no temporary left
    inode = path.stat().st_ino
    write_snapshot(raw, path)  # same content: the file is left alone (running jobs read it)
    assert path.stat().st_ino == inode


def test_a_dry_run_never_writes_and_a_change_replaces_the_file(tmp_path):
    path = tmp_path / "config.yaml"
    write_snapshot({"profile": "a"}, path, dry_run=True)
    assert not path.exists()
    write_snapshot({"profile": "a"}, path)
    write_snapshot({"profile": "b"}, path, dry_run=True)
    assert path.read_text() == "profile: a\n"
    write_snapshot({"profile": "b"}, path)
    assert path.read_text() == "profile: b\n"
