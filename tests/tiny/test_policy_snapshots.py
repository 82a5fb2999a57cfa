"""The policy snapshots a tiny run keeps at every save (pacs.tiny.checkpoint: policies/step<k>.pt),
which the science profile scores exactly (pacs.evaluation.path_exact)."""

from __future__ import annotations

import json

import torch
from safetensors.torch import load_file

from pacs.tiny import checkpoint as ckpt_mod
from pacs.tiny import train as tt


def _state(step: int, value: float) -> tt.State:
    policy = torch.nn.Linear(2, 1)
    with torch.no_grad():
        policy.weight.fill_(value)
    return tt.State(
        policy=policy,
        optimizer=torch.optim.AdamW(policy.parameters()),
        sampler=tt.PromptSampler(4, 0),
        step=step,
    )


def test_each_save_keeps_that_steps_policy(tmp_path):
    for step, value in ((3, 1.0), (6, 2.0)):
        ckpt_mod.save_checkpoint(_state(step, value), tmp_path, {"sha256": "x"})
    for step, value in ((3, 1.0), (6, 2.0)):
        path = ckpt_mod.policy_snapshot_path(tmp_path, step)
        assert path == tmp_path / "policies" / f"step{step}.pt"
        weights = torch.load(path, weights_only=True)
        assert torch.equal(weights["weight"], torch.full((1, 2), value))
    assert torch.load(tmp_path / ckpt_mod.CHECKPOINT_NAME, weights_only=False)["step"] == 6


def test_snapshot_temps_are_removed_and_a_restart_discards_the_snapshots(tmp_path):
    ckpt_mod.save_checkpoint(_state(2, 1.0), tmp_path, {"sha256": "x"})
    stale = tmp_path / "policies" / ".step4.pt.abc.tmp"
    stale.write_bytes(b"partial")
    assert ckpt_mod.remove_stale_temps(tmp_path) == [stale]
    assert (tmp_path / "policies" / "step2.pt").is_file()
    ckpt_mod.discard_run_outputs(tmp_path)
    assert not (tmp_path / "policies").exists()


def test_a_run_keeps_a_snapshot_per_save_and_the_last_is_the_final_model(
    tiny_env, small_config, tmp_path, train_args
):
    """3 steps, saves every 2: snapshots at 2 and 3; the step-3 snapshot is the final model."""
    config = tmp_path / "config.yaml"
    config.write_text(json.dumps(small_config(steps=3, save_every=2, eval_every=3)))
    tt.main(train_args(config, tmp_path / "run"))
    run = tmp_path / "run"
    assert sorted(p.name for p in (run / "policies").iterdir()) == ["step2.pt", "step3.pt"]
    final = load_file(run / "model" / "model.safetensors")
    last = torch.load(run / "policies" / "step3.pt", weights_only=True)
    earlier = torch.load(run / "policies" / "step2.pt", weights_only=True)
    for name, tensor in final.items():
        assert torch.equal(last[name], tensor)
    assert any(not torch.equal(earlier[n], t) for n, t in final.items())
