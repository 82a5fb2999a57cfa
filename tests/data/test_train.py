"""DeepScaleR -> verl parquet: schema, duplicates, overlong filter, and verl's RLHFDataset."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from pacs import PROMPT_SUFFIX
from pacs.data.prepare import prepare_train
from pacs.data.train import DATA_SOURCE, convert_deepscaler, drop_duplicates, prompt_length

SUBSET = "deepscaler/deepscaler_subset803.json"
SUBSET_DUPLICATES = 21  # measured: 21 problems appear twice, each time with the same answer


def first_occurrences(records) -> list[int]:
    """Source rows kept by de-duplication, computed independently of the code under test."""
    seen, kept = set(), []
    for i, rec in enumerate(records):
        key = (rec["problem"], str(rec["answer"]).strip())
        if key not in seen:
            seen.add(key)
            kept.append(i)
    return kept


@pytest.fixture(scope="module")
def train_parquet(shared_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("train") / "train.parquet"
    return prepare_train("local", out, path=shared_data / SUBSET)


def test_verl_schema(train_parquet, shared_data):
    table = pq.read_table(train_parquet)
    assert table.column_names == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
    rows = table.to_pylist()
    source = json.loads((shared_data / SUBSET).read_text())
    kept = first_occurrences(source)
    assert len(source) == 803 and len(rows) == len(kept) == 803 - SUBSET_DUPLICATES
    for i, row in zip(kept, rows):
        rec = source[i]
        assert row["data_source"] == DATA_SOURCE and row["ability"] == "math"
        assert row["prompt"] == [{"role": "user", "content": rec["problem"] + PROMPT_SUFFIX}]
        assert row["reward_model"]["style"] == "rule"
        assert row["extra_info"] == {"index": i, "id": f"deepscaler/{i}", "split": "train"}
    assert rows[0]["reward_model"]["ground_truth"] == "-\\frac{2}{3}"
    manifest = json.loads(train_parquet.with_name("train.manifest.json").read_text())
    assert (
        manifest["rows"] == 782
        and manifest["dropped"] == 0
        and manifest["duplicates_dropped"] == SUBSET_DUPLICATES
        and manifest["conflicting_duplicates"] == 0
        and manifest["benchmark"] == "deepscaler"
    )


def _records(*pairs):
    return [{"problem": p, "answer": a} for p, a in pairs]


def test_exact_duplicate_problems_are_dropped_and_counted(tmp_path, caplog):
    src = tmp_path / "ds.json"
    src.write_text(
        json.dumps(
            _records(
                ("What is 5*5?", "25"),
                ("What is 1+1?", "2"),
                ("What is 5*5?", "025"),  # same gold once normalised: a duplicate
                ("What is 5*5?", 25),  # and again
                ("What is 1+1? ", "2"),  # other text (trailing space): kept
            )
        )
    )
    caplog.set_level("INFO", logger="pacs.data.train")
    out = prepare_train("local", tmp_path / "train.parquet", path=src)
    rows = pq.read_table(out).to_pylist()
    assert [r["extra_info"]["index"] for r in rows] == [0, 1, 4]
    manifest = json.loads((tmp_path / "train.manifest.json").read_text())
    assert manifest["rows"] == 3 and manifest["duplicates_dropped"] == 2
    assert manifest["conflicting_duplicates"] == 0 and manifest["dropped"] == 0
    assert "dropped 2 exact duplicate problems" in caplog.text


def test_a_system_turn_goes_before_every_problem_and_into_the_manifest(tmp_path):
    src = tmp_path / "ds.json"
    src.write_text(json.dumps(_records(("What is 5*5?", "25"), ("What is 1+1?", "2"))))
    system = "You are a helpful assistant."
    out = prepare_train("local", tmp_path / "train.parquet", path=src, system_prompt=system)
    prompts = [r["prompt"] for r in pq.read_table(out).to_pylist()]
    assert [p[0] for p in prompts] == [{"role": "system", "content": system}] * 2
    assert [p[1]["content"] for p in prompts] == [
        "What is 5*5?" + PROMPT_SUFFIX,
        "What is 1+1?" + PROMPT_SUFFIX,
    ]
    manifest = json.loads((tmp_path / "train.manifest.json").read_text())
    assert manifest["system_prompt"] == system
    plain = prepare_train("local", tmp_path / "plain.parquet", path=src)
    assert [len(r["prompt"]) for r in pq.read_table(plain).to_pylist()] == [1, 1]


def test_a_problem_repeated_with_another_gold_is_kept_and_reported(caplog):
    rows = convert_deepscaler(
        _records(("p", "1"), ("q", "7"), ("p", "2"), ("p", "1"), ("p", "2")), "ds.json"
    )
    kept, dropped, conflicting = drop_duplicates(rows)
    assert [r["extra_info"]["index"] for r in kept] == [0, 1, 2]
    assert (dropped, conflicting) == (2, 1)
    assert "source row 2 repeats the problem of row(s) [0] with another gold answer" in caplog.text


def test_real_subset_duplicates(shared_data):
    source = json.loads((shared_data / SUBSET).read_text())
    kept, dropped, conflicting = drop_duplicates(convert_deepscaler(source, SUBSET))
    assert (dropped, conflicting) == (SUBSET_DUPLICATES, 0)
    assert [r["extra_info"]["index"] for r in kept] == first_occurrences(source)


def test_overlong_prompts_are_dropped_and_counted(
    shared_data, tmp_path, chat_tokenizer, chat_tokenizer_dir
):
    records = json.loads((shared_data / SUBSET).read_text())
    unique = first_occurrences(records)
    messages = [
        [{"role": "user", "content": records[i]["problem"] + PROMPT_SUFFIX}] for i in unique
    ]
    lengths = [prompt_length(chat_tokenizer, m) for m in messages]
    limit = sorted(lengths)[len(lengths) // 2]
    expected_kept = [i for i, n in zip(unique, lengths) if n <= limit]
    expected_dropped = len(unique) - len(expected_kept)
    assert 0 < expected_dropped < len(lengths)
    out = prepare_train(
        "local",
        tmp_path / "train.parquet",
        path=shared_data / SUBSET,
        tokenizer=chat_tokenizer_dir,
        max_prompt_length=limit,
    )
    rows = pq.read_table(out).to_pylist()
    assert [r["extra_info"]["index"] for r in rows] == expected_kept
    manifest = json.loads((tmp_path / "train.manifest.json").read_text())
    assert manifest["dropped"] == expected_dropped and manifest["max_prompt_length"] == limit
    assert manifest["rows"] == len(rows)


def test_verl_rlhf_dataset_reads_it(train_parquet, chat_tokenizer, tmp_path):
    """verl's own reader loads the file, and its overlong filter agrees with ours."""
    from verl.utils.dataset.rl_dataset import RLHFDataset

    rows = pq.read_table(train_parquet).to_pylist()
    lengths = [prompt_length(chat_tokenizer, r["prompt"]) for r in rows]
    limit = sorted(lengths)[len(lengths) // 3]
    config = {
        "prompt_key": "prompt",
        "max_prompt_length": limit,
        "filter_overlong_prompts": True,
        "filter_overlong_prompts_workers": 1,
        "cache_dir": str(tmp_path / "verl_cache"),
        "truncation": "error",
    }
    dataset = RLHFDataset(str(train_parquet), chat_tokenizer, config)
    assert len(dataset) == sum(n <= limit for n in lengths) < len(rows)
    item = dataset[0]
    first_kept = next(i for i, n in enumerate(lengths) if n <= limit)
    assert item["raw_prompt"] == rows[first_kept]["prompt"]
    assert item["raw_prompt"][0]["content"].endswith(PROMPT_SUFFIX)
    assert item["index"] == first_kept and item["data_source"] == DATA_SOURCE
    assert item["reward_model"] == rows[first_kept]["reward_model"]
