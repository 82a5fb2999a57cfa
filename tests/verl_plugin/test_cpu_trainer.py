"""verl 0.9.1's own trainer (PACSTrainerSync via ``python -m pacs.verl_plugin.launch.train``) on
CPU.

One real run of the paper-scale code path on the tiny Qwen3 model and the synthetic task: Ray
worker groups (one gloo rank), HF rollout, ``pacs.rewards.math`` rewards, the PACS loss through
verl's policy-loss registry, 2 optimizer steps, a checkpoint, the HF merge, and
``pacs.evaluation.generate --backend hf`` on the merged model. One launch: stopping and resuming
from the checkpoint is the engine tests' chain (tests/engine/test_verl_vllm_rollout.py, the same
launcher with verl's vLLM rollout), not repeated here.

The logged loss is checked against ``pacs.core_algos.pacs_loss`` recomputed from the tensors the
actor's loss saw (``PACS_LOSS_DUMP_DIR``, pacs.verl_plugin.worker) — an independent path through
the math, verl's micro-batch summation and its metric aggregation. The smoke model is SFT-warmed
(``models.tiny.sft`` in configs/verl_smoke.yaml) so that groups hold both labels: the check then
covers class weights other than 1, not only the trivial all-wrong batch of an untrained model.
The same dumps check the worker's per-update ψ stats (``actor/pacs_<stat>/mb<i>``).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "configs" / "verl_smoke.yaml"
GROUP = 4  # train.group_size in configs/verl_smoke.yaml
MINI_BATCHES = 2
STEPS = 2
# mean |ψ| of a step's first update (ref: rollout): fp32 noise of the log-prob recomputation, at
# most; measured 0, 2.4e-7 and 0 at steps 1-3. After the step's first optimizer step (lr 1e-4):
# measured 0.0078, 0.069 and 0.12.
PSI_AT_ROLLOUT_POLICY = 1e-5
PSI_AFTER_ONE_UPDATE = 1e-3

pytestmark = pytest.mark.slow


def _train(run_launch, root: Path, dump: Path, log: Path) -> None:
    args = [
        sys.executable,
        "-m",
        "pacs.verl_plugin.launch.train",
        "--config",
        str(CONFIG),
        "--run",
        "pacs",
        "--device",
        "cpu",
        "--train-file",
        str(root / "data" / "train.parquet"),
        "--out",
        str(root / "train"),
        "--",
        f"actor_rollout_ref.model.path={root / 'model' / 'base'}",
        f"trainer.total_training_steps={STEPS}",
        f"+ray_kwargs.ray_init.runtime_env.env_vars.PACS_LOSS_DUMP_DIR={dump}",
    ]
    run_launch(args, log)


def _pad(x: torch.Tensor, width: int) -> torch.Tensor:
    return torch.nn.functional.pad(x, (0, width - x.shape[1]))


def _labels_and_weights(record: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """The [B] labels and class weights a dumped micro-batch carried (signed weight per token)."""
    mask = record["response_mask"].bool()
    signed = record["advantages"].gather(-1, mask.int().argmax(-1, keepdim=True)).squeeze(-1)
    return (signed > 0).float(), signed.abs()


def _recomputed_step_loss(records: list[dict]) -> float:
    """Mean over the step's mini-batches of pacs_loss on each mini-batch (its micro-batches)."""
    from pacs.core_algos import pacs_loss

    per_mini = len(records) // MINI_BATCHES
    losses = []
    for m in range(MINI_BATCHES):
        recs = records[m * per_mini : (m + 1) * per_mini]
        width = max(r["log_prob"].shape[1] for r in recs)
        cat = {
            k: torch.cat([_pad(r[k], width) for r in recs])
            for k in recs[0]
            if k.endswith(("prob", "advantages", "mask"))
        }
        labels, weights = _labels_and_weights(cat)
        loss, _ = pacs_loss(
            cat["log_prob"],
            cat["old_log_prob"],
            cat["response_mask"].bool(),
            labels,
            GROUP,
            beta=1.0,
            score="rloo",
            use_weight=True,
            weights=weights,
            reduction="mean",
        )
        losses.append(loss.item())
    return sum(losses) / len(losses)


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory, verl_smoke_base, run_launch):
    if shutil.which("ray", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("ray is not installed in this environment")
    root = tmp_path_factory.mktemp("verl_smoke")
    for shared in ("data", "model"):  # the run's inputs, built once for every verl test
        (root / shared).symlink_to(verl_smoke_base / shared)
    _train(run_launch, root, root / "dump", root / "train.log")
    return root


def test_checkpoint_and_summary(smoke_run):
    ckpt = smoke_run / "train" / "checkpoints"
    assert (ckpt / "latest_checkpointed_iteration.txt").read_text().strip() == str(STEPS)
    assert (ckpt / f"global_step_{STEPS}" / "actor").is_dir()
    summary = json.loads((smoke_run / "train" / "summary.json").read_text())
    assert summary["resumed_from_step"] is None and summary["run"] == "pacs"
    rows = [
        json.loads(line)
        for line in (smoke_run / "train" / "metrics.jsonl").read_text().splitlines()
    ]
    assert [r["step"] for r in rows] == list(range(1, STEPS + 1))
    assert all(r["time_total"] > 0 and r["grad_norm"] > 0 for r in rows)


def _step_dumps(smoke_run: Path) -> dict[int, list[Path]]:
    """Each step's 4 micro-batch dumps: 2 mini-batches x (4 groups / 2 per mini-batch / 1 group
    per micro-batch)."""
    dumps = sorted((smoke_run / "dump").glob("rank0-*.pt"))
    assert len(dumps) == 4 * STEPS
    return {step: dumps[4 * (step - 1) : 4 * step] for step in range(1, STEPS + 1)}


def test_logged_loss_equals_core_pacs_loss_on_the_same_batch(smoke_run):
    from pacs.core_algos import balanced_weights

    rows = {
        json.loads(line)["step"]: json.loads(line)
        for line in (smoke_run / "train" / "metrics.jsonl").read_text().splitlines()
    }
    dumps = _step_dumps(smoke_run)
    mixed_steps, unbalanced_steps = [], []
    for step, files in dumps.items():
        records = [torch.load(f) for f in files]
        assert all(
            r["log_prob"].shape[0] == GROUP for r in records
        )  # one whole group per micro-batch
        mixed_groups, unbalanced = 0, False
        for record in records:
            labels, weights = _labels_and_weights(record)
            # the driver's weights are the per-group class-balanced weights of these labels
            assert torch.allclose(weights, balanced_weights(labels, GROUP))
            mixed_groups += 0 < labels.sum().item() < GROUP
            unbalanced |= not torch.allclose(weights, torch.ones_like(weights))
        assert rows[step]["mixed_frac"] == pytest.approx(mixed_groups / len(records))
        if mixed_groups:
            mixed_steps.append(step)
        if unbalanced:
            unbalanced_steps.append(step)
        assert rows[step]["loss"] == pytest.approx(_recomputed_step_loss(records), abs=1e-6)
    # The SFT-warmed model (train pass@1 ~0.4) puts both labels in some group of some step, and a
    # 3:1 group (weights 2/3 and 2, not 1) somewhere, so the equality above is not only the
    # all-wrong case. Not asserted per step: the rollout's sampling differs from run to run.
    rewards = {s: rows[s]["reward_mean"] for s in rows}
    assert mixed_steps, f"no group held both labels; reward_mean per step: {rewards}"
    assert unbalanced_steps, f"no group had class weights other than 1; reward_mean: {rewards}"
    # step 1, first micro-batch: no optimizer step yet, the policy is still the rollout policy
    first = torch.load(dumps[1][0])
    mask = first["response_mask"].bool()
    assert torch.allclose(first["log_prob"][mask], first["old_log_prob"][mask], atol=1e-5)


def _verl_records(smoke_run: Path) -> list[dict]:
    """verl's own file-logger lines ({"step", "data"}), in order."""
    records = []
    for path in sorted((smoke_run / "train" / "verl_logs").glob("attempt-*.jsonl")):
        records += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return records


def _micro_batch_stats(record: dict) -> dict[str, float]:
    from pacs.core_algos import pacs_loss

    labels, weights = _labels_and_weights(record)
    _, stats = pacs_loss(
        record["log_prob"],
        record["old_log_prob"],
        record["response_mask"].bool(),
        labels,
        GROUP,
        beta=1.0,
        score="rloo",
        weights=weights,
    )
    return stats


def test_psi_per_mini_batch_starts_at_zero_and_moves(smoke_run):
    """``ref: rollout``: each step's first update scores with the policy that sampled (ψ ≈ 0),
    its second comes after one optimizer step (ψ ≠ 0). Each ``actor/pacs_<stat>/mb<i>`` equals
    pacs_loss's stat recomputed from update i's dumped micro-batches, averaged over them as verl
    averages; the per-update pre-clip norms average to verl's ``actor/grad_norm``."""
    logged = {r["step"]: r["data"] for r in _verl_records(smoke_run) if r["step"] > 0}
    rows = {
        json.loads(line)["step"]: json.loads(line)
        for line in (smoke_run / "train" / "metrics.jsonl").read_text().splitlines()
    }
    for step, files in _step_dumps(smoke_run).items():
        data, records = logged[step], [torch.load(f) for f in files]
        per_mini = len(records) // MINI_BATCHES
        for m in range(MINI_BATCHES):
            stats = [_micro_batch_stats(r) for r in records[m * per_mini : (m + 1) * per_mini]]
            for stat in ("psi_abs_mean", "psi_std", "sigma_std"):
                expected = sum(s[stat] for s in stats) / len(stats)
                assert data[f"actor/pacs_{stat}/mb{m}"] == pytest.approx(expected, abs=1e-6)
                assert rows[step][f"{stat}/mb{m}"] == data[f"actor/pacs_{stat}/mb{m}"]
        psi = [data[f"actor/pacs_psi_abs_mean/mb{m}"] for m in range(MINI_BATCHES)]
        assert psi[0] < PSI_AT_ROLLOUT_POLICY < PSI_AFTER_ONE_UPDATE < psi[1], (step, psi)
        norms = [data[f"actor/grad_norm/mb{m}"] for m in range(MINI_BATCHES)]
        # not > 0 on the first update: at ψ ≡ 0 a group with one label has gradient
        # (½ − r)·∇Σψ = 0 (RLOO scores sum to 0), so an update of such groups has norm 0
        assert min(norms) >= 0 and norms[-1] > 0
        assert sum(norms) / MINI_BATCHES == pytest.approx(data["actor/grad_norm"], rel=1e-9)
        assert [rows[step][f"grad_norm/mb{m}"] for m in range(MINI_BATCHES)] == norms
        assert f"actor/pacs_psi_abs_mean/mb{MINI_BATCHES}" not in data


def test_hf_rollout_uses_the_actor_weights(smoke_run):
    """The rollout's own log-probs match the actor's recomputation: weights were synced."""
    records = _verl_records(smoke_run)
    diffs = [
        r["data"]["training/rollout_probs_diff_max"]
        for r in records
        if "training/rollout_probs_diff_max" in r["data"]
    ]
    assert len(diffs) == STEPS and max(diffs) < 1e-3


def test_parameters_changed_and_merged_model_is_evaluated(smoke_run, run_launch):
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(smoke_run / "model" / "base", dtype=torch.float32)
    trained = AutoModelForCausalLM.from_pretrained(
        smoke_run / "train" / "model", dtype=torch.float32
    )
    base_sd, trained_sd = base.state_dict(), trained.state_dict()
    assert base_sd.keys() == trained_sd.keys()
    changed = [k for k in base_sd if not torch.equal(base_sd[k], trained_sd[k])]
    assert len(changed) >= len(base_sd) // 2, f"only {changed} changed"
    out = smoke_run / "eval.jsonl"
    run_launch(
        [
            sys.executable,
            "-m",
            "pacs.evaluation.generate",
            "--backend",
            "hf",
            "--model",
            str(smoke_run / "train" / "model"),
            "--benchmark-file",
            str(smoke_run / "data" / "test.jsonl"),
            "--out",
            str(out),
            "--n",
            "2",
            "--max-new-tokens",
            "24",
            "--limit",
            "4",
            "--device",
            "cpu",
        ],
        smoke_run / "eval.log",
        kind="job",  # one HF generation: no Ray cluster
    )
    lines = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    assert len(lines) >= 4
