"""Launch one paper-scale training run on verl: ``python -m verl.trainer.main_ppo`` + the plugin.

    python -m pacs.verl_plugin.launch.train --config configs/paper.yaml --run pacs \
        [--model qwen3_8b] [--seed 0] [--out DIR] [--dry-run] [-- extra Hydra overrides]

What it does, in order:
1. loads the profile's spec (``pacs.config``: a bad config fails here, naming the key) and turns
   the run into Hydra overrides (``overrides.py``);
2. sizes the job from the SLURM allocation when inside one (nodes, GPUs per node) and, for more
   than one node, starts a Ray cluster across the nodes (``slurm.py``), torn down on any exit;
3. checks the checkpoint folder and logs whether it resumes (verl ``trainer.resume_mode=auto`` with
   a stable ``default_local_dir`` per run) — it never starts over silently — and that the
   checkpoints were written under the same settings (``resume.py``: a run fingerprint stored in
   ``checkpoints/pacs_fingerprint.json``); on a mismatch it refuses, naming the differing
   overrides, or with ``--on-mismatch restart`` sets the old run aside and starts from step 0;
4. runs verl; then converts the logs to ``metrics.jsonl``, merges the last checkpoint into
   ``model/`` (HF) and writes ``summary.json`` last (docs/formats.md, training run folder).
``--dry-run`` prints the command (and the Ray commands, inside SLURM) and starts nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import shlex
import signal
import subprocess
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from pacs import layout
from pacs.config import ConfigError, ModelSpec, Profile, RunSpec, load_profile
from pacs.fingerprint import ON_MISMATCH, FingerprintMismatch, code_commit, job_times
from pacs.io import write_json
from pacs.methods import Objective, methods_with, objective
from pacs.verl_plugin.cluster.slurm import RAY_PORT, RayCluster, read_allocation, verl_env
from pacs.verl_plugin.launch.devices import (
    DEVICES,
    device_env,
    device_overrides,
    resolve_device,
)
from pacs.verl_plugin.launch.logs import next_attempt_path
from pacs.verl_plugin.launch.overrides import (
    PLUGIN_MODULE,
    ClusterShape,
    RunPaths,
    build_overrides,
    launched_method,
)
from pacs.verl_plugin.launch.resume import (
    must_restart,
    run_fingerprint,
    set_aside,
    write_fingerprint,
)

logger = logging.getLogger("pacs.verl_plugin.launch.train")

TRACKER = "latest_checkpointed_iteration.txt"
ROLLOUTS = ("vllm", "hf")  # verl.rollout.name (pacs.config.VerlRolloutSpec)
HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1)
CHILD_GRACE_S = 60.0


class Interrupted(Exception):
    """The job received a signal (SLURM preemption/cancel, Ctrl-C)."""

    def __init__(self, signum: int):
        super().__init__(f"received signal {signal.Signals(signum).name}")
        self.signum = signum


# ---------------------------------------------------------------------------- arguments


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Train one run of a profile config with verl + the PACS plugin."
    )
    _run_arguments(parser)
    _launch_arguments(parser)
    parser.add_argument("--dry-run", action="store_true", help="print the commands and exit")
    parser.add_argument("extra", nargs="*", help="extra Hydra overrides (after --), appended last")
    return parser.parse_args(argv)


def _run_arguments(parser: argparse.ArgumentParser) -> None:
    """What is trained, on what, and where it goes."""
    add = parser.add_argument
    add("--config", type=Path, required=True, help="profile config, e.g. configs/paper.yaml")
    add("--run", required=True, help="run name from the config's runs: section")
    add("--model", help="model key from models: (default: the first one)")
    add(
        "--model-path",
        help="local folder of the model's weights (default: models.<m>.path or "
        "hf_id); the DAG passes the folder its fetch rule filled",
    )
    add("--seed", type=int, help="default: the run's first seed")
    add(
        "--out",
        type=Path,
        help="run folder (default results/<profile>/train/<model>/<run>/seed<k>)",
    )
    add("--train-file", help="verl-format parquet (default results/<profile>/data/train.parquet)")
    add(
        "--val-file", help="verl needs a val set even when not validating (default: the train file)"
    )
    add(
        "--loss-agg-mode",
        help="GRPO/PPO only: override the config's loss_agg_mode (e.g. token-mean)",
    )


def _launch_arguments(parser: argparse.ArgumentParser) -> None:
    """Placement, resume and finishing."""
    add = parser.add_argument
    add("--nnodes", type=int, help="outside SLURM: number of nodes (default models.<m>.nnodes)")
    add(
        "--gpus-per-node",
        type=int,
        help="outside SLURM: GPUs per node (default models.<m>.gpus_per_node)",
    )
    add(
        "--ray-port", type=int, default=RAY_PORT, help="inside SLURM: port of the Ray head we start"
    )
    add("--ray-address", help="outside SLURM, multi-node: host:port of a running Ray cluster")
    add(
        "--restart",
        action="store_true",
        help="move the existing run (checkpoints, logs, outputs) into previous-<time>/ and start "
        "from step 0",
    )
    add(
        "--on-mismatch",
        choices=ON_MISMATCH,
        default="refuse",
        help="when the checkpoints were written under other settings: refuse (default, names the "
        "differing overrides) or restart (set that run aside, start from step 0)",
    )
    add("--no-finalize", action="store_true", help="skip log conversion, HF merge and summary.json")
    add(
        "--no-merge",
        action="store_true",
        help="finalize without merging the last checkpoint into model/",
    )
    add(
        "--rollout",
        choices=ROLLOUTS,
        help="verl rollout engine, replacing the config's verl.rollout.name: vllm (verl's own; "
        "on CPU it needs the engine env, make engine-env) or hf (the plugin's, quick CPU runs)",
    )
    add(
        "--device",
        choices=DEVICES,
        default="auto",
        help="cpu: verl's trainer on CPU through the plugin's cpu platform (gloo); auto: cuda when "
        "torch sees a GPU",
    )


def default_out(profile: Profile, model: str, run: str, seed: int) -> Path:
    return Path(layout.train_dir(layout.results_dir(profile.profile), model, run, seed))


# ---------------------------------------------------------------------------- cluster shape


def cluster_shape(args: argparse.Namespace, model: ModelSpec, alloc) -> ClusterShape:
    """Nodes and GPUs per node: from the SLURM allocation when inside one, else flags or config."""
    if alloc is not None:
        for flag, value, real in (
            ("--nnodes", args.nnodes, alloc.nnodes),
            ("--gpus-per-node", args.gpus_per_node, alloc.gpus_per_node),
        ):
            if value is not None and value != real:
                raise ValueError(f"{flag}={value} disagrees with the SLURM allocation ({real})")
        return ClusterShape(nnodes=alloc.nnodes, gpus_per_node=alloc.gpus_per_node)
    nnodes = args.nnodes or model.nnodes
    if nnodes > 1 and not args.ray_address and not args.dry_run:
        raise ValueError(
            f"{nnodes} nodes outside SLURM: pass --ray-address of a running Ray cluster, or launch "
            "inside a SLURM allocation (the launcher then starts Ray across its nodes)"
        )
    gpus = args.gpus_per_node or model.gpus_per_node
    return ClusterShape(
        nnodes=nnodes, gpus_per_node=gpus, ray_address=args.ray_address if nnodes > 1 else None
    )


# ---------------------------------------------------------------------------- resume


def resume_point(ckpt_dir: Path) -> int | None:
    """The step verl will resume from, None for a fresh start; raise where verl would silently
    start over although checkpoints exist (its tracker file is missing or names a missing step)."""
    tracker = ckpt_dir / TRACKER
    step_dirs = sorted(p.name for p in ckpt_dir.glob("global_step_*")) if ckpt_dir.is_dir() else []
    if not tracker.is_file():
        if step_dirs:
            raise RuntimeError(
                f"{ckpt_dir} holds {step_dirs} but no {TRACKER}: verl would silently start over. "
                "The last save was probably interrupted; remove the incomplete folder(s) or pass "
                "--restart."
            )
        return None
    step = int(tracker.read_text().strip())
    if not (ckpt_dir / f"global_step_{step}" / "actor").is_dir():
        raise RuntimeError(
            f"{tracker} names step {step} but {ckpt_dir}/global_step_{step}/actor is missing"
        )
    return step


# ---------------------------------------------------------------------------- command


def verl_command(overrides: list[str], out_dir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "verl.trainer.main_ppo",
        *overrides,
        f"hydra.run.dir={out_dir / 'hydra'}",
    ]


def child_env(log_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    # The entry point loads the plugin anyway; the variable is the fallback, for the driver too.
    env["VERL_USE_EXTERNAL_MODULES"] = PLUGIN_MODULE
    env["VERL_FILE_LOGGER_PATH"] = str(log_path)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def shell_line(cmd: list[str]) -> str:
    return " ".join(shlex.quote(part) for part in cmd)


def check_plugin_registered() -> None:
    """verl hides entry-point import errors (DEBUG log); fail here with the real traceback."""
    import verl  # noqa: F401  (loads the entry point)
    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, POLICY_LOSS_REGISTRY

    losses = methods_with(objective="classification")  # pacs.verl_plugin.loss.LABEL_LOSSES
    if any(name not in POLICY_LOSS_REGISTRY for name in losses) or (
        "pacs" not in ADV_ESTIMATOR_REGISTRY
    ):
        import importlib

        importlib.import_module(PLUGIN_MODULE)  # raises the error verl swallowed, if any
    from verl.trainer.ppo.v1 import get_trainer_cls

    get_trainer_cls("label_sync")


# ---------------------------------------------------------------------------- running


def _raise_interrupted(signum, _frame):
    # Later signals are ignored so they cannot cut the teardown short (SLURM follows with SIGKILL).
    for sig in HANDLED_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    raise Interrupted(signum)


def run_child(cmd: list[str], env: dict[str, str]) -> int:
    """Run verl; on a signal or error terminate it (then kill after a grace period)."""
    proc = subprocess.Popen(cmd, env=env)
    try:
        return proc.wait()
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=CHILD_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def supervise(cmd: list[str], env: dict[str, str], cluster=None) -> int:
    """Run verl inside the Ray cluster (if any); a signal stops verl and the cluster, and
    returns 128 + signum. Every exit path tears the cluster down (its context manager)."""
    previous = {sig: signal.signal(sig, _raise_interrupted) for sig in HANDLED_SIGNALS}
    try:
        with cluster if cluster is not None else nullcontext():
            return run_child(cmd, env)
    except Interrupted as exc:
        logger.error("%s: verl and the Ray cluster were stopped", exc)
        return 128 + exc.signum
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def finalize(out_dir: Path, paths: RunPaths, summary: dict, merge: bool = True) -> None:
    """metrics.jsonl, model/ (HF) and summary.json (last: its presence means the run finished)."""
    from pacs.metrics_log import write_event_file
    from pacs.verl_plugin.launch.logs import convert, step_wall_times
    from pacs.verl_plugin.launch.merge import merge_checkpoint

    summary["metrics_rows"] = convert(paths.log_dir, out_dir / "metrics.jsonl")
    if paths.tensorboard_dir.is_dir():  # verl's tensorboard logger ran: add the stated names
        write_event_file(out_dir / "metrics.jsonl")
    for step, seconds in step_wall_times(out_dir / "metrics.jsonl"):
        logger.info("step %d: %s s wall time", step, "?" if seconds is None else f"{seconds:.1f}")
    if merge:
        summary["merged_from"] = str(merge_checkpoint(paths.ckpt_dir, out_dir / "model"))
    write_json(out_dir / "summary.json", summary)


@dataclass(frozen=True)
class Launch:
    """One planned verl run: the spec it comes from, where it runs and the command."""

    profile: Profile
    run: RunSpec
    model: str
    seed: int
    paths: RunPaths
    cluster: RayCluster | None
    device: str
    log_path: Path
    overrides: list[str]
    ray_address: str | None  # a running multi-node Ray cluster; None: verl starts its own

    @property
    def command(self) -> list[str]:
        return verl_command(self.overrides, self.paths.out_dir)


def with_rollout(profile: Profile, rollout: str | None) -> Profile:
    """The profile with ``verl.rollout.name`` replaced (``--rollout``)."""
    if rollout is None:
        return profile
    verl = dataclasses.replace(
        profile.verl, rollout=dataclasses.replace(profile.verl.rollout, name=rollout)
    )
    return dataclasses.replace(profile, verl=verl)


def rollout_problem(profile: Profile) -> str | None:
    """Why verl's rollout cannot start in this Python (vllm without vLLM 0.24.0: the message
    names the command that builds the engine env), or None."""
    if profile.verl.rollout.name != "vllm":
        return None
    from pacs.verl_plugin.launch.engine_check import engine_problem

    problem = engine_problem(import_vllm=False)
    return f"verl.rollout.name=vllm: {problem}" if problem else None


def with_model_path(profile: Profile, model: str, path: str | None) -> Profile:
    """The profile with ``models.<model>.path`` replaced (the DAG's fetched folder)."""
    if path is None:
        return profile
    models = {**profile.models, model: dataclasses.replace(profile.models[model], path=path)}
    return dataclasses.replace(profile, models=models)


def plan(args: argparse.Namespace) -> Launch:
    """Everything the launch needs, from the spec and the flags; starts nothing."""
    profile = load_profile(args.config)
    model = args.model or next(iter(profile.models))
    if model not in profile.models:
        raise ConfigError(
            f"{args.config}: unknown model {model!r}; known: {sorted(profile.models)}"
        )
    profile = with_rollout(with_model_path(profile, model, args.model_path), args.rollout)
    run = profile.run(args.run)
    seed = args.seed if args.seed is not None else profile.seeds_of(run)[0]
    out_dir = (args.out or default_out(profile, model, args.run, seed)).resolve()
    train_file = args.train_file or layout.train_parquet(layout.results_dir(profile.profile))
    paths = RunPaths(
        train_file=str(Path(train_file).resolve()),
        val_file=str(Path(args.val_file or train_file).resolve()),
        out_dir=out_dir,
    )
    alloc = read_allocation()
    shape = cluster_shape(args, profile.models[model], alloc)
    cluster = (
        RayCluster(alloc, out_dir, port=args.ray_port)
        if alloc is not None and alloc.nnodes > 1
        else None
    )
    if cluster is not None:
        shape = ClusterShape(shape.nnodes, shape.gpus_per_node, ray_address=cluster.address)
    log_path = next_attempt_path(paths.log_dir)
    device = resolve_device(args.device)
    method_overrides = build_overrides(
        profile, run, model, seed, paths, shape, str(log_path), args.loss_agg_mode
    )
    overrides = (
        method_overrides
        + device_overrides(
            device, shape.nnodes * shape.gpus_per_node, shape.ray_address, profile.verl.rollout.name
        )
        + list(args.extra)
    )
    return Launch(
        profile, run, model, seed, paths, cluster, device, log_path, overrides, shape.ray_address
    )


def resume_or_restart(launch: Launch, args: argparse.Namespace) -> int | None:
    """Set the old run aside when asked or when its settings differ; write this run's
    fingerprint; return the step verl resumes from (None: step 0). Raises FingerprintMismatch."""
    paths = launch.paths
    if args.restart:
        moved = set_aside(paths)
        logger.info(
            "--restart: %s", f"moved the old run to {moved}" if moved else "nothing to move"
        )
    step = resume_point(paths.ckpt_dir)
    run_fp = run_fingerprint(launch.overrides)
    if step is not None and must_restart(paths.ckpt_dir, run_fp, args.on_mismatch):
        logger.info("moved the old run to %s", set_aside(paths))
        step = None
    write_fingerprint(paths.ckpt_dir, run_fp)
    logger.info(
        "%s",
        f"resuming from {paths.ckpt_dir}/global_step_{step}"
        if step is not None
        else f"no checkpoint in {paths.ckpt_dir}: starting from step 0",
    )
    return step


def main(argv: list[str] | None = None) -> int:
    job_started = time.time()  # the job's own start, for the runs table's wall time
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s: %(message)s"
    )
    args = parse_args(argv)
    try:
        launch = plan(args)
    except ConfigError as err:
        logger.error("%s", err)
        return 2
    cmd = launch.command
    if args.dry_run:
        for ray_cmd in launch.cluster.commands() if launch.cluster else []:
            print(shell_line(ray_cmd))
        print(shell_line(cmd))
        return 0
    problem = rollout_problem(launch.profile)
    if problem:
        logger.error("%s", problem)
        return 2
    try:
        step = resume_or_restart(launch, args)
    except FingerprintMismatch as err:
        logger.error("%s", err)
        return 2
    check_plugin_registered()
    launch.paths.log_dir.mkdir(parents=True, exist_ok=True)
    (launch.paths.out_dir / "launch.json").write_text(
        json.dumps({"command": cmd, "resumed_from_step": step}, indent=2) + "\n"
    )
    started = time.time()
    env = verl_env(
        {**child_env(launch.log_path), **device_env(launch.device)}, launch.ray_address is not None
    )
    code = supervise(cmd, env, launch.cluster)
    if code != 0:
        logger.error(
            "verl stopped with code %d; rerun the same command to resume from the last checkpoint",
            code,
        )
        return code
    if not args.no_finalize:
        finalize(
            launch.paths.out_dir,
            launch.paths,
            {**run_summary(launch, step, started, args), **job_times(job_started)},
            merge=not args.no_merge,
        )
    return 0


def run_summary(launch: Launch, step: int | None, started: float, args) -> dict:
    return {
        "engine": "verl",
        "profile": launch.profile.profile,
        "model": launch.model,
        "run": args.run,
        "seed": launch.seed,
        "steps": launch.profile.models[launch.model].steps,
        "resumed_from_step": step,
        "wall_time_s": round(time.time() - started, 1),
        "command": launch.command,
        "commit": code_commit(),  # the code that trained it (the report's runs table)
        "objective": launch_objective(launch, args.loss_agg_mode).as_dict(),
    }


def launch_objective(launch: Launch, loss_agg_mode: str | None) -> Objective:
    """What the launched actor optimised (aggregation, loss scale, clip), for the report."""
    train = launch.profile.train
    method = launched_method(launch.run, loss_agg_mode)
    return objective(method, train.max_new_tokens, train.micro_batch_per_gpu)


if __name__ == "__main__":
    raise SystemExit(main())
