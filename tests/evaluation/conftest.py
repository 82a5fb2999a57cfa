"""Evaluation test fixtures: a tiny random Qwen3 model + ChatML tokenizer, built offline."""

from __future__ import annotations

from pathlib import Path

import pytest

CORPUS = [
    "Tom has 12 apples and buys 7 more. How many apples does he have?",
    "The answer is \\boxed{19}. Please reason step by step.",
    "Anna had 30 coins, gave 4 away and found 9. So 30 - 4 + 9 = 35.",
    "What is 8 plus 15 minus 3? We add and subtract: \\boxed{20}.",
]


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A ~20k-parameter random Qwen3ForCausalLM and its tokenizer, saved with save_pretrained.

    The eos embedding row is scaled up (tied embeddings) so that some samples stop early and
    others run to the length limit: both finish reasons and ragged batches get exercised.
    """
    import torch

    from pacs.tiny.build import build_model, build_tokenizer

    out = tmp_path_factory.mktemp("tiny_model")
    tok = build_tokenizer(CORPUS, vocab_size=300)
    model = build_model(
        tok,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        intermediate_size=64,
    )
    with torch.no_grad():
        emb = model.get_input_embeddings().weight
        emb[tok.eos_token_id] *= 40.0
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture()
def bench_rows() -> list[dict]:
    """Five synthetic math problems in the prepared-benchmark format."""
    return [
        {
            "problem_id": f"synthetic/{i}",
            "benchmark": "synthetic",
            "task": "math",
            "prompt": [{"role": "user", "content": f"What is {i} plus {i + 3}?"}],
            "answer": str(2 * i + 3),
            "problem": f"What is {i} plus {i + 3}?",
        }
        for i in range(5)
    ]
