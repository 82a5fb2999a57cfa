"""Padding, positions, response masks, sampling and the in-loop pass@1."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from pacs.tiny import common


def test_left_pad_and_positions():
    ids, mask = common.left_pad([[5, 6, 7], [8]], pad_id=0)
    assert ids.tolist() == [[5, 6, 7], [0, 0, 8]]
    assert mask.tolist() == [[1, 1, 1], [0, 0, 1]]
    assert common.position_ids(mask).tolist() == [[0, 1, 2], [0, 0, 0]]


def test_response_mask_stops_after_the_first_eos():
    eos = 2
    response = torch.tensor([[4, 5, 2, 0, 0], [4, 2, 5, 2, 0], [4, 5, 6, 7, 8]])
    assert common.response_mask_from_ids(response, eos).tolist() == [
        [1, 1, 1, 0, 0],
        [1, 1, 0, 0, 0],
        [1, 1, 1, 1, 1],  # truncated: no eos, every token counts
    ]


def test_padding_does_not_change_log_probs(tiny_env):
    """A left-padded row scores like the unpadded one (pads are masked, positions match)."""
    tok = AutoTokenizer.from_pretrained(tiny_env["base"])
    model = AutoModelForCausalLM.from_pretrained(tiny_env["base"])
    row = tiny_env["splits"]["test"][0]
    ids, mask, _ = common.sft_batch(tok, common.encode_prompts(tok, [row]), [row["solution"]])
    pad = 5
    padded_ids = torch.cat([torch.full((1, pad), tok.pad_token_id), ids], 1)
    padded_mask = torch.cat([torch.zeros((1, pad), dtype=mask.dtype), mask], 1)
    with torch.no_grad():
        alone, _ = common.response_logprobs(model, ids, mask, 8)
        padded, _ = common.response_logprobs(model, padded_ids, padded_mask, 8)
    torch.testing.assert_close(padded, alone, rtol=1e-4, atol=1e-5)


def test_sample_groups_are_contiguous_and_masks_match(tiny_env):
    tok = AutoTokenizer.from_pretrained(tiny_env["base"])
    model = AutoModelForCausalLM.from_pretrained(tiny_env["base"])
    prompts = common.encode_prompts(tok, tiny_env["splits"]["test"][:3])
    torch.manual_seed(0)
    roll = common.sample(model, tok, prompts, n=2, max_new_tokens=20)
    P = roll.input_ids.shape[1] - roll.response_len
    assert roll.input_ids.shape[0] == 6 and len(roll.texts) == 6
    for i in range(6):
        prompt = roll.input_ids[i, :P][roll.attention_mask[i, :P].bool()].tolist()
        assert prompt == prompts[i // 2]
    resp = roll.input_ids[:, P:]
    ended = (resp == tok.eos_token_id) & roll.response_mask.bool()
    assert (ended.sum(-1) <= 1).all()  # at most one eos inside the mask, and it is the last token
    assert "<|im_end|>" not in "".join(roll.texts)


def test_eval_is_seeded_and_leaves_the_global_rng_alone(tiny_env):
    tok = AutoTokenizer.from_pretrained(tiny_env["base"])
    model = AutoModelForCausalLM.from_pretrained(tiny_env["base"])
    rows = tiny_env["splits"]["test"][:4]
    torch.manual_seed(123)
    before = torch.get_rng_state()
    a = common.eval_pass_at_1(model, tok, rows, 2, 20, temperature=0.6, top_p=0.95, seed=7)
    assert torch.equal(torch.get_rng_state(), before)
    b = common.eval_pass_at_1(model, tok, rows, 2, 20, temperature=0.6, top_p=0.95, seed=7)
    assert a == b and 0.0 <= a <= 1.0


def generate_reference(model, tokenizer, prompt_ids, n, max_new_tokens, temperature, top_p):
    """The sampler before the speed-up (main at 06a7e00): HF ``generate`` on the repeated prompts.
    Returns the full [B, P + R] ids."""
    ids, mask = common.left_pad(
        [list(p) for p in prompt_ids for _ in range(n)], tokenizer.pad_token_id
    )
    model.eval()
    with torch.no_grad():
        return model.generate(
            input_ids=ids,
            attention_mask=mask,
            do_sample=True,
            temperature=temperature,
            top_k=0,
            top_p=top_p,
            max_new_tokens=max_new_tokens,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        )


@pytest.mark.parametrize(
    "temperature, top_p, n, max_new", [(1.0, 1.0, 4, 20), (0.6, 0.95, 3, 20), (1.0, 1.0, 1, 6)]
)
def test_sample_draws_the_tokens_generate_draws(tiny_env, temperature, top_p, n, max_new):
    """Same seed, same tokens, same RNG state afterwards as HF ``generate`` (the old sampler). In
    the first two cases most rows end at eos and some batches stop early; the third cuts every
    response at max_new_tokens."""
    tok = AutoTokenizer.from_pretrained(tiny_env["base"])
    model = AutoModelForCausalLM.from_pretrained(tiny_env["base"])
    prompts = common.encode_prompts(tok, tiny_env["splits"]["train"][:6])
    for seed in range(3):
        torch.manual_seed(seed)
        expected = generate_reference(model, tok, prompts, n, max_new, temperature, top_p)
        rng_after = torch.get_rng_state()
        torch.manual_seed(seed)
        roll = common.sample(model, tok, prompts, n, max_new, temperature, top_p)
        assert torch.equal(roll.input_ids, expected)
        assert torch.equal(torch.get_rng_state(), rng_after)
    assert model.config._attn_implementation == "sdpa"  # the attention swap is undone


def test_grouped_kv_attention_matches_repeated_heads():
    """sdpa over grouped KV heads equals sdpa over heads copied by transformers' repeat_kv, bit
    for bit."""
    from transformers.integrations.sdpa_attention import repeat_kv

    torch.manual_seed(0)
    query, key, value = torch.randn(6, 4, 3, 8), torch.randn(6, 2, 9, 8), torch.randn(6, 2, 9, 8)
    mask = torch.ones(6, 1, 3, 9, dtype=torch.bool).tril(diagonal=6)
    mask[:2, ..., :4] = False  # left padding
    grouped, _ = common.sdpa_gqa_attention(None, query, key, value, mask, scaling=0.3)
    repeated = torch.nn.functional.scaled_dot_product_attention(
        query, repeat_kv(key, 2), repeat_kv(value, 2), attn_mask=mask, scale=0.3
    ).transpose(1, 2)
    assert torch.equal(grouped, repeated)
