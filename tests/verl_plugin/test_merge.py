"""FSDP checkpoint -> HF folder through verl.model_merger (one-rank checkpoint of a tiny model)."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from pacs.verl_plugin.launch.merge import main, merge_checkpoint, resolve_actor_dir


@pytest.fixture
def ckpt_root(tmp_path, tiny_hf_dir):
    """The layout verl's FSDP checkpoint manager writes: <root>/global_step_N/actor/{shards,
    fsdp_config.json, huggingface/} and <root>/latest_checkpointed_iteration.txt."""
    from transformers import AutoModelForCausalLM

    root = tmp_path / "checkpoints"
    actor = root / "global_step_20" / "actor"
    actor.mkdir(parents=True)
    model = AutoModelForCausalLM.from_pretrained(tiny_hf_dir)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.01)  # "trained": differs from the saved base weights
    torch.save(model.state_dict(), actor / "model_world_size_1_rank_0.pt")
    (actor / "fsdp_config.json").write_text(json.dumps({"FSDP_version": 2, "world_size": 1}))
    shutil.copytree(
        tiny_hf_dir, actor / "huggingface", ignore=shutil.ignore_patterns("*.safetensors")
    )
    (root / "latest_checkpointed_iteration.txt").write_text("20")
    return root, model.state_dict()


def test_resolve_actor_dir_accepts_root_step_and_actor(ckpt_root):
    root, _ = ckpt_root
    actor = root / "global_step_20" / "actor"
    assert resolve_actor_dir(root) == actor
    assert resolve_actor_dir(root / "global_step_20") == actor
    assert resolve_actor_dir(actor) == actor


def test_resolve_actor_dir_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a verl FSDP checkpoint"):
        resolve_actor_dir(tmp_path)
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("7")
    with pytest.raises(FileNotFoundError, match="step 7"):
        resolve_actor_dir(tmp_path)


def test_merge_writes_a_loadable_hf_model_with_the_trained_weights(ckpt_root, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    root, trained = ckpt_root
    out = tmp_path / "model"
    assert main(["--ckpt-dir", str(root), "--out", str(out)]) == 0
    merged = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    state = merged.state_dict()
    for key, value in trained.items():  # the merger stores bf16
        assert torch.equal(state[key], value.to(torch.bfloat16).float()), key
    assert AutoTokenizer.from_pretrained(out).eos_token == "<eos>"
    assert not (tmp_path / "model.tmp").exists()


def test_merge_replaces_an_old_output(ckpt_root, tmp_path):
    root, _ = ckpt_root
    out = tmp_path / "model"
    out.mkdir()
    (out / "stale.txt").write_text("old")
    merge_checkpoint(root, out)
    assert not (out / "stale.txt").exists() and (out / "config.json").is_file()


def test_run_dir_and_step_select_the_checkpoint(ckpt_root, tmp_path):
    import argparse

    from pacs.verl_plugin.launch.merge import checkpoint_from_args

    root, _ = ckpt_root
    run = root.parent
    ns = argparse.Namespace(ckpt_dir=None, run_dir=run, step=20)
    assert resolve_actor_dir(checkpoint_from_args(ns)) == root / "global_step_20" / "actor"
    ns.step = None
    assert checkpoint_from_args(ns) == root
    with pytest.raises(SystemExit, match="--step goes with --run-dir"):
        checkpoint_from_args(argparse.Namespace(ckpt_dir=root, run_dir=None, step=20))
