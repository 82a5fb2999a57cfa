"""The smoke profile (configs/smoke.yaml) through `snakemake --profile slurm`, every non-local
rule a real sbatch job on the local two-node cluster, with our profile as shipped except the two
values it asks a user to set (partition, account). The profile is cut to the two runs its report
needs (PACS and GRPO: Fig. 5b compares them) and a 20-step SFT: every rule still runs as a job,
and the whole smoke matrix runs locally once already (tests/pipeline/test_smoke.py). Slow; CI
runs it."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow
RUNS = ("pacs", "grpo")  # the runs of diversity.pca_methods (Fig. 5b)


def slurm_smoke_config(work: Path) -> str:
    """configs/smoke.yaml with its runs cut to RUNS and a 20-step SFT, beside it in ``work``."""
    cfg = yaml.safe_load((work / "configs" / "smoke.yaml").read_text())
    cfg["runs"] = {name: cfg["runs"][name] for name in RUNS}
    cfg["models"]["tiny"]["sft"]["steps"] = 20
    assert set(cfg["diversity"]["pca_methods"]) <= set(RUNS)
    path = work / "configs" / "smoke_slurm.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return str(path.relative_to(work))


@pytest.fixture(scope="module")
def slurm_smoke(local_slurm_workflow, slurm_env, heavy_slot):
    work = local_slurm_workflow
    with heavy_slot("dag"):
        started = time.monotonic()
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "snakemake",
                "--profile",
                "slurm",
                "--configfile",
                slurm_smoke_config(work),
                # four jobs at a time: each waits on the executor's status checks (every 10 s at
                # first, not 40) more than it computes; status checks cover all four at once
                "--jobs",
                "4",
                "--slurm-init-seconds-before-status-checks",
                "10",
                "--slurm-keep-successful-logs",
            ],
            cwd=work,
            env=slurm_env,
            capture_output=True,
            text=True,
            timeout=3000,
            check=False,
        )
    print(f"snakemake --profile slurm (smoke): {time.monotonic() - started:.0f} s")
    (work / "snakemake.log").write_text(result.stdout + result.stderr)
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    return work, result.stdout + result.stderr


def test_the_report_is_written(slurm_smoke):
    work, _ = slurm_smoke
    out = work / "paper_figures" / "smoke"
    readme = (out / "README.md").read_text()
    for rel in (
        "tables/table1_pass1.csv",
        "tables/table3_diversity.csv",
        "figures/fig3_eval_curve.png",
        "figures/fig5b_pca_tiny_synthetic.png",
    ):
        assert (out / rel).stat().st_size > 0 and rel in readme, rel
    trained = (work / "results" / "smoke" / "train").glob("tiny/*/seed0/summary.json")
    assert len(list(trained)) == len(RUNS)


def test_every_compute_rule_ran_as_a_completed_sbatch_job(slurm_smoke, slurm_jobs):
    """Each compute job was submitted with sbatch (the executor's own report, with the job's
    SLURM log), ran through the jobstep's srun, and ended COMPLETED where slurmctld still holds
    it (MinJobAge forgets older ones); the local rules never left this host."""
    work, log = slurm_smoke
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+) \(log: (\S+)\)\.", log)
    by_rule: dict[str, list[str]] = {}
    for job_id, path in submitted:
        slurm_log = Path(path) if Path(path).is_absolute() else work / path
        rule = (
            slurm_log.relative_to(work / ".snakemake" / "slurm_logs").parts[0].removeprefix("rule_")
        )
        by_rule.setdefault(rule, []).append(job_id)
        text = slurm_log.read_text()  # the job's own Snakemake, run by the jobstep's srun
        assert "Finished jobid" in text and f"(Rule: {rule})" in text, text[-2000:]
    rules = {
        "build_tiny_model",
        "sft_tiny_base",
        "train_tiny",
        "generate",
        "gather_samples",
        "grade",
        "diversity",
    }
    assert set(by_rule) == rules, by_rule
    assert len(by_rule["train_tiny"]) == len(RUNS)
    states = {job["id"]: job["state"] for job in slurm_jobs()}
    known = [states[i] for ids in by_rule.values() for i in ids if i in states]
    assert known and set(known) == {"COMPLETED"}, states
    assert "job states come from squeue" in log  # no accounting here: pacs.slurm_profile switched
