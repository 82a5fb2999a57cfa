"""Table 1's open third-party models (configs/paper.yaml ``eval.released``) in the paper DAG:
`snakemake -n --profile slurm` evaluates each, untrained, on Table 1's five math benchmarks, sharded
like our own runs, from its pinned hub snapshot and with its documented system prompt."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from pacs.config import load_profile

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = str(Path(sys.executable).parent)
# The real files' sizes (as tests/pipeline/test_workflow.py): the shard counts follow from them.
PAPER_BENCHMARK_SIZES = {"math500": 500, "amc23": 40, "aime24": 30, "aime25": 30, "beyondaime": 100}

TABLE1 = ("math500", "amc23", "aime24", "aime25", "beyondaime")
# generate shards per benchmark at 74 problems a shard (tests/pipeline/test_workflow.py)
SHARDS = {"math500": 7, "amc23": 1, "aime24": 1, "aime25": 1, "beyondaime": 2}


def dry_run_jobs(output: str) -> list[dict]:
    """`snakemake -n` output as [{rule, wildcards: {...}}]."""
    jobs = []
    for block in re.split(r"\n(?=rule \S+:\n)", output):
        head = re.match(r"rule (\S+):\n", block)
        line = re.search(r"^\s+wildcards: (.*)$", block, re.MULTILINE)
        if head:
            pairs = re.split(r",\s*", line.group(1)) if line else []
            jobs.append(
                {
                    "rule": head.group(1),
                    "wildcards": dict(kv.split("=", 1) for kv in pairs if "=" in kv),
                }
            )
    return jobs


@pytest.fixture(scope="module")
def dry_run(workflow_copy) -> tuple[str, list[dict]]:
    eval_dir = workflow_copy / "results" / "paper" / "data" / "eval"
    eval_dir.mkdir(parents=True, exist_ok=True)
    for name, size in PAPER_BENCHMARK_SIZES.items():
        (eval_dir / f"{name}.jsonl").write_text(
            "".join(f'{{"problem_id": "{name}/{i}"}}\n' for i in range(size))
        )
    env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}", "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--profile", "slurm"],
        cwd=workflow_copy, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout, dry_run_jobs(result.stdout)


def released_jobs(jobs: list[dict], rule: str) -> list[tuple[str, str, str | None]]:
    """(model, benchmark, shard) of a rule's jobs under eval/<model>/released/seed0/."""
    found = []
    for job in jobs:
        parts = job["wildcards"].get("tree", "").split("/")
        if job["rule"] == rule and len(parts) == 5 and parts[2] == "released":
            found.append((parts[1], parts[4], job["wildcards"].get("shard")))
    return found


def test_one_evaluation_per_released_model_and_benchmark_shard(dry_run):
    _, jobs = dry_run
    released = load_profile(REPO / "configs" / "paper.yaml").eval.released
    assert len(released) == 7
    generate = released_jobs(jobs, "generate")
    expected = {(m, b, str(k)) for m in released for b in TABLE1 for k in range(SHARDS[b])}
    assert set(generate) == expected and len(generate) == len(expected) == 7 * 12
    for rule in ("gather_samples", "grade", "passk"):
        pairs = [(m, b) for m, b, _ in released_jobs(jobs, rule)]
        assert Counter(pairs) == Counter((m, b) for m in released for b in TABLE1), rule
    assert not [
        j for j in jobs if j["rule"] == "train_verl" and j["wildcards"]["model"] in released
    ]


def test_released_models_come_from_their_snapshot_with_their_prompt(dry_run):
    text, _ = dry_run
    released = load_profile(REPO / "configs" / "paper.yaml").eval.released
    for key, model in released.items():
        pin = f" --revision {model.revision}" if model.revision else ""
        assert f"python -m pacs.fetch --repo-id {model.hf_id}{pin} --out" in text
        commands = [
            c
            for c in re.findall(
                r"^Shell command: (python -m pacs\.evaluation\.generate .*?)2>&1$",
                text,
                re.MULTILINE | re.DOTALL,
            )
            if f"/eval/{key}/released/" in c
        ]
        assert len(commands) == 12, key
        for command in commands:
            argv = shlex.split(command)
            assert argv[argv.index("--model") + 1] == f"results/paper/hub/{key}"
            if model.system_prompt is None:
                assert "--system-prompt" not in argv
            else:
                assert argv[argv.index("--system-prompt") + 1] == model.system_prompt


def test_a_released_key_may_not_name_one_of_our_models(workflow_copy, tmp_path):
    import yaml

    cfg = yaml.safe_load((REPO / "configs" / "smoke.yaml").read_text())
    cfg["eval"]["released"] = {
        "tiny": {"paper_name": "LIMO", "hf_id": "GAIR/LIMO", "unpinned": "test",
                 "prompt_source": "https://example.org", "size_class": "32b"},
    }  # fmt: skip
    bad = tmp_path / "clash.yaml"
    bad.write_text(yaml.safe_dump(cfg))
    env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}", "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile", str(bad)],
        cwd=workflow_copy, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert "eval.released and models share the keys ['tiny']" in result.stdout + result.stderr
