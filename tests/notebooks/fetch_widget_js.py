"""Put the two scripts an exported notebook needs to draw its widgets offline into a folder.

nbconvert's HTML loads require.js and @jupyter-widgets/html-manager's ``embed-amd.js`` from CDNs;
the headless-browser test (test_explore_notebook.py) points the export at local copies instead,
so it runs without internet. This fetches pinned versions with ``npm pack`` (npm checks the
registry's integrity hash) and keeps the two files:

    python tests/notebooks/fetch_widget_js.py [DIR]     # default: $PACS_WIDGET_JS or
    ~/.cache/pacs/widget-js
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

# html-manager 1.0.x renders ipywidgets 8 state; requirejs loads it (nbconvert's lab template).
PACKAGES = {
    "@jupyter-widgets/html-manager@1.0.15": ("package/dist/embed-amd.js", "embed-amd.js"),
    "requirejs@2.3.8": ("package/require.js", "require.js"),
}


def default_dir() -> Path:
    return Path(os.environ.get("PACS_WIDGET_JS", Path.home() / ".cache" / "pacs" / "widget-js"))


def fetch(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for spec, (member, name) in PACKAGES.items():
            out = subprocess.run(
                ["npm", "pack", spec, "--silent"],
                cwd=tmp,
                check=True,
                capture_output=True,
                text=True,
            ).stdout.split()[-1]
            with tarfile.open(Path(tmp) / out) as tar:
                source = tar.extractfile(member)
                with open(folder / f".{name}.tmp", "wb") as fh:
                    shutil.copyfileobj(source, fh)
            os.replace(folder / f".{name}.tmp", folder / name)
    print(f"widget scripts in {folder}: {sorted(p.name for p in folder.iterdir())}")


if __name__ == "__main__":
    fetch(Path(sys.argv[1]) if len(sys.argv) > 1 else default_dir())
