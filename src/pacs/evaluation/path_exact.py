"""Exact solution-path distributions by teacher forcing, on the paths task
(docs/design.md#path-statistics).

``python -m pacs.evaluation.path_exact --model BASE_DIR --checkpoint 0=BASE_DIR
--checkpoint 16=RUN/policies/step16.pt ... --split synthetic_hard hard.jsonl hard/out.json all
--split synthetic test.jsonl normal/out.json 200 --model-name tiny --run pacs --seed 0
[--temperature 0.6 --top-p 0.95]``

Each ``--split NAME FILE OUT LIMIT`` (LIMIT: the first N problems, or ``all``) writes its own
``OUT``; one job scores every split, so each checkpoint is loaded once and the process (whose
imports cost more than the scoring at the tiny scale) starts once per model, not once per split.

A problem of :mod:`pacs.data.synthetic.paths` with k quantities has k! canonical solution texts,
one per order (:func:`pacs.data.synthetic.paths.canonical_solutions`, the SFT split's format).
For each checkpoint, each problem and each of those texts this stage computes
log p(text + eos | prompt) under the model: the prompt rendered by the chat template exactly as
generation renders it (:func:`pacs.evaluation.backends.render_prompt`), the text tokenized as the
SFT warm-up tokenizes it, then eos (a response ends there). From the k! log-probabilities:

- ``mass``: the probability of answering with one of the canonical solutions at all;
- the path distribution conditional on producing one of them (:func:`path_distribution`), its
  ``entropy`` in nats (at most ln k!) and its ``gini_simpson`` index 1 - sum p_i^2.

There is no sampling noise: differences between runs are differences of the models. What it does
not count: any other correct text (another wording, a non-canonical tokenization of the same
text, wrong intermediate sums with a right answer), which the sampled statistics of
:mod:`pacs.evaluation.paths` do count; ``mass`` says how much of the model these numbers cover.

By default the distribution is the model's own (temperature 1, no top-p: the policy RL trains);
``--temperature``/``--top-p`` score under the evaluation's sampling warpers instead (the same HF
warpers generation applies, so a token outside the nucleus has probability 0).

Checkpoints are ``STEP=PATH``: an HF model folder, or a ``.pt`` policy state dict (a training
run's ``policies/step<k>.pt``, :mod:`pacs.tiny.checkpoint`) loaded into ``--model``'s architecture.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pacs.data.synthetic.paths import canonical_solutions
from pacs.evaluation.io import FormatError, iter_jsonl, require
from pacs.io import write_json

SUMMARY_KEYS = ("entropy", "gini_simpson", "mass")


# ----------------------------------------------------------------------------- pure math


def logsumexp(values: Sequence[float]) -> float:
    """ln sum exp(v), stable; -inf when every value is -inf."""
    top = max(values)
    if top == -math.inf:
        return -math.inf
    return top + math.log(sum(math.exp(v - top) for v in values))


def path_distribution(logps: Sequence[float]) -> list[float] | None:
    """The distribution over paths given that the response is one of them: softmax of the paths'
    log-probabilities. None when every path has probability 0."""
    total = logsumexp(logps)
    if total == -math.inf:
        return None
    return [math.exp(v - total) for v in logps]


def entropy(probs: Sequence[float]) -> float:
    """Shannon entropy in nats (0 ln 0 = 0)."""
    return float(-sum(p * math.log(p) for p in probs if p > 0))


def gini_simpson(probs: Sequence[float]) -> float:
    """1 - sum p_i^2: the probability that two independent draws take different paths."""
    return float(1.0 - sum(p * p for p in probs))


def problem_summary(logps: dict[str, float]) -> dict[str, Any]:
    """One problem's record: the paths' log-probs, the mass on them, the conditional
    distribution's entropy and Gini-Simpson index (None when no path has mass)."""
    values = list(logps.values())
    probs = path_distribution(values)
    return {
        "logp": logps,
        "mass": math.exp(logsumexp(values)),
        "entropy": None if probs is None else entropy(probs),
        "gini_simpson": None if probs is None else gini_simpson(probs),
    }


def summarize(per_problem: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Means over problems of SUMMARY_KEYS (problems where a value is None are left out, and
    counted in ``<key>_problems``)."""
    out: dict[str, Any] = {}
    for key in SUMMARY_KEYS:
        kept = [p[key] for p in per_problem.values() if p[key] is not None]
        out[key] = float(sum(kept) / len(kept)) if kept else None
        out[f"{key}_problems"] = len(kept)
    return out


# ----------------------------------------------------------------------------- scoring


def text_logprobs(
    model,
    tokenizer,
    prompt_ids: Sequence[Sequence[int]],
    texts: Sequence[str],
    temperature: float = 1.0,
    top_p: float = 1.0,
    batch_size: int = 64,
) -> list[float]:
    """log p(text + eos | prompt) of each (prompt, text) pair, batched (left padding; position
    ids from the mask as in generation). ``temperature``/``top_p`` != 1: under the sampling
    warpers of generation (-inf for a token outside the nucleus)."""
    import torch

    from pacs.causal_lm import forward_logits, left_pad, logits_warpers

    if len(prompt_ids) != len(texts):
        raise ValueError(f"text_logprobs: {len(prompt_ids)} prompts but {len(texts)} texts")
    warp = (temperature, top_p) != (1.0, 1.0)
    warpers = logits_warpers(temperature, top_p) if warp else None
    eos = tokenizer.eos_token
    out: list[float] = []
    was_training = model.training
    model.eval()
    with torch.inference_mode():
        for start in range(0, len(texts), batch_size):
            chunk = range(start, min(start + batch_size, len(texts)))
            resp = tokenizer([texts[i] + eos for i in chunk], add_special_tokens=False)["input_ids"]
            seqs = [list(prompt_ids[i]) + r for i, r in zip(chunk, resp)]
            ids, mask = left_pad(seqs, tokenizer.pad_token_id)
            logits = forward_logits(model, ids, mask)[:, :-1].float()
            if warpers is not None:
                flat = logits.reshape(-1, logits.shape[-1])
                logits = warpers(ids[:, :1].repeat(flat.shape[0], 1), flat).view_as(logits)
            logp = torch.log_softmax(logits, dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
            for row, r in enumerate(resp):
                out.append(float(logp[row, -len(r) :].sum()))
    model.train(was_training)
    return out


def load_rows(path: str | Path, limit: int | None) -> list[dict]:
    """The benchmark's first ``limit`` rows, each with problem_id, prompt and quantities
    (FormatError naming file, line and field otherwise)."""
    rows = []
    for line, row in iter_jsonl(path):
        if limit is not None and len(rows) == limit:
            break
        require(row, "problem_id", str, path, line)
        require(row, "prompt", list, path, line)
        values = require(row, "quantities", list, path, line)
        if len(values) < 2 or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in values
        ):
            raise FormatError(f"{path}:{line}: field 'quantities' must be a list of >= 2 integers")
        if len(set(values)) != len(values):
            raise FormatError(f"{path}:{line}: field 'quantities' must be distinct, got {values}")
        rows.append(row)
    if not rows:
        raise FormatError(f"{path}: no problems")
    return rows


def score_model(
    model, tokenizer, rows: Sequence[dict], enable_thinking: bool | None, **warp: float
) -> dict[str, dict[str, Any]]:
    """problem_id -> :func:`problem_summary` of every canonical path of every row."""
    from pacs.evaluation.backends import prompt_token_ids

    pairs = []  # (problem_id, path, prompt ids, text)
    for row in rows:
        ids = prompt_token_ids(tokenizer, row["prompt"], enable_thinking)
        for path, text in canonical_solutions(row["quantities"]).items():
            pairs.append((row["problem_id"], path, ids, text))
    logps = text_logprobs(model, tokenizer, [p[2] for p in pairs], [p[3] for p in pairs], **warp)
    by_problem: dict[str, dict[str, float]] = {}
    for (pid, path, _, _), lp in zip(pairs, logps):
        by_problem.setdefault(pid, {})[path] = lp
    return {pid: problem_summary(lp) for pid, lp in by_problem.items()}


def load_checkpoint_model(model_dir: str | Path, checkpoint: str | Path):
    """The policy at ``checkpoint``: an HF folder, or a ``.pt`` state dict of ``model_dir``'s
    architecture (a clear error naming the file when it does not fit)."""
    import torch

    from pacs.progress import load_causal_lm

    checkpoint = Path(checkpoint)
    if checkpoint.is_dir():
        return load_causal_lm(checkpoint, dtype=torch.float32)
    if not checkpoint.is_file():
        raise FileNotFoundError(f"{checkpoint}: checkpoint not found")
    model = load_causal_lm(model_dir, dtype=torch.float32)
    try:
        model.load_state_dict(torch.load(checkpoint, weights_only=True))
    except (RuntimeError, KeyError) as err:
        raise ValueError(f"{checkpoint}: not a state dict of {model_dir}'s model ({err})") from err
    return model


# ----------------------------------------------------------------------------- stage


def parse_checkpoint(text: str) -> tuple[int, Path]:
    step, sep, path = text.partition("=")
    if not sep or not step.isdigit() or not path:
        raise argparse.ArgumentTypeError(f"--checkpoint must be STEP=PATH, got {text!r}")
    return int(step), Path(path)


@dataclass(frozen=True)
class Split:
    """One benchmark a job scores: its file, its output, how many problems (None: all)."""

    name: str
    file: Path
    out: Path
    limit: int | None


def parse_split(name: str, file: str, out: str, limit: str) -> Split:
    if limit == "all":
        return Split(name, Path(file), Path(out), None)
    if not limit.isdigit() or int(limit) < 1:
        raise argparse.ArgumentTypeError(
            f"--split {name}: LIMIT must be an integer >= 1 or 'all', got {limit!r}"
        )
    return Split(name, Path(file), Path(out), int(limit))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m pacs.evaluation.path_exact", description=__doc__.split("\n")[0]
    )
    p.add_argument("--model", required=True, type=Path, help="HF folder: tokenizer, architecture")
    p.add_argument(
        "--checkpoint",
        required=True,
        action="append",
        type=parse_checkpoint,
        help="STEP=PATH (HF folder or .pt state dict); repeat for each checkpoint",
    )
    p.add_argument(
        "--split",
        required=True,
        action="append",
        nargs=4,
        metavar=("NAME", "FILE", "OUT", "LIMIT"),
        help="a benchmark (rows with quantities), its output, its first LIMIT problems or 'all'; "
        "repeat for each benchmark",
    )
    p.add_argument("--model-name", required=True)
    p.add_argument("--run", required=True)
    p.add_argument("--seed", required=True, type=int)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--enable-thinking", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    steps = [s for s, _ in args.checkpoint]
    if len(set(steps)) != len(steps):
        p.error(f"--checkpoint: a step given twice in {steps}")
    try:
        args.split = [parse_split(*split) for split in args.split]
    except argparse.ArgumentTypeError as err:
        p.error(str(err))
    names = [split.name for split in args.split]
    if len(set(names)) != len(names):
        p.error(f"--split: a benchmark given twice in {names}")
    if args.temperature <= 0 or not 0 < args.top_p <= 1:
        p.error("need --temperature > 0 and 0 < --top-p <= 1")
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
    """Benchmark -> the document written to its ``OUT`` (every split read before any scoring)."""
    import torch
    from transformers import AutoTokenizer

    from pacs.progress import ConsoleBar

    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    rows = {split.name: load_rows(split.file, split.limit) for split in args.split}
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    warp = {"temperature": args.temperature, "top_p": args.top_p}
    steps: dict[str, dict[str, Any]] = {split.name: {} for split in args.split}
    for step, path in ConsoleBar(sorted(args.checkpoint), desc="path_exact", unit="checkpoint"):
        model = load_checkpoint_model(args.model, path)
        for name, split_rows in rows.items():
            per_problem = score_model(model, tokenizer, split_rows, args.enable_thinking, **warp)
            steps[name][str(step)] = {"checkpoint": str(path), **summarize(per_problem)}
            steps[name][str(step)]["per_problem"] = per_problem
    docs = {}
    for split in args.split:
        docs[split.name] = {
            "benchmark": split.name,
            "model": args.model_name,
            "run": args.run,
            "seed": args.seed,
            "n_problems": len(rows[split.name]),
            **warp,
            "steps": steps[split.name],
        }
        write_json(split.out, docs[split.name])
        last = steps[split.name][max(steps[split.name], key=int)]
        print(
            f"path_exact: {args.run} seed {args.seed} on {split.name}: {len(steps[split.name])} "
            f"checkpoint(s), last: entropy {last['entropy']}, mass {last['mass']} over "
            f"{len(rows[split.name])} problems -> {split.out}"
        )
    return docs


if __name__ == "__main__":
    main()
