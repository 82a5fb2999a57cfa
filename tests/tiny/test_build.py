"""Tokenizer and model builder: digits, chat template, offline reload, size."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import huggingface_hub.constants
import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer

from pacs import PROMPT_SUFFIX
from pacs.io import write_jsonl
from pacs.tiny import build

PROMPT_TAIL = PROMPT_SUFFIX + "<|im_end|>\n<|im_start|>assistant\n"

RELOAD = """
import json, sys, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
out = sys.argv[1]
tok = AutoTokenizer.from_pretrained(out)
model = AutoModelForCausalLM.from_pretrained(out)
msgs = [{"role": "user", "content": "Mia has 3 apples." + sys.argv[2]}]
print(json.dumps({
    "text": tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True),
    "tokens": tok.convert_ids_to_tokens(tok("12 + 305 = 317")["input_ids"]),
    "eos": tok.eos_token, "pad": tok.pad_token, "side": tok.padding_side,
    "class": type(model).__name__,
}))
torch.save({k: v.clone() for k, v in model.state_dict().items()}, sys.argv[3])
"""


def test_tokenizer_splits_digits_and_renders_the_paper_prompt(tiny_env):
    tok = build.build_tokenizer(
        build.corpus_from_rows(tiny_env["splits"]["sft"][:200]), vocab_size=300
    )
    assert len(tok) <= 300
    pieces = tok.convert_ids_to_tokens(tok("x 1234 y")["input_ids"])
    assert [p for p in pieces if p.strip("Ġ").isdigit()] == ["1", "2", "3", "4"]
    assert (
        tok.eos_token == "<|im_end|>"
        and tok.pad_token == "<|endoftext|>"
        and tok.padding_side == "left"
    )
    text = tok.apply_chat_template(
        tiny_env["splits"]["test"][0]["prompt"], tokenize=False, add_generation_prompt=True
    )
    assert text.startswith("<|im_start|>user\n") and text.endswith(PROMPT_TAIL)
    assert tok.decode(tok(text)["input_ids"]) == text  # byte-level: lossless round trip
    batch = tok(["1", "1 + 1 = 2"], padding=True)
    assert batch["attention_mask"][0][0] == 0  # left padding


def test_default_model_size_and_tied_embeddings(tiny_env):
    tok = build.build_tokenizer(
        build.corpus_from_rows(tiny_env["splits"]["sft"][:200]), vocab_size=384
    )
    model = build.build_model(tok)  # the default tiny sizes (docs/design.md#the-tiny-profile)
    n_params = sum(p.numel() for p in model.parameters())
    assert 0.40e6 < n_params < 0.48e6
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    assert (
        model.config.eos_token_id == tok.eos_token_id
        and model.config.pad_token_id == tok.pad_token_id
    )
    again = build.build_model(tok)
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), again.parameters()))  # seeded


@pytest.fixture
def built(tiny_env, tmp_path, config_file):
    """A model folder written by the build CLI (test-sized model)."""
    data_dir = tmp_path / "data"
    write_jsonl(data_dir / "sft.jsonl", tiny_env["splits"]["sft"][:300])
    out = tmp_path / "built"
    build.main(
        [
            "--config",
            str(config_file()),
            "--model",
            "tiny",
            "--data-dir",
            str(data_dir),
            "--out",
            str(out),
        ]
    )
    return out


def test_build_cli_reloads_offline_in_process(built, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    tok = AutoTokenizer.from_pretrained(built)
    model = AutoModelForCausalLM.from_pretrained(built)
    saved = load_file(built / "model.safetensors")
    state = model.state_dict()
    assert all(torch.equal(saved[k], state[k]) for k in saved)
    text = tok.apply_chat_template(
        [{"role": "user", "content": "Q?" + PROMPT_SUFFIX}],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert text == "<|im_start|>user\nQ?" + PROMPT_TAIL
    assert tok.eos_token_id == model.config.eos_token_id == model.generation_config.eos_token_id


@pytest.mark.slow
def test_build_cli_reloads_offline_in_a_fresh_process(built, tmp_path):
    """The same in a new interpreter with HF_HUB_OFFLINE=1 from the start (nothing cached)."""
    out = built
    saved = load_file(out / "model.safetensors")

    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    reloaded = tmp_path / "reloaded.pt"
    proc = subprocess.run(
        [sys.executable, "-c", RELOAD, str(out), PROMPT_SUFFIX, str(reloaded)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["class"] == "Qwen3ForCausalLM"
    assert got["text"] == "<|im_start|>user\nMia has 3 apples." + PROMPT_TAIL
    assert (got["eos"], got["pad"], got["side"]) == ("<|im_end|>", "<|endoftext|>", "left")
    assert [t for t in got["tokens"] if t.strip("Ġ").isdigit()] == list("12305317")
    state = torch.load(reloaded)
    assert saved.keys() <= state.keys()
    assert all(torch.equal(saved[k], state[k]) for k in saved)
