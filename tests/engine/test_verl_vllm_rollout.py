"""verl 0.9.1's own vLLM rollout on CPU through our plugin, and the smoke chain around it.

One run of ``python -m pacs.verl_plugin.launch.smoke --rollout vllm --device cpu`` (what
``make verl-smoke ROLLOUT=vllm`` runs): the tiny SFT-warmed model trains 2 PACS steps with verl's
``vllm`` rollout, stops, a second launch resumes for step 3, the checkpoint is merged, the merged
model is evaluated with the vLLM backend, graded, and pass@k is tabled. No file of verl or vLLM
is edited: the engine env's metadata alias ``vllm==0.24.0+cpu``, the launcher's CPU overrides
(sleep mode off) and the ``vllm.general_plugins`` entry point (CPU linear weights kept) are all.

Weight sync: the trainer saves each step's rollout (``PACS_ROLLOUT_DUMP_DIR``): the response
tokens, vLLM's own log-probs of them and the actor's (FSDP, fp32) recomputation before that
step's update. At step 2 the rollout must sample from the weights of step 1's update: vLLM's
log-probs then match the updated actor's within bf16 noise (vLLM runs the model in bf16), and
differ measurably from the log-probs of the pre-update (base) weights, which this test computes
itself by teacher forcing the base model with transformers in fp32.

The PACS loss through verl: each actor update's micro-batch is dumped (``PACS_LOSS_DUMP_DIR``,
pacs.verl_plugin.worker; the resumed launch numbers on), and the logged loss and per-update ψ
stats are recomputed from the dumps with ``pacs.core_algos.pacs_loss`` — an independent path
through the math, verl's micro-batch summation and its metric aggregation. The SFT-warmed model
puts both labels in some groups, so the check covers class weights other than 1. (The HF
rollout's weight sync is checked by tests/verl_plugin/test_baselines_smoke.py.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pacs.verl_plugin.cluster.owner import owned_env
from pacs.verl_plugin.launch.logs import attempt_files, read_records

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "configs" / "verl_smoke.yaml"
CHAIN_TIMEOUT_S = 3600  # measured 8-20 min on 2 shared cores; start-up dominated
# vLLM computes in bf16, the actor in fp32: their per-token log-probs differ by ~1.3e-3 on
# average (mean |Δ| over response tokens; measured at steps 1 and 2).
BF16_NOISE = 5e-3
# One update at the smoke's lr (1e-4) moved the log-probs by ~9e-3 (7x the bf16 noise); the test
# trains at 5e-4 so that a stale rollout stands further apart.
TEST_LR = 5e-4
STALE_FACTOR = 5.0  # a stale rollout is further from the updated actor than bf16 noise by this
GROUP = 4  # train.group_size in configs/verl_smoke.yaml
MINI_BATCHES = 2
STEPS = 3  # 2 in the first launch, 1 in the resumed one
MICRO_BATCHES_PER_STEP = 4  # 2 mini-batches x (4 groups / 2 per mini-batch / 1 group each)

pytestmark = [pytest.mark.engine, pytest.mark.slow]
KV_CACHE_GIB = os.environ["VLLM_CPU_KVCACHE_SPACE"]  # tests/engine/conftest.py
EAGER_CPU_ENGINE = os.environ["VLLM_CPU_CI_ENV"]  # no inductor compile: tests/engine/conftest.py


@pytest.fixture(scope="module")
def chain(tmp_path_factory, request, heavy_slot) -> Path:
    # The suite's longest path: its memory units are taken first (tests/conftest.py), then the
    # base is waited for (built_once takes none), so that smaller work cannot keep it waiting.
    with heavy_slot("verl_vllm_chain"):
        return _run_chain(tmp_path_factory, request, request.getfixturevalue("verl_smoke_base"))


def _run_chain(tmp_path_factory, request, verl_smoke_base: Path) -> Path:
    out = tmp_path_factory.mktemp("verl_vllm_smoke")
    dump = out / "rollout_dump"
    loss_dump = out / "loss_dump"
    cmd = [
        sys.executable,
        "-m",
        "pacs.verl_plugin.launch.smoke",
        "--config",
        str(CONFIG),
        "--out",
        str(out),
        "--rollout",
        "vllm",
        "--device",
        "cpu",
        "--base",  # the run's one SFT-warmed base (tests/conftest.py), not a fourth build
        str(verl_smoke_base),
        "--",
        f"+ray_kwargs.ray_init.runtime_env.env_vars.PACS_ROLLOUT_DUMP_DIR={dump}",
        f"+ray_kwargs.ray_init.runtime_env.env_vars.PACS_LOSS_DUMP_DIR={loss_dump}",
        # the rollout engine's KV cache capped as for every engine here (tests/engine/conftest.py)
        # (quoted: Hydra reads a bare 1 as an int, and Ray takes strings only)
        f"+ray_kwargs.ray_init.runtime_env.env_vars.VLLM_CPU_KVCACHE_SPACE='{KV_CACHE_GIB}'",
        f"+ray_kwargs.ray_init.runtime_env.env_vars.VLLM_CPU_CI_ENV='{EAGER_CPU_ENGINE}'",
        f"actor_rollout_ref.actor.optim.lr={TEST_LR}",
    ]
    # what the chain leaves running (its Ray, vLLM's engine), even if it is killed, and nothing else
    with owned_env() as env:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=CHAIN_TIMEOUT_S, check=False, env=env
        )
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():  # the parts' wall times land in the CI log
        print(proc.stdout, flush=True)
    if proc.returncode != 0:
        pytest.fail(
            f"smoke chain exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    return out


def test_chain_trains_stops_resumes_merges_and_evaluates_with_vllm(chain):
    ckpt = chain / "train" / "checkpoints"
    assert (ckpt / "latest_checkpointed_iteration.txt").read_text().strip() == "3"
    summary = json.loads((chain / "train" / "summary.json").read_text())
    assert summary["resumed_from_step"] == 2
    metrics = [
        json.loads(line) for line in (chain / "train" / "metrics.jsonl").read_text().splitlines()
    ]
    assert [row["step"] for row in metrics] == [1, 2, 3]
    # ref: rollout scores each step's first update with the actor's own recomputation of the
    # rollout policy (ψ ≈ 0, not vLLM's bf16 log-probs); the second follows an optimizer step
    for row in metrics:
        assert row["psi_abs_mean/mb0"] < 1e-5 and row["psi_abs_mean/mb1"] > 1e-3, row
    assert (chain / "train" / "model" / "config.json").is_file()
    launch = json.loads((chain / "train" / "launch.json").read_text())
    assert "actor_rollout_ref.rollout.name=vllm" in launch["command"]
    samples = [
        json.loads(line) for line in (chain / "eval" / "samples.jsonl").read_text().splitlines()
    ]
    bench = (chain / "data" / "test.jsonl").read_text().splitlines()
    assert len(samples) == 2 * len(bench)  # eval.n_samples = 2 per problem
    assert {s["finish_reason"] for s in samples} <= {"stop", "length"}
    passk = json.loads((chain / "eval" / "passk.json").read_text())
    assert passk["n_problems"] == len(bench) and passk["pass_at_k"][0]["k"] == 1
    report = (chain / "smoke_report.md").read_text()
    for part in ("train", "resume", "evaluate", "grade", "passk", "total"):
        assert f"| {part} |" in report
    assert "| build |" not in report  # the base was linked (--base), not built again


def _base_log_probs(model, prompt: torch.Tensor, response: torch.Tensor) -> torch.Tensor:
    """Per-token log-probs of ``response`` after ``prompt`` under ``model`` (teacher forcing)."""
    ids = torch.cat([prompt, response]).unsqueeze(0)
    with torch.no_grad():
        logits = model(ids).logits[0, len(prompt) - 1 : -1].float()
    return torch.log_softmax(logits, -1).gather(-1, response.unsqueeze(-1)).squeeze(-1)


def _step_distances(chain: Path, step: int, model) -> dict[str, float]:
    """Mean |Δ log-prob| over response tokens: vLLM vs the actor, vLLM vs the base weights,
    and the actor vs the base weights (this test's own recomputation)."""
    record = torch.load(chain / "rollout_dump" / f"step{step}.pt")
    sums = {"vllm_actor": 0.0, "vllm_base": 0.0, "actor_base": 0.0}
    tokens = 0
    for prompt, response, mask, rollout_lp, actor_lp in zip(
        record["prompts"],
        record["responses"],
        record["response_mask"],
        record["rollout_log_probs"],
        record["old_log_probs"],
    ):
        n = int(mask.sum())
        resp = response[:n].long()
        base = _base_log_probs(model, prompt.long(), resp)
        vllm_lp, actor = rollout_lp[:n].float(), actor_lp[:n].float()
        sums["vllm_actor"] += (vllm_lp - actor).abs().sum().item()
        sums["vllm_base"] += (vllm_lp - base).abs().sum().item()
        sums["actor_base"] += (actor - base).abs().sum().item()
        tokens += n
    return {key: value / tokens for key, value in sums.items()}


def test_weight_sync_reaches_the_vllm_rollout(chain):
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(
        chain / "model" / "base", dtype=torch.float32
    ).eval()
    step1, step2 = _step_distances(chain, 1, base), _step_distances(chain, 2, base)
    print({"step1": step1, "step2": step2})
    # Step 1: nothing updated yet; this test's recomputation agrees with the actor's (both fp32),
    # and vLLM with both within bf16 noise.
    assert step1["actor_base"] < 1e-4, step1
    assert step1["vllm_actor"] < BF16_NOISE, step1
    # Step 2: the actor moved away from the base weights, and vLLM moved with it.
    assert step2["actor_base"] > STALE_FACTOR * step2["vllm_actor"], step2
    assert step2["vllm_actor"] < BF16_NOISE, step2
    assert step2["vllm_base"] > STALE_FACTOR * step2["vllm_actor"], step2


# --------------------------------------------------------------- the PACS loss through verl


def _metrics(chain: Path) -> dict[int, dict]:
    lines = (chain / "train" / "metrics.jsonl").read_text().splitlines()
    return {json.loads(line)["step"]: json.loads(line) for line in lines}


def _pad(x: torch.Tensor, width: int) -> torch.Tensor:
    return torch.nn.functional.pad(x, (0, width - x.shape[1]))


def _labels_and_weights(record: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """The [B] labels and class weights a dumped micro-batch carried (signed weight per token)."""
    mask = record["response_mask"].bool()
    signed = record["advantages"].gather(-1, mask.int().argmax(-1, keepdim=True)).squeeze(-1)
    return (signed > 0).float(), signed.abs()


def _pacs_loss(record: dict, **kwargs):
    from pacs.core_algos import pacs_loss

    labels, weights = _labels_and_weights(record)
    return pacs_loss(
        record["log_prob"],
        record["old_log_prob"],
        record["response_mask"].bool(),
        labels,
        GROUP,
        beta=1.0,
        score="rloo",
        weights=weights,
        **kwargs,
    )


def _recomputed_step_loss(records: list[dict]) -> float:
    """Mean over the step's mini-batches of pacs_loss on each mini-batch (its micro-batches)."""
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
        loss, _ = _pacs_loss(cat, use_weight=True, reduction="mean")
        losses.append(loss.item())
    return sum(losses) / len(losses)


def _step_dumps(chain: Path) -> dict[int, list[Path]]:
    """Each step's micro-batch dumps, the resumed launch's after the first launch's."""
    dumps = sorted((chain / "loss_dump").glob("rank0-*.pt"))
    n = MICRO_BATCHES_PER_STEP
    assert len(dumps) == n * STEPS, [p.name for p in dumps]
    return {step: dumps[n * (step - 1) : n * step] for step in range(1, STEPS + 1)}


def test_logged_loss_equals_core_pacs_loss_on_the_same_batch(chain):
    from pacs.core_algos import balanced_weights

    rows, dumps = _metrics(chain), _step_dumps(chain)
    mixed_steps, unbalanced_steps = [], []
    for step, files in dumps.items():
        records = [torch.load(f) for f in files]
        assert all(r["log_prob"].shape[0] == GROUP for r in records)  # one group per micro-batch
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


def test_psi_per_mini_batch_is_the_core_stat_of_each_update(chain):
    """Each ``actor/pacs_<stat>/mb<i>`` equals pacs_loss's stat recomputed from update i's dumped
    micro-batches, averaged over them as verl averages; the per-update pre-clip norms average to
    verl's ``actor/grad_norm``. (ψ ≈ 0 at each step's first update, not after it: the chain's
    first test.)"""
    logged = read_records(attempt_files(chain / "train" / "verl_logs"))  # both launches
    rows = _metrics(chain)
    for step, files in _step_dumps(chain).items():
        data, records = logged[step], [torch.load(f) for f in files]
        per_mini = len(records) // MINI_BATCHES
        for m in range(MINI_BATCHES):
            stats = [_pacs_loss(r)[1] for r in records[m * per_mini : (m + 1) * per_mini]]
            for stat in ("psi_abs_mean", "psi_std", "sigma_std"):
                expected = sum(s[stat] for s in stats) / len(stats)
                assert data[f"actor/pacs_{stat}/mb{m}"] == pytest.approx(expected, abs=1e-6)
                assert rows[step][f"{stat}/mb{m}"] == data[f"actor/pacs_{stat}/mb{m}"]
        norms = [data[f"actor/grad_norm/mb{m}"] for m in range(MINI_BATCHES)]
        # not > 0 on the first update: at ψ ≡ 0 a group with one label has gradient
        # (½ − r)·∇Σψ = 0 (RLOO scores sum to 0), so an update of such groups has norm 0
        assert min(norms) >= 0 and norms[-1] > 0
        assert sum(norms) / MINI_BATCHES == pytest.approx(data["actor/grad_norm"], rel=1e-9)
        assert [rows[step][f"grad_norm/mb{m}"] for m in range(MINI_BATCHES)] == norms
        assert f"actor/pacs_psi_abs_mean/mb{MINI_BATCHES}" not in data


def test_merged_model_changed_and_generates_with_the_hf_backend(chain):
    """The merged checkpoint is the trained model (most tensors moved from the base), and the HF
    evaluation backend samples it too (the chain evaluated it with vLLM)."""
    from transformers import AutoModelForCausalLM

    from pacs.evaluation.backends import SamplingConfig
    from pacs.evaluation.backends.hf import HFBackend
    from pacs.evaluation.io import load_benchmark

    base = AutoModelForCausalLM.from_pretrained(chain / "model" / "base", dtype=torch.float32)
    trained = AutoModelForCausalLM.from_pretrained(chain / "train" / "model", dtype=torch.float32)
    base_sd, trained_sd = base.state_dict(), trained.state_dict()
    assert base_sd.keys() == trained_sd.keys()
    changed = [k for k in base_sd if not torch.equal(base_sd[k], trained_sd[k])]
    assert len(changed) >= len(base_sd) // 2, f"only {changed} changed"
    rows = load_benchmark(chain / "data" / "test.jsonl")[:4]
    hf = HFBackend(str(chain / "train" / "model"), batch_size=8, device="cpu")
    cfg = SamplingConfig(n=2, temperature=0.6, top_p=0.95, max_new_tokens=24, seed=0)
    per_problem = hf.generate(list(enumerate(rows)), cfg)
    assert [len(samples) for samples in per_problem] == [2] * len(rows)
    for sample in (s for samples in per_problem for s in samples):
        assert sample["finish_reason"] in {"stop", "length"} and 1 <= sample["n_tokens"] <= 24
