"""pacs.causal_lm: the forward-pass helpers the tiny engine and the evaluation share."""

from __future__ import annotations

import math

import pytest
import torch

from pacs import causal_lm


def test_left_pad_puts_each_sequence_at_the_right_edge():
    ids, mask = causal_lm.left_pad([[5, 6, 7], [8], []], pad_id=0)
    assert ids.tolist() == [[5, 6, 7], [0, 0, 8], [0, 0, 0]]
    assert mask.tolist() == [[1, 1, 1], [0, 0, 1], [0, 0, 0]]


def test_positions_count_attended_tokens_only():
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1], [0, 1, 0, 1, 1]])
    assert causal_lm.position_ids(mask).tolist() == [
        [0, 0, 0, 1, 2],
        [0, 1, 2, 3, 4],
        [0, 0, 0, 1, 2],
    ]


def tiny_model():
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    config = Qwen3Config(
        vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, head_dim=8, max_position_embeddings=32,
    )  # fmt: skip
    return Qwen3ForCausalLM(config).eval()


def test_left_padding_leaves_a_sequences_logits_unchanged():
    """The positions come from the mask: a padded row scores its tokens as the unpadded one."""
    model = tiny_model()
    ids, mask = causal_lm.left_pad([[3, 4, 5, 6], [7, 8]], pad_id=0)
    with torch.inference_mode():
        padded = causal_lm.forward_logits(model, ids, mask)
        alone = causal_lm.forward_logits(model, torch.tensor([[7, 8]]), torch.ones(1, 2).long())
        last = causal_lm.forward_logits(model, ids, mask, keep=1)
    torch.testing.assert_close(padded[1, -2:], alone[0], rtol=1e-5, atol=1e-5)
    assert last.shape == (2, 1, 32)
    torch.testing.assert_close(last[:, 0], padded[:, -1])


def test_warpers_are_temperature_then_nucleus():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    assert len(causal_lm.logits_warpers(1.0, 1.0)) == 0
    warped = causal_lm.logits_warpers(0.5, 0.9)(None, logits.clone())
    # T = 0.5 squares the probabilities (then renormalised): 0.25, 0.09, 0.0225, 0.0025 over
    # 0.365; the nucleus of 0.9 keeps the top two (0.685 + 0.247 >= 0.9), the rest at -inf.
    probs = torch.softmax(warped, dim=-1)[0].tolist()
    assert probs[2] == 0.0 and probs[3] == 0.0
    assert math.isclose(probs[0], 0.25 / 0.34, rel_tol=1e-5)
    with pytest.raises(ValueError, match="temperature > 0"):
        causal_lm.logits_warpers(0.0, 1.0)
