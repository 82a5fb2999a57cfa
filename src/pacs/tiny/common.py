"""Pieces shared by the SFT warm-up and the RL loop: prompts, sampling, log-probs, pass@1.

Every forward pass derives position ids from the attention mask exactly as HF ``generate`` does
(:func:`pacs.causal_lm.position_ids`, re-exported here with ``left_pad``, ``forward_logits`` and
``logits_warpers``), so a left-padded sequence is scored with the same positions it was sampled
with, whatever its padding. Sampling (:func:`sample`) is our own loop that draws the very tokens
``generate`` draws for a seed, in less time (the note above :data:`GQA_SDPA`).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from transformers import AttentionInterface, DynamicCache
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from pacs.causal_lm import forward_logits, left_pad, logits_warpers, position_ids
from pacs.core_algos import entropy_from_logits
from pacs.rewards.math import grade_many


def encode_prompts(tokenizer, rows: Sequence[dict]) -> list[list[int]]:
    """Token ids of each row's chat prompt with the assistant generation prompt appended."""
    texts = [
        tokenizer.apply_chat_template(r["prompt"], tokenize=False, add_generation_prompt=True)
        for r in rows
    ]
    return tokenizer(texts, add_special_tokens=False)["input_ids"]


def response_logprobs(
    model,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    response_len: int,
    with_entropy: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probs [B, R] of the last ``response_len`` tokens of ``input_ids`` (and their entropy).

    The logit at position t predicts token t+1, so the response's R tokens are predicted by the
    R positions just before them.
    """
    logits = forward_logits(model, input_ids, attention_mask, keep=response_len + 1)[:, :-1].float()
    targets = input_ids[:, -response_len:]
    logp = torch.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    entropy = entropy_from_logits(logits.detach()) if with_entropy else None
    return logp, entropy


@dataclass
class Rollout:
    """Sampled sequences; rows are prompt-major, so each prompt's samples are contiguous."""

    input_ids: torch.Tensor  # [B, P + R] left-padded prompt followed by the response
    attention_mask: torch.Tensor  # [B, P + R] prompt mask, then the response mask
    response_mask: torch.Tensor  # [B, R] 1 up to and including the first eos
    texts: list[str]  # decoded responses without special tokens

    @property
    def response_len(self) -> int:
        return self.response_mask.shape[1]


def response_mask_from_ids(response: torch.Tensor, eos_id: int) -> torch.Tensor:
    """1 for every token up to and including the first eos, 0 after it."""
    is_eos = (response == eos_id).long()
    ended_before = (is_eos.cumsum(-1) - is_eos) > 0
    return (~ended_before).long()


# ----------------------------------------------------------------------------------------------
# Sampling. The loop below draws exactly the tokens HF ``generate(do_sample=True, top_k=0, ...)``
# draws for the same seed (tests/tiny/test_common.py compares them token for token): the same
# forward passes, the same float32 logits, HF's own temperature/top-p warpers, one
# ``torch.multinomial`` per step over the whole batch, pad after eos, stop when every row has
# ended. It is faster (benchmarks/bench_step_cost.py) because:
# - each distinct prompt is prefilled once and its KV cache repeated for its ``n`` samples;
# - decoding passes the KV heads to sdpa as groups (``enable_gqa``) instead of copying them with
#   ``repeat_kv`` every step (per head the same arithmetic, so bit-identical outputs);
# - it skips ``generate``'s per-step bookkeeping and runs under ``torch.inference_mode``.
# ----------------------------------------------------------------------------------------------

GQA_SDPA = "pacs_sdpa_gqa"


def sdpa_gqa_attention(
    module, query, key, value, attention_mask, dropout=0.0, scaling=None, is_causal=None, **kwargs
):
    """transformers' ``sdpa`` attention with grouped KV heads handed to sdpa instead of repeated.

    query [B, H, Q, D], key/value [B, KV, L, D] -> ([B, Q, H, D], None), as the ``sdpa`` entry of
    transformers' attention interface returns.
    """
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    out = F.scaled_dot_product_attention(
        query,
        key,
        value,
        attn_mask=attention_mask,
        dropout_p=dropout,
        scale=scaling,
        is_causal=query.shape[2] > 1 and attention_mask is None and causal,
        enable_gqa=key.shape[1] != query.shape[1],
    )
    return out.transpose(1, 2).contiguous(), None


AttentionInterface.register(GQA_SDPA, sdpa_gqa_attention)
AttentionMaskInterface.register(GQA_SDPA, sdpa_mask)  # the masks of ``sdpa``, unchanged


@contextmanager
def grouped_kv_attention(model):
    """Run ``model``'s sdpa attention as :func:`sdpa_gqa_attention` inside the block (no-grad
    decoding only: its backward would sum the shared heads' gradients in another order)."""
    previous = model.config._attn_implementation
    if previous == "sdpa":
        model.config._attn_implementation = GQA_SDPA
    try:
        yield
    finally:
        model.config._attn_implementation = previous


def prefill(model, prompt_ids: Sequence[Sequence[int]], n: int, pad_id: int):
    """Prefill each distinct prompt once and repeat its cache ``n`` times (rows prompt-major).

    Returns ``(ids [B, P], mask [B, P], positions [B, 1], cache, logits [B, V] float32)`` with
    B = n * len(prompt_ids), the last positions being those the first new token continues from.
    """
    ids, mask = left_pad(prompt_ids, pad_id)
    positions = position_ids(mask)
    cache = DynamicCache(config=model.config)
    out = model(
        input_ids=ids,
        attention_mask=mask,
        position_ids=positions,
        past_key_values=cache,
        use_cache=True,
        logits_to_keep=1,
    )
    cache.batch_repeat_interleave(n)
    logits = out.logits[:, -1, :].to(dtype=torch.float32).repeat_interleave(n, 0)
    repeat = lambda t: t.repeat_interleave(n, 0)
    return repeat(ids), repeat(mask), repeat(positions[:, -1:]), cache, logits


def decode(model, prefilled, max_new_tokens: int, warpers, eos_id: int, pad_id: int):
    """Sample up to ``max_new_tokens`` tokens per row; returns the responses [B, R <= max]."""
    ids, mask, last_pos, cache, logits = prefilled
    unfinished = torch.ones(ids.shape[0], dtype=torch.long)
    seq = ids
    for t in range(max_new_tokens):
        probs = torch.softmax(warpers(seq, logits), dim=-1)
        next_ids = torch.multinomial(probs, num_samples=1).squeeze(1)
        next_ids = next_ids * unfinished + pad_id * (1 - unfinished)
        seq = torch.cat([seq, next_ids[:, None]], -1)
        unfinished = unfinished & (next_ids != eos_id).long()
        if unfinished.max() == 0 or t == max_new_tokens - 1:
            break
        mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], -1)
        last_pos = last_pos + 1
        out = model(
            input_ids=next_ids[:, None],
            attention_mask=mask,
            position_ids=last_pos,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        logits = out.logits[:, -1, :].to(dtype=torch.float32)
    return seq[:, ids.shape[1] :]


def sample(
    model,
    tokenizer,
    prompt_ids: Sequence[Sequence[int]],
    n: int,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
) -> Rollout:
    """Draw ``n`` responses per prompt (plain temperature sampling when top_p=1); the tokens HF
    ``generate`` would draw from the same RNG state, faster (see the note above)."""
    pad_id, eos_id = tokenizer.pad_token_id, tokenizer.eos_token_id
    was_training = model.training
    model.eval()
    with torch.inference_mode(), grouped_kv_attention(model):
        prefilled = prefill(model, [list(p) for p in prompt_ids], n, pad_id)
        response = decode(
            model, prefilled, max_new_tokens, logits_warpers(temperature, top_p), eos_id, pad_id
        )
    model.train(was_training)
    # Plain tensors again: inference tensors cannot enter the autograd graph of the update.
    ids, mask, response = prefilled[0].clone(), prefilled[1].clone(), response.clone()
    response_mask = response_mask_from_ids(response, eos_id)
    texts = [
        tokenizer.decode(row[m.bool()].tolist(), skip_special_tokens=True)
        for row, m in zip(response, response_mask)
    ]
    return Rollout(
        torch.cat([ids, response], 1), torch.cat([mask, response_mask], 1), response_mask, texts
    )


@torch.no_grad()
def eval_pass_at_1(
    model,
    tokenizer,
    rows: Sequence[dict],
    n_samples: int,
    max_new_tokens: int,
    temperature: float,
    top_p: float,
    seed: int,
    prompts_per_batch: int = 32,
) -> float:
    """Sampled pass@1 (mean score over ``n_samples`` per problem), on a private seeded RNG stream.

    The global torch RNG is forked, so evaluating never shifts the training run's sampling.
    """
    prompt_ids = encode_prompts(tokenizer, rows)
    scores: list[float] = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for start in range(0, len(rows), prompts_per_batch):
            chunk = slice(start, start + prompts_per_batch)
            roll = sample(
                model, tokenizer, prompt_ids[chunk], n_samples, max_new_tokens, temperature, top_p
            )
            golds = [r["answer"] for r in rows[chunk] for _ in range(n_samples)]
            scores.extend(g.score for g in grade_many(roll.texts, golds, workers=0))
    return float(sum(scores) / max(len(scores), 1))


def sft_batch(tokenizer, prompt_ids: Sequence[Sequence[int]], responses: Sequence[str]):
    """``(input_ids, attention_mask, loss_mask)`` for prompt + response + eos; the loss mask
    covers the response."""
    resp_ids = tokenizer([r + tokenizer.eos_token for r in responses], add_special_tokens=False)[
        "input_ids"
    ]
    seqs = [list(p) + list(r) for p, r in zip(prompt_ids, resp_ids)]
    ids, mask = left_pad(seqs, tokenizer.pad_token_id)
    loss_mask = torch.zeros_like(mask)
    for i, r in enumerate(resp_ids):
        loss_mask[i, ids.shape[1] - len(r) :] = 1
    return ids, mask, loss_mask


def sft_loss(model, ids: torch.Tensor, mask: torch.Tensor, loss_mask: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy over the response tokens."""
    logits = forward_logits(model, ids, mask)[:, :-1].float()
    targets = ids[:, 1:]
    weights = loss_mask[:, 1:].float()
    nll = F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="none"
    )
    return (nll * weights.reshape(-1)).sum() / weights.sum().clamp(min=1.0)
