"""DeepScaleR-Preview -> verl's RL parquet (the paper profile's training set).

Columns, as ``verl.utils.dataset.rl_dataset.RLHFDataset`` and verl's reward manager read them:

- ``data_source``: ``"deepscaler"`` (our reward function dispatches on it);
- ``prompt``: chat messages, one user turn = problem + the paper's suffix (App. C);
- ``ability``: ``"math"``;
- ``reward_model``: ``{"style": "rule", "ground_truth": <normalised answer>}``;
- ``extra_info``: ``{"index": <row in the source>, "id": "deepscaler/<index>", "split": "train"}``.

The id is the row's index in the source file at the pinned revision: DeepScaleR has no id column
and holds some repeated problems, so a text hash would not be unique.

Exact duplicates (the same problem text with the same normalised gold answer) are dropped, the
first occurrence kept: a repeated problem would be sampled twice as often. Their number is logged
and written to the manifest (``duplicates_dropped``); the 803-row subset holds 21. A problem
repeated with a *different* gold answer is kept in both versions (one gold is wrong, or both
spell the same value differently, and nothing here can tell which), counted in
``conflicting_duplicates`` and logged with its rows.

With a tokenizer, prompts longer than ``max_prompt_length`` tokens (the chat template applied
with ``add_generation_prompt=True``, as verl measures them) are dropped, like verl's
``filter_overlong_prompts``; the number dropped is logged and written to the manifest.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from pacs import PROMPT_SUFFIX
from pacs.data.benchmarks import require, require_str, user_prompt
from pacs.data.errors import DataError
from pacs.data.normalize import normalize_answer
from pacs.io import atomic_path

log = logging.getLogger(__name__)

DATA_SOURCE = "deepscaler"


def convert_deepscaler(
    records: Sequence[dict[str, Any]], file: Any, split: str = "train"
) -> list[dict[str, Any]]:
    """verl rows for every record of DeepScaleR (fields ``problem`` and ``answer`` required)."""
    if not records:
        raise DataError(file, "no rows")
    rows = []
    for i, rec in enumerate(records):
        problem = require_str(file, i, rec, "problem")
        answer = normalize_answer(
            require(file, i, rec, "answer"), file=file, index=i, field="answer"
        )
        rows.append(
            {
                "data_source": DATA_SOURCE,
                "prompt": user_prompt(problem + PROMPT_SUFFIX),
                "ability": "math",
                "reward_model": {"style": "rule", "ground_truth": answer},
                "extra_info": {"index": i, "id": f"{DATA_SOURCE}/{i}", "split": split},
            }
        )
    return rows


def drop_duplicates(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int, int]:
    """``rows`` without exact duplicate problems (first kept), the number dropped, and the number
    of rows that repeat a problem with another gold answer (kept)."""
    golds: dict[str, dict[str, int]] = {}  # problem -> gold -> first source row
    kept, dropped, conflicting = [], 0, 0
    for row in rows:
        problem = row["prompt"][0]["content"]
        gold, index = row["reward_model"]["ground_truth"], row["extra_info"]["index"]
        seen = golds.setdefault(problem, {})
        if gold in seen:
            dropped += 1
            continue
        if seen:
            conflicting += 1
            log.warning(
                "source row %d repeats the problem of row(s) %s with another gold answer (%r vs "
                "%s); both kept",
                index,
                sorted(seen.values()),
                gold,
                sorted(seen),
            )
        seen[gold] = index
        kept.append(row)
    log.info(
        "dropped %d exact duplicate problems (same text and gold answer) of %d rows",
        dropped,
        len(rows),
    )
    return kept, dropped, conflicting


def prompt_length(tokenizer: Any, messages: list[dict[str, str]]) -> int:
    """Tokens of the rendered chat prompt with the generation prompt (verl's measure)."""
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def filter_overlong(
    rows: list[dict[str, Any]], tokenizer: Any, max_prompt_length: int
) -> tuple[list[dict[str, Any]], int]:
    """Rows whose prompt fits in ``max_prompt_length`` tokens, and the number dropped."""
    kept = [
        row
        for row in tqdm(rows, desc="measuring prompt lengths", unit="prompt", mininterval=2.0)
        if prompt_length(tokenizer, row["prompt"]) <= max_prompt_length
    ]
    dropped = len(rows) - len(kept)
    log.info(
        "dropped %d of %d prompts longer than %d tokens", dropped, len(rows), max_prompt_length
    )
    return kept, dropped


def write_parquet(dest: str | Path, rows: list[dict[str, Any]]) -> Path:
    """Write ``rows`` as one parquet file, atomically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with atomic_path(dest) as tmp:
        pq.write_table(pa.Table.from_pylist(rows), tmp)
    return Path(dest)
