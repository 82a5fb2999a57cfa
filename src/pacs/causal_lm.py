"""Forward-pass helpers for any Hugging Face causal LM, shared by the tiny engine (``pacs.tiny``)
and the evaluation stages (``pacs.evaluation.path_exact``): left padding, positions from the
attention mask as HF ``generate`` derives them, logits, and ``generate``'s sampling warpers."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers.generation.logits_process import (
    LogitsProcessorList,
    TemperatureLogitsWarper,
    TopPLogitsWarper,
)


def left_pad(seqs: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-pad id lists into ``(input_ids [B, L], attention_mask [B, L])``."""
    length = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), length), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), length), dtype=torch.long)
    for i, s in enumerate(seqs):
        if len(s):
            ids[i, length - len(s) :] = torch.tensor(s, dtype=torch.long)
            mask[i, length - len(s) :] = 1
    return ids, mask


def position_ids(attention_mask: torch.Tensor) -> torch.Tensor:
    """Positions counted over attended tokens only (HF ``generate``'s rule)."""
    pos = attention_mask.long().cumsum(-1) - 1
    return pos.masked_fill(attention_mask == 0, 0)


def forward_logits(
    model, input_ids: torch.Tensor, attention_mask: torch.Tensor, keep: int = 0
) -> torch.Tensor:
    """Logits [B, L, V] (or of the last ``keep`` positions when ``keep`` > 0)."""
    out = model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=position_ids(attention_mask),
        use_cache=False,
        logits_to_keep=keep,
    )
    return out.logits


def logits_warpers(temperature: float, top_p: float) -> LogitsProcessorList:
    """The warpers ``generate`` builds for ``do_sample=True, top_k=0``: temperature, then top-p."""
    if temperature <= 0:
        raise ValueError(f"sampling needs temperature > 0, got {temperature}")
    warpers = LogitsProcessorList()
    if temperature != 1.0:
        warpers.append(TemperatureLogitsWarper(temperature))
    if top_p < 1.0:
        warpers.append(TopPLogitsWarper(top_p))
    return warpers
