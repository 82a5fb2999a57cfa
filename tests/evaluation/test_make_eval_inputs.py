"""Issue 47: ``make eval`` cannot be steered by its arguments or its leftovers.

The Makefile hands MODEL, GENERATIONS, EVAL_CONFIG and EVAL_ARGS over as the text typed (make
expanded ``$(shell ...)`` in them); a stage's output is reused only when its content hash, its
inputs' and the protocol's are as recorded (an edited or truncated file, or a missing
protocol.json, is redone, never trusted); a stage that produces an incomplete file is a named
error and leaves no row. Each case failed before (rc 0 over 10 of 30 problems, the old samples
with the new file's sha256 in row.md, an edited graded file trusted, 3/3 commands run by make).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pacs import model_eval as evaluate
from pacs.evaluation import generate, grade
from pacs.evaluation.reuse import file_sha256

REPO = Path(__file__).resolve().parents[2]
SMOKE = str(REPO / "configs" / "smoke.yaml")
N_PROBLEMS = 30


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture()
def data_root(tmp_path) -> Path:
    rows = [
        {
            "problem_id": f"aime24/{i}",
            "benchmark": "aime24",
            "task": "math",
            "prompt": [{"role": "user", "content": f"Problem {i}"}],
            "answer": str(i + 10),
            "problem": f"Problem {i}",
        }
        for i in range(N_PROBLEMS)
    ]
    write_jsonl(tmp_path / "res" / "data" / "eval" / "aime24.jsonl", rows)
    return tmp_path / "res"


def generations(path: Path, right: bool) -> Path:
    rows = [
        {"problem_id": f"aime24/{i}", "sample_idx": j, "response": f"\\boxed{{{i + 10 * right}}}"}
        for i in range(N_PROBLEMS)
        for j in range(2)
    ]
    return write_jsonl(path, rows)


def run(gens: Path, data_root: Path, out: Path) -> int:
    argv = ["--generations", str(gens), "--benchmarks", "aime24", "--config", SMOKE]
    argv += ["--limit", str(N_PROBLEMS)]  # the smoke profile evaluates fewer
    return evaluate.main(argv + ["--data-root", str(data_root), "--out", str(out)])


def passk_doc(out: Path) -> dict:
    return json.loads((out / "aime24" / "passk.json").read_text())


def test_a_truncated_samples_file_is_made_again(tmp_path, data_root):
    gens, out = generations(tmp_path / "gens.jsonl", right=True), tmp_path / "out"
    assert run(gens, data_root, out) == 0
    samples = out / "aime24" / "samples.jsonl"
    samples.write_text("".join(samples.read_text().splitlines(keepends=True)[:10]))
    assert run(gens, data_root, out) == 0
    doc = passk_doc(out)
    assert doc["n_problems"] == N_PROBLEMS and doc["pass_at_k"][0]["value"] == 1.0


def test_an_edited_graded_file_is_not_trusted(tmp_path, data_root):
    gens, out = generations(tmp_path / "gens.jsonl", right=False), tmp_path / "out"
    assert run(gens, data_root, out) == 0 and passk_doc(out)["pass_at_k"][0]["value"] == 0.0
    graded = out / "aime24" / "graded.jsonl"
    rows = [json.loads(line) for line in graded.read_text().splitlines()]
    write_jsonl(graded, [r | {"score": 1.0} for r in rows])  # every answer "right" now
    assert run(gens, data_root, out) == 0
    assert passk_doc(out)["pass_at_k"][0]["value"] == 0.0  # graded again, not trusted


def test_without_protocol_json_nothing_is_reused(tmp_path, data_root):
    gens, out = generations(tmp_path / "gens.jsonl", right=False), tmp_path / "out"
    assert run(gens, data_root, out) == 0
    (out / "protocol.json").unlink()
    generations(gens, right=True)  # a new file at the same path
    assert run(gens, data_root, out) == 0
    assert passk_doc(out)["pass_at_k"][0]["value"] == 1.0
    assert file_sha256(gens) in (out / "row.md").read_text()


def test_a_stage_that_writes_an_incomplete_file_is_named_and_leaves_no_row(
    tmp_path, data_root, monkeypatch, capsys
):
    gens, out = generations(tmp_path / "gens.jsonl", right=True), tmp_path / "out"
    assert run(gens, data_root, out) == 0 and (out / "row.md").is_file()
    real = grade.main

    def truncating(argv):
        real(argv)
        path = Path(argv[argv.index("--out") + 1])
        path.write_text("".join(path.read_text().splitlines(keepends=True)[:10]))

    monkeypatch.setattr(grade, "main", truncating)
    (out / "aime24" / "graded.jsonl").write_text("")  # so the stage runs again
    assert run(gens, data_root, out) == 2
    err = capsys.readouterr().err
    assert "graded.jsonl: does not match" in err and "25 problems" in err
    assert not (out / "row.md").exists() and not (out / "row.csv").exists()


def test_generated_samples_short_of_the_protocols_n_are_named(
    tiny_model_dir, tmp_path, data_root, monkeypatch, capsys
):
    def one_sample_each(argv):
        path = Path(argv[argv.index("--out") + 1])
        rows = [
            {"problem_id": f"aime24/{i}", "sample_idx": 0, "response": "\\boxed{1}"}
            for i in range(N_PROBLEMS)
        ]
        write_jsonl(path, rows)

    monkeypatch.setattr(generate, "main", one_sample_each)
    argv = ["--model", str(tiny_model_dir), "--config", SMOKE, "--benchmarks", "aime24"]
    argv += ["--data-root", str(data_root), "--out", str(tmp_path / "out"), "--n", "2"]
    argv += ["--limit", str(N_PROBLEMS)]
    assert evaluate.main(argv) == 2
    err = capsys.readouterr().err
    assert "samples.jsonl: incomplete against the protocol: 30 problems lack samples 0..1" in err


def test_make_hands_the_values_over_as_typed(tmp_path):
    """The Makefile, run for real with a stand-in python that prints the four values."""
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    (tmp_path / "envs" / "cpu").mkdir(parents=True)
    for prerequisite in ("pyproject.toml", "envs/cpu/requirements.lock"):
        (tmp_path / prerequisite).touch()
        os.utime(tmp_path / prerequisite, (1e9, 1e9))  # older than .installed: no setup
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / ".installed").touch()
    fake = tmp_path / ".venv" / "bin" / "python"
    names = ("MODEL", "GENERATIONS", "EVAL_CONFIG", "EVAL_ARGS")
    fake.write_text(
        "#!/bin/sh\nexec python3 -c 'import json, os; "
        f"print(json.dumps({{k: os.environ.get(k) for k in {json.dumps(names)}}}))'\n"
    )
    fake.chmod(0o755)
    values = {
        "MODEL": f"$(shell touch {tmp_path}/M)m",
        "GENERATIONS": f"$(shell touch {tmp_path}/G)",
        "EVAL_CONFIG": f"$(shell touch {tmp_path}/C)",
        "EVAL_ARGS": f"--n 2 $(shell touch {tmp_path}/A) `touch {tmp_path}/B` $$(touch x)",
    }
    done = subprocess.run(
        ["make", "-s", "eval", *(f"{k}={v}" for k, v in values.items())],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == values
    assert not [p.name for p in tmp_path.iterdir() if len(p.name) == 1]  # no command ran
