"""Download one Hugging Face hub snapshot into a local folder, on a host with internet.

    python -m pacs.fetch --repo-id Qwen/Qwen3-8B [--revision REV] --out results/paper/hub/qwen3_8b

Paper scale: compute nodes may have no internet, so the workflow runs this as a local rule (on
the host that runs ``snakemake``) for every model without a local ``models.<m>.path`` and for the
diversity embedder; compute jobs then read the folder with the hub switched off (README, "Paper
scale"). The revision is resolved to a commit first and the snapshot pinned to it; ``fetch.json``
(repo id, revision asked, commit) is written last, so its presence means the folder is complete.
An interrupted download resumes (``snapshot_download`` skips files already there).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from pacs.io import write_json

log = logging.getLogger(__name__)
MARKER = "fetch.json"


def resolve_commit(repo_id: str, revision: str | None) -> str:
    from huggingface_hub import HfApi

    return HfApi().model_info(repo_id, revision=revision).sha


def download_snapshot(repo_id: str, commit: str, out: Path) -> None:
    from huggingface_hub import snapshot_download

    snapshot_download(repo_id=repo_id, revision=commit, local_dir=str(out))


def fetch(
    repo_id: str,
    revision: str | None,
    out: Path,
    resolve: Callable[[str, str | None], str] = resolve_commit,
    download: Callable[[str, str, Path], None] = download_snapshot,
) -> dict:
    """Download ``repo_id`` at ``revision`` into ``out``; return what ``fetch.json`` records."""
    marker = out / MARKER
    if marker.exists():
        marker.unlink()  # a new download is not complete until it ends
    commit = resolve(repo_id, revision)
    log.info("fetching %s (revision %s = commit %s) into %s", repo_id, revision, commit, out)
    out.mkdir(parents=True, exist_ok=True)
    download(repo_id, commit, out)
    if not (out / "config.json").is_file():
        raise RuntimeError(f"{repo_id}@{commit}: the snapshot in {out} has no config.json")
    info = {"repo_id": repo_id, "revision": revision, "commit": commit}
    write_json(marker, info)
    return info


def main(argv: Sequence[str] | None = None) -> dict:
    p = argparse.ArgumentParser(
        prog="python -m pacs.fetch", description="Download one hub snapshot into a local folder."
    )
    p.add_argument("--repo-id", required=True, help="e.g. Qwen/Qwen3-8B")
    p.add_argument("--revision", default=None, help="branch, tag or commit (default: main)")
    p.add_argument("--out", required=True, type=Path, help="local folder to fill")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    return fetch(args.repo_id, args.revision, args.out)


if __name__ == "__main__":
    main()
