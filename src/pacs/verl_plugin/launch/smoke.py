"""The verl smoke chain (``make verl-smoke``): verl 0.9.1's own trainer on the tiny model, end to
end.

    python -m pacs.verl_plugin.launch.smoke --config configs/verl_smoke.yaml --out
    results/verl_smoke \
        [--rollout hf|vllm] [--device auto|cpu|cuda] [-- extra Hydra overrides for both launches]

Parts, each a subprocess of the same Python, timed:
1. ``build``: the synthetic data and the SFT-warmed tiny model (``pacs.tiny.smoke``); with
   ``--base DIR`` a folder that command already built is linked instead (``DIR/data``,
   ``DIR/model``: one base for several chains, as the test suite does);
2. ``train``: the launcher (``pacs.verl_plugin.launch.train``) for 2 steps, checkpoint, stop;
3. ``resume``: a second launch resumes from the step-2 checkpoint for the last step, then
   converts the logs and merges the checkpoint into an HF folder (``train/model``);
4. ``evaluate``: ``pacs.evaluation.generate`` on the merged model, with the ``vllm`` backend when
   the rollout is vllm (the engine settings of the config's ``eval.vllm``), else ``hf``;
5. ``grade`` and ``passk``: the DAG's own stages, then ``smoke_report.md`` (pass@k and the wall
   time of each part), also printed.
The vllm rollout needs vLLM 0.24.0 in this Python: on a CPU the engine env (``make engine-env``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from pacs.config import load_profile
from pacs.evaluation.backends.vllm import engine_cli_args
from pacs.io import atomic_open
from pacs.verl_plugin.cluster.owner import owned_env
from pacs.verl_plugin.launch.devices import DEVICES
from pacs.verl_plugin.launch.train import ROLLOUTS, rollout_problem, with_rollout

FIRST_LAUNCH_STEPS = 2


def _python(module: str, *args: object) -> list[str]:
    return [sys.executable, "-m", module, *map(str, args)]


def _training(args: argparse.Namespace, out: Path) -> list[tuple[str, list[str]]]:
    """The two launches: 2 steps then stop; a second launch resumes, finishes and merges."""
    launch = (
        *("--config", args.config, "--run", args.run, "--device", args.device),
        *("--rollout", args.rollout, "--train-file", out / "data" / "train.parquet"),
        *("--out", out / "train"),
    )
    hydra = ("--", f"actor_rollout_ref.model.path={out / 'model' / 'base'}", *args.extra)
    first = (*hydra, f"trainer.total_training_steps={FIRST_LAUNCH_STEPS}")
    train = "pacs.verl_plugin.launch.train"
    return [
        ("train", _python(train, *launch, "--no-finalize", *first)),
        ("resume", _python(train, *launch, *hydra)),
    ]


def _evaluation(args: argparse.Namespace, out: Path, eval_args: list[str]):
    """Generate with the merged model, grade, pass@k: the DAG's own stages."""
    bench, ev = out / "data" / "test.jsonl", out / "eval"
    samples, graded = ev / "samples.jsonl", ev / "graded.jsonl"
    model = out / "train" / "model"
    identity = ("--benchmark", "synthetic", "--model", "tiny", "--run", args.run, "--seed", 0)
    passk = ("--out-json", ev / "passk.json", "--out-csv", ev / "passk.csv", *identity)
    return [
        (
            "evaluate",
            _python(
                "pacs.evaluation.generate",
                "--model",
                model,
                "--benchmark-file",
                bench,
                "--out",
                samples,
                *eval_args,
            ),
        ),
        (
            "grade",
            _python(
                "pacs.evaluation.grade",
                "--samples",
                samples,
                "--benchmark-file",
                bench,
                "--out",
                graded,
                "--workers",
                1,
            ),
        ),
        ("passk", _python("pacs.evaluation.passk", "--graded", graded, *passk, "--bootstrap", 200)),
    ]


def chain(args: argparse.Namespace, eval_args: list[str]) -> list[tuple[str, list[str]]]:
    """(part, command) in order; ``eval_args``: the generate flags of the chosen backend."""
    out = args.out.resolve()
    build = (
        []
        if args.base
        else [("build", _python("pacs.tiny.smoke", "--config", args.config, "--out", out))]
    )
    return [*build, *_training(args, out), *_evaluation(args, out, eval_args)]


BASE_PARTS = ("data", "model")  # what pacs.tiny.smoke writes and the launches read


def link_base(base: Path, out: Path) -> None:
    """``out/data`` and ``out/model`` as links to a base built by ``pacs.tiny.smoke``."""
    needed = ("data/train.parquet", "data/test.jsonl", "model/base/config.json")
    missing = [name for name in needed if not (base / name).is_file()]
    if missing:
        raise SystemExit(
            f"verl-smoke: --base {base} is not a folder built by pacs.tiny.smoke "
            f"(missing: {', '.join(missing)})"
        )
    out.mkdir(parents=True, exist_ok=True)
    for name in BASE_PARTS:
        link = out / name
        if link.is_symlink():
            link.unlink()
        if link.exists():
            raise SystemExit(f"verl-smoke: {link} exists; --base links it (use a fresh --out)")
        link.symlink_to(base.resolve() / name)


def generate_flags(profile, backend: str) -> list[str]:
    """The config's eval settings as ``pacs.evaluation.generate`` flags (``backend`` replaces
    ``eval.backend``: the smoke evaluates with the engine it trained with)."""
    ev = profile.eval
    flags = [
        "--backend",
        backend,
        "--n",
        str(ev.n_samples),
        "--temperature",
        str(ev.temperature),
        "--top-p",
        str(ev.top_p),
        "--max-new-tokens",
        str(ev.max_new_tokens),
        "--seed",
        str(ev.seed),
    ]
    if backend == "vllm":  # the config's engine settings; unset ones: the platform's defaults
        flags += engine_cli_args(ev.vllm).split()
    return flags


def run_part(name: str, cmd: list[str], log: Path) -> float:
    """Run one part with its output in ``log``; raise with the log's tail when it fails. What
    the part left running (its local Ray, vLLM's engine) is stopped after it, and nothing else."""
    log.parent.mkdir(parents=True, exist_ok=True)
    print(f"[verl-smoke] {name}: {' '.join(cmd[1:4])} ... (log: {log})", flush=True)
    start = time.perf_counter()
    with log.open("w") as fh, owned_env({**os.environ, "PYTHONUNBUFFERED": "1"}) as env:
        code = subprocess.run(
            cmd, stdout=fh, stderr=subprocess.STDOUT, check=False, env=env
        ).returncode
    seconds = time.perf_counter() - start
    if code != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
        raise RuntimeError(
            f"verl-smoke part {name!r} exited {code} after {seconds:.0f} s; "
            f"{log} ends with:\n{tail}"
        )
    print(f"[verl-smoke] {name}: {seconds:.1f} s", flush=True)
    return seconds


def report(out: Path, rollout: str, backend: str, times: dict[str, float]) -> str:
    """Markdown: pass@k of the merged model and the wall time of each part."""
    doc = json.loads((out / "eval" / "passk.json").read_text())
    lines = [
        f"# verl smoke: rollout {rollout}, evaluation backend {backend}",
        "",
        f"{doc['n_problems']} problems x {doc['n_max']} samples, merged model after the last step.",
        "",
        "| k | pass@k |",
        "|---|---|",
        *[f"| {row['k']} | {row['value']:.4f} |" for row in doc["pass_at_k"]],
        "",
        "| part | wall time (s) |",
        "|---|---|",
        *[f"| {name} | {seconds:.1f} |" for name, seconds in times.items()],
        f"| total | {sum(times.values()):.1f} |",
        "",
    ]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m pacs.verl_plugin.launch.smoke", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--config", type=Path, default=Path("configs/verl_smoke.yaml"))
    p.add_argument("--out", type=Path, default=Path("results/verl_smoke"))
    p.add_argument("--run", default="pacs", help="run name from the config's runs: section")
    p.add_argument(
        "--rollout",
        choices=ROLLOUTS,
        default="hf",
        help="verl rollout: hf (quick) or vllm (verl's own; on CPU the engine env)",
    )
    p.add_argument("--device", choices=DEVICES, default="auto")
    p.add_argument(
        "--base",
        type=Path,
        help="a folder built by `python -m pacs.tiny.smoke` with the same --config: its data "
        "and SFT-warmed model are linked instead of building them again",
    )
    p.add_argument("extra", nargs="*", help="extra Hydra overrides for both launches (after --)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    profile = with_rollout(load_profile(args.config), args.rollout)
    problem = rollout_problem(profile)
    if problem:
        print(f"verl-smoke: {problem}", file=sys.stderr)
        return 2
    backend = "vllm" if args.rollout == "vllm" else "hf"
    out = args.out.resolve()
    if args.base:
        link_base(args.base, out)
    times = {}
    for name, cmd in chain(args, generate_flags(profile, backend)):
        times[name] = run_part(name, cmd, out / "logs" / f"{name}.log")
    text = report(out, args.rollout, backend, times)
    with atomic_open(out / "smoke_report.md") as fh:
        fh.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
