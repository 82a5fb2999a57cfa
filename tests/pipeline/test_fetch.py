"""pacs.fetch: the hub snapshot is pinned to a commit and marked complete only at the end."""

from __future__ import annotations

import json

import pytest

from pacs import fetch


def test_fetch_pins_the_commit_and_writes_the_marker_last(tmp_path):
    seen = {}

    def download(repo_id, commit, out):
        seen["args"] = (repo_id, commit, out)
        assert not (out / fetch.MARKER).exists()  # not complete while downloading
        (out / "config.json").write_text("{}")

    out = tmp_path / "hub" / "qwen3_8b"
    info = fetch.fetch(
        "Qwen/Qwen3-8B", "main", out, resolve=lambda r, v: "abc123", download=download
    )
    assert seen["args"] == ("Qwen/Qwen3-8B", "abc123", out)
    assert info == {"repo_id": "Qwen/Qwen3-8B", "revision": "main", "commit": "abc123"}
    assert json.loads((out / fetch.MARKER).read_text()) == info


def test_a_failed_download_leaves_no_marker(tmp_path):
    out = tmp_path / "m"
    out.mkdir()
    (out / fetch.MARKER).write_text("{}")  # from an earlier download of another revision

    def download(repo_id, commit, out):
        raise ConnectionError("no route to host")

    with pytest.raises(ConnectionError):
        fetch.fetch("org/model", None, out, resolve=lambda r, v: "c", download=download)
    assert not (out / fetch.MARKER).exists()


def test_a_snapshot_without_config_is_refused(tmp_path):
    with pytest.raises(RuntimeError, match="no config.json"):
        fetch.fetch("org/model", None, tmp_path, resolve=lambda r, v: "c", download=lambda *a: None)
    assert not (tmp_path / fetch.MARKER).exists()
