"""Portable numerics: the switch, the job environment, the recorded setting and the refusal."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pacs import numerics


def test_the_switch_is_on_unless_set_off_and_refuses_other_values():
    assert numerics.requested({}) is True
    assert numerics.requested({numerics.SWITCH: "1"}) is True
    assert numerics.requested({numerics.SWITCH: " On "}) is True
    assert numerics.requested({numerics.SWITCH: "0"}) is False
    assert numerics.requested({numerics.SWITCH: "false"}) is False
    with pytest.raises(ValueError, match="PACS_PORTABLE_NUMERICS='maybe'"):
        numerics.requested({numerics.SWITCH: "maybe"})


def test_job_environment_pins_the_three_libraries_and_waits_passively():
    assert numerics.job_environment({}) == {
        "ATEN_CPU_CAPABILITY": "avx2",
        "MKL_CBWR": "AVX2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "OMP_WAIT_POLICY": "PASSIVE",
    }
    # a wait policy the caller chose is kept; the switch off sets only the wait policy
    assert "OMP_WAIT_POLICY" not in numerics.job_environment({"OMP_WAIT_POLICY": "ACTIVE"})
    assert numerics.job_environment({numerics.SWITCH: "0"}) == {"OMP_WAIT_POLICY": "PASSIVE"}


def test_apply_overrides_a_callers_capability_and_off_removes_portable_values():
    env = {"ATEN_CPU_CAPABILITY": "avx512", "PATH": "/bin"}
    numerics.apply(env)
    assert env["ATEN_CPU_CAPABILITY"] == "avx2" and env["PATH"] == "/bin"
    assert numerics.setting(env) == numerics.PORTABLE
    env[numerics.SWITCH] = "0"
    numerics.apply(env)
    assert numerics.setting(env) == numerics.NATIVE
    assert not set(numerics.PORTABLE_ENV) & set(env)
    # a native run keeps a capability the caller set to something else (a test of other CPUs)
    other = {numerics.SWITCH: "0", "ATEN_CPU_CAPABILITY": "default"}
    numerics.apply(other)
    assert other["ATEN_CPU_CAPABILITY"] == "default"


def test_setting_is_portable_only_when_every_variable_holds_its_value():
    assert numerics.setting(dict(numerics.PORTABLE_ENV)) == numerics.PORTABLE
    assert numerics.setting({**numerics.PORTABLE_ENV, "MKL_CBWR": "avx2"}) == numerics.PORTABLE
    assert numerics.setting({**numerics.PORTABLE_ENV, "MKL_CBWR": "COMPATIBLE"}) == "native"
    partial = {k: v for k, v in numerics.PORTABLE_ENV.items() if k != "ONEDNN_MAX_CPU_ISA"}
    assert numerics.setting(partial) == numerics.NATIVE


def test_recorded_reads_a_summary_and_calls_an_old_one_native():
    assert numerics.recorded(None) == numerics.NATIVE
    assert numerics.recorded({"steps": 3}) == numerics.NATIVE
    assert numerics.recorded({"numerics": {"setting": "portable"}}) == numerics.PORTABLE
    assert numerics.recorded({"numerics": "portable"}) == numerics.PORTABLE


def test_check_same_names_both_settings_and_the_switch_value_that_continues():
    numerics.check_same("base", "portable", "portable")
    with pytest.raises(numerics.NumericsMismatch) as err:
        numerics.check_same("the base model b", "native", "portable")
    message = str(err.value)
    assert "the base model b was made with native numerics" in message
    assert "this run has portable numerics (PACS_PORTABLE_NUMERICS=1)" in message
    assert "Rerun with PACS_PORTABLE_NUMERICS=0 (Snakemake; a direct run: without " in message
    with pytest.raises(numerics.NumericsMismatch) as err:
        numerics.check_same("ckpt", "portable", "native")
    assert (
        "Rerun with PACS_PORTABLE_NUMERICS=1 (Snakemake; a direct run: export "
        "ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2 ONEDNN_MAX_CPU_ISA=AVX2)" in str(err.value)
    )


CHILD = (
    "import json, torch; from pacs import numerics; numerics.check_in_effect(); "
    "print(json.dumps(numerics.describe()))"
)


def _child(env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in numerics.PORTABLE_ENV} | env_extra
    return subprocess.run(
        [sys.executable, "-c", CHILD],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_child_given_the_job_environment_runs_atens_avx2_kernels():
    got = _child(numerics.job_environment({}))
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout) == {
        "setting": "portable",
        "aten_kernels": "AVX2",
        "env": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    }


def test_portable_variables_that_did_not_take_are_refused():
    # ATen on its DEFAULT kernels while the variables say portable (as on a CPU without AVX2, or
    # when the variable is set after torch's first kernel): another path, refused rather than
    # recorded as "portable".
    env = {**numerics.PORTABLE_ENV, "ATEN_CPU_CAPABILITY": "default"}
    assert numerics.setting(env) == numerics.NATIVE  # not all pinned: recorded as native
    script = (
        "import torch, os; from pacs import numerics; "
        "torch.zeros(3).sum(); os.environ['ATEN_CPU_CAPABILITY'] = 'avx2'; "
        "numerics.check_in_effect()"
    )
    base = {k: v for k, v in os.environ.items() if k not in numerics.PORTABLE_ENV}
    got = subprocess.run(
        [sys.executable, "-c", script],
        env=base | env,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert got.returncode != 0
    assert "portable numerics need ATen's AVX2 kernels, this process runs DEFAULT" in got.stderr
