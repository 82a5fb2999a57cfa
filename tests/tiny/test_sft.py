"""SFT warm-up: batching, response-only loss, the CLI's model folder and summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from pacs.config import load_config
from pacs.tiny import sft
from pacs.tiny.build import build_model
from pacs.tiny.common import encode_prompts, response_logprobs, sft_batch, sft_loss

DEFAULT_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "default.yaml"


def test_batch_indices_cover_each_epoch_and_are_seeded():
    batches = sft.batch_indices(10, 4, 5, seed=1)
    flat = [i for b in batches for i in b]
    assert all(len(b) == 4 for b in batches)
    assert sorted(flat[:10]) == list(range(10)) and sorted(flat[10:20]) == list(range(10))
    assert sft.batch_indices(10, 4, 5, seed=1) == batches != sft.batch_indices(10, 4, 5, seed=2)


def test_loss_covers_the_response_and_eos_only(tiny_env):
    tok = AutoTokenizer.from_pretrained(tiny_env["base"])
    rows = tiny_env["splits"]["sft"][:3]
    prompt_ids = encode_prompts(tok, rows)
    ids, mask, loss_mask = sft_batch(tok, prompt_ids, [r["solution"] for r in rows])
    for i, row in enumerate(rows):
        n_resp = len(tok(row["solution"] + tok.eos_token)["input_ids"])
        assert int(loss_mask[i].sum()) == n_resp
        assert ids[i, -1].item() == tok.eos_token_id
        assert int(mask[i].sum()) == len(prompt_ids[i]) + n_resp
    # The SFT loss equals the mean negative log-prob of the response tokens as the RL loop scores
    # them.
    model = AutoModelForCausalLM.from_pretrained(tiny_env["base"])
    with torch.no_grad():
        loss = sft_loss(model, ids, mask, loss_mask)
        R = int(loss_mask.sum(-1).max())  # left padding: every response sits in the last R columns
        logp, _ = response_logprobs(model, ids, mask, R)
        expected = -(logp * loss_mask[:, -R:]).sum() / loss_mask.sum()
    torch.testing.assert_close(loss, expected, rtol=1e-5, atol=1e-5)


def test_sft_lowers_the_loss(tiny_env):
    tok = AutoTokenizer.from_pretrained(tiny_env["base"])
    model = build_model(
        tok, hidden_size=32, num_hidden_layers=1, intermediate_size=64
    )  # fresh weights
    losses = sft.run_sft(
        model, tok, tiny_env["splits"]["sft"][:64], steps=8, batch_size=16, lr=1e-2, seed=0
    )
    assert losses[-1] < losses[0] - 0.5


def test_sft_cli_writes_model_and_summary(tiny_env, tmp_path, config_file):
    out = tmp_path / "base"
    sft.main(
        [
            "--config",
            str(config_file()),
            "--model",
            "tiny",
            "--init",
            str(tiny_env["base"]),
            "--data",
            str(tiny_env["sft"]),
            "--eval-data",
            str(tiny_env["test"]),
            "--out",
            str(out),
            "--threads",
            "1",
            "--steps",
            "2",
            "--eval-every",
            "2",
        ]
    )
    summary = json.loads((out / sft.SUMMARY_NAME).read_text())
    assert summary["steps"] == 2 and 0.0 <= summary["pass_at_1"] <= 1.0
    assert summary["eval"]["temperature"] == 0.6 and summary["eval"]["n_problems"] == 4
    assert [p["step"] for p in summary["curve"]] == [2]
    reloaded = AutoModelForCausalLM.from_pretrained(out)
    base = AutoModelForCausalLM.from_pretrained(tiny_env["base"])
    assert not torch.equal(reloaded.model.embed_tokens.weight, base.model.embed_tokens.weight)


@pytest.mark.slow
def test_sft_weights_do_not_depend_on_the_thread_count(tiny_env):
    """The SFT rule runs with every core Snakemake has (nothing else can run before the base model
    exists): that must train the very weights a 1-thread run trains, and leave the caller's thread
    count as it was. Default model size and batch."""
    tok = AutoTokenizer.from_pretrained(tiny_env["base"])
    cfg = load_config(DEFAULT_CONFIG)["models"]["tiny"]
    weights = {}
    for threads in (1, 2):
        torch.set_num_threads(threads)
        model = build_model(
            tok, seed=0, **{k: v for k, v in cfg["build"].items() if k != "vocab_size"}
        )
        sft.run_sft(
            model,
            tok,
            tiny_env["splits"]["sft"][:256],
            steps=3,
            batch_size=cfg["sft"]["batch_size"],
            lr=cfg["sft"]["lr"],
            seed=0,
        )
        weights[threads] = model.state_dict()
        assert torch.get_num_threads() == threads
    torch.set_num_threads(1)
    assert all(torch.equal(weights[1][k], weights[2][k]) for k in weights[1])
