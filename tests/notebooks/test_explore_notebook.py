"""notebooks/explore_results.ipynb, executed with nbclient on fabricated results trees, and its
HTML export opened in a headless browser.

Three shapes, all written with the real file formats of docs/formats.md (passk.json is made by
``pacs.evaluation.passk`` itself from the graded samples):

- paper-shaped: two models (qwen3_4b with 40 steps, qwen3_8b with 80), checkpoint curves under
  ``curve/``, math benchmarks under ``data/eval/``;
- tiny-shaped: one model, the synthetic task, two seeds, ``eval_curve.jsonl``;
- the report tests' tree (tests/report/conftest.py): every ablation, no graded samples.

The 8B numbers are far from the 4B ones and the two models train for different numbers of steps,
so a line that mixed models would zig-zag in x and an average across models would match neither.
"""

from __future__ import annotations

import base64
import importlib.util
import io
import json
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from nbclient import NotebookClient

from pacs.evaluation import passk
from pacs.explore import SMOOTHING

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
    title = fig._suptitle.get_text() if fig._suptitle else ""
    for ax in fig.axes:
        for line in ax.get_lines():
            if line.get_gid():
                lines.append({"figure": name, "suptitle": title, "title": ax.get_title(),
                              "ylabel": ax.get_ylabel(), "run": line.get_gid(),
                              "x": [float(v) for v in line.get_xdata()],
                              "y": [float(v) for v in line.get_ydata()]})
print("LINES" + json.dumps(lines))
print("FIGURES" + json.dumps(list(FIGURES)))
print("BROWSER" + json.dumps(browser.page_html.value))
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


def reward_value(model: str, run: str, seed: int, step: int) -> float:
    return round(SKILL[run] + MODEL_BONUS[model] + 0.001 * step + 0.01 * seed, 6)


def metrics_rows(model: str, run: str, seed: int, steps: int) -> list[dict]:
    t = {"time_generate": 1.0, "time_reward": 0.1, "time_reference": 0.2, "time_update": 0.5}
    return [
        {
            "step": s,
            "reward_mean": reward_value(model, run, seed, s),
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


def execute(results: Path, monkeypatch) -> tuple[object, str, dict]:
    """Run the notebook (plus one inspection cell) on ``results``: the executed notebook (without
    that cell), its text output, and what the inspection found."""
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
    found = {
        key: json.loads(text.split(key, 1)[1].splitlines()[0])
        for key in ("LINES", "FIGURES", "BROWSER")
    }
    nb.cells.pop()
    return nb, text, found


def with_class(found: list[dict], name: str) -> list[dict]:
    return [e for e in found if name in (e["attrs"].get("class") or "").split()]


def ewm(values) -> list[float]:
    """TensorBoard's debiased EMA = pandas' adjusted exponential mean with alpha = 1 - weight."""
    return list(pd.Series(values, dtype=float).ewm(alpha=1 - SMOOTHING, adjust=True).mean())


def check_lines_are_per_model(lines: list[dict], models: list[str]) -> None:
    assert lines
    for line in lines:
        named = [m for m in models if line["suptitle"].startswith(f"{m}:")]
        assert len(named) == 1, f"figure {line['suptitle']!r} should name exactly one model"
        assert line["figure"].endswith(named[0])
        assert all(a < b for a, b in zip(line["x"], line["x"][1:])), f"zig-zag line: {line}"


def pick(
    lines: list[dict], figure: str, run: str, ylabel: str | None = None, title: str | None = None
) -> dict:
    (line,) = [
        ln
        for ln in lines
        if ln["figure"] == figure
        and ln["run"] == run
        and (ylabel is None or ln["ylabel"] == ylabel)
        and (title is None or title in ln["title"])
    ]
    return line


def paper_number(model: str, method: str, benchmark: str, k: int, tables: list[str]) -> float:
    """The paper's pass@k in paper_numbers.csv, read with plain pandas (first listed table wins)."""
    csv = pd.read_csv(REPO / "src" / "pacs" / "report" / "paper_numbers.csv")
    hit = csv[
        (csv.model == model)
        & (csv.method == method)
        & (csv.benchmark == benchmark)
        & (csv.metric == "pass_at_k")
        & (csv.k == k)
    ]
    for table in tables:
        if (hit.table == table).any():
            return float(hit[hit.table == table].value.iloc[0])
    raise AssertionError(f"no paper number for {model} {method} {benchmark} k={k}")


@pytest.mark.slow
def test_notebook_on_paper_shaped_results_is_model_aware(tmp_path, monkeypatch):
    root = tmp_path / "results" / "paper"
    shape = build_paper_tree(root)
    _, text, found = execute(root, monkeypatch)
    lines = found["LINES"]
    check_lines_are_per_model(lines, shape["models"])
    for model in shape["models"]:
        steps = list(range(1, shape["steps"][model] + 1))
        for run in ("pacs", "grpo", "ppo"):
            # Training curves: the main family's panel, this model's own steps, smoothed values.
            reward = pick(lines, f"training_{model}", run, ylabel="train/reward_mean")
            assert reward["x"] == steps
            assert reward["y"] == pytest.approx(
                ewm([reward_value(model, run, 0, s) for s in steps])
            )
            fig3 = pick(lines, f"fig3_{model}", run, ylabel="pass@1 (%)")
            assert fig3["x"] == list(range(20, shape["steps"][model] + 1, 20))
        # The loss: PACS's BCE and the surrogates never share a panel.
        loss_titles = {ln["run"]: ln["title"] for ln in lines if ln["figure"] == f"loss_{model}"}
        assert loss_titles["pacs"].startswith("PACS") and loss_titles["grpo"].startswith("GRPO")
        assert loss_titles["grpo"] == loss_titles["ppo"]
        for bench in shape["benchmarks"]:
            for run in RUNS:
                pk = pick(lines, f"passk_{model}", run, title=bench.upper())
                doc = json.loads(
                    (root / "eval" / model / run / "seed0" / bench / "passk.json").read_text()
                )
                assert pk["y"] == pytest.approx([100 * e["value"] for e in doc["pass_at_k"]])
        # The paper's own pass@k beside ours (the paper profile compares like with like).
        paper = {"qwen3_4b": "Qwen3-4B", "qwen3_8b": "Qwen3-8B"}[model]
        cross = pick(lines, f"passk_{model}", "paper:pacs", title="AIME24")
        assert cross["x"][0] == 1 and cross["y"][0] == pytest.approx(
            paper_number(paper, "pacs", "aime24", 1, ["Table 2", "Table 6", "Table 7", "Table 8"])
        )
        assert f"{model} / aime24: pacs better on" in text and "sign test p =" in text
    # The 8B model is much stronger: its PACS pass@1 line lies above the 4B one everywhere.
    p1 = {m: pick(lines, f"fig3_{m}", "pacs", ylabel="pass@1 (%)")["y"] for m in shape["models"]}
    assert min(p1["qwen3_8b"]) > max(p1["qwen3_4b"])
    assert "qwen3_4b · aime24 · pacs seed 0" in found["BROWSER"]


def report_tree(root: Path) -> Path:
    """The report tests' fabricated tree (tests/report/conftest.py)."""
    spec = importlib.util.spec_from_file_location(
        "report_tree", REPO / "tests" / "report" / "conftest.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_results(root)


@pytest.mark.slow
def test_notebook_on_the_report_tests_tree_draws_every_family(tmp_path, monkeypatch):
    root = report_tree(tmp_path / "results" / "tiny")
    _, text, found = execute(root, monkeypatch)
    lines = found["LINES"]
    check_lines_are_per_model(lines, ["tiny"])
    titles = {ln["title"].split("\n")[0] for ln in lines if ln["figure"] == "training_tiny"}
    assert titles >= {
        "PACS vs GRPO vs PPO",
        "class weights (PACS ablation)",
        "score function (PACS ablation)",
        "β (PACS ablation)",
    }
    # Each ablation panel holds PACS and its variant only: no spaghetti.
    beta = {
        ln["run"] for ln in lines if ln["figure"] == "training_tiny" and ln["title"].startswith("β")
    }
    assert beta == {"pacs", "pacs_beta2"}
    assert "no graded samples of both pacs and grpo" in text
    assert "No graded samples" in found["BROWSER"]


@pytest.mark.slow
def test_notebook_on_tiny_shaped_results_renders_in_a_browser(
    tmp_path, monkeypatch, open_in_browser
):
    root = tmp_path / "results" / "tiny"
    build_tiny_tree(root)
    nb, text, found = execute(root, monkeypatch)
    lines = found["LINES"]
    check_lines_are_per_model(lines, ["tiny"])
    # Two seeds: each seed smoothed, then averaged per step.
    reward = pick(lines, "training_tiny", "pacs", ylabel="train/reward_mean")
    seeds = [ewm([reward_value("tiny", "pacs", seed, s) for s in range(1, 11)]) for seed in (0, 1)]
    assert reward["y"] == pytest.approx([(a + b) / 2 for a, b in zip(*seeds)])
    assert pick(lines, "fig3_tiny", "pacs", ylabel="pass@1 (%)")["x"] == [0, 5, 10]
    assert "tiny / synthetic: pacs better on" in text
    assert "Problem 0 of synthetic" in found["BROWSER"]

    found_elements, shot = open_in_browser(nb, tmp_path)  # the screenshot stays in tmp_path
    pngs = [
        e
        for e in found_elements
        if e["tag"] == "img" and e["attrs"].get("src", "").startswith("data:image/png;base64,")
    ]
    assert len(pngs) == len(found["FIGURES"]) >= 5  # pass@k, training, loss, Fig. 3, wins
    from PIL import Image

    for img in pngs:
        data = base64.b64decode(img["attrs"]["src"].split(",", 1)[1])
        assert min(Image.open(io.BytesIO(data)).size) > 200
    # The browser widget, drawn by the widget manager from the saved state (not the state's JSON):
    # Two copies of the page: the widget's, and the static one for offline readers (hidden by
    # the widget's style rule, so a reader sees one).
    live, static = with_class(found_elements, "pacs-browser-page")
    for browser_page in (live, static):
        assert "tiny · synthetic · pacs seed 0 — page 1 of" in browser_page["text"]
        assert "Problem 0 of synthetic" in browser_page["text"]
    assert len(with_class(found_elements, "pacs-response")) == 2 * 4
    assert len(with_class(found_elements, "widget-dropdown")) >= 4
    picture = Image.open(shot).convert("L")
    assert picture.size[0] > 1000 and picture.getextrema()[0] < 100  # not a blank page


@pytest.mark.slow
def test_the_html_export_shows_the_browsers_first_page_offline(
    tmp_path, monkeypatch, html_elements
):
    """nbconvert's export loads the widget script from a CDN; offline no script runs, so what a
    reader sees is the HTML outside <script>: the static copy, with nothing hiding it."""
    import re

    from nbconvert import HTMLExporter

    from pacs.explore.browser import HIDE_STATIC, STATIC_CLASS

    root = tmp_path / "results" / "tiny"
    build_tiny_tree(root)
    nb, _, _ = execute(root, monkeypatch)
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    assert "unpkg.com" in body  # the widget script would come from the CDN
    offline = re.sub(r"<script\b.*?</script>", "", body, flags=re.DOTALL)
    (static,) = with_class(html_elements(offline), STATIC_CLASS)
    assert "tiny · synthetic · pacs seed 0 — page 1 of" in static["text"]
    assert "Problem 0 of synthetic" in static["text"]
    assert HIDE_STATIC not in offline  # only the live page, inside the widget state, hides it
    state = re.search(
        r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>', body, re.DOTALL
    )
    values = [m["state"].get("value") for m in json.loads(state.group(1))["state"].values()]
    assert any(isinstance(v, str) and v.startswith(HIDE_STATIC) for v in values)


def test_displaying_the_browser_shows_the_widget_and_a_static_copy_it_hides(tmp_path, monkeypatch):
    from IPython import display as ipython_display

    from pacs.explore.browser import HIDE_STATIC, STATIC_CLASS, ResponseBrowser

    root = tmp_path / "results" / "tiny"
    build_tiny_tree(root)
    browser = ResponseBrowser(root)
    shown = []
    monkeypatch.setattr(ipython_display, "display", lambda *objs: shown.extend(objs))
    browser._ipython_display_()
    static, widget = shown
    assert widget is browser.widget
    assert static.data.startswith(f'<div class="{STATIC_CLASS}">')
    assert "Problem 0 of synthetic" in static.data and HIDE_STATIC not in static.data
    assert browser.page_html.value.startswith(HIDE_STATIC)  # the live page hides the copy
    assert browser.page_html.value[len(HIDE_STATIC) :] in static.data


def test_overview_lists_seed_ids_so_seed_0_does_not_read_as_none(tmp_path):
    from pacs import explore

    root = tmp_path / "results" / "tiny"
    build_tiny_tree(root)
    table = explore.overview(explore.open_profile(root))
    assert table.loc[("tiny", "base"), "evaluated"] == "seed 0"
    assert table.loc[("tiny", "base"), "trained"] == "—"
    assert table.loc[("tiny", "pacs"), "trained"] == "seeds 0, 1"
    assert table.loc[("tiny", "pacs"), "steps"] == "10"
