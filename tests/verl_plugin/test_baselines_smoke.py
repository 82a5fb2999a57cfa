"""DAPO and REAL through verl 0.9.1's own trainer on CPU: 2 steps each on the smoke profile's
tiny model (Ray, the plugin's HF rollout, our rewards). PACS runs on verl in the engine tests'
chain (tests/engine/test_verl_vllm_rollout.py, verl's vLLM rollout) and in the 2-node SLURM job
(tests/slurm/test_verl_dag.py, HF rollout).

DAPO runs verl's clip-higher, token-mean and v1 group filter (``algorithm.filter_groups``);
REAL runs our registered ``real`` loss under the ``label_sync`` trainer. Each launch starts its own
local Ray and stops only what it started (``pacs.verl_plugin.cluster.owner``), so these tests run
beside other Ray users, other xdist workers included.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
from pathlib import Path

import pytest

from pacs.verl_plugin.launch.logs import attempt_files, read_records

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "configs" / "verl_smoke.yaml"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smoke_root(tmp_path_factory, verl_smoke_base):
    if shutil.which("ray", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("ray is not installed in this environment")
    root = tmp_path_factory.mktemp("verl_baselines")
    for shared in ("data", "model"):  # the run's inputs, built once for every verl test
        (root / shared).symlink_to(verl_smoke_base / shared)
    return root


def _train(run_launch, root: Path, method: str) -> Path:
    out = root / method
    run_launch(
        [
            sys.executable,
            "-m",
            "pacs.verl_plugin.launch.train",
            "--config",
            str(CONFIG),
            "--run",
            method,  # a bare method name: the smoke profile's defaults
            "--device",
            "cpu",
            "--train-file",
            str(root / "data" / "train.parquet"),
            "--out",
            str(out),
            "--no-merge",  # finalize (metrics.jsonl, summary.json) without the HF merge
            "--",
            f"actor_rollout_ref.model.path={root / 'model' / 'base'}",
            "trainer.total_training_steps=2",
        ],
        root / f"{method}.log",
    )
    return out


def _rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("method", ["dapo", "real"])
def test_two_verl_steps(smoke_root, run_launch, method):
    out = _train(run_launch, smoke_root, method)
    rows = _rows(out)
    assert [r["step"] for r in rows] == [1, 2]
    assert all(math.isfinite(r["loss"]) and r["time_total"] > 0 for r in rows)
    assert json.loads((out / "summary.json").read_text())["run"] == method
    log = (smoke_root / f"{method}.log").read_text()
    if method == "real":  # our loss, under label_sync
        assert "actor/real_score_mean" in log
        assert all(0.0 <= r["mixed_frac"] <= 1.0 for r in rows)
    else:  # verl's clip-higher and group filter, under plugin_sync
        assert "'clip_ratio_high': 0.28" in log and "filter_groups/evicted_samples" in log
    # the HF rollout samples with the actor's weights: its own log-probs match the actor's
    # recomputation (measured 1.0e-6 to 1.7e-6; both fp32 on the CPU)
    logged = read_records(attempt_files(out / "verl_logs"))  # verl's own file logger
    diffs = [
        data["training/rollout_probs_diff_max"]
        for data in logged.values()
        if "training/rollout_probs_diff_max" in data
    ]
    assert len(diffs) == 2 and max(diffs) < 1e-3, diffs
