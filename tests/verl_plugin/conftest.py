"""Fixtures for the verl plugin tests: verl's own Hydra config and a tiny local HF model."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

# verl instantiates HF configs/tokenizers while validating; never reach for the network here.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def verl_config_dir() -> str:
    import verl

    return os.path.join(os.path.dirname(verl.__file__), "trainer", "config")


@pytest.fixture(scope="session")
def compose(verl_config_dir):
    """compose(overrides) -> verl's ``ppo_trainer`` config with the overrides applied (Hydra API).

    ``hydra.*`` overrides are launcher-only (they configure the run directory), so they are dropped.
    """
    import omegaconf.omegaconf
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    parsed_once = _ParsedOnce()

    def composed(overrides):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(omegaconf.omegaconf, "yaml", parsed_once)
            return hydra_compose(
                config_name="ppo_trainer",
                overrides=[o for o in overrides if not o.startswith("hydra.")],
            )

    with initialize_config_dir(config_dir=verl_config_dir, version_base=None):
        yield composed


class _ParsedOnce:
    """PyYAML as OmegaConf.load sees it during a compose: each of verl's ~40 config files is parsed
    once per session, not once per compose (about a third of a compose's CPU); every caller gets
    its own copy of the parsed data, and OmegaConf and Hydra do the rest as always."""

    def __init__(self):
        self.parsed: dict[tuple[str, str], object] = {}

    def __getattr__(self, name):
        return getattr(yaml, name)

    def load(self, stream, Loader):
        text = stream if isinstance(stream, str) else stream.read()
        # OmegaConf makes an equal loader class on every call: its name is the key
        key = (text, Loader.__qualname__)
        if key not in self.parsed:
            self.parsed[key] = yaml.load(text, Loader=Loader)
        return copy.deepcopy(self.parsed[key])


@pytest.fixture(scope="session")
def tiny_hf_dir(tmp_path_factory) -> Path:
    """A 1-layer Qwen3 config + word-level tokenizer saved with save_pretrained (no download)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    path = tmp_path_factory.mktemp("tiny_qwen3")
    vocab = {tok: i for i, tok in enumerate(["<pad>", "<eos>", "<unk>", *"0123456789+-=abcdefgh"])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<eos>", pad_token="<pad>", unk_token="<unk>"
    ).save_pretrained(path)
    config = Qwen3Config(
        vocab_size=len(vocab),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        max_position_embeddings=64,
        tie_word_embeddings=False,
    )
    Qwen3ForCausalLM(config).save_pretrained(path)
    return path


# ------------------------------------------------------------------- SLURM's scontrol, recorded
# Records printed by a real Slurm 22.05.8 controller (Debian's slurm-wlm; tools/local_slurm.sh)
# for `sbatch --nodes=2 --cpus-per-task=16 --gres=gpu:h200:8`; the job id, node names, CPUs and
# GPUs are filled in per test.
SCONTROL_JOB = (
    "JobId={job} JobName=job.sh UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901759 "
    "Nice=0 Account=(null) QOS=(null) JobState=RUNNING Reason=None Dependency=(null) Requeue=1 "
    "Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 DerivedExitCode=0:0 RunTime=00:00:00 "
    "TimeLimit=UNLIMITED TimeMin=N/A SubmitTime=2026-11-24T02:22:26 "
    "EligibleTime=2026-11-24T02:22:26 "
    "AccrueTime=2026-11-24T02:22:26 StartTime=2026-11-24T02:22:27 EndTime=Unknown Deadline=N/A "
    "SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-11-24T02:22:27 Scheduler=Main "
    "Partition=debug AllocNode:Sid=localhost:3413 ReqNodeList=(null) ExcNodeList=(null) "
    "NodeList={nodelist} BatchHost={head} NumNodes={nnodes} NumCPUs={total_cpus} NumTasks={nnodes} "
    "CPUs/Task={cpus} ReqB:S:C:T=0:0:*:* TRES=cpu={total_cpus},node={nnodes},billing={total_cpus} "
    "Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* JOB_GRES=gpu:h200:{total_gpus}   "
    "Nodes={nodelist} CPU_IDs=0-{last_cpu} Mem=0 GRES=gpu:h200:{gpus}(IDX:0-{last_gpu}) "
    "MinCPUsNode={cpus} MinMemoryNode=1000M MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 "
    "OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=/tmp/sj/job.sh "
    "WorkDir=/tmp/sj StdErr=/tmp/sj/out.txt StdIn=/dev/null StdOut=/tmp/sj/out.txt Power= "
    "TresPerNode=gres:gpu:h200:{gpus} \n"
)
SCONTROL_NODE = (
    "NodeName={node} Arch=x86_64 CoresPerSocket=1  CPUAlloc=16 CPUEfctv=16 CPUTot=16 CPULoad=2.85 "
    "AvailableFeatures=(null) ActiveFeatures=(null) Gres=gpu:h200:8 NodeAddr={addr} "
    "NodeHostName=vm Port=57303 Version=22.05.8 OS=Linux 6.18.44-fc-v669 #1 SMP PREEMPT_DYNAMIC @0 "
    " "
    "RealMemory=2000000 AllocMem=0 FreeMem=17756 Sockets=16 Boards=1 State=ALLOCATED "
    "ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=debug  "
    "BootTime=2026-11-24T02:14:06 SlurmdStartTime=2026-11-24T02:22:20 "
    "LastBusyTime=2026-11-24T02:22:21 CfgTRES=cpu=16,mem=2000000M,billing=16 AllocTRES=cpu=16 "
    "CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 "
    "ExtSensorsTemp=n/s\n"
)


def scontrol_answers(
    job: str, nodes: list[str], nodelist: str, addrs: dict[str, str], cpus: int = 16, gpus: int = 8
) -> dict[tuple[str, ...], str]:
    """What `scontrol ARGS` prints for one job, keyed by ARGS."""
    record = SCONTROL_JOB.format(
        job=job,
        nodelist=nodelist,
        head=nodes[0],
        nnodes=len(nodes),
        cpus=cpus,
        total_cpus=cpus * len(nodes),
        last_cpu=cpus - 1,
        gpus=gpus,
        total_gpus=gpus * len(nodes),
        last_gpu=gpus - 1,
    )
    answers = {
        ("show", "job", "-d", "-o", job): record,
        ("show", "hostnames", nodelist): "".join(f"{n}\n" for n in nodes),
    }
    for node, addr in addrs.items():
        answers[("show", "node", "-o", node)] = SCONTROL_NODE.format(node=node, addr=addr)
    return answers


def fake_scontrol_run(answers: dict[tuple[str, ...], str]):
    """A ``run`` for ``slurm.read_allocation``: scontrol's recorded answers, exit 1 otherwise."""
    import subprocess

    def run(cmd, **kwargs):
        assert cmd[0] == "scontrol", cmd
        out = answers.get(tuple(cmd[1:]))
        return subprocess.CompletedProcess(
            cmd,
            0 if out is not None else 1,
            stdout=out or "",
            stderr="" if out is not None else "unknown request",
        )

    return run


@pytest.fixture
def scontrol(tmp_path, monkeypatch):
    """answers(...) -> recorded scontrol output per ARGS; run(answers) -> a ``run`` for
    ``slurm.read_allocation``; install(answers) -> an `scontrol` executable on PATH."""
    import json
    import stat
    import sys
    from types import SimpleNamespace

    def install(answers: dict[tuple[str, ...], str]) -> None:
        bin_dir = tmp_path / "fake_bin"
        bin_dir.mkdir(exist_ok=True)
        table = {" ".join(k): v for k, v in answers.items()}
        script = bin_dir / "scontrol"
        script.write_text(
            f"#!{sys.executable}\nimport json, sys\nt = "
            f"json.loads({json.dumps(json.dumps(table))})\n"
            "k = ' '.join(sys.argv[1:])\nsys.stdout.write(t.get(k, ''))\nsys.exit(0 if k in t else "
            "1)\n"
        )
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    return SimpleNamespace(answers=scontrol_answers, run=fake_scontrol_run, install=install)


class Spawner:
    """Stands in for Popen in RayCluster: records the srun commands, runs a harmless sleeper
    per command."""

    def __init__(self):
        self.commands, self.envs, self.procs = [], [], []

    def __call__(self, cmd, env=None):
        self.commands.append(cmd)
        self.envs.append(env)
        self.procs.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]))
        return self.procs[-1]


@pytest.fixture
def spawner():
    """A fresh :class:`Spawner`; any sleeper a failing test left running is killed after it."""
    spawn = Spawner()
    yield spawn
    for proc in spawn.procs:
        proc.kill()
        proc.wait()
