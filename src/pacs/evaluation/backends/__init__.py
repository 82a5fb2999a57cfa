"""Generation backends of ``pacs.evaluation.generate``: one module per engine.

- :mod:`.hf` (tiny profile): transformers ``generate`` on CPU or one GPU; seeded per chunk;
- :mod:`.vllm` (paper scale, App. C): vLLM offline inference; seeded per problem.

What both share lives in :mod:`.common` (re-exported here): the sampling settings, the
``Backend`` interface the runner calls, the per-problem seed, and the prompt rendering.
"""

from __future__ import annotations

from typing import Any

from pacs.evaluation.backends.common import (
    ANSWER_FINISH_REASONS,
    BACKENDS,
    DEFAULT_BATCH,
    GRADABLE_FINISH_REASONS,
    UNKNOWN_FINISH,
    Backend,
    Sample,
    SamplingConfig,
    engine_failures,
    problem_seed,
    prompt_token_ids,
    render_prompt,
    use_chat_template,
    with_system_prompt,
)

__all__ = [
    "ANSWER_FINISH_REASONS",
    "BACKENDS",
    "DEFAULT_BATCH",
    "GRADABLE_FINISH_REASONS",
    "UNKNOWN_FINISH",
    "Backend",
    "Sample",
    "SamplingConfig",
    "engine_failures",
    "make_backend",
    "problem_seed",
    "prompt_token_ids",
    "render_prompt",
    "use_chat_template",
    "with_system_prompt",
]


def make_backend(
    name: str,
    model: str,
    *,
    seed: int,
    batch_size: int | None,
    device: str | None = None,
    enable_thinking: bool | None = None,
    vllm_engine: Any = None,
    engine_retries: int | None = None,
) -> Backend:
    """The backend ``name`` on ``model``. vllm: ``vllm_engine`` is a
    :class:`pacs.evaluation.backends.vllm.EngineSettings` (None: the platform's defaults)."""
    batch = batch_size or DEFAULT_BATCH.get(name, 1)
    if name == "hf":
        from pacs.evaluation.backends.hf import HFBackend

        return HFBackend(model, batch_size=batch, device=device, enable_thinking=enable_thinking)
    if name == "vllm":
        from pacs.evaluation.backends.vllm import (
            DEFAULT_ENGINE_RETRIES,
            EngineSettings,
            VLLMBackend,
        )

        return VLLMBackend(
            model,
            seed=seed,
            batch_size=batch,
            engine=vllm_engine or EngineSettings(),
            enable_thinking=enable_thinking,
            engine_retries=DEFAULT_ENGINE_RETRIES if engine_retries is None else engine_retries,
        )
    raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
