"""Model loads and saves print no progress bars into stage logs; real warnings still print."""

from __future__ import annotations

import subprocess
import sys

from safetensors.torch import load_file, save_file
from transformers import Qwen3Config, Qwen3ForCausalLM
from transformers.utils import logging as hf_logging

from pacs.progress import quiet_transformers


def _model() -> Qwen3ForCausalLM:
    return Qwen3ForCausalLM(
        Qwen3Config(
            vocab_size=32,
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
            intermediate_size=32,
            tie_word_embeddings=True,
        )
    )


def _stage_log(code: str) -> str:
    """What a stage running ``code`` leaves in its log (stdout and stderr, as in a rule's log)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout + done.stderr


def test_loading_prints_no_bar_but_keeps_warnings(tmp_path):
    _model().save_pretrained(tmp_path)
    # A checkpoint missing one weight: transformers must still report it.
    weights = load_file(tmp_path / "model.safetensors")
    missing = next(k for k in weights if "q_norm" in k)
    del weights[missing]
    save_file(weights, tmp_path / "model.safetensors", metadata={"format": "pt"})

    quiet = _stage_log(
        "from transformers.utils import logging\n"
        "from pacs.progress import load_causal_lm\n"
        f"load_causal_lm({str(tmp_path)!r})\n"
        "assert logging.is_progress_bar_enabled(), 'not restored after the load'\n"
    )
    assert "Loading weights" not in quiet
    assert missing in quiet and "MISSING" in quiet
    # The control: the same load without the guard draws the bar.
    raw = _stage_log(
        f"from transformers import AutoModelForCausalLM as M; M.from_pretrained({str(tmp_path)!r})"
    )
    assert "Loading weights" in raw and missing in raw


def test_saving_without_the_guard_draws_a_bar(tmp_path, capfd):
    """The control for the save half above: this transformers does draw a save bar."""
    _model().save_pretrained(tmp_path / "raw")
    assert "Writing model shards" in capfd.readouterr().err
    with quiet_transformers():
        _model().save_pretrained(tmp_path / "quiet")
    assert "Writing model shards" not in capfd.readouterr().err


def test_a_disabled_state_stays_disabled(tmp_path):
    hf_logging.disable_progress_bar()
    try:
        with quiet_transformers():
            pass
        assert not hf_logging.is_progress_bar_enabled()
    finally:
        hf_logging.enable_progress_bar()
