"""The ``hf`` backend (tiny profile): batched transformers ``generate`` on CPU or one GPU.

``model.generate`` with left padding, ``do_sample=True, temperature, top_p, top_k=0``.
``torch.manual_seed`` is set per chunk of problems from (seed, index of the chunk's first
problem), so a chunk's samples depend on which problems share it (``seeded_per_chunk``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pacs.evaluation.backends.common import (
    DEFAULT_BATCH,
    Sample,
    SamplingConfig,
    problem_seed,
    render_prompt,
)


def split_generated(tokens: Sequence[int], eos_ids: set[int]) -> tuple[list[int], str, int]:
    """Cut one generated token row at its first eos.

    Returns ``(content tokens, finish_reason, n_tokens)``: "stop" with n_tokens counting the eos
    (as vLLM does), or "length" with every token kept when no eos was produced.
    """
    tokens = list(tokens)
    for i, t in enumerate(tokens):
        if t in eos_ids:
            return tokens[:i], "stop", i + 1
    return tokens, "length", len(tokens)


class HFBackend:
    """transformers ``generate`` on CPU or one GPU."""

    seeded_per_chunk = True

    def __init__(
        self,
        model_dir: str,
        batch_size: int = DEFAULT_BATCH["hf"],
        device: str | None = None,
        enable_thinking: bool | None = None,
    ):
        import torch
        from transformers import AutoTokenizer

        from pacs.progress import load_causal_lm

        self.torch = torch
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = torch.bfloat16 if self.device.startswith("cuda") else torch.float32
        self.tok = AutoTokenizer.from_pretrained(model_dir)
        self.tok.padding_side = "left"
        if self.tok.pad_token is None:
            self.tok.pad_token = self.tok.eos_token
        self.model = load_causal_lm(model_dir, dtype=dtype).to(self.device).eval()
        self.eos_ids = self._eos_ids()
        self.batch_size = batch_size
        self.enable_thinking = enable_thinking

    def _eos_ids(self) -> set[int]:
        ids = self.model.generation_config.eos_token_id
        ids = set(ids if isinstance(ids, (list, tuple)) else ([] if ids is None else [ids]))
        if self.tok.eos_token_id is not None:
            ids.add(self.tok.eos_token_id)
        if not ids:
            raise ValueError(
                "hf backend: neither the tokenizer nor the generation config names an eos token"
            )
        return ids

    def chunk_size(self, n: int) -> int:
        return max(1, self.batch_size // n)

    def generate(
        self, problems: Sequence[tuple[int, dict]], cfg: SamplingConfig
    ) -> list[list[Sample]]:
        self.torch.manual_seed(problem_seed(cfg.seed, problems[0][0]))
        texts = [
            render_prompt(self.tok, row["prompt"], self.enable_thinking) for _, row in problems
        ]
        seqs = [t for t in texts for _ in range(cfg.n)]
        flat: list[Sample] = []
        for start in range(0, len(seqs), self.batch_size):
            flat.extend(self._generate_batch(seqs[start : start + self.batch_size], cfg))
        return [flat[i * cfg.n : (i + 1) * cfg.n] for i in range(len(problems))]

    def _generate_batch(self, texts: list[str], cfg: SamplingConfig) -> list[Sample]:
        enc = self.tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(
            self.device
        )
        kwargs: dict[str, Any] = {"do_sample": False}
        if cfg.temperature > 0:
            kwargs = {
                "do_sample": True,
                "temperature": cfg.temperature,
                "top_p": cfg.top_p,
                "top_k": 0,
            }
        with self.torch.inference_mode():
            out = self.model.generate(
                **enc,
                max_new_tokens=cfg.max_new_tokens,
                pad_token_id=self.tok.pad_token_id,
                eos_token_id=sorted(self.eos_ids),
                **kwargs,
            )
        new = out[:, enc["input_ids"].shape[1] :].tolist()
        return [self._sample(row) for row in new]

    def _sample(self, generated: list[int]) -> Sample:
        content, reason, n_tok = split_generated(generated, self.eos_ids)
        return {
            "response": self.tok.decode(content, skip_special_tokens=True),
            "finish_reason": reason,
            "n_tokens": n_tok,
        }
