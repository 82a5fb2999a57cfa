"""Run fingerprints (pacs.fingerprint): one hash per set of settings, and mismatches that name the
keys that differ."""

from __future__ import annotations

import hashlib

import pytest

from pacs.fingerprint import (
    MAX_LISTED,
    NO_FINGERPRINT,
    FingerprintMismatch,
    canonical_json,
    differences,
    differing_keys,
    fingerprint,
    folder_digest,
    rows_digest,
)
from pacs.io import sha256_file


def test_one_spelling_per_value_and_its_sha256():
    a = fingerprint({"lr": 1e-3, "run": {"method": "pacs", "beta": 1.0}, "steps": (1, 2)})
    b = fingerprint({"steps": [1, 2], "run": {"beta": 1.0, "method": "pacs"}, "lr": 0.001})
    text = '{"lr":0.001,"run":{"beta":1.0,"method":"pacs"},"steps":[1,2]}'
    assert canonical_json(a["settings"]) == text
    assert a == b and a["sha256"] == hashlib.sha256(text.encode()).hexdigest()


def test_rows_digest_depends_on_the_order_of_the_rows():
    rows = [{"a": 1}, {"a": 2}]
    assert rows_digest(rows) == hashlib.sha256(b'[{"a":1},{"a":2}]').hexdigest()
    assert rows_digest(rows) != rows_digest(rows[::-1])


def test_folder_digest_covers_names_and_contents_but_not_skipped_files(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "w.bin").write_bytes(b"weights")
    (tmp_path / "summary.json").write_text('{"seconds": 1}')
    expected = hashlib.sha256(f"sub/w.bin\0{sha256_file(tmp_path / 'sub' / 'w.bin')}\0".encode())
    assert folder_digest(tmp_path, skip=("summary.json",)) == expected.hexdigest()
    before = folder_digest(tmp_path)
    (tmp_path / "summary.json").write_text('{"seconds": 2}')
    assert folder_digest(tmp_path) != before
    assert folder_digest(tmp_path, skip=("summary.json",)) == expected.hexdigest()
    assert folder_digest("Qwen/Qwen3-4B") == "path:Qwen/Qwen3-4B"  # a hub id, not a folder


def test_differing_keys_are_dotted_and_named_with_both_values():
    old = fingerprint({"lr": 1e-3, "run": {"method": "pacs"}, "seed": 0})
    new = fingerprint({"lr": 2e-3, "run": {"method": "grpo"}, "seed": 0, "beta": 1.0})
    assert differing_keys(old, old) == [] and differences(old, old) == []
    assert differing_keys(old, new) == ["beta", "lr", "run.method"]
    assert differences(old, new) == [
        "beta: '<absent>' -> 1.0",
        "lr: 0.001 -> 0.002",
        "run.method: 'pacs' -> 'grpo'",
    ]
    err = FingerprintMismatch("ckpt.pt", old, new, "Rerun with --on-mismatch restart.")
    assert err.keys == ["beta", "lr", "run.method"] and err.where == "ckpt.pt"
    assert str(err).startswith("ckpt.pt was written by a run with other settings (beta: ")
    assert str(err).endswith("Rerun with --on-mismatch restart.")


def test_a_checkpoint_without_a_fingerprint_or_with_another_hash_is_a_mismatch():
    current = fingerprint({"lr": 1.0})
    assert differing_keys(None, current) == [NO_FINGERPRINT]
    assert "no run fingerprint" in differences(None, current)[0]
    rehashed = {**current, "sha256": "0" * 64}  # same settings, another hashing
    assert differing_keys(rehashed, current) == ["sha256"]


@pytest.mark.parametrize("n", [MAX_LISTED, MAX_LISTED + 3])
def test_long_lists_of_differences_are_cut_and_counted(n):
    old = fingerprint({f"k{i:02d}": 0 for i in range(n)})
    new = fingerprint({f"k{i:02d}": 1 for i in range(n)})
    lines = differences(old, new)
    if n <= MAX_LISTED:
        assert len(lines) == n
    else:
        assert lines[:-1] == [f"k{i:02d}: 0 -> 1" for i in range(MAX_LISTED)]
        assert lines[-1] == "... and 3 more"


def test_code_commit_names_the_checkout_and_its_edits(tmp_path):
    import subprocess

    from pacs.fingerprint import code_commit

    assert code_commit(tmp_path) is None  # not a git checkout
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "f.py").write_text("x = 1\n")
    subprocess.run([*git, "add", "f.py"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "one"], check=True)
    head = subprocess.run(
        [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert code_commit(repo) == head
    (repo / "f.py").write_text("x = 2\n")
    assert code_commit(repo) == head + "+edits"


def test_job_times_are_the_jobs_own_start_and_end():
    from pacs import numerics
    from pacs.fingerprint import job_times

    # 2026-01-01T00:00:00Z and 92.5 s later
    got = job_times(1767225600.0, 1767225692.5)
    assert got == {
        "job_started_at": "2026-01-01T00:00:00+00:00",
        "job_finished_at": "2026-01-01T00:01:32+00:00",
        "job_seconds": 92.5,
        "numerics": numerics.describe(),
    }
    assert got["numerics"]["setting"] in (numerics.PORTABLE, numerics.NATIVE)
    with pytest.raises(ValueError, match="before started"):
        job_times(10.0, 9.0)
