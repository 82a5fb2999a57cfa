"""The tiny engine logs path statistics of its rollouts on the paths task, and nothing elsewhere."""

from __future__ import annotations

import math

import pytest

from pacs.tiny.record import path_metrics


def test_path_metrics_on_the_paths_task():
    rows = [{"answer": "6", "quantities": [1, 2, 3]}, {"answer": "15", "quantities": [4, 5, 6]}]
    texts = ["1+2=3. 3+3=6.", "3+2=5. 5+1=6.", "4+5=9. 9+6=15.", "4+5=9. 9+6=15."]
    got = path_metrics(texts, [1.0, 1.0, 1.0, 1.0], rows, 2)
    assert got == {
        "path_diversity": pytest.approx(0.5),
        "path_entropy": pytest.approx(0.6931 / 2, abs=1e-4),
    }  # ln 2 and 0


def test_no_path_metrics_on_the_arithmetic_task():
    assert path_metrics(["12+7=19."], [1.0], [{"answer": "19"}], 1) == {}


def test_train_step_logs_path_metrics_on_paths_rows_only(tiny_env, small_config, monkeypatch):
    """The glue in train_step: rows that carry ``quantities`` give a metrics row with the path
    statistics of that step's correct rollouts; other rows give none."""
    import copy
    import dataclasses

    from transformers import AutoTokenizer

    from pacs.config import parse_profile
    from pacs.io import read_jsonl
    from pacs.tiny import collect
    from pacs.tiny import train as tt
    from pacs.tiny.common import encode_prompts

    cfg = copy.deepcopy(small_config())
    settings = tt.Settings.from_profile(parse_profile(cfg), "grpo")
    n = settings.group_size
    # Per group of n: two responses take path 1-2, the others 2-1 (all graded correct).
    texts = ["1+2=3. The answer is \\boxed{3}."] * 2 + ["2+1=3. The answer is \\boxed{3}."] * (
        n - 2
    )
    real_sample = collect.sample

    def fixed_texts(*args, **kwargs):
        roll = real_sample(*args, **kwargs)
        return dataclasses.replace(roll, texts=texts * (len(roll.texts) // n))

    monkeypatch.setattr(collect, "sample", fixed_texts)
    tokenizer = AutoTokenizer.from_pretrained(tiny_env["base"])
    plain = read_jsonl(tiny_env["train"])
    for rows, want in ((plain, {}), ([{**r, "quantities": [1, 2]} for r in plain], None)):
        state = tt.init_state(settings, tiny_env["base"], len(rows), 0)
        row, _ = tt.train_step(
            state,
            settings,
            tokenizer,
            rows,
            encode_prompts(tokenizer, rows),
            lambda t, g: [1.0] * len(t),
        )
        got = {k: row[k] for k in ("path_diversity", "path_entropy") if k in row}
        if want is not None:
            assert got == want
            continue
        # Gini-Simpson unbiased: 1 - (2*1 + (n-2)(n-3)) / (n(n-1)); plug-in entropy of (2, n-2).
        p = 2 / n
        assert got["path_diversity"] == pytest.approx(1 - (2 + (n - 2) * (n - 3)) / (n * (n - 1)))
        assert got["path_entropy"] == pytest.approx(-(p * math.log(p) + (1 - p) * math.log(1 - p)))
