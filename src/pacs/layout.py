"""Where every file of a profile lives: the one spelling of the results-folder layout.

Snakemake (``workflow/rules/common.smk``) and Python (the report's loaders, the notebook code, the
verl launcher, preflight) build their paths here. Each function takes the results folder (``root``,
i.e. ``results/<profile>``) and names, and returns a POSIX path string. Names may be Snakemake
wildcards (``"{model}"``: a rule's pattern) or ``"*"`` (a glob); ``root=""`` gives the path relative
to the results folder (the evaluation *trees* of the rules, the loaders' globs)::

    results/<profile>/                        results_dir(profile)
      config.yaml                             config_snapshot: the merged config the stages read
      data/synthetic/<split>.jsonl            synthetic_file: sft, train, test
      data/eval/<benchmark>.jsonl             benchmark_file (synthetic: the test split)
      data/train.parquet                      train_parquet: the RL prompts at paper scale
      hub/<name>/                             hub_dir: a fetched hub snapshot (fetch.json marker)
      models/<model>/{init,base}/             model_dir: the tiny model as built, after SFT
      train/<model>/<run>/seed<k>/            train_dir: one run (summary.json, metrics.jsonl, ...)
        step<s>/hf/                           checkpoint_dir: a checkpoint as an HF folder
      eval/<model>/<run>/seed<k>/<bench>/     eval_dir: samples, graded, passk, paths
      curve/<model>/<run>/seed<k>/step<s>/<bench>/   curve_dir: a Fig. 3 checkpoint's evaluation
      diversity/<model>/<bench>.json          diversity_file (and .pca.csv)
      preflight/compute_node.txt              preflight_file
      logs/..., benchmarks/...                Snakemake's log: and benchmark: files of each rule
    paper_figures/<profile>/                  report_dir: README.md, tables/, figures/

What each stage writes inside its folder is named by that stage (e.g. ``metrics.jsonl``).
"""

from __future__ import annotations

from pathlib import Path

ANY = "*"  # a name that globs every folder at its place
SYNTHETIC = "synthetic"  # the synthetic task's benchmark: its test split
EVAL, CURVE = "eval", "curve"  # the two kinds of evaluation tree
EMBEDDER = "diversity-embedder"  # hub_dir name of the diversity embedder


def _join(root: str | Path, *parts: object) -> str:
    """``root/part/...``; an empty ``root`` leaves the path relative to the results folder."""
    return "/".join(str(p) for p in (root, *parts) if str(p))


def results_dir(profile: str) -> str:
    return f"results/{profile}"


def report_dir(profile: str) -> str:
    return f"paper_figures/{profile}"


def config_snapshot(root: str | Path) -> str:
    return _join(root, "config.yaml")


# ------------------------------------------------------------------------------------ data


def synthetic_file(root: str | Path, split: str) -> str:
    return _join(root, "data", SYNTHETIC, f"{split}.jsonl")


def benchmark_file(root: str | Path, benchmark: str) -> str:
    """The benchmark's problem file; the synthetic benchmark is the synthetic task's test split."""
    if benchmark == SYNTHETIC:
        return synthetic_file(root, "test")
    return _join(root, "data", "eval", f"{benchmark}.jsonl")


def train_parquet(root: str | Path) -> str:
    return _join(root, "data", "train.parquet")


def hub_dir(root: str | Path, name: str) -> str:
    return _join(root, "hub", name)


def preflight_file(root: str | Path) -> str:
    return _join(root, "preflight", "compute_node.txt")


# ------------------------------------------------------------------------------------ models and
# runs


def model_dir(root: str | Path, model: str, stage: str) -> str:
    """The tiny model as built (``init``) or after its SFT warm-up (``base``)."""
    return _join(root, "models", model, stage)


SFT_SUMMARY = "sft_summary.json"
"""Written into the tiny base's folder by the SFT warm-up: its steps, pass@1, time and commit."""


def sft_summary_file(root: str | Path, model: str) -> str:
    return _join(model_dir(root, model, "base"), SFT_SUMMARY)


def train_dir(root: str | Path, model: str, run: str, seed: object) -> str:
    return _join(root, "train", model, run, f"seed{seed}")


def checkpoint_dir(root: str | Path, model: str, run: str, seed: object, step: object) -> str:
    """A training checkpoint as an HF model folder (the Fig. 3 curve evaluates it)."""
    return _join(train_dir(root, model, run, seed), f"step{step}", "hf")


# ------------------------------------------------------------------------------------ evaluation


def eval_dir(root: str | Path, model: str, run: str, seed: object, benchmark: str) -> str:
    return _join(root, EVAL, model, run, f"seed{seed}", benchmark)


def curve_dir(
    root: str | Path, model: str, run: str, seed: object, step: object, benchmark: str
) -> str:
    return _join(root, CURVE, model, run, f"seed{seed}", f"step{step}", benchmark)


def parse_tree(tree: str) -> dict[str, str]:
    """The names in an evaluation folder relative to the results folder (an ``eval_dir`` or
    ``curve_dir`` with ``root=""``): kind, model, run, seed, (step,) benchmark."""
    parts = tree.split("/")
    kind = parts[0]
    if kind not in (EVAL, CURVE) or len(parts) != (6 if kind == CURVE else 5):
        raise ValueError(f"{tree!r} is not an eval/ or curve/ folder of the results layout")
    job = {"kind": kind, "model": parts[1], "run": parts[2], "seed": parts[3].removeprefix("seed")}
    if kind == CURVE:
        job["step"] = parts[4].removeprefix("step")
    return {**job, "benchmark": parts[-1]}


def diversity_file(root: str | Path, model: str, benchmark: str, suffix: str = ".json") -> str:
    """Fig. 5a's D per method (``.json``) or Fig. 5b's PCA points (``.pca.csv``)."""
    return _join(root, "diversity", model, f"{benchmark}{suffix}")
