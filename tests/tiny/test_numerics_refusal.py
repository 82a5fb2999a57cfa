"""A run whose numerics setting (pacs.numerics) is not its base model's or its checkpoint's is
refused at start, naming both settings; the SFT summary and the fingerprint record it."""

from __future__ import annotations

import json
import shutil

import pytest

from pacs import numerics
from pacs.config import parse_profile
from pacs.io import read_jsonl
from pacs.tiny import checkpoint as ckpt_mod
from pacs.tiny import train as tt
from pacs.tiny.sft import SUMMARY_NAME

ONE_STEP = {"steps": 1, "save_every": 1, "eval_every": 1}


@pytest.fixture
def portable(monkeypatch):
    """This process as a portable job sees it: the variables set, ATen on its AVX2 kernels (the
    test process chose its kernels before the variables were set; a job sets them first)."""
    for key, value in numerics.PORTABLE_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(numerics, "cpu_capability", lambda: "AVX2")


@pytest.fixture
def native(monkeypatch):
    for key in numerics.PORTABLE_ENV:
        monkeypatch.delenv(key, raising=False)


def _base(tiny_env, tmp_path, setting: str | None):
    """A copy of the session's base model whose SFT summary records ``setting`` (None: none)."""
    base = tmp_path / "base"
    shutil.copytree(tiny_env["base"], base)
    if setting is not None:
        summary = {"steps": 40, "numerics": {"setting": setting, "aten_kernels": "AVX2"}}
        (base / SUMMARY_NAME).write_text(json.dumps(summary))
    return base


def _config(tmp_path, small_config):
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(small_config(**ONE_STEP)))
    return path


def _argv(train_args, config, out, base):
    argv = train_args(config, out)
    argv[argv.index("--base") + 1] = str(base)
    return argv


def test_a_portable_run_on_a_native_base_is_refused_naming_both(
    tiny_env, small_config, tmp_path, train_args, portable
):
    base = _base(tiny_env, tmp_path, None)  # a base from before the record: native
    with pytest.raises(SystemExit) as err:
        tt.main(_argv(train_args, _config(tmp_path, small_config), tmp_path / "run", base))
    message = str(err.value)
    assert f"the base model {base} was made with native numerics" in message
    assert "this run has portable numerics (PACS_PORTABLE_NUMERICS=1)" in message
    assert not (tmp_path / "run").exists()  # refused before anything was written


def test_a_native_run_on_a_portable_base_is_refused(tiny_env, small_config, tmp_path, native):
    base = _base(tiny_env, tmp_path, "portable")
    settings = tt.Settings.from_profile(parse_profile(small_config(**ONE_STEP)), "pacs")
    rows = read_jsonl(tiny_env["train"]), read_jsonl(tiny_env["test"])
    with pytest.raises(ckpt_mod.CheckpointError, match="made with portable numerics, this run"):
        ckpt_mod.run_fingerprint(settings, 0, base, *rows)


def test_the_fingerprint_names_a_portable_setting_and_leaves_native_ones_as_before(
    tiny_env, small_config, tmp_path, monkeypatch
):
    settings = tt.Settings.from_profile(parse_profile(small_config(**ONE_STEP)), "pacs")
    rows = read_jsonl(tiny_env["train"]), read_jsonl(tiny_env["test"])
    for key in numerics.PORTABLE_ENV:
        monkeypatch.delenv(key, raising=False)
    native_fp = ckpt_mod.run_fingerprint(settings, 0, _base(tiny_env, tmp_path, "native"), *rows)
    assert "numerics" not in native_fp["settings"]
    for key, value in numerics.PORTABLE_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(numerics, "cpu_capability", lambda: "AVX2")
    (tmp_path / "base" / SUMMARY_NAME).write_text(json.dumps({"numerics": "portable"}))
    portable_fp = ckpt_mod.run_fingerprint(settings, 0, tmp_path / "base", *rows)
    assert portable_fp["settings"]["numerics"] == "portable"
    assert portable_fp["sha256"] != native_fp["sha256"]


def test_a_checkpoint_of_the_other_setting_is_refused_even_with_restart(
    tiny_env, small_config, tmp_path, train_args, monkeypatch
):
    base = _base(tiny_env, tmp_path, None)
    config, out = _config(tmp_path, small_config), tmp_path / "run"
    for key in numerics.PORTABLE_ENV:
        monkeypatch.delenv(key, raising=False)
    tt.main(_argv(train_args, config, out, base) + ["--stop-after", "1"])  # a native checkpoint
    assert (out / ckpt_mod.CHECKPOINT_NAME).is_file()
    # The base now says portable (its record only: the fingerprint skips the SFT summary), and
    # so does this process: only the checkpoint is of the other setting.
    (base / SUMMARY_NAME).write_text(json.dumps({"numerics": {"setting": "portable"}}))
    for key, value in numerics.PORTABLE_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(numerics, "cpu_capability", lambda: "AVX2")
    argv = _argv(train_args, config, out, base) + ["--on-mismatch", "restart"]
    with pytest.raises(SystemExit) as err:
        tt.main(argv)
    assert f"{out / ckpt_mod.CHECKPOINT_NAME} was made with native numerics" in str(err.value)
    assert "Rerun with PACS_PORTABLE_NUMERICS=0" in str(err.value)
    assert (out / ckpt_mod.CHECKPOINT_NAME).is_file()  # kept, not discarded


def _sft_argv(tiny_env, config, out) -> list[str]:
    return [
        *("--config", str(config), "--model", "tiny", "--init", str(tiny_env["base"])),
        *("--data", str(tiny_env["sft"]), "--eval-data", str(tiny_env["test"])),
        *("--out", str(out), "--threads", "1", "--steps", "1"),
    ]


def test_the_sft_summary_records_the_setting_an_rl_run_then_checks(
    tiny_env, small_config, tmp_path, native
):
    import torch

    from pacs.tiny import sft

    config = _config(tmp_path, small_config)
    sft.main(_sft_argv(tiny_env, config, tmp_path / "base"))
    summary = json.loads((tmp_path / "base" / SUMMARY_NAME).read_text())
    assert summary["numerics"] == {
        "setting": "native",
        "aten_kernels": torch.backends.cpu.get_cpu_capability(),
        "env": dict.fromkeys(numerics.PORTABLE_ENV),
    }
    assert ckpt_mod.base_numerics(tmp_path / "base") == numerics.NATIVE


def test_sft_refuses_portable_variables_that_did_not_take(
    tiny_env, small_config, tmp_path, monkeypatch
):
    from pacs.tiny import sft

    for key, value in numerics.PORTABLE_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(numerics, "cpu_capability", lambda: "DEFAULT")
    with pytest.raises(SystemExit, match="portable numerics need ATen's AVX2 kernels"):
        sft.main(_sft_argv(tiny_env, _config(tmp_path, small_config), tmp_path / "base"))
    assert not (tmp_path / "base").exists()
