"""pacs.layout: the one spelling of the results folder, read by Snakemake and by Python."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

from pacs import layout
from pacs.report.loaders import GLOBS

RES = "results/tiny"


def test_each_folder_is_spelled_as_the_pipeline_writes_it():
    assert layout.results_dir("tiny") == RES
    assert layout.report_dir("tiny") == "paper_figures/tiny"
    assert layout.config_snapshot(RES) == "results/tiny/config.yaml"
    assert layout.synthetic_file(RES, "sft") == "results/tiny/data/synthetic/sft.jsonl"
    assert layout.benchmark_file(RES, "synthetic") == "results/tiny/data/synthetic/test.jsonl"
    assert layout.benchmark_file(RES, "aime24") == "results/tiny/data/eval/aime24.jsonl"
    assert layout.train_parquet(RES) == "results/tiny/data/train.parquet"
    assert layout.hub_dir(RES, layout.EMBEDDER) == "results/tiny/hub/diversity-embedder"
    assert layout.model_dir(RES, "tiny", "base") == "results/tiny/models/tiny/base"
    assert layout.train_dir(RES, "tiny", "pacs", 2) == "results/tiny/train/tiny/pacs/seed2"
    assert (
        layout.checkpoint_dir(RES, "tiny", "pacs", 2, 40)
        == "results/tiny/train/tiny/pacs/seed2/step40/hf"
    )
    assert layout.eval_dir(RES, "m", "grpo", 0, "amc23") == "results/tiny/eval/m/grpo/seed0/amc23"
    assert (
        layout.curve_dir(RES, "m", "grpo", 0, 50, "amc23")
        == "results/tiny/curve/m/grpo/seed0/step50/amc23"
    )
    assert layout.diversity_file(RES, "m", "aime24", ".pca.csv") == (
        "results/tiny/diversity/m/aime24.pca.csv"
    )
    assert layout.preflight_file(RES) == "results/tiny/preflight/compute_node.txt"


def test_a_path_object_root_and_wildcards_pass_through():
    assert layout.train_dir(Path("/x/results/p"), "{model}", "{run}", "{seed}") == (
        "/x/results/p/train/{model}/{run}/seed{seed}"
    )
    assert layout.eval_dir("", "*", "*", "*", "*") == "eval/*/*/seed*/*"  # relative: a glob


@pytest.mark.parametrize(
    ("tree", "job"),
    [
        (
            layout.eval_dir("", "tiny", "pacs", 3, "synthetic"),
            {"kind": "eval", "model": "tiny", "run": "pacs", "seed": "3", "benchmark": "synthetic"},
        ),
        (
            layout.curve_dir("", "q", "grpo", 0, 100, "aime24"),
            {
                "kind": "curve",
                "model": "q",
                "run": "grpo",
                "seed": "0",
                "step": "100",
                "benchmark": "aime24",
            },
        ),
    ],
)
def test_parse_tree_reads_back_what_the_layout_wrote(tree, job):
    assert layout.parse_tree(tree) == job


@pytest.mark.parametrize("tree", ["train/m/r/seed0", "eval/m/r/seed0", "curve/m/r/seed0/b"])
def test_parse_tree_refuses_a_folder_outside_the_evaluation_trees(tree):
    with pytest.raises(ValueError, match="not an eval/ or curve/ folder"):
        layout.parse_tree(tree)


def test_the_report_globs_find_what_the_layout_names():
    """Each loader glob matches the file the pipeline writes there, and nothing one level off."""
    written = {
        "passk": f"{layout.eval_dir('', 'm', 'pacs', 0, 'aime24')}/passk.json",
        "diversity": layout.diversity_file("", "m", "aime24"),
        "pca": layout.diversity_file("", "m", "aime24", ".pca.csv"),
        "metrics": f"{layout.train_dir('', 'm', 'pacs', 1)}/metrics.jsonl",
        "eval_curve": f"{layout.train_dir('', 'm', 'pacs', 1)}/eval_curve.jsonl",
        "curve_passk": f"{layout.curve_dir('', 'm', 'pacs', 1, 20, 'aime24')}/passk.json",
    }
    assert set(written) == set(GLOBS)
    for name, path in written.items():
        assert PurePosixPath(path).match(GLOBS[name]), name
    deeper = f"{layout.eval_dir('', 'm', 'pacs', 0, 'aime24')}/extra/passk.json"
    assert not PurePosixPath(deeper).match(GLOBS["passk"])
