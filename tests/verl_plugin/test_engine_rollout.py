"""verl's vLLM rollout, the parts that need no engine: the launcher's flag and CPU overrides, its
message when vLLM is missing, and the vLLM plugin's weight-keeping dispatcher on a fake layer.

The real engine runs in tests/engine (the engine env, ``make test-engine``)."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from pacs.config import ConfigError, load_config, parse_profile
from pacs.verl_plugin import vllm_cpu
from pacs.verl_plugin.launch import engine_check, train
from pacs.verl_plugin.launch.devices import device_overrides

REPO = Path(__file__).resolve().parents[2]
SMOKE = REPO / "configs" / "verl_smoke.yaml"
SLEEP_OFF = "+actor_rollout_ref.rollout.enable_sleep_mode=false"


def test_cpu_vllm_rollout_turns_sleep_mode_off_and_hf_does_not():
    assert SLEEP_OFF in device_overrides("cpu", 1, rollout="vllm")
    assert SLEEP_OFF not in device_overrides("cpu", 1, rollout="hf")
    assert device_overrides("cuda", 8, rollout="vllm") == []  # GPUs keep verl's defaults


def _vllm_smoke_args(tmp_path) -> list[str]:
    """The launcher's flags for the verl smoke run with verl's vLLM rollout on CPU."""
    run = ("--run", "pacs", "--device", "cpu", "--rollout", "vllm")
    return ["--config", str(SMOKE), *run, "--out", str(tmp_path / "run")]


def test_rollout_flag_replaces_the_configs_rollout(capsys, tmp_path):
    assert train.main(["--dry-run", *_vllm_smoke_args(tmp_path)]) == 0  # a dry run needs no engine
    line = capsys.readouterr().out
    assert "actor_rollout_ref.rollout.name=vllm" in line and SLEEP_OFF in line


def test_vllm_rollout_without_vllm_names_the_command_to_run(monkeypatch, tmp_path, caplog):
    monkeypatch.setattr(engine_check, "_version", lambda dist: None if dist == "vllm" else "0.9.1")
    with caplog.at_level(logging.ERROR):
        assert train.main(_vllm_smoke_args(tmp_path)) == 2
    assert "make engine-env" in caplog.text and "vllm not installed" in caplog.text
    assert not (tmp_path / "run" / "launch.json").exists()  # refused before anything started


def test_unknown_rollout_name_is_refused_by_the_spec_and_the_flag():
    raw = load_config(SMOKE)
    raw["verl"]["rollout"]["name"] = "sglang"
    with pytest.raises(ConfigError, match=r"verl\.rollout\.name"):
        parse_profile(raw, str(SMOKE))
    with pytest.raises(SystemExit):
        train.parse_args(["--config", str(SMOKE), "--run", "pacs", "--rollout", "sglang"])


def test_engine_problem_names_the_version_found(monkeypatch):
    monkeypatch.setattr(engine_check, "_version", lambda d: {"vllm": "0.23.1", "verl": "0.9.1"}[d])
    problem = engine_check.engine_problem(import_vllm=False)
    assert "vllm 0.23.1" in problem and "needs 0.24.0" in problem and "make engine-env" in problem


def _layer(weight: torch.Tensor) -> torch.nn.Module:
    layer = torch.nn.Module()
    layer.weight = torch.nn.Parameter(weight, requires_grad=False)
    return layer


def test_keep_weight_dispatch_keeps_2d_weights_and_reads_them_at_call_time():
    calls = []
    dispatch = vllm_cpu.keep_weight_dispatch(lambda layer, remove: calls.append(remove))
    layer = _layer(torch.eye(3))
    dispatch(layer, remove_weight=True)
    assert layer.weight.shape == (3, 3) and calls == []  # vLLM's own would empty it
    x = torch.tensor([[1.0, 2.0, 3.0]])
    layer.weight.data.copy_(2 * torch.eye(3))  # a weight sync writes into the parameter
    assert torch.equal(layer.cpu_linear(x, layer.weight, None), 2 * x)


def test_keep_weight_dispatch_leaves_other_layers_to_vllm():
    calls = []
    dispatch = vllm_cpu.keep_weight_dispatch(lambda layer, remove: calls.append(remove))
    dispatch(_layer(torch.zeros(4, 1, 3)), remove_weight=False)  # a conv weight
    dispatch(SimpleNamespace(weight=torch.empty(2, 2, device="meta")), remove_weight=True)
    assert calls == [False, True]
