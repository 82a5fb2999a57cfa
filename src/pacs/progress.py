"""What the stages print while they work: one tqdm bar per long step, saying what it counts, and
no bar per model load or save.

A Snakemake rule sends a stage's stdout and stderr to its log, so a bar there is invisible to the
person who typed ``make reproduce``. :class:`ConsoleBar` is a tqdm bar in the log that also writes
one plain line to that person's terminal every ``CONSOLE_EVERY_S`` seconds (whole lines: two jobs
running side by side never overwrite each other's). ``PACS_CONSOLE_PROGRESS=0`` turns the lines off.

transformers 5 draws a "Loading weights" tqdm bar on every ``from_pretrained`` and a "Writing model
shards" bar on every ``save_pretrained``; in a stage's log (stderr redirected to a file) each is a
block of carriage-return lines around the bar that matters. :func:`quiet_transformers` turns
transformers' (and huggingface_hub's) bars off for the duration of a load or save only; warnings
go through ``logging`` and still print.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from tqdm import tqdm

# For processes we do not call into (verl's Ray workers): transformers reads it at import.
NO_PROGRESS_BARS_ENV = {"HF_HUB_DISABLE_PROGRESS_BARS": "1"}

CONSOLE_ENV = "PACS_CONSOLE_PROGRESS"  # "0": no lines on the terminal
CONSOLE_FD_ENV = "PACS_CONSOLE_FD"  # the Snakefile's descriptor for Snakemake's own stdout
CONSOLE_EVERY_S = 30.0  # a step shorter than this prints nothing on the terminal
CONSOLE_FORMAT = (
    "[pacs] {desc}: {n_fmt}/{total_fmt} {unit} ({percentage:.0f}%), "
    "{elapsed} elapsed, ~{remaining} left{postfix}"
)
CONSOLE_FORMAT_NO_TOTAL = "[pacs] {desc}: {n_fmt} {unit}, {elapsed} elapsed{postfix}"


def open_console() -> IO[str] | None:
    """Where the person who started the run reads, when stderr goes elsewhere (a rule's log):
    Snakemake's own stdout, which the Snakefile hands every rule's shell as the descriptor named
    by ``PACS_CONSOLE_FD`` (a terminal, or CI's log: no terminal needed), else the controlling
    terminal; None when there is neither."""
    if os.environ.get(CONSOLE_ENV, "1") == "0" or sys.stderr.isatty():
        return None
    try:
        return os.fdopen(os.dup(int(os.environ[CONSOLE_FD_ENV])), "w")  # closed by ConsoleBar
    except (KeyError, ValueError, OSError):  # unset, not a number, or not open here
        pass
    try:
        return open("/dev/tty", "w")  # closed by ConsoleBar.close()
    except OSError:  # no controlling terminal: CI, a batch job
        return None


class ConsoleBar(tqdm):
    """``tqdm`` (on stderr, the stage's log) plus a line on the console every ``every_s`` seconds
    and a last one when it closes, for steps long enough to have printed one.

    ``console``: where the lines go (default :func:`open_console`; None there: no lines)."""

    def __init__(
        self,
        *args: Any,
        console: IO[str] | None = None,
        every_s: float = CONSOLE_EVERY_S,
        **kwargs: Any,
    ):
        self._console = console if console is not None else open_console()
        self._owns_console = console is None and self._console is not None
        self._every_s = every_s
        self._last_time = time.monotonic()
        self._last_line = ""
        super().__init__(*args, **kwargs)

    def console_line(self) -> str:
        """The bar as one line of text, without the bar graphic."""
        line = CONSOLE_FORMAT if self.total else CONSOLE_FORMAT_NO_TOTAL
        return self.format_meter(**{**self.format_dict, "bar_format": line})

    def display(self, msg: str | None = None, pos: int | None = None) -> bool | None:
        shown = super().display(msg, pos)
        if self._console is not None and time.monotonic() - self._last_time >= self._every_s:
            self._write_line()
        return shown

    def _write_line(self) -> None:
        line = self.console_line()
        if line == self._last_line:  # nothing moved since the last line
            return
        self._last_line = line
        self._console.write(line + "\n")
        self._console.flush()
        self._last_time = time.monotonic()

    def close(self) -> None:
        console = getattr(self, "_console", None)
        if console is not None and self._last_line:
            self._write_line()  # the final count of a step that showed progress
        super().close()
        if console is not None and self._owns_console:
            console.close()
        self._console = None


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """Disable transformers' progress bars inside the block, then restore the previous state."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def load_causal_lm(path: str | Path, **kwargs: Any):
    """``AutoModelForCausalLM.from_pretrained(path, **kwargs)`` without the loading bar."""
    from transformers import AutoModelForCausalLM

    with quiet_transformers():
        return AutoModelForCausalLM.from_pretrained(path, **kwargs)
