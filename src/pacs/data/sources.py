"""Where the real data comes from: Hugging Face dataset ids at pinned revisions, or local files.

Pinned revisions are full commit hashes of the HF dataset repositories. Their provenance:

- DeepScaleR-Preview ``b6ae8c60…``, MATH-500 ``6e4ed1a2…``, AIME_2024 ``8d88b287…``,
  aime_2025 ``6f71d77b…``, BeyondAIME ``c705198a…``, code_generation_lite ``0fe84c39…``: the
  commits other public pipelines pin for these ids (the aime_2025 and BeyondAIME ones are also
  the revisions that the local copies used by our tests were taken from).
- ``zwhe99/amc23`` and ``Idavidrein/gpqa``: **no revision is known** to us. Their constant is
  ``None``, and preparing them from HF refuses to run until the user passes ``--revision SHA``
  (or ``--revision main`` to accept the moving head knowingly; the manifest then records "main").

``datasets`` and ``huggingface_hub`` are imported lazily, inside the download functions only, so
the offline path (``--source local``) never touches them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pacs.data.errors import DataError


@dataclass(frozen=True)
class HFSource:
    """One HF dataset: read with ``datasets.load_dataset`` or, when ``files`` is set, by
    downloading those raw files with ``huggingface_hub.hf_hub_download``."""

    dataset_id: str
    revision: str | None  # None: unknown; the user must pass one
    split: str = "test"
    config: str | None = None
    files: tuple[str, ...] = ()
    gated: bool = False

    def label(self, revision: str | None) -> str:
        return f"hf://datasets/{self.dataset_id}@{revision or '?'}"


SOURCES: dict[str, HFSource] = {
    "deepscaler": HFSource(
        "agentica-org/DeepScaleR-Preview-Dataset",
        "b6ae8c60f5c1f2b594e2140b91c49c9ad0949e29",
        split="train",
    ),
    "math500": HFSource(
        "HuggingFaceH4/MATH-500", "6e4ed1a2a79af7d8630a6b768ec859cb5af4d3be", split="test"
    ),
    "amc23": HFSource("zwhe99/amc23", None, split="test"),  # revision unknown: pass --revision
    "aime24": HFSource(
        "Maxwell-Jia/AIME_2024", "8d88b2876a82a080e2f172cc9b25d0d9d2cb4792", split="train"
    ),
    "aime25": HFSource(
        "yentinglin/aime_2025", "6f71d77b0b89b9dabe07ab466c51df33f514df7f", split="train"
    ),
    "beyondaime": HFSource(
        "ByteDance-Seed/BeyondAIME", "c705198ae1043810b1e1693bd879250b51a7a523", split="test"
    ),
    # code_generation_lite is a loading-script dataset (unsupported by datasets>=4): read its raw
    # release files. test3..test5 cover contest dates 2024-03 .. 2025-01, the paper's window
    # 2024-07-01 .. 2025-01-01 included; rows are then filtered on contest_date.
    "livecodebench": HFSource(
        "livecodebench/code_generation_lite",
        "0fe84c3912ea0c4d4a78037083943e8f0c4dd505",
        files=("test3.jsonl", "test4.jsonl", "test5.jsonl"),
    ),
    # Gated: accept the terms on the dataset page, then `huggingface-cli login` or set HF_TOKEN.
    "gpqa": HFSource(
        "Idavidrein/gpqa",
        None,
        split="train",
        config="gpqa_diamond",
        files=("gpqa_diamond.csv",),
        gated=True,
    ),
}

GATED_HELP = (
    "this dataset is gated: accept its terms on https://huggingface.co/datasets/{id}, then run "
    "`huggingface-cli login` (or set the HF_TOKEN environment variable) and retry"
)


def resolve_revision(name: str, override: str | None = None) -> str:
    """The revision to download: ``override`` if given, else the pinned constant."""
    source = SOURCES[name]
    revision = override or source.revision
    if revision is None:
        raise DataError(
            source.label(None),
            f"no pinned revision is known for {source.dataset_id}; pass --revision <commit sha> "
            "(see the dataset's 'Files and versions' page), or --revision main to accept the "
            "moving head",
        )
    return revision


def _reraise(source: HFSource, revision: str, err: Exception) -> None:
    text = f"{type(err).__name__}: {err}"
    if source.gated and ("gated" in text.lower() or "401" in text or "403" in text):
        raise DataError(
            source.label(revision), GATED_HELP.format(id=source.dataset_id) + f" ({text})"
        ) from err
    raise DataError(source.label(revision), f"download failed: {text}") from err


def load_hf_records(name: str, revision: str) -> list[dict[str, Any]]:
    """All rows of ``SOURCES[name]`` (``datasets.load_dataset`` at ``revision``)."""
    source = SOURCES[name]
    try:
        import datasets

        ds = datasets.load_dataset(
            source.dataset_id, source.config, split=source.split, revision=revision
        )
    except Exception as err:  # noqa: BLE001  network, auth, bad revision: all reported alike
        _reraise(source, revision, err)
    rows = ds.to_list()
    if not rows:
        raise DataError(source.label(revision), "dataset split holds no rows")
    return rows


def download_hf_files(name: str, revision: str) -> list[Path]:
    """Download ``SOURCES[name].files`` at ``revision`` into the HF cache; return local paths."""
    source = SOURCES[name]
    paths = []
    try:
        from huggingface_hub import hf_hub_download

        for filename in source.files:
            local = hf_hub_download(
                source.dataset_id, filename, repo_type="dataset", revision=revision
            )
            paths.append(Path(local))
    except Exception as err:  # noqa: BLE001  network, auth, bad revision: all reported alike
        _reraise(source, revision, err)
    return paths
