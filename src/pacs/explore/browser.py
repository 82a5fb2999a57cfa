"""The response browser of ``notebooks/explore_results.ipynb``: graded responses, page by page.

Filters: model, benchmark, method (run and seed), problem, and correct / wrong. Each response shows
its verdict, the answer the grader extracted beside the gold answer, and the last ``\\boxed{}`` of
the text as the grader reads it (:func:`pacs.rewards.math.extract_boxed`), highlighted in the
response. The page is one ``ipywidgets.HTML``, so a notebook saved with its widget state keeps
the first page.

An HTML export draws widgets with a script from a CDN, so read offline its browser would be
blank. Displaying a :class:`ResponseBrowser` therefore also shows a static copy of the first page,
and the live page carries a style rule that hides that copy: wherever the widget is drawn (a
kernel, an export online) one page shows; where it cannot be, the copy is what the reader sees.
"""

from __future__ import annotations

import html
import math
from pathlib import Path

import pandas as pd

from pacs import layout
from pacs.evaluation.io import iter_jsonl
from pacs.layout import ANY
from pacs.rewards.math import extract_boxed

PER_PAGE = 4
VERDICT = {"all": None, "correct": True, "wrong": False}
ALL_PROBLEMS = ""  # the problem filter's "all problems" value (a None value shows as blank)
STATIC_CLASS = "pacs-browser-static"
HIDE_STATIC = f"<style>.{STATIC_CLASS} {{display: none}}</style>"  # in the live page only
GRADED_FILES = f"{layout.eval_dir('', ANY, ANY, ANY, ANY)}/graded.jsonl"
CSS = """<style>
.pacs-browser-page {font-family: sans-serif; font-size: 13px; max-width: 1000px}
.pacs-response {border: 1px solid #ddd; border-radius: 6px; margin: 8px 0; padding: 6px 10px}
.pacs-response.ok {border-left: 5px solid #2e7d32}
.pacs-response.bad {border-left: 5px solid #c62828}
.pacs-head {color: #444; margin-bottom: 4px} .pacs-head b {color: #000}
.pacs-response pre {white-space: pre-wrap; margin: 4px 0; font-size: 12px; background: #fafafa}
.pacs-response mark {background: #fff2a8}
</style>"""


def graded_files(root: str | Path) -> pd.DataFrame:
    """Every graded.jsonl under ``root/eval``: columns model, run, seed, benchmark, path."""
    rows = []
    for path in sorted(Path(root).glob(GRADED_FILES)):
        model, run, seed_dir, bench = path.relative_to(root).parts[1:5]
        rows.append(
            {
                "model": model,
                "run": run,
                "seed": int(seed_dir[4:]),
                "benchmark": bench,
                "path": path,
            }
        )
    return pd.DataFrame(rows, columns=["model", "run", "seed", "benchmark", "path"])


def load_graded(path: str | Path) -> pd.DataFrame:
    """The graded samples of one file, with the box the text ends in and a correct flag."""
    frame = pd.DataFrame([row for _, row in iter_jsonl(path)])
    frame["box"] = frame.response.map(last_box)
    frame["correct"] = frame.score >= 0.5
    return frame.sort_values(["problem_id", "sample_idx"]).reset_index(drop=True)


def load_problems(root: str | Path, benchmark: str) -> dict[str, dict]:
    """problem_id -> the benchmark row (prompt, answer); empty when the file is not in the tree."""
    path = Path(layout.benchmark_file(root, benchmark))
    return {row["problem_id"]: row for _, row in iter_jsonl(path)} if path.is_file() else {}


def select(
    graded: pd.DataFrame, problem_id: str | None = None, correct: bool | None = None
) -> pd.DataFrame:
    """The rows of one problem (None: all) that are correct, wrong or either (None)."""
    keep = pd.Series(True, index=graded.index)
    if problem_id not in (None, ALL_PROBLEMS):
        keep &= graded.problem_id == problem_id
    if correct is not None:
        keep &= graded.correct == correct
    return graded[keep]


def last_box(text: object) -> str | None:
    """The content of the box the grader reads (the last ``\\boxed{}`` / ``\\fbox{}``), or None."""
    return extract_boxed(text) if isinstance(text, str) else None


def answer_span(text: str) -> tuple[int, int] | None:
    """(start, end) in ``text`` of the box the grader reads, or None when it reads none. Found
    with the grader's own extraction, so the mark never disagrees with it: the box starts at the
    last backslash from which the grader still finds an answer, and ends where the shortest text
    from there holds the whole answer."""
    answer = extract_boxed(text)
    if answer is None:
        return None
    backslashes = (i for i in range(len(text) - 1, -1, -1) if text[i] == "\\")
    start = next(i for i in backslashes if extract_boxed(text[i:]) is not None)
    ends = range(start + len(answer) + 1, len(text) + 1)
    return start, next(e for e in ends if extract_boxed(text[start:e]) == answer)


def highlight_answer(text: str) -> str:
    """HTML-escaped ``text`` with the box the grader reads wrapped in <mark>."""
    span = answer_span(text)
    if span is None:
        return html.escape(text)
    start, end = span
    marked = f"<mark>{html.escape(text[start:end])}</mark>"
    return html.escape(text[:start]) + marked + html.escape(text[end:])


def _text(value) -> str:
    """A field for display: missing (None, NaN) as an em dash, escaped otherwise."""
    return (
        "—"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else html.escape(str(value))
    )


def response_card(row: pd.Series, problem: dict | None) -> str:
    gold = problem.get("answer") if problem else None
    verdict = "✓ correct" if row.correct else "✗ wrong"
    prompt = problem["prompt"][-1]["content"] if problem and problem.get("prompt") else None
    head = (
        f"<b>{html.escape(str(row.problem_id))}</b> · sample {int(row.sample_idx)} · "
        f"<b>{verdict}</b> (score {row.score:g}, {_text(row.get('status'))}) · "
        f"graded answer <b>{_text(row.get('extracted'))}</b> vs gold <b>{_text(gold)}</b> · "
        f"last box <b>{_text(row.box)}</b>"
    )
    ask = (
        f"<details><summary>prompt</summary><pre>{html.escape(prompt)}</pre></details>"
        if prompt
        else ""
    )
    return (
        f'<div class="pacs-response {"ok" if row.correct else "bad"}">'
        f'<div class="pacs-head">{head}</div>{ask}<pre>{highlight_answer(str(row.response))}</pre>'
        "</div>"
    )


def render_page(
    rows: pd.DataFrame,
    problems: dict[str, dict],
    page: int = 0,
    per_page: int = PER_PAGE,
    title: str = "",
) -> str:
    """One page (0-based) of ``rows`` as HTML, with a line saying where it is."""
    pages = max(1, -(-len(rows) // per_page))
    page = min(max(page, 0), pages - 1)
    shown = rows.iloc[page * per_page : (page + 1) * per_page]
    cards = "".join(response_card(r, problems.get(r.problem_id)) for _, r in shown.iterrows())
    where = (
        f"{html.escape(title)} — page {page + 1} of {pages}, responses "
        f"{page * per_page + 1 if len(rows) else 0}–{page * per_page + len(shown)} of {len(rows)}"
    )
    empty = "" if len(rows) else "<p>No response matches these filters.</p>"
    return f'{CSS}<div class="pacs-browser-page"><p>{where}</p>{cards}{empty}</div>'


class ResponseBrowser:
    """Dropdowns and buttons around one HTML page of graded responses; display ``.widget``.

    Options cascade: the model picks the benchmarks it was evaluated on, the benchmark the
    (run, seed) pairs, and those the problems (listed with their correct count).
    """

    def __init__(self, root: str | Path, run: str = "pacs", per_page: int = PER_PAGE):
        import ipywidgets as w

        self.root, self.per_page, self.page, self.busy = Path(root), per_page, 0, False
        self.files, self.cache = graded_files(root), {}
        self.preferred_run = run
        layout = w.Layout(width="auto")
        self.model = w.Dropdown(description="model", options=sorted(set(self.files.model)))
        self.benchmark = w.Dropdown(description="benchmark")
        self.method = w.Dropdown(description="method")
        self.problem = w.Dropdown(description="problem", layout=w.Layout(width="420px"))
        self.verdict = w.ToggleButtons(
            options=list(VERDICT), layout=layout, style={"button_width": "80px"}
        )
        self.prev = w.Button(description="◀ previous page")
        self.next = w.Button(description="next page ▶")
        self.page_html = w.HTML()
        for control in (self.model, self.benchmark, self.method, self.problem, self.verdict):
            control.observe(self.on_filter, names="value")
        self.prev.on_click(lambda _: self.turn(-1))
        self.next.on_click(lambda _: self.turn(+1))
        self.widget = w.VBox(
            [
                w.HBox([self.model, self.benchmark, self.method]),
                w.HBox([self.problem, w.Label("show"), self.verdict]),
                w.HBox([self.prev, self.next]),
                self.page_html,
            ]
        )
        self.on_filter()

    def static_copy(self) -> str:
        """The page shown now, as HTML that needs no widget script, labelled as a copy."""
        note = (
            "<p><i>A static copy of the response browser's first page (the interactive "
            "browser needs a running kernel, or its widget script, to be drawn).</i></p>"
        )
        page = self.page_html.value.replace(HIDE_STATIC, "")
        return f'<div class="{STATIC_CLASS}">{note}{page}</div>'

    def _ipython_display_(self) -> None:
        from IPython.display import HTML, display

        display(HTML(self.static_copy()), self.widget)

    def on_filter(self, _change=None) -> None:
        if self.busy:  # options being reset below fire their own events
            return
        self.busy = True
        try:
            self.sync_options()
            self.page = 0
            self.render()
        finally:
            self.busy = False

    def turn(self, delta: int) -> None:
        self.page += delta
        self.render()

    def sync_options(self) -> None:
        f = self.files[self.files.model == self.model.value]
        _set_options(self.benchmark, sorted(set(f.benchmark)))
        f = f[f.benchmark == self.benchmark.value].sort_values(["run", "seed"])
        pairs = [(f"{r.run} · seed {r.seed}", (r.run, r.seed)) for r in f.itertuples()]
        _set_options(self.method, pairs, prefer=(self.preferred_run, 0))
        graded = self.graded()
        counts = (
            graded.groupby("problem_id").correct.agg(["sum", "count"])
            if graded is not None
            else pd.DataFrame(columns=["sum", "count"])
        )
        problems = [("all problems", ALL_PROBLEMS)] + [
            (f"{pid} ({int(c['sum'])}/{int(c['count'])} correct)", pid)
            for pid, c in counts.iterrows()
        ]
        _set_options(self.problem, problems)

    def graded(self) -> pd.DataFrame | None:
        if self.method.value is None:
            return None
        run, seed = self.method.value
        f = self.files
        hit = f[
            (f.model == self.model.value)
            & (f.benchmark == self.benchmark.value)
            & (f.run == run)
            & (f.seed == seed)
        ]
        if hit.empty:
            return None
        path = hit.path.iloc[0]
        if path not in self.cache:
            self.cache[path] = load_graded(path)
        return self.cache[path]

    def render(self) -> None:
        graded = self.graded()
        if graded is None:
            self.page_html.value = f"{HIDE_STATIC}<p>No graded samples ({GRADED_FILES}) here.</p>"
            return
        rows = select(graded, self.problem.value, VERDICT[self.verdict.value])
        pages = max(1, -(-len(rows) // self.per_page))
        self.page = min(max(self.page, 0), pages - 1)
        run, seed = self.method.value
        title = f"{self.model.value} · {self.benchmark.value} · {run} seed {seed}"
        problems = load_problems(self.root, self.benchmark.value)
        page = render_page(rows, problems, self.page, self.per_page, title)
        self.page_html.value = HIDE_STATIC + page


def _set_options(dropdown, options: list, prefer=None) -> None:
    """New options for a dropdown, keeping its value when still offered (else ``prefer``, else the
    first option)."""
    values = [o[1] if isinstance(o, tuple) else o for o in options]
    keep = dropdown.value if dropdown.value in values else prefer if prefer in values else None
    dropdown.options = options
    dropdown.value = keep if keep in values else (values[0] if values else None)
