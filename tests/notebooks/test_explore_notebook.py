"""notebooks/explore_results.ipynb, executed with nbclient on fabricated results trees.

Two shapes, both written with the real file formats of docs/formats.md (passk.json is made by
``pacs.evaluation.passk`` itself from the graded samples):

- paper-shaped: two models (qwen3_4b with 40 steps, qwen3_8b with 80), checkpoint curves under
  ``curve/``, math benchmarks under ``data/eval/``;
- tiny-shaped: one model, the synthetic task, ``eval_curve.jsonl``.

The 8B numbers are far from the 4B ones and the two models train for different numbers of steps,
so a line that mixed models would zig-zag in x and an average across models would match neither.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from pacs.evaluation import passk

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "explore_results.ipynb"
RUNS = ("base", "pacs", "grpo", "ppo")
SKILL = {"base": 0.2, "ppo": 0.3, "grpo": 0.35, "pacs": 0.4}
MODEL_BONUS = {"qwen3_4b": 0.0, "qwen3_8b": 0.45, "tiny": 0.1}
N_PROBLEMS, N_SAMPLES = 6, 8

INSPECT = r"""
import json
lines = []
for name, fig in FIGURES.items():
    for ax in fig.axes:
        for line in ax.get_lines():
            if not line.get_label().startswith("_"):
                lines.append({"figure": name, "title": ax.get_title(), "run": line.get_label(),
                              "x": [float(v) for v in line.get_xdata()],
                              "y": [float(v) for v in line.get_ydata()]})
print("LINES" + json.dumps(lines))
"""


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def correct_count(model: str, run: str, problem: int, step: int | None = None) -> int:
    """How many of a problem's N_SAMPLES are correct: grows with skill, model and step."""
    p = SKILL[run] + MODEL_BONUS[model] + (0.002 * step if step else 0.0)
    return max(0, min(N_SAMPLES, round(N_SAMPLES * p) + (problem % 3) - 1))


def benchmark_rows(benchmark: str) -> list[dict]:
    return [
        {
            "problem_id": f"{benchmark}/{i}",
            "benchmark": benchmark,
            "task": "math",
            "prompt": [
                {"role": "user", "content": f"Problem {i} of {benchmark}: what is {i}+{i}?"}
            ],
            "answer": str(2 * i),
            "problem": f"what is {i}+{i}?",
        }
        for i in range(N_PROBLEMS)
    ]


def graded_rows(benchmark: str, model: str, run: str, step: int | None = None) -> list[dict]:
    rows = []
    for i in range(N_PROBLEMS):
        c = correct_count(model, run, i, step)
        for j in range(N_SAMPLES):
            ok = j < c
            answer = str(2 * i) if ok else str(2 * i + 1 + j % 2)
            rows.append(
                {
                    "problem_id": f"{benchmark}/{i}",
                    "sample_idx": j,
                    "response": f"{model} {run} says \\boxed{{{answer}}}",
                    "finish_reason": "stop",
                    "n_tokens": 12,
                    "task": "math",
                    "score": float(ok),
                    "extracted": answer,
                    "status": "ok",
                }
            )
    return rows


def write_eval(
    folder: Path, benchmark: str, model: str, run: str, step: int | None = None, seed: int = 0
) -> None:
    """graded.jsonl and the passk.json / passk.csv that the passk stage makes from it."""
    write_jsonl(folder / "graded.jsonl", graded_rows(benchmark, model, run, step))
    doc, mean_ci = passk.compute(
        folder / "graded.jsonl", benchmark=benchmark, model=model, run=run, seed=seed, n_boot=20
    )
    (folder / "passk.json").write_text(json.dumps(doc))
    (folder / "passk.csv").write_text(
        ",".join(passk.CSV_HEADER)
        + "\n"
        + "".join(",".join(map(str, r)) + "\n" for r in passk.csv_rows(doc, mean_ci))
    )


def reward(model: str, run: str, seed: int, step: int) -> float:
    return round(SKILL[run] + MODEL_BONUS[model] + 0.001 * step + 0.01 * seed, 6)


def metrics_rows(model: str, run: str, seed: int, steps: int) -> list[dict]:
    t = {"time_generate": 1.0, "time_reward": 0.1, "time_reference": 0.2, "time_update": 0.5}
    return [
        {
            "step": s,
            "reward_mean": reward(model, run, seed, s),
            "mixed_frac": 0.5,
            "loss": 0.69 - 0.001 * s,
            "entropy": 1.0 - 0.002 * s + MODEL_BONUS[model],
            "grad_norm": 0.4,
            "response_len": 300.0,
            **t,
            "time_total": 1.9,
        }
        for s in range(1, steps + 1)
    ]


def build_paper_tree(root: Path) -> dict:
    steps = {"qwen3_4b": 40, "qwen3_8b": 80}
    benchmarks = ["aime24", "amc23"]
    for b in benchmarks:
        write_jsonl(root / "data" / "eval" / f"{b}.jsonl", benchmark_rows(b))
    for model, n_steps in steps.items():
        for run in RUNS:
            for b in benchmarks:
                write_eval(root / "eval" / model / run / "seed0" / b, b, model, run)
            if run == "base":
                continue
            write_jsonl(
                root / "train" / model / run / "seed0" / "metrics.jsonl",
                metrics_rows(model, run, 0, n_steps),
            )
            for step in range(20, n_steps + 1, 20):
                write_eval(
                    root / "curve" / model / run / "seed0" / f"step{step}" / "aime24",
                    "aime24",
                    model,
                    run,
                    step,
                )
    return {"models": list(steps), "steps": steps, "benchmarks": benchmarks}


def build_tiny_tree(root: Path) -> dict:
    write_jsonl(root / "data" / "synthetic" / "test.jsonl", benchmark_rows("synthetic"))
    for run in RUNS:
        seeds = [0] if run == "base" else [0, 1]
        for seed in seeds:
            write_eval(
                root / "eval" / "tiny" / run / f"seed{seed}" / "synthetic",
                "synthetic",
                "tiny",
                run,
                seed=seed,
            )
            if run == "base":
                continue
            train = root / "train" / "tiny" / run / f"seed{seed}"
            write_jsonl(train / "metrics.jsonl", metrics_rows("tiny", run, seed, 10))
            write_jsonl(
                train / "eval_curve.jsonl",
                [
                    {
                        "step": s,
                        "pass_at_1": SKILL[run] + 0.01 * s + 0.01 * seed,
                        "n_problems": N_PROBLEMS,
                        "n_samples": N_SAMPLES,
                    }
                    for s in (0, 5, 10)
                ],
            )
    return {"models": ["tiny"], "steps": {"tiny": 10}, "benchmarks": ["synthetic"]}


def execute(results: Path, monkeypatch) -> tuple[str, list[dict]]:
    """Run the notebook (plus one inspection cell) on ``results``; its text and drawn lines."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(INSPECT))
    monkeypatch.setenv("PACS_RESULTS", str(results))
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(results)}}
    ).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert not errors, "\n".join("\n".join(o["traceback"]) for o in errors)
    text = "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "") for o in outputs)
    lines = json.loads(text.split("LINES", 1)[1].splitlines()[0])
    return text, lines


def check_lines_are_per_model(lines: list[dict], models: list[str]) -> None:
    assert lines
    for line in lines:
        named = [m for m in models if m in line["title"]]
        assert len(named) == 1, f"panel {line['title']!r} should name exactly one model"
        assert all(a < b for a, b in zip(line["x"], line["x"][1:])), f"zig-zag line: {line}"


@pytest.mark.slow
def test_notebook_on_paper_shaped_results_is_model_aware(tmp_path, monkeypatch):
    shape = build_paper_tree(tmp_path / "results" / "paper")
    text, lines = execute(tmp_path / "results" / "paper", monkeypatch)
    check_lines_are_per_model(lines, shape["models"])
    for model in shape["models"]:
        # Training curves: every run's line spans this model's own steps, with its own values.
        for run in ("pacs", "grpo", "ppo"):
            (reward_line,) = [
                ln
                for ln in lines
                if ln["figure"] == f"training_{model}"
                and ln["run"] == run
                and "reward_mean" in ln["title"]
            ]
            assert reward_line["x"] == list(range(1, shape["steps"][model] + 1))
            assert reward_line["y"] == pytest.approx(
                [reward(model, run, 0, s) for s in range(1, shape["steps"][model] + 1)]
            )
            (fig3,) = [ln for ln in lines if ln["figure"] == f"fig3_{model}" and ln["run"] == run]
            assert fig3["x"] == list(range(20, shape["steps"][model] + 1, 20))
        # pass@k: this model's pass@1 (no average with the other model).
        for bench in shape["benchmarks"]:
            for run in RUNS:
                (pk,) = [
                    ln
                    for ln in lines
                    if ln["figure"] == f"passk_{model}"
                    and ln["run"] == run
                    and ln["title"].startswith(f"{model} — {bench}")
                ]
                doc = json.loads(
                    (
                        tmp_path
                        / "results"
                        / "paper"
                        / "eval"
                        / model
                        / run
                        / "seed0"
                        / bench
                        / "passk.json"
                    ).read_text()
                )
                assert pk["y"] == pytest.approx([e["value"] for e in doc["pass_at_k"]])
        assert f"{model} / aime24: pacs better on" in text
        assert f"MODEL: {model}   RUN: pacs" in text
    # The 8B model is much stronger: its PACS pass@1 line lies above the 4B one everywhere.
    p1 = {
        m: next(ln for ln in lines if ln["figure"] == f"fig3_{m}" and ln["run"] == "pacs")["y"]
        for m in shape["models"]
    }
    assert min(p1["qwen3_8b"]) > max(p1["qwen3_4b"])


@pytest.mark.slow
def test_notebook_on_tiny_shaped_results(tmp_path, monkeypatch):
    build_tiny_tree(tmp_path / "results" / "tiny")
    text, lines = execute(tmp_path / "results" / "tiny", monkeypatch)
    check_lines_are_per_model(lines, ["tiny"])
    (reward_line,) = [
        ln
        for ln in lines
        if ln["figure"] == "training_tiny" and ln["run"] == "pacs" and "reward_mean" in ln["title"]
    ]
    # Two seeds: the line is their mean per step.
    assert reward_line["y"] == pytest.approx(
        [(reward("tiny", "pacs", 0, s) + reward("tiny", "pacs", 1, s)) / 2 for s in range(1, 11)]
    )
    (curve,) = [ln for ln in lines if ln["figure"] == "fig3_tiny" and ln["run"] == "pacs"]
    assert curve["x"] == [0, 5, 10]
    assert "tiny / synthetic: pacs better on" in text and "PROMPT: Problem 0 of synthetic" in text
