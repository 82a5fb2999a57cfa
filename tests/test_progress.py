"""Model loads and saves print no progress bars into stage logs; real warnings still print."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
from safetensors.torch import load_file, save_file
from transformers import Qwen3Config, Qwen3ForCausalLM
from transformers.utils import logging as hf_logging

from pacs import progress
from pacs.progress import ConsoleBar, quiet_transformers


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


@pytest.mark.slow  # a fresh interpreter importing transformers
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


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_long_step_prints_a_whole_line_per_interval_and_its_final_count(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    console = io.StringIO()
    bar = ConsoleBar(
        total=10,
        desc="SFT warm-up",
        unit="step",
        console=console,
        every_s=30,
        mininterval=0,
        file=io.StringIO(),
    )
    for step in range(1, 11):
        clock.now += 10  # 10 s a step: a line every third step
        bar.set_postfix(loss=f"{1 / step:.3f}", refresh=False)
        bar.update(1)
    bar.close()
    lines = console.getvalue().splitlines()
    assert console.getvalue().endswith("\n") and "\r" not in console.getvalue()
    assert [line.split(":")[1].split()[0] for line in lines] == ["3/10", "6/10", "9/10", "10/10"]
    assert lines[0].startswith("[pacs] SFT warm-up: 3/10 step (30%)")
    assert lines[-1].endswith("loss=0.100")


def test_a_short_step_prints_nothing_on_the_console(monkeypatch):
    console = io.StringIO()
    for _ in ConsoleBar(range(100), desc="quick", console=console, file=io.StringIO()):
        pass
    assert console.getvalue() == ""


def test_no_console_when_switched_off_or_when_stderr_is_already_the_terminal(monkeypatch):
    monkeypatch.setenv("PACS_CONSOLE_PROGRESS", "0")
    assert progress.open_console() is None
    monkeypatch.setenv("PACS_CONSOLE_PROGRESS", "1")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert progress.open_console() is None


def test_the_console_is_the_descriptor_the_snakefile_hands_over(monkeypatch):
    """A rule's shell keeps Snakemake's stdout as descriptor 3 (PACS_CONSOLE_FD): the lines reach
    it with no terminal at all (CI, nohup); an unset or closed descriptor falls back quietly."""
    read_end, write_end = os.pipe()
    monkeypatch.setenv("PACS_CONSOLE_PROGRESS", "1")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    monkeypatch.setenv("PACS_CONSOLE_FD", str(write_end))
    console = progress.open_console()
    console.write("[pacs] SFT warm-up: 3/10 step\n")
    console.close()
    os.close(write_end)
    with os.fdopen(read_end) as fh:
        assert fh.read() == "[pacs] SFT warm-up: 3/10 step\n"
    monkeypatch.setenv("PACS_CONSOLE_FD", str(write_end))  # closed now: the terminal, or nothing
    monkeypatch.setattr(
        progress, "open", lambda *a, **k: (_ for _ in ()).throw(OSError()), raising=False
    )
    assert progress.open_console() is None


def test_every_rule_shell_hands_snakemake_stdout_to_the_stage(repo_root):
    text = (repo_root / "Snakefile").read_text()
    assert 'shell.prefix("set -euo pipefail; exec 3>&1; export PACS_CONSOLE_FD=3; ")' in text
