"""Check what a paper run needs before GPU hours are spent: ``python -m pacs.preflight``.

    python -m pacs.preflight [--config configs/paper.yaml]
        [--profile NAME|FOLDER|FILE | --resources JSON]
        [--results results/paper] [--out FILE]

Run it on the login node (``make preflight``) and again as the first job on a compute node (the
paper DAG's ``preflight`` rule, which every verl training job depends on). It prints one table,
one line per check, ``PASS`` or ``FAIL`` and, for a failure, its fix; it exits 1 when any check
fails and writes ``--out`` only when all pass. The checks:

- pinned versions of verl, vLLM, torch and transformers (envs/gpu/requirements.lock), and the
  attention implementation the config names (``verl.attn_implementation``) importable; on a
  cluster the profile declares GPU-less (``set-resources.train_verl.verl_device: cpu``) only verl's
  pin, and no GPU per node;
- the hub snapshots compute nodes read offline (``make fetch``), or the local model folders;
- ``slurm_partition`` and ``slurm_account`` set in the SLURM profile (``--profile``), or in the
  resources the DAG submits with (``--resources``: the active profile and ``--set-resources``, as
  Snakemake merged them; ``pacs.slurm_profile.active_resources``);
- GPUs and CPUs per node as the profile asks for training: inside a SLURM job the job's own
  node, else what ``sinfo`` reports for the partition;
- the network interface training binds Ray, NCCL and Gloo to (``set-resources.train_verl.
  network_interface``, else ``RAY_NETWORK_INTERFACE``), when one is named: it exists on the
  compute node with an IPv4 address;
- the Ray start-up wait (``set-resources.train_verl.ray_start_wait_s``, PACS_RAY_START_WAIT_S) is
  a number of seconds, when the profile sets one;
- every GPU rule (train_verl, generate, diversity) still asks for a GPU (a command-line
  ``--set-resources`` replaces the profile's whole map);
- free disk for the checkpoints the config keeps (``verl.max_actor_ckpt_to_keep``; null keeps
  all), about 16 bytes per parameter each (bf16-sized weights kept in fp32 plus Adam's two
  moments), plus a merged bf16 model (2 bytes per parameter) per evaluated checkpoint;
- with LiveCodeBench, the code sandbox's kernel requirements (user, mount and PID namespaces).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from pacs import layout
from pacs.config import ATTN_PACKAGES, ConfigError, ModelSpec, Profile, load_profile
from pacs.io import atomic_open
from pacs.methods import traits
from pacs.verl_plugin.cluster.ray_start import START_WAIT_ENV, start_wait_s
from pacs.verl_plugin.cluster.slurm import NETWORK_ENV, interface_ipv4
from pacs.verl_plugin.launch.devices import no_gpu_diagnosis

PINNED = {"verl": "0.9.1", "vllm": "0.24.0", "torch": "2.11.0", "transformers": "5.9.0"}
CKPT_BYTES_PER_PARAM = 16  # fp32 weights (4) + Adam m and v (8) + fp32 gradient-sized extras (4)
MERGED_BYTES_PER_PARAM = 2  # the merged bf16 HF model of an evaluated checkpoint
KNOWN_PARAMS = {"Qwen/Qwen3-4B": 4.02e9, "Qwen/Qwen3-8B": 8.19e9, "Qwen/Qwen2.5-7B": 7.62e9}
UNSET = "SET_ME"
ACTIVE_PROFILE = (
    "the profile snakemake runs with (--profile), or --default-resources/--set-resources"
)


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


# ------------------------------------------------------------------ software


def version_checks(pinned: dict[str, str] = PINNED) -> list[Check]:
    checks = []
    for dist, want in pinned.items():
        try:
            found = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            found = None
        ok = found is not None and found.split("+")[0] == want
        checks.append(
            Check(
                f"version {dist}",
                ok,
                f"{dist} {found or 'not installed'} (pinned {want})",
                ""
                if ok
                else f"conda env create -f environment.yml (or pip install {dist}=={want})",
            )
        )
    return checks


def software_checks(spec: Profile, profile: dict) -> list[Check]:
    """The pinned versions and the attention backend; on a CPU cluster (``cpu_cluster``) the GPU
    env's torch/vLLM/transformers pins are not required, and the table says so."""
    if not cpu_cluster(profile):
        return [*version_checks(), attention_check(spec)]
    others = ", ".join(f"{dist} {want}" for dist, want in PINNED.items() if dist != "verl")
    skipped = Check(
        "GPU env pins",
        True,
        f"not checked: the profile sets verl_device: cpu (a CPU cluster); {others} are the GPU "
        "env's",
    )
    return [*version_checks({"verl": PINNED["verl"]}), skipped, attention_check(spec)]


def attention_check(spec: Profile) -> Check:
    impl = spec.verl.attn_implementation  # the spec refused one that remove-padding cannot use
    module = ATTN_PACKAGES[impl]
    try:
        importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - a broken CUDA extension raises more than ImportError
        return Check(
            "attention",
            False,
            f"{impl} needs `import {module}`: {exc!r}",
            "install flash-attn as environment.yml does (its pinned wheel)",
        )
    return Check("attention", True, f"{impl}: `import {module}` works")


# ------------------------------------------------------------------ data and models


def snapshot_checks(spec: Profile, results: Path) -> list[Check]:
    """Each model (and the hub embedder) is a local folder with weights' config, or fetched."""
    embedder = spec.diversity.embedder
    checks = []
    for name, model in spec.models.items():
        folder = Path(model.path or layout.hub_dir(results, name))
        checks.append(_folder_check(f"snapshot {name}", folder, "config.json", model.source))
    if spec.data.diversity_benchmarks and "/" in embedder and not Path(embedder).is_dir():
        folder = Path(layout.hub_dir(results, layout.EMBEDDER))
        checks.append(_folder_check("snapshot diversity-embedder", folder, "config.json", embedder))
    return checks


def _folder_check(name: str, folder: Path, marker: str, source: str) -> Check:
    if (folder / marker).is_file():
        return Check(name, True, f"{folder} holds {marker}")
    return Check(
        name,
        False,
        f"{folder}/{marker} missing ({source}); compute nodes are offline",
        "make fetch   (on a host with internet: downloads every hub snapshot)",
    )


# ------------------------------------------------------------------ the SLURM profile


def read_profile(path: Path) -> dict:
    with path.open() as fh:
        return yaml.safe_load(fh) or {}


def profile_places(name: str, home: Path | None = None) -> list[Path]:
    """Where Snakemake looks for ``--profile NAME``: ./NAME, then the user's and the system's
    profile folders; a path (with a slash, or an existing folder or file) is only itself."""
    given = Path(name).expanduser()
    if "/" in name or given.exists():
        return [given]
    home = Path.home() if home is None else home
    return [Path(name), home / ".config" / "snakemake" / name, Path("/etc/xdg/snakemake") / name]


def find_profile(name: str, home: Path | None = None) -> Path:
    """The config.yaml of profile ``name`` (a profile name as ``snakemake --profile`` takes it,
    its folder or its file); raises FileNotFoundError naming every place looked at."""
    places = profile_places(name, home)
    for place in places:
        path = place / "config.yaml" if place.is_dir() else place
        if path.is_file():
            return path
    looked = ", ".join(str(p) for p in places)
    raise FileNotFoundError(f"no SLURM profile {name!r}: no config.yaml at {looked}")


def account_checks(profile: dict, where: Path | str) -> list[Check]:
    defaults = profile.get("default-resources") or {}
    checks = []
    for key in ("slurm_partition", "slurm_account"):
        value = str(defaults.get(key) or "")
        ok = bool(value) and not value.startswith(UNSET)
        checks.append(
            Check(
                key,
                ok,
                f"{key} = {value or '(unset)'}",
                "" if ok else f"set default-resources.{key} in {where}",
            )
        )
    return checks


GENERATE_RULE = "generate"  # workflow/rules/evaluate.smk: every eval/ and curve/ shard


def shard_limit_checks(spec: Profile, profile: dict) -> list[Check]:
    """The generate shards are sized for eval.shard.job_minutes: the jobs must get that long."""
    shard = spec.eval.shard
    if shard is None:
        return []
    rule = GENERATE_RULE
    runtime = ((profile.get("set-resources") or {}).get(rule) or {}).get("runtime")
    runtime = runtime or (profile.get("default-resources") or {}).get("runtime")
    ok = runtime is not None and float(runtime) >= shard.job_minutes
    return [
        Check(
            f"{rule} time limit",
            ok,
            f"profile runtime {runtime} min; shards sized for eval.shard.job_minutes = "
            f"{shard.job_minutes:g}",
            ""
            if ok
            else f"set set-resources.{rule}.runtime in the profile to at least "
            f"{shard.job_minutes:g} (or eval.shard.job_minutes to at most {runtime})",
        )
    ]


# The GPU request of each GPU rule in the shipped profile: train_verl per node (gres), generate
# and diversity per job (gpu). A command-line --set-resources replaces the profile's whole
# set-resources.
GPU_KEYS = {
    "train_verl": ("gres", "gpu", "gpus"),
    GENERATE_RULE: ("gpu", "gpus", "gres"),
    "diversity": ("gpu", "gpus", "gres"),
}


def gpu_request_check(profile: dict, where: Path | str) -> list[Check]:
    """Every GPU rule still asks for GPUs (not on a CPU cluster): a command-line --set-resources
    (or --default-resources) replaces the profile's whole map, every rule's, not one key."""
    if cpu_cluster(profile):
        return []
    rules = profile.get("set-resources") or {}
    lost = [r for r, keys in GPU_KEYS.items() if not any((rules.get(r) or {}).get(k) for k in keys)]
    if not lost:
        return []
    return [
        Check(
            "GPU request",
            False,
            f"{', '.join(lost)} ask(s) no GPU in {where}: a command-line --set-resources replaces "
            "the profile's whole set-resources (every rule's resources, not the one key given)",
            "set per-cluster values (train_verl's network_interface, ray_start_wait_s, "
            "verl_device) in the profile's set-resources, not with --set-resources "
            "(docs/paper_scale.md)",
        )
    ]


def cpu_cluster(profile: dict) -> bool:
    """The profile says its cluster has no GPUs: ``set-resources.train_verl.verl_device: cpu``
    (training then runs verl on the CPU, ``--device cpu``)."""
    train = (profile.get("set-resources") or {}).get("train_verl") or {}
    return str(train.get("verl_device", "")) == "cpu"


def train_request(profile: dict) -> tuple[int, int]:
    """(GPUs per node, CPUs per node) the profile asks for a training job (no GPU on a CPU
    cluster: whatever gres it names, training does not use them)."""
    train = (profile.get("set-resources") or {}).get("train_verl") or {}
    gres = str(train.get("gres", ""))
    match = re.search(r"gpu(?::[^:]+)?:(\d+)$", gres)
    gpus = 0 if cpu_cluster(profile) or not match else int(match.group(1))
    return gpus, int(train.get("cpus_per_task", 1))


def node_check(want: tuple[int, int], have: tuple[int, int], where: str) -> Check:
    ok = have[0] >= want[0] and have[1] >= want[1]
    return Check(
        "GPUs/CPUs per node",
        ok,
        f"{where}: {have[0]} GPUs, {have[1]} CPUs; training asks {want[0]} GPUs, {want[1]} CPUs "
        "per node",
        ""
        if ok
        else "set set-resources.train_verl gres / cpus_per_task in the SLURM profile to "
        "what one node of the partition has (and models.<m>.gpus_per_node to match)",
    )


def job_node() -> tuple[int, int]:
    """(GPUs, CPUs) this process can use: inside a SLURM job, the job's share of its node."""
    import torch

    return torch.cuda.device_count(), len(os.sched_getaffinity(0))


def sinfo_node(partition: str, run=subprocess.run) -> tuple[int, int] | None:
    """The largest (GPUs, CPUs) of one node in ``partition`` as ``sinfo`` lists them, or None."""
    if shutil.which("sinfo") is None and run is subprocess.run:
        return None
    out = run(
        ["sinfo", "-h", "-N", "-p", partition, "-o", "%G %c"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    best = (0, 0)
    for line in out.splitlines():
        gres, _, cpus = line.rpartition(" ")
        gpus = sum(int(m) for m in re.findall(r"gpu(?::[^:(,]+)?:(\d+)", gres))
        best = max(best, (gpus, int(cpus) if cpus.isdigit() else 0))
    return best if out.strip() else None


def in_job_check(want: tuple[int, int], have: tuple[int, int], env) -> Check:
    """``node_check`` inside a SLURM job; with no GPU seen, it says whether SLURM granted none or
    granted GPUs torch cannot see (resizing the profile helps with neither)."""
    check = node_check(want, have, f"SLURM job {env['SLURM_JOB_ID']}")
    if check.ok or have[0] > 0 or want[0] == 0:
        return check
    import torch

    what, fix = no_gpu_diagnosis(env, torch.version.cuda)
    return Check(check.name, False, f"{check.detail}: {what}", fix)


def resource_check(profile: dict, env=os.environ, run=subprocess.run) -> Check:
    want = train_request(profile)
    if env.get("SLURM_JOB_ID"):
        have = job_node()
        if cpu_cluster(profile) and env.get("SLURM_CPUS_ON_NODE", "").isdigit():
            # verl on the CPU: Ray's CPUs are scheduling slots, the job's SLURM CPUs (the launcher
            # starts each Ray node with --num-cpus of the allocation), not the cores it may use
            have = (have[0], int(env["SLURM_CPUS_ON_NODE"]))
        return in_job_check(want, have, env)
    partition = str((profile.get("default-resources") or {}).get("slurm_partition", ""))
    have = sinfo_node(partition, run)
    if have is None:
        return Check(
            "GPUs/CPUs per node",
            False,
            f"sinfo lists no node of partition {partition!r}",
            "run on the cluster's login node, with slurm_partition set",
        )
    return node_check(want, have, f"partition {partition} (sinfo)")


def interface_check(profile: dict, env=os.environ, addrs=None) -> list[Check]:
    """The interface named for training exists here with an IPv4 address: required inside a
    SLURM job (a compute node); on a login node, which may lack the cluster's fabric, a missing
    interface is left to the DAG's preflight job."""
    train = (profile.get("set-resources") or {}).get("train_verl") or {}
    name = train.get("network_interface") or env.get(NETWORK_ENV)
    if not name:
        return []
    host = socket.gethostname()
    try:
        ip = interface_ipv4(str(name), addrs)
    except RuntimeError as err:
        if env.get("SLURM_JOB_ID"):
            fix = (
                "set set-resources.train_verl.network_interface in the profile to an interface "
                "every compute node has (`ip -br addr` on one), or remove it"
            )
            return [Check("network interface", False, str(err), fix)]
        detail = f"{name} is not on {host} (not a compute node?): the DAG's preflight job checks it"
        return [Check("network interface", True, detail)]
    return [Check("network interface", True, f"{name}: {ip} on {host}")]


def ray_wait_check(profile: dict) -> list[Check]:
    """The profile's Ray start-up wait (``set-resources.train_verl.ray_start_wait_s``, which
    training gets as PACS_RAY_START_WAIT_S) is a number of seconds, when it sets one."""
    train = (profile.get("set-resources") or {}).get("train_verl") or {}
    value = train.get("ray_start_wait_s")
    if value is None or str(value).strip() == "":
        return []
    try:
        seconds = start_wait_s({START_WAIT_ENV: str(value)})
    except ValueError as err:
        fix = "set set-resources.train_verl.ray_start_wait_s to a number of seconds (default 300)"
        return [Check("Ray start wait", False, f"ray_start_wait_s: {err}", fix)]
    return [Check("Ray start wait", True, f"{seconds:g} s (ray_start_wait_s, {START_WAIT_ENV})")]


# ------------------------------------------------------------------ disk


def model_params(model: ModelSpec, results: Path, name: str) -> float | None:
    """Parameters of a model: its snapshot's safetensors bytes / 2 (bf16), else a known size."""
    folder = Path(model.path or layout.hub_dir(results, name))
    weights = sum(f.stat().st_size for f in folder.glob("*.safetensors")) if folder.is_dir() else 0
    return weights / 2 if weights else KNOWN_PARAMS.get(model.hf_id or "")


def run_bytes(spec: Profile, model: str, method: str, params: float) -> float:
    """Disk for one training run: kept actor (and critic, for a method that has one)
    checkpoints, merged eval models."""
    steps, every, verl = spec.models[model].steps, spec.train.save_every, spec.verl
    saved = steps // every + (1 if steps % every else 0)
    keep = verl.max_actor_ckpt_to_keep
    total = (saved if keep is None else min(keep, saved)) * CKPT_BYTES_PER_PARAM * params
    if traits(method).has_critic:
        keep_critic = verl.max_critic_ckpt_to_keep
        total += (
            (saved if keep_critic is None else min(keep_critic, saved))
            * CKPT_BYTES_PER_PARAM
            * params
        )
    curve = spec.eval.curve_every
    merged = 1 + (steps // curve if curve else 0)
    return total + merged * MERGED_BYTES_PER_PARAM * params


def disk_check(spec: Profile, results: Path) -> Check:
    need, unknown = 0.0, []
    for model, run, _seed in spec.matrix.train_jobs:
        params = model_params(spec.models[model], results, model)
        if params is None:
            unknown.append(model)
            continue
        need += run_bytes(spec, model, spec.runs[run].method.name, params)
    where = next(p for p in (results, *results.parents) if p.exists())
    free = shutil.disk_usage(where).free
    ok = not unknown and free >= need
    detail = (
        f"checkpoints and merged models need ~{need / 1e12:.1f} TB; "
        f"{free / 1e12:.1f} TB free at {where}"
    )
    if unknown:
        detail += f"; size unknown for {sorted(set(unknown))} (fetch them first)"
    fix = (
        ""
        if ok
        else "free disk, or set verl.max_actor_ckpt_to_keep (each 8B checkpoint is ~131 GB)"
    )
    return Check("disk", ok, detail, fix)


# ------------------------------------------------------------------ the code sandbox


def sandbox_check(spec: Profile) -> list[Check]:
    if "livecodebench" not in spec.data.benchmarks:
        return []
    from pacs.rewards.code import SandboxUnavailable, sandbox_layers

    try:
        layers = sandbox_layers()
    except SandboxUnavailable as exc:
        return [
            Check(
                "code sandbox",
                False,
                str(exc),
                "grade LiveCodeBench where user, mount and PID namespaces are allowed "
                "(root, or sysctl user.max_user_namespaces > 0)",
            )
        ]
    return [Check("code sandbox", True, ", ".join(f"{k}: {v}" for k, v in layers.items()))]


# ------------------------------------------------------------------ the table


def run_checks(
    spec: Profile, profile: dict, where: str, results: Path, env=os.environ, run=subprocess.run
) -> list[Check]:
    """Every check; ``profile`` in a profile's shape, read from ``where``."""
    return [
        *software_checks(spec, profile),
        *snapshot_checks(spec, results),
        *account_checks(profile, where),
        *shard_limit_checks(spec, profile),
        *gpu_request_check(profile, where),
        resource_check(profile, env, run),
        *interface_check(profile, env),
        *ray_wait_check(profile),
        disk_check(spec, results),
        *sandbox_check(spec),
    ]


def render(checks: Sequence[Check]) -> str:
    width = max(len(c.name) for c in checks)
    lines = []
    for c in checks:
        lines.append(f"{'PASS' if c.ok else 'FAIL'}  {c.name:<{width}}  {c.detail}")
        if not c.ok:
            lines.append(f"{'':<4}  {'':<{width}}  fix: {c.fix}")
    failed = sum(not c.ok for c in checks)
    lines.append(f"{len(checks) - failed} passed, {failed} failed")
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m pacs.preflight", description=__doc__.split("\n")[0])
    p.add_argument("--config", type=Path, default=Path("configs/paper.yaml"))
    p.add_argument(
        "--profile",
        default="workflow/profiles/slurm/config.yaml",
        help="a profile name as `snakemake --profile` takes it (./NAME, ~/.config/snakemake/NAME), "
        "its folder or its config.yaml",
    )
    p.add_argument(
        "--resources",
        type=json.loads,
        help="JSON {default-resources, set-resources} to check instead of --profile's file "
        "(the DAG passes what it submits with)",
    )
    p.add_argument("--results", type=Path, help="default results/<profile>")
    p.add_argument("--out", type=Path, help="write the table here when every check passes")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        spec = load_profile(args.config)
    except (ConfigError, OSError) as err:
        print(err, file=sys.stderr)
        return 2
    results = args.results or Path(layout.results_dir(spec.profile))
    if args.resources is not None:
        profile, where = args.resources, ACTIVE_PROFILE
    else:
        try:
            path = find_profile(args.profile)
        except FileNotFoundError as err:
            print(err, file=sys.stderr)
            return 2
        profile, where = read_profile(path), str(path)
    checks = run_checks(spec, profile, where, results)
    table = render(checks)
    print(table, end="")
    if all(c.ok for c in checks) and args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(args.out) as fh:
            fh.write(table)
    return 0 if all(c.ok for c in checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
