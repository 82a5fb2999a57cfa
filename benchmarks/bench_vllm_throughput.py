"""vLLM generated tokens/s on a Qwen3-shaped model with random weights (no download needed).

The paper profile's evaluation shards are sized by ``eval.shard.tokens_per_s`` (configs/paper.yaml):
the generated tokens/s of one GPU running vLLM on Qwen3-8B. This script measures it on the GPU
at hand without the real weights: the model folder holds only Qwen3-8B's ``config.json`` (its
published shape) and vLLM draws random weights (``load_format="dummy"``), which cost the same
FLOPs and bytes as the real ones. Prompts are random token ids (no tokenizer), every response is
forced to ``--max-tokens`` (``ignore_eos``), sampling is the evaluation's (T = 0.6, top-p 0.95),
and each prompt is sampled ``--n`` times in one request as the evaluation does (n = 256 in the
paper, the prompt prefilled once). Measured: the engine start-up (``LLM(...)``: imports, weight
init, torch.compile, CUDA graphs) and the wall time of one ``generate`` call after a short warm-up.

    python benchmarks/bench_vllm_throughput.py --shape qwen3-8b --out /tmp/vllm_tps.json

Responses shorter than real ones (reasoning traces run to tens of thousands of tokens) fill the
KV cache less, so this is an upper bound on long-response throughput; the JSON records the shape.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata as md
import json
import platform
import tempfile
import time
from pathlib import Path

# Published shapes (the models' config.json on the Hub); the benchmark needs nothing else.
SHAPES = {
    "qwen3-8b": {
        "hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 36,
        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
        "tie_word_embeddings": False,
    },
    "qwen3-4b": {
        "hidden_size": 2560, "intermediate_size": 9728, "num_hidden_layers": 36,
        "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
        "tie_word_embeddings": True,
    },
    # a few-MB model that checks this script on any machine (e.g. the CPU engine env)
    "tiny": {
        "hidden_size": 128, "intermediate_size": 384, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
        "tie_word_embeddings": True,
    },
}  # fmt: skip
QWEN3_VOCAB = 151936


def write_shape(shape: str, folder: Path) -> Path:
    """A model folder with only ``config.json``: Qwen3's architecture at ``shape``'s sizes."""
    from transformers import Qwen3Config

    config = Qwen3Config(
        vocab_size=QWEN3_VOCAB,
        max_position_embeddings=40960,
        rope_theta=1_000_000.0,
        rms_norm_eps=1e-6,
        bos_token_id=151643,
        eos_token_id=151645,
        architectures=["Qwen3ForCausalLM"],  # else vLLM may take the folder for a pooling model
        **SHAPES[shape],
    )
    config.torch_dtype = "bfloat16"
    config.save_pretrained(folder)
    return folder


def random_prompts(n_prompts: int, prompt_len: int, seed: int) -> list[dict]:
    import torch

    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(1000, 100_000, (n_prompts, prompt_len), generator=gen)
    return [{"prompt_token_ids": row.tolist()} for row in ids]


def run(args: argparse.Namespace) -> dict:
    from vllm import LLM, SamplingParams

    folder = write_shape(args.shape, Path(tempfile.mkdtemp(prefix=f"{args.shape}-")))
    started = time.perf_counter()
    llm = LLM(
        model=str(folder),
        load_format="dummy",
        runner="generate",
        skip_tokenizer_init=True,
        dtype="bfloat16",
        seed=0,
        max_model_len=args.prompt_len + args.max_tokens + 16,
        gpu_memory_utilization=args.gpu_memory_utilization,
    )
    startup_s = time.perf_counter() - started

    def params(max_tokens: int, seed: int) -> SamplingParams:
        return SamplingParams(
            n=args.n, temperature=0.6, top_p=0.95, max_tokens=max_tokens,
            ignore_eos=True, seed=seed, detokenize=False,
        )  # fmt: skip

    llm.generate(random_prompts(1, args.prompt_len, 99), params(16, 99), use_tqdm=False)
    prompts = random_prompts(args.prompts, args.prompt_len, 0)
    started = time.perf_counter()
    outputs = llm.generate(prompts, params(args.max_tokens, 0), use_tqdm=True)
    generate_s = time.perf_counter() - started
    generated = sum(len(c.token_ids) for out in outputs for c in out.outputs)
    return {
        "shape": args.shape,
        **SHAPES[args.shape],
        "vocab_size": QWEN3_VOCAB,
        "weights": "random (load_format=dummy)",
        "prompts": args.prompts,
        "n": args.n,
        "prompt_len": args.prompt_len,
        "max_tokens": args.max_tokens,
        "generated_tokens": generated,
        "generate_s": round(generate_s, 2),
        "tokens_per_s": round(generated / generate_s, 1),
        "startup_s": round(startup_s, 1),
        "gpu_memory_utilization": args.gpu_memory_utilization,
        "vllm": md.version("vllm"),
        "torch": md.version("torch"),
        "device": _device_name(),
        "host": platform.node(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def _device_name() -> str:
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else platform.processor()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="qwen3-8b")
    parser.add_argument("--prompts", type=int, default=2)
    parser.add_argument("--n", type=int, default=256, help="samples per prompt (paper: 256)")
    parser.add_argument("--prompt-len", type=int, default=128)
    parser.add_argument("--max-tokens", type=int, default=1024)
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    parser.add_argument("--out", type=Path, help="write the figures as JSON here too")
    args = parser.parse_args(argv)
    result = run(args)
    text = json.dumps(result, indent=2)
    print(text, flush=True)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
