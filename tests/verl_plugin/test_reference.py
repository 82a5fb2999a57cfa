"""Reference modes (docs/design.md#the-reference-model) on verl: reset schedule, weight copy,
optimizer reset, wiring.

The real reset runs inside verl's FSDP workers on GPUs; here the same functions run on plain
modules, on a 1-process DTensor, and through the trainer/worker methods with stand-in objects.
"""

from __future__ import annotations

import socket
import types
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from pacs.methods import RefSchedule
from pacs.verl_plugin.reference import (
    copy_parameters,
    reset_optimizer_state,
    schedule_from_algorithm_config,
)


def test_reset_schedule():
    periodic = RefSchedule("periodic", 3)
    assert [s for s in range(1, 11) if periodic.reset_due(s)] == [4, 7, 10]
    assert [s for s in range(1, 5) if RefSchedule("periodic", 1).reset_due(s)] == [2, 3, 4]
    assert not any(
        RefSchedule(mode).reset_due(s) for mode in ("rollout", "fixed") for s in range(1, 20)
    )


def test_settings_validate_and_read_verl_config():
    read = schedule_from_algorithm_config
    assert read(
        OmegaConf.create({"label_loss": {"ref": "periodic", "ref_reset_every": 5}})
    ) == RefSchedule("periodic", 5)
    assert read(OmegaConf.create({})) == RefSchedule("rollout", 1)
    assert read(
        OmegaConf.create({"label_loss": {"ref": "fixed", "ref_reset_every": None}})
    ) == RefSchedule("fixed", 1)
    with pytest.raises(ValueError, match=r"(?s)algorithm.label_loss: .*ref"):
        read(OmegaConf.create({"label_loss": {"ref": "sometimes"}}))
    with pytest.raises(ValueError, match="ref_reset_every"):
        read(OmegaConf.create({"label_loss": {"ref": "periodic", "ref_reset_every": 0}}))
    with pytest.raises(ValueError, match="never resets"):
        read(OmegaConf.create({"label_loss": {"ref": "rollout", "ref_reset_every": 5}}))


def _pair():
    torch.manual_seed(0)
    actor = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
    ref = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2)).to(torch.bfloat16)
    return actor, ref


def test_copy_parameters_makes_the_reference_the_actor():
    actor, ref = _pair()
    assert copy_parameters(actor, ref) == 4
    for (name, a), (_, r) in zip(actor.named_parameters(), ref.named_parameters()):
        assert r.dtype == torch.bfloat16, name
        assert torch.equal(r, a.to(torch.bfloat16)), name
    x = torch.randn(2, 4)
    assert torch.allclose(ref(x.bfloat16()).float(), actor(x), atol=5e-2)


def test_copy_parameters_refuses_different_models():
    actor, _ = _pair()
    with pytest.raises(RuntimeError, match="differ"):
        copy_parameters(actor, torch.nn.Sequential(torch.nn.Linear(4, 3)))
    with pytest.raises(RuntimeError, match="shard"):
        copy_parameters(actor, torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Linear(5, 2)))


def test_reset_optimizer_state_equals_a_fresh_optimizer():
    torch.manual_seed(1)
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.AdamW(model.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        model(torch.randn(4, 3)).pow(2).mean().backward()
        opt.step()
    twin = torch.nn.Linear(3, 1)
    twin.load_state_dict(model.state_dict())
    fresh = torch.optim.AdamW(twin.parameters(), lr=0.1)
    assert reset_optimizer_state(opt) == 2
    batch = torch.randn(4, 3)
    for m, o in ((model, opt), (twin, fresh)):
        o.zero_grad()
        m(batch).pow(2).mean().backward()
        o.step()
    for a, b in zip(model.parameters(), twin.parameters()):
        assert torch.equal(a, b)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_copy_parameters_on_dtensor_shards():
    """FSDP2 parameters are DTensors; the copy must write this rank's shard in place."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor

    if dist.is_initialized():
        pytest.skip("a process group already exists in this process")
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{_free_port()}", rank=0, world_size=1
    )
    try:
        mesh = init_device_mesh("cpu", (1,))
        actor, ref = torch.nn.Linear(4, 2), torch.nn.Linear(4, 2)
        for module in (actor, ref):
            for name, p in list(module.named_parameters()):
                setattr(
                    module,
                    name,
                    torch.nn.Parameter(distribute_tensor(p.detach(), mesh, [Shard(0)])),
                )
        ref_storage = ref.weight._local_tensor.data_ptr()
        copy_parameters(actor, ref)
        assert ref.weight._local_tensor.data_ptr() == ref_storage  # in place, no new tensor
        assert torch.equal(ref.weight.full_tensor(), actor.weight.full_tensor())
        assert torch.equal(ref.bias.full_tensor(), actor.bias.full_tensor())
    finally:
        dist.destroy_process_group()


# ------------------------------------------------------------------- worker and trainer wiring


def test_worker_reset_reference_copies_and_resets():
    from pacs.verl_plugin.worker import PACSActorRolloutRefWorker

    actor_module, ref_module = _pair()
    opt = torch.optim.AdamW(actor_module.parameters())
    actor_module(torch.randn(2, 4)).sum().backward()
    opt.step()
    fake = types.SimpleNamespace(
        role="actor_rollout_ref",
        actor=types.SimpleNamespace(
            engine=types.SimpleNamespace(module=actor_module, optimizer=opt)
        ),
        ref=types.SimpleNamespace(engine=types.SimpleNamespace(module=ref_module, optimizer=None)),
    )
    out = PACSActorRolloutRefWorker.reset_reference(fake, reset_optimizer=True)
    assert out == {"params_copied": 4, "optimizer_states_dropped": 4}
    assert len(opt.state) == 0
    assert torch.equal(ref_module[0].weight, actor_module[0].weight.to(torch.bfloat16))
    fake.ref = None
    with pytest.raises(RuntimeError, match="actor_rollout_ref"):
        PACSActorRolloutRefWorker.reset_reference(fake)


def test_reset_reference_is_exposed_to_the_driver():
    """verl binds @register methods of the role class onto the colocated Ray worker."""
    import ray
    from verl.single_controller.base.decorator import MAGIC_ATTR, Dispatch
    from verl.single_controller.ray import RayClassWithInitArgs, create_colocated_worker_cls

    from pacs.verl_plugin.worker import PACSActorRolloutRefWorker

    colocated = create_colocated_worker_cls(
        {"actor_rollout_ref": RayClassWithInitArgs(cls=ray.remote(PACSActorRolloutRefWorker))}
    )
    method = colocated.cls.__ray_actor_class__.actor_rollout_ref_reset_reference
    assert getattr(method, MAGIC_ATTR)["dispatch_mode"] == Dispatch.ONE_TO_ALL


class _RecordingWG:
    def __init__(self):
        self.calls = []

    def reset_reference(self, reset_optimizer=True):
        self.calls.append(reset_optimizer)
        return [{"params_copied": 1}]


def _trainer(mode: str, every: int):
    from pacs.verl_plugin.trainer import PACSTrainerSync

    trainer = object.__new__(PACSTrainerSync)
    trainer.ref_settings = RefSchedule(mode, every)
    trainer.actor_rollout_wg = _RecordingWG()
    trainer._steps_in_this_process = 0
    return trainer


def _run_steps(trainer, steps):
    fired = []
    for step in steps:
        trainer.global_steps = step
        before = len(trainer.actor_rollout_wg.calls)
        trainer.on_step_begin()
        if len(trainer.actor_rollout_wg.calls) > before:
            fired.append((step, trainer.actor_rollout_wg.calls[-1]))
    return fired


def test_trainer_resets_every_k_steps():
    assert _run_steps(_trainer("periodic", 4), range(1, 13)) == [(5, True), (9, True)]
    assert _run_steps(_trainer("rollout", 1), range(1, 6)) == []
    assert _run_steps(_trainer("fixed", 1), range(1, 6)) == []


def test_trainer_resume_inside_a_period_resets_weights_only():
    # resumed at step 7 with K = 4: reference <- resumed actor, optimizer state kept; then step 9.
    assert _run_steps(_trainer("periodic", 4), range(7, 11)) == [(7, False), (9, True)]


def test_trainer_builds_the_ref_worker_for_periodic(compose, tmp_path):
    from verl.trainer.ppo.utils import Role

    from pacs.config import load_config, parse_profile
    from pacs.verl_plugin.launch.overrides import ClusterShape, RunPaths, build_overrides
    from pacs.verl_plugin.worker import PACSActorRolloutRefWorker

    cfg = load_config(Path(__file__).resolve().parents[2] / "configs" / "paper.yaml")
    cfg["runs"]["p"] = {"method": "pacs", "ref": "periodic", "ref_reset_every": 4}
    profile = parse_profile(cfg)
    c = compose(
        build_overrides(
            profile,
            profile.run("p"),
            "qwen3_4b",
            0,
            RunPaths("/t", "/t", tmp_path),
            ClusterShape(1, 8),
            "/l",
        )
    )
    trainer = _trainer("periodic", 4)
    trainer.config = c
    trainer._init_resource_pool_mgr()
    assert set(trainer.role_worker_mapping) == {Role.ActorRolloutRef}
    assert (
        trainer.role_worker_mapping[Role.ActorRolloutRef].__ray_actor_class__
        is PACSActorRolloutRefWorker
    )
    assert trainer.resource_pool_manager.mapping[Role.ActorRolloutRef] == "global_pool"


def test_reference_log_probs_become_old_log_probs(monkeypatch):
    """ref: periodic|fixed — the loss reads its reference from old_log_probs."""
    from tensordict import TensorDict
    from transfer_queue import KVBatchMeta
    from verl.trainer.ppo.v1 import PPOTrainerSync

    import pacs.verl_plugin.trainer as trainer_mod

    store = {
        "ref_log_prob": torch.tensor([[0.5, -1.0]]),
        "old_log_probs": torch.tensor([[9.0, 9.0]]),
    }
    fake_tq = types.SimpleNamespace(
        kv_batch_get=lambda keys, partition_id, select_fields: TensorDict(
            {f: store[f] for f in select_fields}, batch_size=[1]
        ),
        kv_batch_put=lambda keys, partition_id, fields: store.update(
            {k: fields[k] for k in fields.keys()}  # noqa: SIM118 (TensorDict iterates keys only via .keys())
        ),
    )
    monkeypatch.setattr(trainer_mod, "tq", fake_tq)
    monkeypatch.setattr(PPOTrainerSync, "_compute_ref_log_prob", lambda self, batch, metrics: batch)
    batch = KVBatchMeta(keys=["u_0_0"], tags=[{}], partition_id="train")
    _trainer("fixed", 1)._compute_ref_log_prob(batch, {})
    assert torch.equal(store["old_log_probs"], torch.tensor([[0.5, -1.0]]))
    store["old_log_probs"] = torch.tensor([[9.0, 9.0]])
    _trainer("rollout", 1)._compute_ref_log_prob(batch, {})
    assert torch.equal(store["old_log_probs"], torch.tensor([[9.0, 9.0]]))


@pytest.mark.parametrize("ref,needs_ref", [("rollout", False), ("periodic", True), ("fixed", True)])
def test_trainer_init_runs_as_verls_sync_trainer(ref, needs_ref, compose, tmp_path):
    """Registered as "label_sync", it must still get verl's *sync* replay buffer and data path."""
    from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer, ReplayBufferAsync

    from pacs.config import load_config, parse_profile
    from pacs.verl_plugin.launch.overrides import ClusterShape, RunPaths, build_overrides
    from pacs.verl_plugin.trainer import GroupRefillReplayBuffer, PACSTrainerSync

    cfg = load_config(Path(__file__).resolve().parents[2] / "configs" / "paper.yaml")
    cfg["runs"]["p"] = {
        "method": "pacs",
        "ref": ref,
        **({"ref_reset_every": 4} if ref == "periodic" else {}),
    }
    profile = parse_profile(cfg)
    c = compose(
        build_overrides(
            profile,
            profile.run("p"),
            "qwen3_4b",
            0,
            RunPaths("/t", "/t", tmp_path),
            ClusterShape(1, 8),
            "/l",
        )
    )
    assert c.trainer.v1.trainer_mode == "label_sync"
    trainer = PACSTrainerSync(c)
    assert trainer.trainer_mode == "sync"
    # verl's sync buffer, specialised only to refill partly failed groups (GroupRefillReplayBuffer).
    assert isinstance(trainer.replay_buffer, ReplayBuffer) and not isinstance(
        trainer.replay_buffer, ReplayBufferAsync
    )
    assert type(trainer.replay_buffer) is GroupRefillReplayBuffer
    assert trainer.use_reference_policy is needs_ref
    assert trainer.group_size == 8 and trainer.parameter_sync_step == 1
