"""Issue 35: ``make eval``'s records cannot go stale or escape ``results/``.

Reuse is decided by content (protocol.json records the generations file's sha256, or a local
model's files), names are one safe folder, the Makefile's values reach Python as arguments,
foreign generations are recorded as such, mixed sample counts are stated, a corrupt
protocol.json is named and a killed run's temp files are removed. Each case failed before.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from pacs import model_eval as evaluate

REPO = Path(__file__).resolve().parents[2]
SMOKE = str(REPO / "configs" / "smoke.yaml")
GOLDS = ["7", "12"]


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
            "answer": gold,
            "problem": f"Problem {i}",
        }
        for i, gold in enumerate(GOLDS)
    ]
    write_jsonl(tmp_path / "res" / "data" / "eval" / "aime24.jsonl", rows)
    return tmp_path / "res"


def generations(path: Path, answer_of, samples=(2, 2)) -> Path:
    rows = [
        {"problem_id": f"aime24/{i}", "sample_idx": j, "response": f"\\boxed{{{answer_of(i)}}}"}
        for i, n in enumerate(samples)
        for j in range(n)
    ]
    return write_jsonl(path, rows)


def run(gens: Path, data_root: Path, out: Path, *extra: str) -> int:
    argv = ["--generations", str(gens), "--benchmarks", "aime24", "--config", SMOKE]
    argv += ["--data-root", str(data_root), "--out", str(out), *extra]
    return evaluate.main(argv)


def pass_at_1(out: Path) -> float:
    doc = json.loads((out / "aime24" / "passk.json").read_text())
    return doc["pass_at_k"][0]["value"]


def test_a_replaced_generations_file_with_an_older_mtime_is_not_reused(tmp_path, data_root, capsys):
    gens, out = tmp_path / "gens.jsonl", tmp_path / "out"
    generations(gens, lambda i: GOLDS[i])
    assert run(gens, data_root, out) == 0 and pass_at_1(out) == 1.0
    mtime = gens.stat().st_mtime
    generations(gens, lambda i: "999")  # now every answer is wrong ...
    os.utime(gens, (mtime - 3600, mtime - 3600))  # ... and the file looks older
    assert run(gens, data_root, out) == 2
    err = capsys.readouterr().err
    assert "generations_sha256" in err and "give another --out or delete it" in err
    assert run(gens, data_root, tmp_path / "fresh") == 0 and pass_at_1(tmp_path / "fresh") == 0.0


def test_foreign_generations_are_recorded_as_generated_elsewhere(tmp_path, data_root):
    gens, out = tmp_path / "gens.jsonl", tmp_path / "out"
    generations(gens, lambda i: GOLDS[i])
    assert run(gens, data_root, out) == 0
    protocol = json.loads((out / "protocol.json").read_text())
    assert protocol["generated"] == "elsewhere"
    assert protocol["generations"] == str(gens)
    assert protocol["generations_sha256"] == evaluate.file_sha256(gens)
    assert "generate_args" not in protocol and "prompt_args" not in protocol
    row = (out / "row.md").read_text()
    assert "generated elsewhere" in row and protocol["generations_sha256"] in row
    for unused in ("--n ", "--temperature", "--backend", "--top-p"):
        assert unused not in row


def test_mixed_sample_counts_are_stated_in_the_row(tmp_path, data_root):
    gens, out = tmp_path / "gens.jsonl", tmp_path / "out"
    generations(gens, lambda i: GOLDS[i], samples=(2, 3))
    assert run(gens, data_root, out) == 0
    assert (
        "Mixed sample counts: aime24 has 2 to 3 samples per problem" in (out / "row.md").read_text()
    )


@pytest.mark.parametrize("name", ["../../x", "ABSOLUTE", "..", ".", "a/b", "x y", ""])
def test_an_unsafe_name_is_refused(tmp_path, data_root, capsys, monkeypatch, name):
    # Run in tmp_path, an absolute name inside it: had the check failed, nothing escapes it.
    monkeypatch.chdir(tmp_path)
    name = str(tmp_path / "abs" / "path") if name == "ABSOLUTE" else name
    gens = generations(tmp_path / "gens.jsonl", lambda i: GOLDS[i])
    argv = ["--generations", str(gens), "--benchmarks", "aime24", "--config", SMOKE]
    out = ["--out", str(tmp_path / "out")] if name == "" else []  # never into the checkout
    assert evaluate.main([*argv, "--data-root", str(data_root), "--name", name, *out]) == 2
    assert "not a safe folder name" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_generations_stem_of_dot_dot_is_refused(tmp_path, data_root, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    gens = generations(tmp_path / "...jsonl", lambda i: GOLDS[i])  # stem ".."
    argv = ["--generations", str(gens), "--benchmarks", "aime24", "--config", SMOKE]
    assert evaluate.main([*argv, "--data-root", str(data_root)]) == 2
    assert "the name taken from the input '..'" in capsys.readouterr().err


def test_a_corrupt_protocol_json_is_named(tmp_path, data_root, capsys):
    gens, out = tmp_path / "gens.jsonl", tmp_path / "out"
    generations(gens, lambda i: GOLDS[i])
    (out).mkdir()
    (out / "protocol.json").write_text('{"model": ')
    assert run(gens, data_root, out) == 2
    err = capsys.readouterr().err
    assert f"{out / 'protocol.json'}: corrupt" in err


def test_a_killed_runs_temp_files_are_removed(tmp_path, data_root):
    gens, out = tmp_path / "gens.jsonl", tmp_path / "out"
    generations(gens, lambda i: GOLDS[i])
    assert run(gens, data_root, out) == 0
    left = out / "aime24" / ".samples.jsonl.abc123.tmp"  # what a SIGKILL mid-write leaves
    left.write_text("partial")
    assert run(gens, data_root, out) == 0
    assert not left.exists()


def test_a_changed_weight_file_is_refused_by_name(tmp_path, data_root):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"weights")
    args = evaluate.parse_args(
        ["--model", str(model), "--config", SMOKE, "--benchmarks", "aime24"]
        + ["--data-root", str(data_root), "--out", str(tmp_path / "out")]
    )
    plan = evaluate.make_plan(args)
    plan.out.mkdir()
    evaluate.check_protocol(plan)
    evaluate.check_protocol(evaluate.make_plan(args))  # the same files: reused
    (model / "model.safetensors").write_bytes(b"new weights")
    with pytest.raises(evaluate.EvalError, match=r"files changed.*model\.safetensors"):
        evaluate.check_protocol(evaluate.make_plan(args))


def test_make_eval_values_reach_python_as_arguments(tmp_path):
    hostile = 'x"; touch INJECTED; echo "'
    dry = subprocess.run(
        ["make", "-n", "eval", f"MODEL={hostile}", f"EVAL_ARGS={hostile}"],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert "touch INJECTED" not in dry.stdout + dry.stderr
    assert "pacs.model_eval --from-env" in dry.stdout
    assert not (REPO / "INJECTED").exists()


def test_the_environment_gives_the_arguments():
    env = {"MODEL": 'x"; touch y', "EVAL_ARGS": "--benchmarks aime24 --system-prompt 'a b'"}
    assert evaluate.argv_from_env(env) == [
        "--model",
        'x"; touch y',
        "--benchmarks",
        "aime24",
        "--system-prompt",
        "a b",
    ]
    with pytest.raises(evaluate.EvalError, match="EVAL_ARGS"):
        evaluate.argv_from_env({"GENERATIONS": "g.jsonl", "EVAL_ARGS": "--name 'open"})
    with pytest.raises(evaluate.EvalError, match="give MODEL"):
        evaluate.argv_from_env({})
    # EVAL_CONFIG unset: no --config, so the model's own profile or the paper's is chosen
    assert evaluate.argv_from_env({"MODEL": "m", "EVAL_CONFIG": "c.yaml"})[2:] == [
        "--config",
        "c.yaml",
    ]
