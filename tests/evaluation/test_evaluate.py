"""``make eval`` (python -m pacs.model_eval): bad input refused by name, the protocol from
the profile with overrides, resuming, released models' prompt formats, and (slow) the same row as
the DAG for the same tiny checkpoint."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pacs import model_eval as evaluate
from pacs.evaluation import grade

REPO = Path(__file__).resolve().parents[2]
SMOKE = REPO / "configs" / "smoke.yaml"


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture()
def data_root(tmp_path, bench_rows) -> Path:
    """A results folder whose data/eval/aime24.jsonl holds the five fixture problems."""
    rows = [
        {**r, "problem_id": f"aime24/{i}", "benchmark": "aime24"} for i, r in enumerate(bench_rows)
    ]
    write_jsonl(tmp_path / "res" / "data" / "eval" / "aime24.jsonl", rows)
    return tmp_path / "res"


def argv(model, data_root, out, *extra) -> list[str]:
    return [
        "--model",
        str(model),
        "--config",
        str(SMOKE),
        "--benchmarks",
        "aime24",
        "--data-root",
        str(data_root),
        "--out",
        str(out),
        "--n",
        "2",
        "--max-new-tokens",
        "6",
        *extra,
    ]


def refused(args: list[str], capsys) -> str:
    assert evaluate.main(args) == 2
    return capsys.readouterr().err


# ----------------------------------------------------------------------------- bad input


def test_a_folder_that_is_not_a_model_is_refused_by_name(tmp_path, data_root, capsys):
    folder = tmp_path / "not_a_model"
    folder.mkdir()
    err = refused(argv(folder, data_root, tmp_path / "out"), capsys)
    assert f"--model {folder}: this folder is not a model: it has no config.json" in err
    assert not (tmp_path / "out").exists()


def test_a_string_that_is_neither_folder_nor_hub_id_is_refused(tmp_path, data_root, capsys):
    err = refused(argv("no such thing", data_root, tmp_path / "out"), capsys)
    assert "--model no such thing: neither an existing folder nor a hub id" in err


def test_an_unknown_benchmark_is_refused_by_name(tiny_model_dir, tmp_path, data_root, capsys):
    args = argv(tiny_model_dir, data_root, tmp_path / "out")
    args[args.index("aime24")] = "aime24,aime2024"
    err = refused(args, capsys)
    assert "unknown benchmark(s) ['aime2024']" in err and "math500" in err


def test_a_tokenizer_without_chat_template_is_refused(tiny_model_dir, tmp_path, data_root, capsys):
    model = tmp_path / "no_template"
    shutil.copytree(tiny_model_dir, model)
    (model / "chat_template.jinja").unlink(missing_ok=True)
    cfg = json.loads((model / "tokenizer_config.json").read_text())
    cfg.pop("chat_template", None)
    (model / "tokenizer_config.json").write_text(json.dumps(cfg))
    err = refused(argv(model, data_root, tmp_path / "out"), capsys)
    assert f"{model}: its tokenizer has no chat template" in err and "--chat-template" in err
    missing = tmp_path / "missing.jinja"
    err = refused(argv(model, data_root, tmp_path / "out", "--chat-template", str(missing)), capsys)
    assert f"--chat-template {missing}: no such file" in err


def test_other_settings_into_the_same_out_are_refused(tiny_model_dir, tmp_path, data_root, capsys):
    out = tmp_path / "out"
    assert evaluate.main(argv(tiny_model_dir, data_root, out)) == 0
    err = refused(argv(tiny_model_dir, data_root, out, "--temperature", "0.9"), capsys)
    assert "holds an evaluation made with other settings" in err and "--temperature 0.9" in err


# ----------------------------------------------------------------------------- the protocol


def test_the_profile_gives_the_protocol_and_flags_override_it(tiny_model_dir, data_root):
    args = evaluate.parse_args(argv(tiny_model_dir, data_root, "out"))
    plan = evaluate.make_plan(args)
    assert plan.generate_args == (
        "--backend hf --n 2 --temperature 0.6 --top-p 0.95 --max-new-tokens 6 --seed 0 "
        "--limit 10 --no-enable-thinking"
    )
    paper = evaluate.make_plan(evaluate.parse_args(["--model", "Qwen/Qwen3-8B"]))
    assert paper.generate_args.startswith(
        "--backend vllm --n 256 --temperature 0.6 --top-p 0.95 --max-new-tokens 8192 --seed 0"
    )
    assert paper.generate_args.endswith("--enable-thinking")
    assert paper.benchmarks == [
        "math500", "amc23", "aime24", "aime25", "beyondaime", "livecodebench", "gpqa"
    ]  # fmt: skip
    assert paper.out == Path("results/paper/model_eval/Qwen__Qwen3-8B")


def test_a_released_model_gets_its_documented_prompt_format(tiny_model_dir, tmp_path, data_root):
    cfg = yaml.safe_load(SMOKE.read_text())
    cfg["eval"]["released"] = {
        "mine": {
            "paper_name": "LIMO",
            "hf_id": "GAIR/LIMO",
            "path": str(tiny_model_dir),
            "unpinned": "a test",
            "prompt_source": "https://example.org/card",
            "size_class": "7b",
            "system_prompt": "Think first.",
            "enable_thinking": True,
        }
    }
    config = tmp_path / "cfg.yaml"
    config.write_text(yaml.safe_dump(cfg))
    args = argv(tiny_model_dir, data_root, tmp_path / "out")
    args[args.index(str(SMOKE))] = str(config)
    plan = evaluate.make_plan(evaluate.parse_args(args))
    assert plan.prompt_args == ["--system-prompt", "Think first."]
    assert plan.generate_args.endswith("--enable-thinking") and plan.paper_model == "LIMO"
    args += ["--system-prompt", "Mine.", "--no-enable-thinking"]
    plan = evaluate.make_plan(evaluate.parse_args(args))
    assert plan.prompt_args == ["--system-prompt", "Mine."]
    assert plan.generate_args.endswith("--no-enable-thinking")


def test_the_profiles_system_turn_applies_to_a_model_that_is_not_a_released_one(tmp_path):
    """prompt.system_prompt (configs/overlays/paper_system_turn.yaml) is how the DAG evaluates our
    runs, so `make eval` of any checkpoint sends it too; a released model keeps its own."""
    cfg = yaml.safe_load((REPO / "configs" / "paper.yaml").read_text())
    cfg["prompt"]["system_prompt"] = "You are a helpful assistant."
    config = tmp_path / "paper_system.yaml"
    config.write_text(yaml.safe_dump(cfg))

    def prompt_args(*argv: str) -> list[str]:
        return evaluate.make_plan(evaluate.parse_args(["--config", str(config), *argv])).prompt_args

    assert prompt_args("--model", "Qwen/Qwen3-8B") == [
        "--system-prompt",
        "You are a helpful assistant.",
    ]
    assert prompt_args("--model", "Qwen/Qwen3-8B", "--system-prompt", "Mine.") == [
        "--system-prompt",
        "Mine.",
    ]
    assert prompt_args("--model", "Qwen/Qwen3-14B") == []  # released: its card documents none
    default = evaluate.make_plan(evaluate.parse_args(["--model", "Qwen/Qwen3-8B"]))
    assert default.prompt_args == []  # configs/paper.yaml: no system turn


def test_the_system_prompt_reaches_the_samples_meta(tiny_model_dir, tmp_path, data_root):
    """The flags go to generate (its meta records them while it runs; samples are the same form)."""
    out = tmp_path / "out"
    args = argv(tiny_model_dir, data_root, out, "--system-prompt", "Be brief.")
    assert evaluate.main(args) == 0
    assert json.loads((out / "protocol.json").read_text())["prompt_args"] == [
        "--system-prompt",
        "Be brief.",
    ]
    assert (out / "aime24" / "samples.jsonl").read_text().count("\n") == 5 * 2


# ----------------------------------------------------------------------------- resuming


def test_a_killed_run_resumes_without_redoing_finished_stages(
    tiny_model_dir, tmp_path, data_root, monkeypatch, capsys
):
    out = tmp_path / "out"
    real_grade = grade.main

    def killed(argv=None):
        raise KeyboardInterrupt  # the user's ^C while grading

    monkeypatch.setattr(grade, "main", killed)
    with pytest.raises(KeyboardInterrupt):
        evaluate.main(argv(tiny_model_dir, data_root, out))
    samples = out / "aime24" / "samples.jsonl"
    assert samples.is_file() and not (out / "aime24" / "graded.jsonl").exists()
    before = samples.stat().st_mtime_ns
    monkeypatch.setattr(grade, "main", real_grade)
    assert evaluate.main(argv(tiny_model_dir, data_root, out)) == 0
    assert samples.stat().st_mtime_ns == before  # not generated again
    doc = json.loads((out / "aime24" / "passk.json").read_text())
    assert doc["n_problems"] == 5 and doc["n_min"] == 2
    assert "| Row | AIME24 |" in (out / "row.md").read_text()
    assert evaluate.main(argv(tiny_model_dir, data_root, out)) == 0  # all done: nothing rerun
    assert samples.stat().st_mtime_ns == before


def test_a_dead_vllm_engine_ends_the_run_with_its_message(
    tiny_model_dir, tmp_path, data_root, monkeypatch, capsys
):
    from pacs.evaluation import generate
    from pacs.evaluation.backends.vllm import EngineDied

    def died(argv=None):
        raise EngineDied("vllm: the engine died; rerun to resume")

    monkeypatch.setattr(generate, "main", died)
    assert evaluate.main(argv(tiny_model_dir, data_root, tmp_path / "out")) == 3
    assert "vllm: the engine died; rerun to resume" in capsys.readouterr().err


# ----------------------------------------------------------------------------- the DAG's row

VENV_BIN = str(Path(sys.executable).parent)
ENV = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}", "HF_HUB_OFFLINE": "1"}
DAG_PASSK = "results/smoke/eval/tiny/base/seed0/synthetic/passk.json"


@pytest.mark.slow
def test_make_eval_of_the_tiny_checkpoint_gives_the_dags_row(smoke_dag, tmp_path):
    """The smoke DAG (the session's run, tests/conftest.py) builds and SFTs the tiny model and
    evaluates it (run base); `make eval` of that checkpoint on the same profile writes the same
    samples, the same pass@k and the same row."""
    work = smoke_dag
    res = work / "results" / "smoke"
    out = tmp_path / "make_eval"
    make = subprocess.run(
        ["make", "-s", "eval", f"MODEL={res / 'models' / 'tiny' / 'base'}"]
        + [f"EVAL_CONFIG={res / 'config.yaml'}", f"EVAL_ARGS=--data-root {res} --out {out}"],
        cwd=REPO, env=ENV, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert make.returncode == 0, make.stderr[-3000:]
    dag_dir, ours = (work / DAG_PASSK).parent, out / "synthetic"
    assert (ours / "samples.jsonl").read_bytes() == (dag_dir / "samples.jsonl").read_bytes()
    assert (ours / "graded.jsonl").read_bytes() == (dag_dir / "graded.jsonl").read_bytes()
    dag_doc = json.loads((dag_dir / "passk.json").read_text())
    doc = json.loads((ours / "passk.json").read_text())
    labels = ("model", "run")
    assert {k: v for k, v in doc.items() if k not in labels} == {
        k: v for k, v in dag_doc.items() if k not in labels
    }
    row_of = _row_of(dag_doc)
    assert row_of == _row_of(doc) and row_of[0]["metric"] == "pass@1"
    print("make eval row:\n" + make.stdout[make.stdout.index("| Row") :])
    print("DAG row:", row_of)


def _row_of(doc: dict) -> list[dict]:
    """The Table-1-style row of a passk.json, under one name (the DAG's and ours differ by name)."""
    from pacs.report.model_row import row_records
    from pacs.report.paper import load_paper_numbers

    return row_records([doc], load_paper_numbers(), model="m", label="m", paper_model=None)


def test_make_eval_gives_generate_the_dags_flags(workflow_copy, tiny_model_dir):
    """The smoke DAG's generate command carries exactly make eval's protocol flags (both spelled by
    pacs.evaluation.protocol), so the DAG and make eval sample alike (the slow test runs both)."""
    dag = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "-p", "--cores", "1"]
        + ["--configfile", "configs/smoke.yaml", "--", DAG_PASSK],
        cwd=workflow_copy, env=ENV, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert dag.returncode == 0, dag.stderr[-3000:]
    (command,) = [c for c in dag.stdout.splitlines() if "pacs.evaluation.generate" in c]
    plan = evaluate.make_plan(
        evaluate.parse_args(["--model", str(tiny_model_dir), "--config", str(SMOKE)])
    )
    assert (
        f"--out results/smoke/eval/tiny/base/seed0/synthetic/shards/0.jsonl {plan.generate_args} "
        in command
    )
