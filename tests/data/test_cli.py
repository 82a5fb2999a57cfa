"""`python -m pacs.data`: the three commands and their exit statuses."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow.parquet as pq

from pacs.data.cli import main
from pacs.data.synthetic.arithmetic import make_splits


def test_prepare_synthetic(tmp_path):
    argv = [
        "prepare-synthetic",
        "--out-dir",
        str(tmp_path),
        "--seed",
        "3",
        "--n-sft",
        "30",
        "--n-train",
        "20",
        "--n-test",
        "10",
        "--max-operand",
        "20",
        "--max-steps",
        "2",
    ]
    assert main(argv) == 0
    expected = make_splits(3, 30, 20, 10, max_steps=2, max_operand=20)
    for split in ("sft", "train", "test"):
        rows = [json.loads(line) for line in (tmp_path / f"{split}.jsonl").read_text().splitlines()]
        assert rows == expected[split]
        assert (tmp_path / f"{split}.manifest.json").is_file()


def test_prepare_eval_and_train_local(tmp_path):
    src = tmp_path / "a.jsonl"
    src.write_text(json.dumps({"id": 3, "problem": "p", "answer": "042"}) + "\n")
    out = tmp_path / "eval" / "aime25.jsonl"
    assert (
        main(
            [
                "prepare-eval",
                "--benchmark",
                "aime25",
                "--source",
                "local",
                "--path",
                str(src),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert json.loads(out.read_text())["answer"] == "42"

    ds = tmp_path / "ds.json"
    ds.write_text(json.dumps([{"problem": "p", "answer": "1", "solution": "s", "difficulty": 1.0}]))
    out = tmp_path / "train.parquet"
    assert main(["prepare-train", "--source", "local", "--path", str(ds), "--out", str(out)]) == 0
    assert pq.read_table(out).num_rows == 1


def test_bad_data_exits_2_with_the_message(tmp_path, capsys):
    src = tmp_path / "a.jsonl"
    src.write_text(json.dumps({"id": 3, "problem": "p"}) + "\n")
    out = tmp_path / "aime25.jsonl"
    assert (
        main(
            [
                "prepare-eval",
                "--benchmark",
                "aime25",
                "--source",
                "local",
                "--path",
                str(src),
                "--out",
                str(out),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "a.jsonl, row 1, field 'answer'" in err
    assert not out.exists()
    assert main(["prepare-eval", "--benchmark", "amc23", "--source", "hf", "--out", str(out)]) == 2
    assert "pass --revision" in capsys.readouterr().err


def test_module_entry_point(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pacs.data",
            "prepare-synthetic",
            "--out-dir",
            str(tmp_path),
            "--seed",
            "0",
            "--n-sft",
            "2",
            "--n-train",
            "2",
            "--n-test",
            "2",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{s}{ext}" for s in ("sft", "train", "test") for ext in (".jsonl", ".manifest.json")
    )
