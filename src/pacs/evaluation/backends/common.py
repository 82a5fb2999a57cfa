"""What both generation backends share: the sampling settings, the ``Backend`` interface the
runner calls, the per-problem seed, and the prompt rendering (the model tokenizer's chat template),
so that both backends see exactly the same prompt tokens."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from pacs.data.benchmarks import with_system_prompt  # noqa: F401  (re-exported)

BACKENDS = ("hf", "vllm")
DEFAULT_BATCH = {"hf": 128, "vllm": 16384}  # sequences per chunk (pacs.evaluation.generate)
# Finish reasons of an ordinary answer: the model stopped, or hit the token budget (truncated).
ANSWER_FINISH_REASONS = ("stop", "length")
# A foreign generations file that records no finish reason: an answer, cut or not, nobody knows.
UNKNOWN_FINISH = "unknown"
GRADABLE_FINISH_REASONS = (*ANSWER_FINISH_REASONS, UNKNOWN_FINISH)


@dataclass(frozen=True)
class SamplingConfig:
    """Sampling settings shared by both backends."""

    n: int
    temperature: float
    top_p: float
    max_new_tokens: int
    seed: int


Sample = dict[str, Any]  # {"response", "finish_reason", "n_tokens"}


class Backend(Protocol):
    # True when a chunk's samples depend on which problems share the chunk (hf: one seed per
    # chunk); then a partial output can only be resumed with the same chunk size.
    seeded_per_chunk: bool

    def chunk_size(self, n: int) -> int:
        """Problems per chunk (one ``generate`` call) at n samples per problem."""

    def generate(
        self, problems: Sequence[tuple[int, dict]], cfg: SamplingConfig
    ) -> list[list[Sample]]:
        """n samples for each (problem index, benchmark row), in order."""


def problem_seed(seed: int, index: int) -> int:
    """A 32-bit seed derived from the run seed and a problem index (stable across versions)."""
    return int(np.random.SeedSequence([seed, index]).generate_state(1)[0])


def render_prompt(tokenizer, messages: list[dict], enable_thinking: bool | None = None) -> str:
    """The chat-template text of a prompt, ending with the assistant generation prompt.

    ``enable_thinking`` reaches the template as a variable (Qwen3 reads it; None leaves the
    template's own default), exactly as verl passes ``data.apply_chat_template_kwargs``.
    """
    msgs = [{"role": m["role"], "content": m["content"]} for m in messages]
    kwargs = {} if enable_thinking is None else {"enable_thinking": enable_thinking}
    return tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True, **kwargs)


def prompt_token_ids(
    tokenizer, messages: list[dict], enable_thinking: bool | None = None
) -> list[int]:
    """The rendered prompt's token ids, without special tokens added (the template holds them)."""
    text = render_prompt(tokenizer, messages, enable_thinking)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def engine_failures(samples: Sequence[Sample]) -> int:
    """How many samples ended for a reason other than an ordinary answer (an engine failure)."""
    return sum(s["finish_reason"] not in ANSWER_FINISH_REASONS for s in samples)


def use_chat_template(tokenizer, model: str, template: str | None) -> None:
    """Give ``tokenizer`` the chat template ``template`` (Jinja text), or check that it has one.

    A tokenizer without a chat template cannot render the benchmark's chat messages: refused,
    naming the model, rather than letting transformers fall back to a guess."""
    if template is not None:
        tokenizer.chat_template = template
        return
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(
            f"{model}: its tokenizer has no chat template (tokenizer_config.json / "
            "chat_template.jinja name none); give one with --chat-template FILE"
        )
