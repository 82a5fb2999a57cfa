"""Order a rollout batch so that every prompt's group sits whole and contiguous on one dp rank.

verl's v1 ``_balance_batch`` always runs and balances single responses across data-parallel ranks,
which splits groups (docs/design.md#the-verl-plugin). PACS needs each group inside one micro-batch,
so the ``label_sync`` trainer balances whole groups instead: groups sorted by uid, partitioned over
the ranks by total workload with an equal number of groups per rank (verl's Karmarkar–Karp
partitioner), each rank's groups then laid out contiguously. verl's dispatcher hands rank k the k-th
contiguous chunk of the batch.

A failed rollout leaves its group short (verl's sync replay buffer keeps failed groups sampleable
and pads the batch with synthetic ``is_padding`` rows). The ``label_sync`` trainer therefore has
every failed group that is short of n trajectories (``short_failed_groups``) evicted and
regenerated from a fresh prompt before the batch is sampled, so a step keeps all its groups. As a
safety net, ``select_complete_groups`` still drops short groups and padding rows (RLOO cannot
score a short group, a padding row has no valid token), counts groups that left no row at all,
drops as many whole groups as needed for the rest to fill whole mini-batches, and fails when
fewer than ``min_group_fraction`` of the expected groups remain.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
from verl.utils.seqlen_balancing import (
    calculate_workload,
    get_seqlen_balanced_partitions,
    log_seqlen_unbalance,
)

DEFAULT_MIN_GROUP_FRACTION = 0.5


def uid_of_key(key: str) -> str:
    """verl v1 sample keys are ``{uid}_{session_id}_{index}``; the uid is the prompt's group id."""
    parts = key.rsplit("_", 2)
    return parts[0] if len(parts) == 3 else key


def rows_by_uid(keys: Sequence[str]) -> dict[str, list[int]]:
    """uid -> row positions (rows sorted by key), uids in sorted order."""
    rows: dict[str, list[int]] = {}
    for pos, key in enumerate(keys):
        rows.setdefault(uid_of_key(key), []).append(pos)
    return {uid: sorted(rows[uid], key=lambda p: keys[p]) for uid in sorted(rows)}


def groups_by_uid(keys: Sequence[str], group_size: int) -> list[list[int]]:
    """Row positions of each group, groups sorted by uid and rows by key; every group must hold
    exactly ``group_size`` rows (raise otherwise: a short group cannot be scored by RLOO)."""
    groups = rows_by_uid(keys)
    wrong = {uid: len(r) for uid, r in groups.items() if len(r) != group_size}
    if wrong:
        sample = dict(list(wrong.items())[:5])
        raise ValueError(
            f"{len(wrong)} prompt group(s) do not hold exactly rollout.n={group_size} responses "
            f"(uid -> count, first 5: {sample}); PACS scores whole groups: drop them first "
            "(select_complete_groups)"
        )
    return list(groups.values())


@dataclass(frozen=True)
class GroupSelection:
    """Which rows of a rollout batch the update uses, and why the others were dropped."""

    keep: list[int]  # row positions of the kept groups, group by group (uid order)
    kept_groups: int
    short_groups: int  # groups with fewer than rollout.n real responses (failed rollouts)
    missing_groups: int  # expected groups that left no row at all
    padding_rows: int  # verl's synthetic is_padding rows
    trimmed_groups: int  # complete groups dropped so the rest fills whole mini-batches

    def metrics(self, prefix: str = "pacs/groups") -> dict[str, int]:
        return {
            f"{prefix}/kept": self.kept_groups,
            f"{prefix}/dropped_incomplete": self.short_groups,
            f"{prefix}/missing": self.missing_groups,
            f"{prefix}/dropped_for_geometry": self.trimmed_groups,
            f"{prefix}/padding_rows_dropped": self.padding_rows,
        }


def select_complete_groups(
    keys: Sequence[str],
    is_padding: Sequence[bool],
    group_size: int,
    group_multiple: int,
    expected_groups: int,
    min_group_fraction: float = DEFAULT_MIN_GROUP_FRACTION,
) -> GroupSelection:
    """Keep the groups that hold exactly ``group_size`` real responses, as many as a multiple of
    ``group_multiple`` (groups per mini-batch, a multiple of the dp size) allows.

    Padding rows and short groups are dropped; surplus complete groups are dropped from the end of
    the uid order (uids are random, so this is an unbiased choice). Raise ValueError when fewer than
    ``min_group_fraction · expected_groups`` groups (or none) remain.
    """
    if len(keys) != len(is_padding):
        raise ValueError(f"{len(keys)} keys but {len(is_padding)} padding flags")
    if group_multiple < 1:
        raise ValueError(f"group_multiple must be >= 1, got {group_multiple}")
    if not 0.0 <= min_group_fraction <= 1.0:
        raise ValueError(f"min_group_fraction must be in [0, 1], got {min_group_fraction}")
    real = [k for k, pad in zip(keys, is_padding, strict=True) if not pad]
    real_pos = [p for p, pad in enumerate(is_padding) if not pad]
    groups = rows_by_uid(real)
    complete = [[real_pos[i] for i in rows] for rows in groups.values() if len(rows) == group_size]
    oversized = {uid: len(r) for uid, r in groups.items() if len(r) > group_size}
    if oversized:
        raise ValueError(
            f"group(s) with more than rollout.n={group_size} responses (uid -> count, first 5: "
            f"{dict(list(oversized.items())[:5])}): multi-output agent loops are not supported by "
            "PACS"
        )
    usable = len(complete) - len(complete) % group_multiple
    needed = max(1, math.ceil(min_group_fraction * expected_groups - 1e-9))
    if usable < needed:
        raise ValueError(
            f"only {usable} of {expected_groups} prompt groups are usable "
            f"({len(groups) - len(complete)} "
            f"incomplete after failed rollouts, {max(0, expected_groups - len(groups))} without "
            "any "
            f"response, {len(complete)} complete, kept in multiples of "
            f"{group_multiple} groups per mini-batch); need at least {needed} "
            f"(algorithm.label_loss.min_group_fraction={min_group_fraction})"
        )
    return GroupSelection(
        keep=[row for group in complete[:usable] for row in group],
        kept_groups=usable,
        short_groups=len(groups) - len(complete),
        missing_groups=max(0, expected_groups - len(groups)),
        padding_rows=sum(bool(p) for p in is_padding),
        trimmed_groups=len(complete) - usable,
    )


def short_failed_groups(
    failed_uids: Iterable[str], trajectory_keys: Iterable[str], group_size: int
) -> set[str]:
    """uids of failed prompt groups holding fewer than ``group_size`` trajectories.

    verl's ``sync_refill_failed_groups`` refills only failed groups with no trajectory at all;
    PACS needs every short group regenerated, since RLOO scores whole groups.
    """
    counts: dict[str, int] = {}
    for key in trajectory_keys:
        uid = uid_of_key(key)
        counts[uid] = counts.get(uid, 0) + 1
    return {uid for uid in failed_uids if counts.get(uid, 0) < group_size}


def group_balanced_order(
    keys: Sequence[str], seq_lens: Sequence[int], group_size: int, dp_size: int
) -> tuple[list[int], list[list[int]]]:
    """Return (order, per-rank row partitions) for ``batch.reorder(order)``.

    keys: the batch's sample keys; seq_lens: prompt+response tokens per row. Each rank gets
    len(groups)/dp_size whole groups; raise when the groups cannot be split evenly.
    """
    if len(keys) != len(seq_lens):
        raise ValueError(f"{len(keys)} keys but {len(seq_lens)} sequence lengths")
    groups = groups_by_uid(keys, group_size)
    if len(groups) % dp_size != 0:
        raise ValueError(
            f"{len(groups)} prompt groups cannot be split evenly over {dp_size} data-parallel "
            "ranks; "
            "choose data.train_batch_size as a multiple of the dp size"
        )
    workload = calculate_workload(torch.as_tensor(list(seq_lens), dtype=torch.int64))
    group_work = [int(workload[g].sum()) for g in groups]
    group_parts = get_seqlen_balanced_partitions(group_work, k_partitions=dp_size, equal_size=True)
    row_parts = [[row for gi in sorted(part) for row in groups[gi]] for part in group_parts]
    order = [row for part in row_parts for row in part]
    return order, row_parts


def balance_stats(
    seq_lens: Sequence[int], row_parts: list[list[int]], prefix: str = "global_seqlen"
) -> dict:
    """verl's balance metrics (min/max/diff of per-rank token totals) for the chosen partition."""
    return log_seqlen_unbalance(seqlen_list=list(seq_lens), partitions=row_parts, prefix=prefix)
