"""Loaders: tidy frames from the fake tree, and errors that name the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pacs.evaluation.io import FormatError
from pacs.report.loaders import GLOBS, load_results

PASSK = Path("eval/tiny/pacs/seed1/aime24/passk.json")


def _edit_passk(root: Path, edit) -> Path:
    path = root / PASSK
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    return path


def test_loads_every_file_of_the_tree(fake_results: Path) -> None:
    res = load_results(fake_results)
    assert {k: len(v) for k, v in res.files.items()} == {
        "passk": 4 * 2 * 2 + 3 * 2,
        "diversity": 2,
        "pca": 1,
        "metrics": 3 * 2 + 3,
        "eval_curve": 9,
        "curve_passk": 0,
    }
    pacs = res.passk[(res.passk["run"] == "pacs") & (res.passk["metric"] == "pass_at_k")]
    assert sorted(pacs["seed"].unique()) == [0, 1] and sorted(pacs["k"].unique()) == [
        1,
        2,
        4,
        8,
        16,
    ]
    assert set(res.passk["metric"]) == {"pass_at_k", "maj_at_k"}
    assert res.metrics.groupby(["run", "seed"])["step"].count().eq(10).all()
    assert set(res.pca["method"]) == {"pacs", "grpo"} and res.pca["model"].eq("tiny").all()
    assert res.diversity["D"].isna().sum() == 1
    assert set(GLOBS) == set(res.files)


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d["pass_at_k"][0].update(value="abc"), "pass_at_k[0]: field 'value'"),
        (lambda d: d["pass_at_k"][2].update(value=1.7), "pass_at_k[2]: field 'value'"),
        (lambda d: d["pass_at_k"][1].pop("k"), "pass_at_k[1]: missing field 'k'"),
        (lambda d: d["pass_at_k"][1].update(k=1), "pass_at_k[1]: field 'k' = 1 appears twice"),
        (lambda d: d.pop("seed"), "missing field 'seed'"),
        (lambda d: d.update(run="grpo"), "field 'run' is 'grpo' but the path says 'pacs'"),
        (lambda d: d.update(n_problems="30"), "field 'n_problems'"),
        (lambda d: d.update(pass_at_k=[]), "field 'pass_at_k' is empty"),
    ],
)
def test_malformed_passk_names_file_and_field(fake_results: Path, edit, field: str) -> None:
    path = _edit_passk(fake_results, edit)
    with pytest.raises(FormatError) as err:
        load_results(fake_results)
    assert str(path) in str(err.value) and field in str(err.value)


def test_passk_that_is_not_json_names_the_file(fake_results: Path) -> None:
    (fake_results / PASSK).write_text("{not json")
    with pytest.raises(FormatError, match=r"passk\.json: not valid JSON"):
        load_results(fake_results)


def test_bad_seed_folder_is_named(fake_results: Path) -> None:
    src = fake_results / PASSK
    bad = fake_results / "eval/tiny/pacs/seedX/aime24/passk.json"
    bad.parent.mkdir(parents=True)
    bad.write_text(src.read_text())
    with pytest.raises(FormatError, match="folder 'seedX' should be seed<k>"):
        load_results(fake_results)


def test_malformed_metrics_line_names_file_line_and_field(fake_results: Path) -> None:
    path = fake_results / "train/tiny/grpo/seed0/metrics.jsonl"
    lines = path.read_text().splitlines()
    row = json.loads(lines[2])
    row["entropy"] = "high"
    lines[2] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(FormatError, match=rf"{path}:3: field 'entropy'"):
        load_results(fake_results)


def test_truncated_last_metrics_line_is_tolerated(fake_results: Path) -> None:
    path = fake_results / "train/tiny/grpo/seed0/metrics.jsonl"
    path.write_text(path.read_text() + '{"step": 11, "ent')  # a write cut off mid-line
    res = load_results(fake_results)
    assert (
        res.metrics[(res.metrics["run"] == "grpo") & (res.metrics["seed"] == 0)]["step"].max() == 10
    )


def test_eval_curve_rate_is_checked(fake_results: Path) -> None:
    path = fake_results / "train/tiny/pacs/seed0/eval_curve.jsonl"
    path.write_text('{"step": 0, "pass_at_1": 45.0}\n')
    with pytest.raises(
        FormatError, match=r"eval_curve\.jsonl:1: field 'pass_at_1' must be a number in \[0, 1\]"
    ):
        load_results(fake_results)


def test_diversity_and_pca_errors_name_file_and_field(fake_results: Path) -> None:
    div = fake_results / "diversity/tiny/synthetic.json"
    doc = json.loads(div.read_text())
    doc["methods"]["pacs"]["D"] = "0.03"
    div.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match=r"synthetic\.json: methods\.pacs: field 'D'"):
        load_results(fake_results)
    doc["methods"]["pacs"]["D"] = 0.03
    div.write_text(json.dumps(doc))
    pca = fake_results / "diversity/tiny/synthetic.pca.csv"
    pca.write_text(pca.read_text().replace("pc2", "pcb", 1))
    with pytest.raises(FormatError, match=r"synthetic\.pca\.csv: missing column\(s\) \['pc2'\]"):
        load_results(fake_results)
    pca.write_text("method,problem_id,sample_idx,pc1,pc2\npacs,p1,0,0.1,0.2\npacs,p1,1,zz,0.2\n")
    with pytest.raises(FormatError, match=r"synthetic\.pca\.csv:3: field 'pc1'"):
        load_results(fake_results)


def test_missing_results_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="results folder not found"):
        load_results(tmp_path / "nope")


def test_paper_scale_checkpoint_curves_are_read(fake_results: Path) -> None:
    """curve/<model>/<run>/seed<k>/step<N>/<benchmark>/passk.json -> one curve point (pass@1)."""
    doc = json.loads((fake_results / PASSK).read_text())
    target = fake_results / "curve/tiny/pacs/seed1/step20/aime24/passk.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(doc))
    curves = load_results(fake_results).curves
    point = curves[curves["source"] == "curve"]
    assert len(point) == 1
    row = point.iloc[0]
    assert (row["run"], row["seed"], row["benchmark"], row["step"]) == ("pacs", 1, "aime24", 20)
    assert row["pass_at_1"] == doc["pass_at_k"][0]["value"]
    assert set(curves.loc[curves["source"] == "eval_curve.jsonl", "benchmark"]) == {"held-out"}
    bad = fake_results / "curve/tiny/pacs/seed1/stepfinal/aime24/passk.json"
    bad.parent.mkdir(parents=True)
    bad.write_text(json.dumps(doc))
    with pytest.raises(FormatError, match="folder 'stepfinal' should be step<N>"):
        load_results(fake_results)
