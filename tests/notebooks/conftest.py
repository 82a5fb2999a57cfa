"""Render an executed notebook to HTML and open it in a real headless browser (Debian's Chromium).

Why the plain ``chromium`` command line and no driver (playwright, selenium): the checks need
the page's DOM after its scripts ran (``--dump-dom``) and a picture (``--screenshot``), both of
which the browser does by itself; a driver would add a package and a second browser download.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # fetch_widget_js, beside this file
from fetch_widget_js import default_dir

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--allow-file-access-from-files",
    "--hide-scrollbars",
    "--virtual-time-budget=30000",
)  # let require.js and the widget manager run
WIDTH = 1500


@pytest.fixture(scope="session")
def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("no chromium on PATH: `apt-get install -y chromium` (Debian; .ci/run does)")
    return path


@pytest.fixture(scope="session")
def widget_js() -> Path:
    folder = default_dir()
    if not all((folder / name).is_file() for name in ("require.js", "embed-amd.js")):
        pytest.skip(
            f"no widget scripts in {folder}: run `python tests/notebooks/fetch_widget_js.py`"
            " (npm; .ci/run does)"
        )
    return folder


def export_html(nb, widget_js: Path, out: Path) -> Path:
    """The lab-template HTML of an executed notebook, its widget state included, loading the
    widget scripts from ``widget_js`` instead of a CDN."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(
        template_name="lab",
        require_js_url=(widget_js / "require.js").as_uri(),
        widget_renderer_url=(widget_js / "embed-amd.js").as_uri(),
    )
    body, _ = exporter.from_notebook_node(nb)
    out.write_text(body, encoding="utf-8")
    return out


def browse(chromium: str, page: Path, tmp: Path, height: int = 8000) -> tuple[str, Path]:
    """Open ``page`` headless: its DOM after the scripts ran, and a screenshot of it."""

    def run(*extra: str) -> str:
        profile = tmp / f"chromium-profile-{len(list(tmp.glob('chromium-profile-*')))}"
        cmd = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra, page.as_uri()]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    dom = run("--dump-dom")
    shot = tmp / "notebook.png"
    run(f"--window-size={WIDTH},{height}", f"--screenshot={shot}")
    return dom, shot


class Elements(HTMLParser):
    """Elements of a DOM dump outside <script>: tag, attributes and the text inside."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[dict] = []
        self.open: list[dict] = []
        self.in_script = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self.in_script += 1
            return
        if self.in_script:
            return
        element = {"tag": tag, "attrs": dict(attrs), "text": ""}
        self.found.append(element)
        if tag not in ("img", "br", "input", "meta", "link", "hr"):
            self.open.append(element)

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self.in_script -= 1
        elif not self.in_script and self.open and tag == self.open[-1]["tag"]:
            self.open.pop()

    def handle_data(self, data):
        if not self.in_script:
            for element in self.open:
                element["text"] += data


def elements(dom: str) -> list[dict]:
    parser = Elements()
    parser.feed(dom)
    return parser.found


@pytest.fixture
def html_elements():
    """``f(html) -> elements``: a page's elements outside <script>, parsed without a browser."""
    return elements


@pytest.fixture
def open_in_browser(chromium, widget_js):
    """``f(executed_nb, folder) -> (elements, screenshot)``: export the notebook to
    ``folder/notebook.html``, open it headless, parse its DOM and keep a screenshot."""

    def run(nb, folder: Path):
        page = export_html(nb, widget_js, folder / "notebook.html")
        dom, shot = browse(chromium, page, folder)
        return elements(dom), shot

    return run
