"""A failed rollout costs only what failed (issue 17, defect 11).

verl's sync replay buffer, driven here against an in-memory stand-in for TransferQueue's
``kv_list``/``kv_clear``, with the buffer's real ``sample`` loop. verl's own buffer keeps a partly
failed group sampleable (PACS then had to drop it and trim the batch to whole mini-batches: 1,023
complete groups became 768); the label_sync buffer evicts it and regenerates a fresh prompt group,
so the batch keeps every group, and counts what it regenerated.
"""

from __future__ import annotations

import pytest

from pacs.verl_plugin.balance import select_complete_groups, short_failed_groups

N = 2  # rollout.n


class _Store:
    """Prompt tags ``{uid: {is_prompt, status, global_steps}}`` and trajectory tags
    ``{uid}_{s}_0``."""

    def __init__(self):
        self.tags: dict[str, dict] = {}
        self.fresh = 0

    def add_group(self, uid: str, produced: int, status: str) -> None:
        self.tags[uid] = {"is_prompt": True, "status": status, "global_steps": 1}
        for s in range(produced):
            self.tags[f"{uid}_{s}_0"] = {"seq_len": 10}

    def kv_list(self, partition_id=None):
        return {"train": dict(self.tags)}

    def kv_clear(self, keys, partition_id):
        for key in keys:
            self.tags.pop(key, None)

    def refill(self, count: int, produced: int = N, status: str = "finished") -> int:
        for _ in range(count):
            self.fresh += 1
            self.add_group(f"fresh{self.fresh}", produced, status)
        return count


def _buffer(monkeypatch, store: _Store, pacs: bool, refill=None, max_refills: int = 2):
    import verl.trainer.ppo.v1.replay_buffer as rb
    from omegaconf import OmegaConf

    monkeypatch.setattr(rb.tq, "kv_list", store.kv_list)
    monkeypatch.setattr(rb.tq, "kv_clear", store.kv_clear)
    buffer = rb.ReplayBuffer(
        trainer_mode="sync",
        trainer_config=OmegaConf.create({}),
        max_off_policy_threshold=None,
        max_off_policy_strategy="drop",
        sampler_kwargs=OmegaConf.create({}),
        poll_interval=0.0,
        refill_fn=refill or store.refill,
        train_batch_size=4,
        gen_batch_size=1,
        sync_refill_failed_groups=True,  # what label_sync sets
    )
    if pacs:
        from pacs.verl_plugin.trainer import GroupRefillReplayBuffer

        buffer = GroupRefillReplayBuffer.adopt(buffer, group_size=N, max_refills=max_refills)
    return buffer


def _step(store: _Store) -> None:
    for uid in ("a", "b", "c"):
        store.add_group(uid, N, "finished")
    store.add_group("d", 1, "failure")  # one of d's 2 rollouts failed


def _groups(batch) -> dict[str, int]:
    counts: dict[str, int] = {}
    for key in batch.keys:
        counts[key.split("_")[0]] = counts.get(key.split("_")[0], 0) + 1
    return counts


def test_verl_buffer_alone_keeps_the_short_group(monkeypatch):
    """The defect: the partly failed group reaches the trainer, which must drop it."""
    store = _Store()
    _step(store)
    batch, _ = _buffer(monkeypatch, store, pacs=False).sample(1, "train", 4)
    assert _groups(batch) == {"a": 2, "b": 2, "c": 2, "d": 1}


def test_pacs_buffer_regenerates_the_short_group_and_counts_it(monkeypatch):
    store = _Store()
    _step(store)
    batch, metrics = _buffer(monkeypatch, store, pacs=True).sample(1, "train", 4)
    assert _groups(batch) == {"a": 2, "b": 2, "c": 2, "fresh1": 2}  # 4 whole groups
    assert metrics["pacs/groups/refilled"] == 1
    assert metrics["training/rollout_failure/evicted_samples"] == 1
    assert not any(k.startswith("d") for k in store.tags)  # the short group left TransferQueue
    sel = select_complete_groups(batch.keys, [False] * len(batch), N, 4, expected_groups=4)
    assert (sel.kept_groups, sel.trimmed_groups) == (4, 0)  # nothing trimmed


def test_a_refill_that_fails_again_is_regenerated_again(monkeypatch):
    store = _Store()
    _step(store)
    outcomes = iter([(0, "failure"), (N, "finished")])  # first regeneration fails entirely

    def refill(count):
        produced, status = next(outcomes)
        return store.refill(count, produced, status)

    batch, metrics = _buffer(monkeypatch, store, pacs=True, refill=refill).sample(1, "train", 4)
    assert _groups(batch) == {"a": 2, "b": 2, "c": 2, "fresh2": 2}
    assert metrics["pacs/groups/refilled"] == 2


def test_an_engine_that_keeps_failing_stops_the_step(monkeypatch):
    store = _Store()
    _step(store)
    buffer = _buffer(
        monkeypatch, store, pacs=True, refill=lambda c: store.refill(c, 1, "failure"), max_refills=2
    )
    with pytest.raises(
        RuntimeError, match=r"3 prompt groups had failed rollouts .* more than the 2"
    ):
        buffer.sample(1, "train", 4)


def test_short_failed_groups_counts_trajectories_per_uid():
    keys = ["u1_0_0", "u1_1_0", "u2_0_0", "u4_0_0", "u4_1_0"]
    assert short_failed_groups({"u1", "u2", "u3"}, keys, 2) == {"u2", "u3"}


def test_groups_that_left_no_row_are_counted():
    keys = [f"u{g}_{s}_0" for g in range(3) for s in range(N)]  # 3 of 4 expected groups
    sel = select_complete_groups(keys, [False] * len(keys), N, 1, expected_groups=4)
    assert sel.missing_groups == 1 and sel.metrics()["pacs/groups/missing"] == 1


def test_refill_budget_follows_min_group_fraction():
    from pacs.verl_plugin.trainer import max_refills

    assert max_refills(1024, 0.5) == 512 and max_refills(4, 0.5) == 2 and max_refills(8, 1.0) == 0
