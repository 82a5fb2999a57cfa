"""Order a rollout batch so that every prompt's group sits whole and contiguous on one dp rank.

verl's v1 ``_balance_batch`` always runs and balances single responses across data-parallel
ranks, which splits groups (docs/design.md §5). PACS needs each group inside one micro-batch, so the
``pacs_sync`` trainer balances whole groups instead: groups sorted by uid, partitioned over the
ranks by total workload with an equal number of groups per rank (verl's Karmarkar–Karp
partitioner), each rank's groups then laid out contiguously. verl's dispatcher hands rank k the
k-th contiguous chunk of the batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from verl.utils.seqlen_balancing import (
    calculate_workload,
    get_seqlen_balanced_partitions,
    log_seqlen_unbalance,
)


def uid_of_key(key: str) -> str:
    """verl v1 sample keys are ``{uid}_{session_id}_{index}``; the uid is the prompt's group id."""
    parts = key.rsplit("_", 2)
    return parts[0] if len(parts) == 3 else key


def groups_by_uid(keys: Sequence[str], group_size: int) -> list[list[int]]:
    """Row positions of each group, groups sorted by uid and rows by key; every group must hold
    exactly ``group_size`` rows (raise otherwise: a short group cannot be scored by RLOO)."""
    rows: dict[str, list[int]] = {}
    for pos, key in enumerate(keys):
        rows.setdefault(uid_of_key(key), []).append(pos)
    wrong = {uid: len(r) for uid, r in rows.items() if len(r) != group_size}
    if wrong:
        sample = dict(list(wrong.items())[:5])
        raise ValueError(
            f"{len(wrong)} prompt group(s) do not hold exactly rollout.n={group_size} responses "
            f"(uid -> count, first 5: {sample}); PACS scores whole groups. Failed or filtered "
            "rollouts must be re-generated, not padded."
        )
    return [sorted(rows[uid], key=lambda p: keys[p]) for uid in sorted(rows)]


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
            f"{len(groups)} prompt groups cannot be split evenly over {dp_size} data-parallel ranks; "
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
