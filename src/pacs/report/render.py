"""A table document (title, caption, sections, notes, tidy data) and its CSV, Markdown, LaTeX forms.

The Markdown and LaTeX writers are small and local on purpose: no optional pandas dependency
(tabulate, jinja2), and full control over escaping and footnotes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd


@dataclass
class Section:
    """One displayed table: a heading and a frame of display strings (first column = row label)."""

    heading: str
    frame: pd.DataFrame


@dataclass
class TableDoc:
    """Everything one report table writes: ``<stem>.csv`` (``data``), ``<stem>.md``,
    ``<stem>.tex``."""

    stem: str
    title: str
    caption: str
    sections: list[Section]
    data: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    description: str = ""


def to_csv(doc: TableDoc) -> str:
    """The tidy data, one row per number, floats at full precision."""
    return doc.data.to_csv(index=False, lineterminator="\n")


def _md_cell(value: object) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def frame_to_markdown(frame: pd.DataFrame) -> str:
    """A GitHub-style pipe table; the first column is left-aligned, the others right-aligned."""
    header = [_md_cell(c) for c in frame.columns]
    align = [":---"] + ["---:"] * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(_md_cell(v) for v in row) + " |")
    return "\n".join(lines)


def to_markdown(doc: TableDoc) -> str:
    parts = [f"# {doc.title}", "", doc.caption, ""]
    for section in doc.sections:
        if section.heading:
            parts += [f"## {section.heading}", ""]
        parts += [frame_to_markdown(section.frame), ""]
    if doc.notes:
        parts += ["Notes:", ""] + [f"- {note}" for note in doc.notes] + [""]
    return "\n".join(parts)


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "±": r"$\pm$",
    "†": r"$^\dagger$",
    "β": r"$\beta$",
    "ψ": r"$\psi$",
    "≡": r"$\equiv$",
    "≠": r"$\neq$",
    "≥": r"$\geq$",
    "≤": r"$\leq$",
    "×": r"$\times$",
    "–": "--",
    "—": "---",
    "σ": r"$\sigma$",
    "→": r"$\rightarrow$",
    "·": r"$\cdot$",
    "§": r"\S{}",
}


def latex_escape(text: object) -> str:
    """Escape LaTeX specials and map the few non-ASCII symbols the report uses to math mode."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))


WIDE_COLUMNS = 8  # wider tables are scaled to the line width (needs graphicx)


def frame_to_latex(frame: pd.DataFrame) -> str:
    """A booktabs tabular (needs ``\\usepackage{booktabs}``), scaled down when it is wide."""
    spec = "l" + "r" * (len(frame.columns) - 1)
    lines = [
        rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        " & ".join(latex_escape(c) for c in frame.columns) + r" \\",
        r"\midrule",
    ]
    for row in frame.itertuples(index=False):
        lines.append(" & ".join(latex_escape(v) for v in row) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    if len(frame.columns) > WIDE_COLUMNS:
        lines = [r"\resizebox{\linewidth}{!}{%", *lines, "}"]
    return "\n".join(lines)


def to_latex(doc: TableDoc) -> str:
    """One ``table`` float per section; caption = title, section heading and caption text."""
    out = [
        (
            f"% {doc.title} -- written by python -m pacs.report; needs "
            f"\\usepackage{{booktabs,graphicx}}"
        ),
        "",
    ]
    for i, section in enumerate(doc.sections):
        caption = (
            doc.title + (f" -- {section.heading}" if section.heading else "") + ". " + doc.caption
        )
        out += [
            r"\begin{table}[htbp]",
            r"\centering",
            r"\small",
            rf"\caption{{{latex_escape(caption)}}}",
            rf"\label{{tab:{doc.stem.replace('_', '-')}-{i + 1}}}",
            frame_to_latex(section.frame),
        ]
        if doc.notes:
            out += [r"\par\smallskip\footnotesize", r"\begin{minipage}{0.95\linewidth}"]
            out += [latex_escape(note) + r"\par" for note in doc.notes]
            out += [r"\end{minipage}"]
        out += [r"\end{table}", ""]
    return "\n".join(out)
