"""The launcher resumes only checkpoints written under the same settings (run fingerprint).

verl itself is replaced by a stand-in with the same argv/env contract (it reads the tracker,
logs two steps to $VERL_FILE_LOGGER_PATH and saves a checkpoint), so every test runs the real
launcher: argument parsing, overrides, resume checks, the child process and finalisation.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from pacs.fingerprint import NO_FINGERPRINT
from pacs.verl_plugin.launch import resume, train

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "configs" / "paper.yaml"

# Refuses to run unless the launcher wrote the fingerprint first; then two steps from the tracker.
FAKE_VERL = """
import json, os, sys
ckpt = [a.split("=", 1)[1] for a in sys.argv if a.startswith("trainer.default_local_dir=")][0]
if not os.path.isfile(os.path.join(ckpt, "pacs_fingerprint.json")):
    sys.exit(3)
tracker = os.path.join(ckpt, "latest_checkpointed_iteration.txt")
start = int(open(tracker).read()) if os.path.exists(tracker) else 0
with open(os.environ["VERL_FILE_LOGGER_PATH"], "w") as f:
    for step in range(start + 1, start + 3):
        row = {"step": step, "data": {"timing_s/step": 1.0, "critic/rewards/mean": step / 10}}
        f.write(json.dumps(row) + "\\n")
os.makedirs(os.path.join(ckpt, f"global_step_{start + 2}", "actor"), exist_ok=True)
open(tracker, "w").write(str(start + 2))
"""


@pytest.fixture
def launcher(monkeypatch, tmp_path, caplog):
    """``launch(*extra_args, config=PAPER, run="pacs") -> exit code`` into one run folder."""
    monkeypatch.setattr(
        train, "verl_command", lambda overrides, out: [sys.executable, "-c", FAKE_VERL, *overrides]
    )
    monkeypatch.setattr(train, "check_plugin_registered", lambda: None)
    monkeypatch.setattr(train, "rollout_problem", lambda profile: None)  # no vLLM needed here
    monkeypatch.setattr(train, "read_allocation", lambda: None)
    import pacs.verl_plugin.launch.merge as merge_mod

    monkeypatch.setattr(merge_mod, "merge_checkpoint", lambda ckpt, out: ckpt)
    caplog.set_level("INFO")
    train_file = tmp_path / "train.parquet"
    train_file.write_bytes(b"rows, version 1")

    def launch(*extra, config=PAPER, run="pacs") -> int:
        args = ["--config", str(config), "--run", run, "--out", str(tmp_path / "run")]
        return train.main([*args, "--train-file", str(train_file), *map(str, extra)])

    launch.out = tmp_path / "run"
    launch.train_file = train_file
    return launch


def _paper_config(path: Path, edit) -> Path:
    cfg = yaml.safe_load(PAPER.read_text())
    edit(cfg)
    path.write_text(yaml.safe_dump(cfg))
    return path


def _attempts(out: Path) -> list[str]:
    return sorted(p.name for p in (out / "verl_logs").iterdir())


def _metric_steps(out: Path) -> list[int]:
    return [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]


def test_fresh_launch_writes_the_fingerprint_before_verl_starts(launcher):
    assert launcher() == 0  # the stand-in exits 3 without the fingerprint file
    stored = resume.read_fingerprint(launcher.out / "checkpoints")
    assert stored["settings"]["algorithm.adv_estimator"] == "pacs"
    assert stored["settings"]["data.train_files"].startswith("sha256:")
    assert "trainer.total_training_steps" not in stored["settings"]


CHANGES = {
    # case: (launch kwargs and extra args, config edit, a differing override the error names)
    "method": ({"run": "grpo"}, None, "algorithm.adv_estimator"),
    "seed": ({}, None, "data.seed"),
    "lr": ({}, lambda cfg: cfg["train"].update(lr=2e-6), "actor_rollout_ref.actor.optim.lr"),
    "beta": (
        {},
        lambda cfg: cfg.setdefault("method_defaults", {}).update(pacs={"beta": 2.0}),
        "actor_rollout_ref.actor.policy_loss.beta",
    ),
    "extra_override": ({}, None, "actor_rollout_ref.actor.optim.lr"),
    "train_data": ({}, None, "data.train_files"),
}


@pytest.mark.parametrize("case", list(CHANGES))
def test_a_changed_run_is_refused_before_verl_starts(case, launcher, tmp_path, caplog):
    assert launcher() == 0
    kwargs, edit, key = CHANGES[case]
    extra: list = []
    if edit is not None:
        kwargs = {**kwargs, "config": _paper_config(tmp_path / "changed.yaml", edit)}
    if case == "seed":
        extra = ["--seed", 1]
    if case == "extra_override":
        extra = ["--", "actor_rollout_ref.actor.optim.lr=5e-7"]
    if case == "train_data":
        launcher.train_file.write_bytes(b"rows, version 2")
    fingerprint_before = (launcher.out / "checkpoints" / resume.FINGERPRINT_NAME).read_text()
    caplog.clear()

    assert launcher(*extra, **kwargs) == 2

    assert f"{key}: " in caplog.text and "--on-mismatch restart" in caplog.text
    assert _attempts(launcher.out) == ["attempt-001.jsonl"]  # verl never started
    assert (launcher.out / "checkpoints" / "global_step_2").is_dir()
    assert (
        launcher.out / "checkpoints" / resume.FINGERPRINT_NAME
    ).read_text() == fingerprint_before


@pytest.mark.parametrize(
    "args,edit",
    [
        ((), None),
        (("--on-mismatch", "restart"), None),  # only a mismatch restarts
        ((), lambda cfg: cfg["models"]["qwen3_4b"].update(steps=240)),  # extend the run
        (("--gpus-per-node", 4), None),  # another allocation
        (
            ("--", "trainer.save_freq=5", "actor_rollout_ref.rollout.gpu_memory_utilization=0.4"),
            None,
        ),
    ],
    ids=["unchanged", "restart-flag-unchanged", "steps-extended", "gpus", "cadence-and-memory"],
)
def test_same_training_settings_resume(args, edit, launcher, tmp_path, caplog):
    assert launcher() == 0
    kwargs = {"config": _paper_config(tmp_path / "c.yaml", edit)} if edit else {}
    assert launcher(*args, **kwargs) == 0
    assert "resuming from" in caplog.text and "global_step_2" in caplog.text
    assert json.loads((launcher.out / "summary.json").read_text())["resumed_from_step"] == 2
    assert _metric_steps(launcher.out) == [1, 2, 3, 4]
    assert not list(launcher.out.glob("previous-*"))


def test_restart_sets_the_old_run_aside_and_starts_from_step_0(launcher, caplog):
    assert launcher() == 0
    old_fp = resume.read_fingerprint(launcher.out / "checkpoints")
    assert launcher("--on-mismatch", "restart", run="grpo") == 0

    (previous,) = launcher.out.glob("previous-*")
    assert (previous / "checkpoints" / "global_step_2").is_dir()
    assert resume.read_fingerprint(previous / "checkpoints") == old_fp
    assert (previous / "verl_logs" / "attempt-001.jsonl").is_file()
    # The new run: from step 0, only its own log rows, the new fingerprint.
    assert json.loads((launcher.out / "summary.json").read_text())["resumed_from_step"] is None
    assert _metric_steps(launcher.out) == [1, 2]
    new_fp = resume.read_fingerprint(launcher.out / "checkpoints")
    assert new_fp["settings"]["algorithm.adv_estimator"] == "grpo"
    assert "algorithm.adv_estimator: 'pacs' -> 'grpo'" in caplog.text


def test_restart_flag_also_sets_the_old_logs_aside(launcher):
    """--restart used to move only the checkpoints: the old attempt logs then leaked into the
    new run's metrics.jsonl (the old run's steps 3-4 appended to the new run's 1-2)."""
    assert launcher() == 0 and launcher() == 0  # the old run reaches step 4
    assert launcher("--restart", run="grpo") == 0
    assert _metric_steps(launcher.out) == [1, 2]
    assert len(_attempts(launcher.out)) == 1
    (previous,) = launcher.out.glob("previous-*")
    assert _metric_steps(previous) == [1, 2, 3, 4]


def test_checkpoints_without_a_fingerprint_are_refused(launcher, caplog):
    assert launcher() == 0
    (launcher.out / "checkpoints" / resume.FINGERPRINT_NAME).unlink()
    assert launcher() == 2
    assert "no run fingerprint" in caplog.text
    assert launcher("--on-mismatch", "restart") == 0
    assert len(list(launcher.out.glob("previous-*"))) == 1


def test_training_settings_keep_what_is_trained_only(tmp_path):
    data = tmp_path / "t.parquet"
    data.write_bytes(b"x")
    settings = resume.training_settings(
        [
            f"data.train_files={data}",
            "data.val_files=/elsewhere.parquet",
            "+algorithm.label_loss.ref=rollout",
            "actor_rollout_ref.actor.optim.lr=1e-06",
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
            "trainer.total_training_steps=120",
            "+ray_kwargs.ray_init.runtime_env.env_vars.VERL_FILE_LOGGER_PATH=/r/attempt-007.jsonl",
            "actor_rollout_ref.actor.optim.lr=2e-06",  # later wins, as in Hydra
        ]
    )
    assert settings == {
        "data.train_files": f"sha256:{resume.sha256_file(data)}",
        "algorithm.label_loss.ref": "rollout",
        "actor_rollout_ref.actor.optim.lr": "2e-06",
    }
    with pytest.raises(ValueError, match="not key=value"):
        resume.training_settings(["trainer.logger"])


def test_no_fingerprint_is_a_mismatch(tmp_path):
    fp = resume.run_fingerprint(["algorithm.adv_estimator=pacs"])
    assert resume.read_fingerprint(tmp_path) is None
    with pytest.raises(RuntimeError) as exc:
        resume.must_restart(tmp_path, fp, "refuse")
    assert exc.value.keys == [NO_FINGERPRINT]
    assert resume.must_restart(tmp_path, fp, "restart") is True
    resume.write_fingerprint(tmp_path, fp)
    assert resume.must_restart(tmp_path, fp, "refuse") is False
