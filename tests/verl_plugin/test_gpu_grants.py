"""0 GPUs seen by torch inside a SLURM job: SLURM granted none, or granted GPUs torch cannot see
(pacs.verl_plugin.launch.devices); the launcher's --device auto refuses the second instead of
training a GPU job on the CPU."""

from __future__ import annotations

import pytest
import torch

from pacs.verl_plugin.launch import devices

GRANTED = {"SLURM_JOB_ID": "7", "SLURM_JOB_GPUS": "0,1", "CUDA_VISIBLE_DEVICES": "0,1"}


def test_the_grants_slurm_left_in_the_environment():
    assert devices.granted_gpus(GRANTED) == {"SLURM_JOB_GPUS": "0,1", "CUDA_VISIBLE_DEVICES": "0,1"}
    assert devices.granted_gpus({"SLURM_JOB_ID": "7", "CUDA_VISIBLE_DEVICES": "NoDevFiles"}) == {}
    assert devices.granted_gpus({"SLURM_GPUS_ON_NODE": "", "SLURM_STEP_GPUS": "3"}) == {
        "SLURM_STEP_GPUS": "3"
    }


def test_not_granted_and_granted_but_invisible_are_told_apart():
    what, fix = devices.no_gpu_diagnosis({"SLURM_JOB_ID": "7"}, "13.0")
    assert what.startswith("SLURM granted this job no GPU") and "gres" in fix
    what, fix = devices.no_gpu_diagnosis(GRANTED, "13.0")
    assert what == (
        "SLURM granted GPUs (SLURM_JOB_GPUS=0,1, CUDA_VISIBLE_DEVICES=0,1) but torch sees none "
        "(torch built for CUDA 13.0)"
    )
    assert "nvidia-smi" in fix
    assert "a CPU-only torch build" in devices.no_gpu_diagnosis(GRANTED, None)[0]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only case")
def test_device_auto_refuses_a_gpu_job_torch_cannot_use():
    with pytest.raises(ValueError, match=r"--device auto: SLURM granted GPUs \(SLURM_JOB_GPUS=0,1"):
        devices.resolve_device("auto", GRANTED)
    assert devices.resolve_device("cpu", GRANTED) == "cpu"  # on purpose
    assert devices.resolve_device("auto", {"SLURM_JOB_ID": "7"}) == "cpu"  # a CPU job
    assert devices.resolve_device("auto", {"CUDA_VISIBLE_DEVICES": "0"}) == "cpu"  # not in SLURM
