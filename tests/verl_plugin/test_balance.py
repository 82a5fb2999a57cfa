"""Group-preserving balancing over data-parallel ranks (the label_sync trainer's _balance_batch).

Balance tolerance: after balancing, the per-rank totals of prompt+response tokens may differ by at
most the token total of the largest single group (whole groups cannot be split, so no partition
can promise better in general), and never by more than the naive uid-order split.
"""

from __future__ import annotations

import random
import uuid
from itertools import combinations

import pytest
from omegaconf import OmegaConf

from pacs.verl_plugin.balance import (
    group_balanced_order,
    groups_by_uid,
    select_complete_groups,
    uid_of_key,
)

N, GROUPS = 8, 6


def _synthetic(seed: int = 0):
    """6 groups × 8 responses in shuffled row order, skewed lengths (some groups ~10× longer)."""
    rng = random.Random(seed)
    uids = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(GROUPS)]
    rows = []
    for g, uid in enumerate(uids):
        scale = 8000 if g % 3 == 0 else 800
        rows += [(f"{uid}_{s}_0", rng.randint(scale // 4, scale)) for s in range(N)]
    rng.shuffle(rows)
    keys, lens = zip(*rows)
    return list(keys), list(lens)


def _rank_chunks(order, dp):
    size = len(order) // dp
    return [order[r * size : (r + 1) * size] for r in range(dp)]


@pytest.mark.parametrize("dp", [2, 3])
def test_no_group_is_split_and_groups_stay_contiguous(dp):
    keys, lens = _synthetic()
    order, _ = group_balanced_order(keys, lens, N, dp)
    assert sorted(order) == list(range(len(keys)))
    seen = set()
    for chunk in _rank_chunks(order, dp):
        uids = [uid_of_key(keys[i]) for i in chunk]
        assert len(uids) == GROUPS * N // dp
        for start in range(0, len(uids), N):  # each run of N rows is exactly one whole group
            block = set(uids[start : start + N])
            assert len(block) == 1 and block.isdisjoint(seen)
            seen |= block
    assert len(seen) == GROUPS


@pytest.mark.parametrize("dp", [2, 3])
def test_token_totals_stay_balanced(dp):
    keys, lens = _synthetic()
    order, _ = group_balanced_order(keys, lens, N, dp)
    totals = [sum(lens[i] for i in chunk) for chunk in _rank_chunks(order, dp)]
    group_totals = [sum(lens[i] for i in g) for g in groups_by_uid(keys, N)]
    naive = [sum(group_totals[r * (GROUPS // dp) : (r + 1) * (GROUPS // dp)]) for r in range(dp)]
    spread = max(totals) - min(totals)
    assert spread <= max(group_totals)
    assert spread <= max(naive) - min(naive)
    # 6 groups are few enough to find the best equal-size split by brute force; verl's partitioner
    # balances a FLOP proxy (24576·L + L²), not tokens, so allow one smallest group of slack.
    best = min(max(s) - min(s) for s in _equal_splits(group_totals, dp))
    assert spread <= best + min(group_totals)


def _equal_splits(values, k):
    """All ways to split ``values`` into k blocks of equal size, as lists of block sums."""
    size = len(values) // k

    def rec(remaining):
        if not remaining:
            yield []
            return
        first, rest = remaining[0], remaining[1:]
        for others in combinations(rest, size - 1):
            block = (first, *others)
            left = [i for i in rest if i not in others]
            for tail in rec(left):
                yield [sum(values[i] for i in block), *tail]

    yield from rec(list(range(len(values))))


def test_incomplete_group_is_refused():
    keys, lens = _synthetic()
    with pytest.raises(ValueError, match="exactly rollout.n=8"):
        group_balanced_order(keys[1:], lens[1:], N, 2)


def test_groups_must_divide_over_ranks():
    keys, lens = _synthetic()
    with pytest.raises(ValueError, match="evenly"):
        group_balanced_order(keys, lens, N, 4)


def test_uid_of_key_handles_uuid_dashes_and_plain_keys():
    assert (
        uid_of_key("1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed_3_0")
        == "1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed"
    )
    assert uid_of_key("plain") == "plain"


# ------------------------------------------------------------------- the trainer methods


class _FakeWorkerGroup:
    def __init__(self, dp):
        self._dispatch_info = {"actor": list(range(dp))}


def _trainer(dp: int, mini=3, micro=1, shuffle=False):
    from pacs.verl_plugin.trainer import PACSTrainerSync

    trainer = object.__new__(PACSTrainerSync)  # no Ray, no workers: only the batch logic
    trainer.config = OmegaConf.create(
        {
            "data": {"train_batch_size": GROUPS},
            "actor_rollout_ref": {
                "actor": {
                    "ppo_mini_batch_size": mini,
                    "ppo_micro_batch_size_per_gpu": micro,
                    "use_dynamic_bsz": False,
                    "shuffle": shuffle,
                }
            },
        }
    )
    trainer.group_size = N
    trainer.min_group_fraction = 0.5
    trainer.global_steps = 1
    trainer.actor_rollout_wg = _FakeWorkerGroup(dp)
    return trainer


def _kv_batch(keys, lens, padding=False):
    from transfer_queue import KVBatchMeta

    return KVBatchMeta(
        keys=list(keys),
        tags=[{"seq_len": n, "is_padding": padding} for n in lens],
        partition_id="train",
    )


def test_trainer_balance_batch_reorders_whole_groups():
    keys, lens = _synthetic(seed=3)
    batch, metrics = _kv_batch(keys, lens), {}
    _trainer(dp=3, mini=3)._balance_batch(batch, metrics)
    expected, _ = group_balanced_order(keys, lens, N, 3)
    assert batch.keys == [keys[i] for i in expected]
    assert [t["seq_len"] for t in batch.tags] == [lens[i] for i in expected]
    assert "global_seqlen/max" in metrics and "global_seqlen/min" in metrics


def test_trainer_refuses_bad_geometry():
    keys, lens = _synthetic()
    with pytest.raises(
        ValueError, match="dp_size=2"
    ):  # 3 groups per mini-batch cannot split over 2 ranks
        _trainer(dp=2, mini=3)._balance_batch(_kv_batch(keys, lens), {})
    with pytest.raises(ValueError, match="shuffle"):
        _trainer(dp=2, mini=2, shuffle=True)._balance_batch(_kv_batch(keys, lens), {})


# ------------------------------------------------ failed rollouts: short groups and padding rows


def _with_failures(seed: int = 0, short: int = 1, pads: int = 3):
    """_synthetic() minus one response of the first ``short`` groups (failed rollouts), plus
    ``pads`` rows shaped like verl's upsample_batch_to_divisible_size padding (own uid)."""
    keys, lens = _synthetic(seed)
    uids = sorted({uid_of_key(k) for k in keys})
    lost = {f"{uid}_0_0" for uid in uids[:short]}
    rows = [(k, n, False) for k, n in zip(keys, lens) if k not in lost]
    rows += [(f"pad{'f' * 32}_{i}_0", 128, True) for i in range(pads)]
    random.Random(seed).shuffle(rows)
    keys, lens, padding = zip(*rows)
    return list(keys), list(lens), list(padding), set(uids[:short])


def test_short_groups_and_padding_are_dropped_whole_groups_kept():
    keys, _, padding, short = _with_failures(short=1, pads=3)
    sel = select_complete_groups(keys, padding, N, group_multiple=1, expected_groups=GROUPS)
    kept_uids = [uid_of_key(keys[i]) for i in sel.keep]
    # 6 groups, 1 lost a response: 5 whole groups of 8 rows stay, in uid order, contiguous
    assert (sel.kept_groups, sel.short_groups, sel.padding_rows, sel.trimmed_groups) == (5, 1, 3, 0)
    assert len(sel.keep) == 5 * N and not any(padding[i] for i in sel.keep)
    assert not set(kept_uids) & short
    assert kept_uids == sorted(kept_uids)
    assert all(len(set(kept_uids[g : g + N])) == 1 for g in range(0, len(kept_uids), N))
    assert sel.metrics() == {
        "pacs/groups/kept": 5,
        "pacs/groups/dropped_incomplete": 1,
        "pacs/groups/missing": 0,
        "pacs/groups/dropped_for_geometry": 0,
        "pacs/groups/padding_rows_dropped": 3,
    }


def test_surplus_groups_are_dropped_to_fill_whole_mini_batches():
    keys, _, padding, _ = _with_failures(short=1, pads=3)
    # mini-batches of 2 groups: 5 complete groups -> 4 kept, the last one in uid order trimmed
    sel = select_complete_groups(keys, padding, N, group_multiple=2, expected_groups=GROUPS)
    assert (sel.kept_groups, sel.short_groups, sel.trimmed_groups) == (4, 1, 1)
    complete = sorted({uid_of_key(k) for k, p in zip(keys, padding) if not p} - _with_failures()[3])
    assert sorted({uid_of_key(keys[i]) for i in sel.keep}) == complete[:4]


def test_too_few_groups_left_fails_with_the_threshold_named():
    keys, _, padding, _ = _with_failures(short=3, pads=0)
    ok = select_complete_groups(keys, padding, N, 1, GROUPS, min_group_fraction=0.5)
    assert ok.kept_groups == 3
    with pytest.raises(ValueError, match=r"only 3 of 6 .*min_group_fraction=0.6"):
        select_complete_groups(keys, padding, N, 1, GROUPS, min_group_fraction=0.6)
    with pytest.raises(ValueError, match="only 0 of 6"):  # nothing usable ever passes
        select_complete_groups(keys, [True] * len(keys), N, 1, GROUPS, min_group_fraction=0.0)


def test_a_group_with_more_than_n_responses_is_an_error():
    keys, _ = _synthetic()
    extra = f"{uid_of_key(keys[0])}_9_0"
    with pytest.raises(ValueError, match="more than rollout.n=8"):
        select_complete_groups([*keys, extra], [False] * (len(keys) + 1), N, 1, GROUPS)


class _FakeTQ:
    def __init__(self):
        self.cleared = []

    def kv_clear(self, keys, partition_id):
        self.cleared.append((list(keys), partition_id))


def test_trainer_drops_failed_groups_clears_them_and_balances_the_rest(monkeypatch):
    import pacs.verl_plugin.trainer as trainer_module

    fake_tq = _FakeTQ()
    monkeypatch.setattr(trainer_module, "tq", fake_tq)
    keys, lens, padding, short = _with_failures(seed=5, short=1, pads=3)
    batch = _kv_batch(keys, lens)
    for tag, pad in zip(batch.tags, padding):
        tag["is_padding"] = pad
    metrics = {}
    out = _trainer(dp=2, mini=2)._balance_batch(batch, metrics)
    # 5 complete groups -> 4 (2 mini-batches of 2 groups), 2 whole groups per rank
    assert len(out) == 4 * N
    assert metrics["pacs/groups/dropped_incomplete"] == 1
    assert metrics["pacs/groups/dropped_for_geometry"] == 1
    assert metrics["pacs/groups/padding_rows_dropped"] == 3
    assert not any(t["is_padding"] for t in out.tags)
    for chunk in _rank_chunks(list(range(len(out))), 2):
        uids = [uid_of_key(out.keys[i]) for i in chunk]
        assert all(len(set(uids[g : g + N])) == 1 for g in range(0, len(uids), N))
    ((cleared, partition),) = fake_tq.cleared
    assert partition == "train"
    assert sorted(cleared + out.keys) == sorted(keys)  # every dropped row leaves TransferQueue
    assert {uid_of_key(k) for k in cleared} >= short


def test_trainer_complete_batch_clears_nothing(monkeypatch):
    import pacs.verl_plugin.trainer as trainer_module

    fake_tq = _FakeTQ()
    monkeypatch.setattr(trainer_module, "tq", fake_tq)
    keys, lens = _synthetic()
    metrics = {}
    _trainer(dp=2, mini=2)._balance_batch(_kv_batch(keys, lens), metrics)
    assert fake_tq.cleared == [] and metrics["pacs/groups/kept"] == GROUPS


def test_update_actor_sends_force_group_size_only_for_the_update(monkeypatch):
    from verl.trainer.ppo.v1 import PPOTrainerSync

    seen = {}
    monkeypatch.setattr(
        PPOTrainerSync,
        "_update_actor",
        lambda self, batch, metrics: seen.update(batch.extra_info) or batch,
    )
    keys, lens = _synthetic()
    batch = _kv_batch(keys, lens)
    _trainer(dp=2, mini=2)._update_actor(batch, {})
    assert seen["force_group_size"] == N
    assert "force_group_size" not in batch.extra_info


def test_geometry_check_counts_micro_batches_in_groups():
    from pacs.verl_plugin.trainer import check_batch_geometry

    check_batch_geometry(
        1024, 256, 1, dp_size=16, use_dynamic_bsz=False, shuffle=False
    )  # paper, 2 nodes
    with pytest.raises(ValueError, match="not a multiple"):
        check_batch_geometry(1024, 256, 3, dp_size=8, use_dynamic_bsz=False, shuffle=False)
    with pytest.raises(ValueError, match="train_batch_size"):
        check_batch_geometry(1000, 256, 1, dp_size=8, use_dynamic_bsz=False, shuffle=False)
