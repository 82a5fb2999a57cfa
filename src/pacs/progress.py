"""What the stages print while they work: one tqdm bar per long step, saying what it counts, and
no bar per model load or save.

transformers 5 draws a "Loading weights" tqdm bar on every ``from_pretrained`` and a "Writing model
shards" bar on every ``save_pretrained``; in a stage's log (stderr redirected to a file) each is a
block of carriage-return lines around the bar that matters. :func:`quiet_transformers` turns
transformers' (and huggingface_hub's) bars off for the duration of a load or save only; warnings
go through ``logging`` and still print.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# For processes we do not call into (verl's Ray workers): transformers reads it at import.
NO_PROGRESS_BARS_ENV = {"HF_HUB_DISABLE_PROGRESS_BARS": "1"}


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
