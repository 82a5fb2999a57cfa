"""The golden slice: a short SFT + RL run of the tiny engine from committed inputs, whose weight
hashes and losses tests/tiny/test_golden.py compares with the committed tests/golden/golden.json.

On the portable path (pacs.numerics, set here before torch is imported) every x86-64 CPU with
AVX2 gives the same numbers; the test fails when they differ (another path, or a change of the
training code: after a deliberate one, regenerate them and commit the file with the change):

    .venv/bin/python tools/regen_golden.py --write     # regenerate tests/golden/golden.json
    .venv/bin/python tools/regen_golden.py             # print this machine's values (JSON)
    .venv/bin/python tools/regen_golden.py --make-inputs   # rebuild the committed inputs (rare)

The slice: ``SFT_STEPS`` steps of ``run_sft`` on the committed init model and SFT rows, then
``RL_STEPS`` steps of PACS (``pacs.tiny.train.train``) from that model, with the default profile's
settings at test size (:data:`RL_TRAIN`); about 3 CPU-seconds.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import sys
import tempfile
from pathlib import Path

from pacs import numerics

numerics.apply()  # before torch is imported: its kernels are chosen at their first use

import torch

REPO = Path(__file__).resolve().parents[1]
INPUTS = REPO / "tests" / "golden"
GOLDEN = INPUTS / "golden.json"
BUILD = {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2}
BUILD.update({"num_key_value_heads": 1, "intermediate_size": 64})
SPLITS = {"n_sft": 256, "n_train": 32, "n_test": 8, "min_steps": 1, "max_steps": 1}
SFT_STEPS, SFT_BATCH, SFT_LR = 30, 16, 1e-2
RL_STEPS = 2
RL_TRAIN = {
    "steps": RL_STEPS,
    "prompts_per_step": 4,
    "group_size": 4,
    "mini_batches": 2,
    "max_new_tokens": 16,
    "eval_every": RL_STEPS,
    "eval_problems": 4,
    "eval_samples": 2,
    "save_every": RL_STEPS,
}
RL_METHOD, RL_SEED = "pacs", 0


def weights_sha256(model) -> str:
    """sha256 over the state dict's names and float32 bytes, in name order."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().contiguous().cpu().numpy().tobytes())
    return digest.hexdigest()


def make_inputs(out: Path = INPUTS) -> None:
    """The committed inputs: the easy synthetic task's rows and a model built from seed 0."""
    from pacs.data.synthetic.arithmetic import make_splits
    from pacs.io import write_jsonl
    from pacs.tiny.build import build_model, build_tokenizer, corpus_from_rows, save_pretrained

    splits = make_splits(seed=0, max_operand=3, **SPLITS)
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in splits.items():
        write_jsonl(out / f"{name}.jsonl", rows)
    tokenizer = build_tokenizer(corpus_from_rows(splits["sft"]), vocab_size=384)
    save_pretrained(build_model(tokenizer, seed=0, **BUILD), tokenizer, out / "init")


def rl_settings():
    """The default profile with test-sized ``train:``/``eval:`` values, resolved for PACS."""
    from pacs.config import load_config, parse_profile
    from pacs.tiny.state import Settings

    cfg = copy.deepcopy(load_config(REPO / "configs" / "default.yaml"))
    cfg["train"].update(RL_TRAIN)
    cfg["eval"]["max_new_tokens"] = RL_TRAIN["max_new_tokens"]
    return Settings.from_profile(parse_profile(cfg), RL_METHOD)


def _floats(values) -> list[float]:
    return [float(v) for v in values]


def run_slice(inputs: Path = INPUTS) -> dict:
    """Run the slice in this process; its numbers, and the setting they were computed on."""
    from transformers import AutoTokenizer

    from pacs.io import read_jsonl
    from pacs.progress import load_causal_lm
    from pacs.tiny.build import save_pretrained
    from pacs.tiny.record import TIME_KEYS
    from pacs.tiny.sft import run_sft
    from pacs.tiny.train import train

    setting = numerics.check_in_effect()
    torch.set_num_threads(1)
    tokenizer = AutoTokenizer.from_pretrained(inputs / "init")
    model = load_causal_lm(inputs / "init", dtype=torch.float32)
    sft_rows = read_jsonl(inputs / "sft.jsonl")
    losses = run_sft(model, tokenizer, sft_rows, SFT_STEPS, SFT_BATCH, SFT_LR, seed=0)
    sft = {"steps": SFT_STEPS, "losses": _floats(losses), "weights_sha256": weights_sha256(model)}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        summary = {"numerics": numerics.describe()}
        save_pretrained(model, tokenizer, base, extra_json={"sft_summary.json": summary})
        state = train(
            rl_settings(),
            RL_SEED,
            base,
            read_jsonl(inputs / "train.jsonl"),
            read_jsonl(inputs / "test.jsonl"),
            Path(tmp) / "run",
            backends=(),
        )
    rows = [
        {k: v for k, v in row.items() if k not in TIME_KEYS and isinstance(v, (int, float))}
        for row in state.history
    ]
    rl = {"method": RL_METHOD, "steps": RL_STEPS, "metrics": rows}
    rl["weights_sha256"] = weights_sha256(state.policy)
    return {"numerics": setting, "torch": torch.__version__, "sft": sft, "rl": rl}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"write {GOLDEN.relative_to(REPO)}")
    parser.add_argument("--make-inputs", action="store_true", help="rebuild the inputs first")
    args = parser.parse_args(argv)
    if args.make_inputs:
        make_inputs()
    got = run_slice()
    text = json.dumps(got, indent=1, sort_keys=True) + "\n"
    if not args.write:
        sys.stdout.write(text)
        return
    if got["numerics"] != numerics.PORTABLE:
        raise SystemExit("error: golden values are written on the portable path only")
    tmp = GOLDEN.with_suffix(".json.tmp")
    tmp.write_text(text)
    tmp.replace(GOLDEN)
    print(
        f"wrote {GOLDEN.relative_to(REPO)}: SFT {got['sft']['weights_sha256'][:16]}, "
        f"RL {got['rl']['weights_sha256'][:16]}"
    )


if __name__ == "__main__":
    main()
