"""Every file the report writes goes through :class:`OutputLog`: atomic, and remembered for the
README.

The README is generated from the list of files actually written, plus the tables and figures
that were not produced and why. Files from an earlier report run that this run did not write
(under ``tables/`` and ``figures/``) are removed, so the folder never shows stale results.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pacs.io import atomic_open, atomic_path

from .render import TableDoc, to_csv, to_latex, to_markdown

OWNED_DIRS = ("tables", "figures")
OWNED_SUFFIXES = (".csv", ".md", ".tex", ".png", ".pdf")
FIGURE_FORMATS = ("png", "pdf")


@dataclass
class OutputLog:
    out: Path
    written: list[tuple[str, str]] = field(default_factory=list)  # (relative path, description)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (name, reason)
    removed: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        self.out.mkdir(parents=True, exist_ok=True)

    def write_text(self, rel: str, text: str, description: str) -> Path:
        path = self.out / rel
        with atomic_open(path) as fh:
            fh.write(text)
        self.written.append((rel, description))
        return path

    def write_table(self, doc: TableDoc) -> None:
        """``tables/<stem>.csv``, ``.md`` and ``.tex``."""
        what = doc.description or doc.title
        self.write_text(f"tables/{doc.stem}.csv", to_csv(doc), f"{what} (tidy data, CSV)")
        self.write_text(f"tables/{doc.stem}.md", to_markdown(doc), f"{what} (Markdown)")
        self.write_text(f"tables/{doc.stem}.tex", to_latex(doc), f"{what} (LaTeX, booktabs)")

    def save_figure(self, fig, stem: str, description: str) -> None:
        """``figures/<stem>.png`` and ``.pdf``, each written to a temporary name and renamed."""
        import matplotlib.pyplot as plt

        folder = self.out / "figures"
        folder.mkdir(parents=True, exist_ok=True)
        try:
            for fmt in FIGURE_FORMATS:
                path = folder / f"{stem}.{fmt}"
                with atomic_path(path) as tmp:
                    fig.savefig(tmp, format=fmt)
                self.written.append((f"figures/{path.name}", f"{description} ({fmt.upper()})"))
        finally:
            plt.close(fig)

    def skip(self, name: str, reason: str) -> None:
        self.skipped.append((name, reason))

    def remove_stale(self) -> None:
        """Delete report outputs under ``tables/`` and ``figures/`` that this run did not write."""
        keep = {rel for rel, _ in self.written}
        for sub in OWNED_DIRS:
            for path in sorted((self.out / sub).glob("*")):
                rel = f"{sub}/{path.name}"
                if path.is_file() and path.suffix in OWNED_SUFFIXES and rel not in keep:
                    path.unlink()
                    self.removed.append(rel)

    def write_readme(self, header: list[str]) -> None:
        """``README.md``: the header, every file written (itself included), what was not
        produced."""
        lines = [*header, "", "## Files", "", "| file | what it is |", "|:---|:---|"]
        entries = [*self.written, ("README.md", "this list, generated from the files written")]
        for rel, description in sorted(entries):
            lines.append(f"| `{rel}` | {description.replace('|', '/')} |")
        lines += ["", "## Not produced", ""]
        if self.skipped:
            lines += [f"- not produced: {name}: {reason}" for name, reason in self.skipped]
        else:
            lines.append("- (everything was produced)")
        if self.removed:
            lines += [
                "",
                "Removed stale outputs of an earlier run: "
                + ", ".join(f"`{r}`" for r in self.removed),
            ]
        with atomic_open(self.out / "README.md") as fh:
            fh.write("\n".join(lines) + "\n")
