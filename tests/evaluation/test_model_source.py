"""``make eval``'s model: which profile's protocol a model gets when none is named, and a hub
id that cannot be had failing in seconds with what to do (issue 49: it failed after 82 s)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from pacs import model_eval
from pacs.evaluation import model_source
from pacs.evaluation.model_source import EvalError, check_hub, default_config

REPO = Path(__file__).resolve().parents[2]


def model_folder(path: Path, vocab_size: int) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"model_type": "qwen3", "vocab_size": vocab_size}))
    return path


def test_a_checkpoint_inside_a_profiles_results_gets_that_profiles_protocol(tmp_path):
    profile = tmp_path / "results" / "tiny"
    model = model_folder(profile / "models" / "tiny" / "base", vocab_size=384)
    snapshot = profile / "config.yaml"
    shutil.copy(REPO / "configs" / "default.yaml", snapshot)
    assert default_config(str(model)) == snapshot.resolve()
    plan = model_eval.make_plan(model_eval.parse_args(["--model", str(model)]))
    assert plan.benchmarks == ["synthetic"]  # the tiny protocol, not the paper's seven
    assert plan.out == Path("results/tiny/model_eval/base")


def test_a_tiny_model_elsewhere_is_told_which_config_to_pass(tmp_path):
    model = model_folder(tmp_path / "copied" / "base", vocab_size=384)
    with pytest.raises(EvalError, match=r"EVAL_CONFIG=configs/default\.yaml") as err:
        default_config(str(model))
    assert len(str(err.value).splitlines()) == 1


def test_other_models_and_hub_ids_get_the_papers_protocol(tmp_path):
    big = model_folder(tmp_path / "results" / "x" / "big", vocab_size=151_936)  # no snapshot
    assert default_config(str(big)) == Path("configs/paper.yaml")
    assert default_config("Qwen/Qwen3-8B") == Path("configs/paper.yaml")
    assert default_config(None) == Path("configs/paper.yaml")


def test_an_uncached_hub_id_offline_fails_in_seconds_with_the_hint(monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.monotonic()
    code = model_eval.main(
        ["--model", "pacs-tests/no-such-model", "--config", str(REPO / "configs" / "smoke.yaml")]
    )
    elapsed = time.monotonic() - start
    err = capsys.readouterr().err
    assert code == 2 and elapsed < 20
    assert "not in the local Hugging Face cache and HF_HUB_OFFLINE is set" in err
    assert "hf download pacs-tests/no-such-model" in err


def test_an_unreachable_hub_is_named(monkeypatch):
    import huggingface_hub

    def unreachable(model, timeout):
        assert timeout <= 10  # bounded: the answer comes in seconds
        raise ConnectionError("[Errno -2] Name or service not known")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub, "model_info", unreachable)
    monkeypatch.setattr(model_source, "_cached", lambda model: False)
    with pytest.raises(EvalError, match=r"the hub answered ConnectionError: \[Errno -2\]"):
        check_hub("owner/name")
    monkeypatch.setattr(model_source, "_cached", lambda model: True)
    check_hub("owner/name")  # cached: no lookup at all
