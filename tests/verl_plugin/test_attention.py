"""The attention implementation is a config key, coherent with remove-padding, and the cluster
environment provides what the configs name (issue 17, defect 9).

verl 0.9.1 loads every actor with ``flash_attention_2`` unless told otherwise, and
``verl[vllm,verl-core]`` installs no flash-attn: every paper job crashed at actor load.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from pacs.config import ATTN_PACKAGES, ConfigError, load_config, load_profile, parse_profile
from pacs.verl_plugin.launch.devices import device_overrides
from pacs.verl_plugin.launch.overrides import ClusterShape, RunPaths, build_overrides

REPO = Path(__file__).resolve().parents[2]
VERL_CONFIGS = [
    p for p in sorted((REPO / "configs").glob("*.yaml")) if load_config(p)["engine"] == "verl"
]
PIP_NAMES = {"flash_attn": "flash-attn", "flash_attn_interface": "flash-attn-3", "torch": "torch"}


def _overrides(spec, run: str, tmp_path: Path) -> list[str]:
    model = next(iter(spec.models))
    paths = RunPaths("/d/t.parquet", "/d/t.parquet", tmp_path)
    return build_overrides(spec, spec.run(run), model, 0, paths, ClusterShape(1, 8), "l")


def test_paper_names_flash_attention_for_actor_and_critic(compose, tmp_path):
    spec = load_profile(REPO / "configs" / "paper.yaml")
    assert spec.verl.attn_implementation == "flash_attention_2"
    c = compose(_overrides(spec, "ppo", tmp_path))
    assert c.actor_rollout_ref.model.override_config.attn_implementation == "flash_attention_2"
    assert c.critic.model.override_config.attn_implementation == "flash_attention_2"
    assert c.actor_rollout_ref.model.use_remove_padding is True


def test_cpu_device_switch_still_composes_to_sdpa(compose, tmp_path):
    spec = load_profile(REPO / "configs" / "verl_smoke.yaml")
    c = compose(_overrides(spec, "pacs", tmp_path) + device_overrides("cpu", 1))
    assert c.actor_rollout_ref.model.override_config.attn_implementation == "sdpa"
    assert c.actor_rollout_ref.model.use_remove_padding is False


def test_remove_padding_without_flash_attention_is_refused():
    cfg = load_config(REPO / "configs" / "paper.yaml")
    cfg["verl"]["attn_implementation"] = "sdpa"
    with pytest.raises(ConfigError, match="use_remove_padding=true needs flash-attention"):
        parse_profile(cfg, source="paper.yaml")
    cfg["verl"]["use_remove_padding"] = False
    assert parse_profile(cfg).verl.attn_implementation == "sdpa"
    cfg["verl"]["attn_implementation"] = "flash"
    with pytest.raises(ConfigError, match=r"paper.yaml: verl.attn_implementation: .*'flash'"):
        parse_profile(cfg, source="paper.yaml")


def test_attention_defaults_to_verls_own():
    cfg = load_config(REPO / "configs" / "paper.yaml")
    del cfg["verl"]["attn_implementation"]
    assert parse_profile(cfg).verl.attn_implementation == "flash_attention_2"


def _environment() -> tuple[str, dict[str, str]]:
    """environment.yml's Python; what `make gpu-env` installs: the lock and the flash-attn URL."""
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python="))
    files = [REPO / "envs" / "gpu" / name for name in ("requirements.lock", "flash-attn.txt")]
    lines = [
        line
        for f in files
        for line in f.read_text().splitlines()
        if line and not line.startswith((" ", "#"))
    ]
    names = {re.split(r"[\[=<>@ ]", line, maxsplit=1)[0]: line for line in lines}
    return python.split("=")[1], names


@pytest.mark.parametrize("path", VERL_CONFIGS, ids=lambda p: p.stem)
def test_environment_provides_the_configured_attention(path):
    _python, pip = _environment()
    impl = load_profile(path).verl.attn_implementation
    assert PIP_NAMES[ATTN_PACKAGES[impl]] in pip, f"{path.name}: {impl} needs {ATTN_PACKAGES[impl]}"


def test_flash_attn_wheel_matches_the_pinned_python_and_torch():
    python, pip = _environment()
    wheel = pip["flash-attn"]
    cp = "cp" + python.replace(".", "")
    torch_minor = re.search(r"torch==(\d+\.\d+)", pip["torch"]).group(1)
    assert f"-{cp}-{cp}-" in wheel and f"torch{torch_minor}" in wheel, wheel
    assert "flash-attn" not in (REPO / "pyproject.toml").read_text()  # the CPU venv needs none
