"""Resuming only the run that wrote the checkpoint: fingerprints, --on-mismatch, broken files."""

from __future__ import annotations

import copy
import json
import shutil

import pytest
import torch
from safetensors.torch import load_file

from pacs import fingerprint as fpr
from pacs.config import parse_profile
from pacs.io import read_jsonl
from pacs.tiny import checkpoint as ckpt_mod
from pacs.tiny import train as tt
from pacs.tiny.record import TIME_KEYS

# Two steps, a checkpoint after each, evals at 0 and 2 (and 4 when extended).
RUN_TRAIN = {"steps": 2, "save_every": 1, "eval_every": 2}


def _write_config(path, small_config, **train):
    path.write_text(json.dumps(small_config(**{**RUN_TRAIN, **train})))  # JSON is YAML
    return path


@pytest.fixture(scope="module")
def finished_run(tiny_env, small_config, tmp_path_factory, train_args):
    """A finished 2-step ``pacs`` run (seed 0, lr 1e-4), copied per test."""
    root = tmp_path_factory.mktemp("finished_run")
    config = _write_config(root / "config.yaml", small_config, lr=1e-4)
    tt.main(train_args(config, root / "run"))
    return root


@pytest.fixture
def run_copy(finished_run, tmp_path):
    shutil.copytree(finished_run / "run", tmp_path / "run")
    return tmp_path / "run"


def _weights(run) -> dict[str, torch.Tensor]:
    return load_file(run / "model" / "model.safetensors")


def _same_weights(a, b) -> bool:
    wa, wb = _weights(a), _weights(b)
    return wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


def _without_times(rows):
    return [{k: v for k, v in r.items() if k not in TIME_KEYS} for r in rows]


# --------------------------------------------------------------------- refusing a changed run

CHANGES = {
    # case: (method, seed, train overrides, the key the message must name)
    "method": ("grpo", 0, {"lr": 1e-4}, "run.method"),
    "seed": ("pacs", 1, {"lr": 1e-4}, "seed"),
    "lr": ("pacs", 0, {"lr": 3e-4}, "lr"),
}


@pytest.mark.parametrize("case", list(CHANGES))
def test_a_changed_run_is_refused_and_the_old_run_kept(
    case, tiny_env, small_config, finished_run, run_copy, tmp_path, train_args
):
    method, seed, train, key = CHANGES[case]
    config = _write_config(tmp_path / "changed.yaml", small_config, **train)
    before = {p.name: p.read_bytes() for p in run_copy.iterdir() if p.is_file()}

    with pytest.raises(SystemExit) as exc:
        tt.main(train_args(config, run_copy, method, seed))

    message = str(exc.value)
    assert str(run_copy / ckpt_mod.CHECKPOINT_NAME) in message
    assert f"{key}: " in message and "--on-mismatch restart" in message
    # Only the changed key is named (method also brings its own defaults, so it names more).
    if case != "method":
        assert message.count(" -> ") == 1
    after = {p.name: p.read_bytes() for p in run_copy.iterdir() if p.is_file()}
    assert after == before  # the old run, summary included, is untouched


def test_refusal_lists_the_differing_keys(tiny_env, small_config, finished_run, run_copy):
    settings = tt.Settings.from_profile(parse_profile(small_config(**RUN_TRAIN, lr=3e-4)), "grpo")
    fp = ckpt_mod.run_fingerprint(
        settings, 5, tiny_env["base"], read_jsonl(tiny_env["train"]), read_jsonl(tiny_env["test"])
    )
    state = tt.init_state(settings, tiny_env["base"], 4, 5)
    with pytest.raises(fpr.FingerprintMismatch) as exc:
        ckpt_mod.load_checkpoint(state, settings, run_copy, fp)
    # grpo drops PACS's beta/score/... and adds its own keys: all of them are named.
    assert {"lr", "seed", "run.method", "run.beta", "run.clip_ratio"} <= set(exc.value.keys)
    assert "run.method: 'pacs' -> 'grpo'" in str(exc.value)
    assert "lr: 0.0001 -> 0.0003" in str(exc.value)


def test_restart_trains_the_new_settings_from_scratch(
    tiny_env, small_config, finished_run, run_copy, tmp_path, train_args
):
    """The reported bug: a finished run restarted with another lr trained 0 steps and kept the
    old weights. With --on-mismatch restart it equals a fresh run of the new settings."""
    config = _write_config(tmp_path / "lr.yaml", small_config, lr=3e-4)
    fresh = tmp_path / "fresh"
    tt.main(train_args(config, fresh))
    old_weights = _weights(run_copy)

    tt.main(train_args(config, run_copy, "pacs", 0, "--on-mismatch", "restart"))

    assert _same_weights(run_copy, fresh)
    assert not all(torch.equal(old_weights[k], _weights(run_copy)[k]) for k in old_weights)
    assert _without_times(read_jsonl(run_copy / "metrics.jsonl")) == _without_times(
        read_jsonl(fresh / "metrics.jsonl")
    )
    assert read_jsonl(run_copy / "eval_curve.jsonl") == read_jsonl(fresh / "eval_curve.jsonl")
    summary = json.loads((run_copy / "summary.json").read_text())
    assert summary["resumed"] is False
    assert summary["settings"]["lr"] == 3e-4
    assert summary["fingerprint"] == json.loads((fresh / "summary.json").read_text())["fingerprint"]
    from pacs.fingerprint import code_commit

    assert summary["commit"] == code_commit()  # the runs table's commit column
    # the runs table's wall time: the job's own start to end, loading and saving included
    assert summary["job_seconds"] >= summary["wall_seconds_this_process"] > 0
    assert summary["job_started_at"] <= summary["job_finished_at"]


def test_restart_of_another_method_leaves_no_old_rows(
    tiny_env, small_config, finished_run, run_copy, tmp_path, train_args
):
    """A PACS run restarted as GRPO: no PACS metrics rows under a GRPO summary."""
    config = _write_config(tmp_path / "same.yaml", small_config, lr=1e-4)
    tt.main(train_args(config, run_copy, "grpo", 0, "--on-mismatch", "restart"))
    rows = read_jsonl(run_copy / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2]
    assert all("psi_mean" not in r and "clipfrac" in r for r in rows)
    assert json.loads((run_copy / "summary.json").read_text())["method"] == "grpo"


def test_restart_with_unchanged_settings_still_resumes(
    tiny_env, small_config, finished_run, run_copy, tmp_path, train_args
):
    """--on-mismatch restart only acts on a mismatch (Snakemake always passes it)."""
    config = _write_config(tmp_path / "same.yaml", small_config, lr=1e-4)
    weights = _weights(run_copy)
    tt.main(train_args(config, run_copy, "pacs", 0, "--on-mismatch", "restart"))
    assert json.loads((run_copy / "summary.json").read_text())["resumed"] is True
    assert all(torch.equal(weights[k], _weights(run_copy)[k]) for k in weights)
    assert len(read_jsonl(run_copy / "metrics.jsonl")) == 2


def test_extending_the_step_budget_resumes_like_one_long_run(
    tiny_env, small_config, finished_run, run_copy, tmp_path, train_args
):
    config = _write_config(tmp_path / "same.yaml", small_config, lr=1e-4)
    long = tmp_path / "long"
    tt.main(train_args(config, long, "pacs", 0, "--steps", 4))
    tt.main(train_args(config, run_copy, "pacs", 0, "--steps", 4))

    assert json.loads((run_copy / "summary.json").read_text())["resumed"] is True
    assert _same_weights(run_copy, long)
    assert _without_times(read_jsonl(run_copy / "metrics.jsonl")) == _without_times(
        read_jsonl(long / "metrics.jsonl")
    )
    assert read_jsonl(run_copy / "eval_curve.jsonl") == read_jsonl(long / "eval_curve.jsonl")


# --------------------------------------------------------------------- what the fingerprint covers


def _fingerprint(tiny_env, cfg, run="pacs", seed=0, base=None, train_rows=None):
    settings = tt.Settings.from_profile(parse_profile(cfg), run)
    return ckpt_mod.run_fingerprint(
        settings,
        seed,
        base or tiny_env["base"],
        train_rows if train_rows is not None else read_jsonl(tiny_env["train"]),
        read_jsonl(tiny_env["test"]),
    )


def test_fingerprint_ignores_steps_cadence_and_labels(tiny_env, small_config):
    reference = _fingerprint(tiny_env, small_config())
    cfg = small_config(steps=99, save_every=7)
    cfg["runs"]["pacs"] = {**cfg["runs"]["pacs"], "label": "renamed", "ablation": "ref"}
    assert _fingerprint(tiny_env, cfg)["sha256"] == reference["sha256"]


@pytest.mark.parametrize(
    "change,key",
    [
        (lambda cfg: cfg["train"].update(eval_problems=3), "eval_problems"),
        (lambda cfg: cfg["method_defaults"].update(pacs={"grad_clip": 0.5}), "run.grad_clip"),
        (lambda cfg: cfg["train"].update(micro_batch_per_gpu=4), "micro_batch_per_gpu"),
        (lambda cfg: cfg["eval"].update(temperature=1.0), "eval_temperature"),
        (lambda cfg: cfg["method_defaults"].update(pacs={"beta": 2.0}), "run.beta"),
    ],
    ids=["eval_problems", "grad_clip", "micro_batch", "eval_temperature", "beta"],
)
def test_fingerprint_covers_training_and_eval_settings(change, key, tiny_env, small_config):
    cfg = small_config()
    reference = _fingerprint(tiny_env, cfg)
    changed = copy.deepcopy(cfg)
    change(changed)
    assert fpr.differing_keys(reference, _fingerprint(tiny_env, changed)) == [key]


def test_fingerprint_covers_the_base_model_and_the_data(tiny_env, small_config, tmp_path):
    cfg = small_config()
    reference = _fingerprint(tiny_env, cfg)
    base = tmp_path / "base"
    shutil.copytree(tiny_env["base"], base)
    (base / "sft_summary.json").write_text('{"train_seconds": 1.0}')  # timings do not count
    assert _fingerprint(tiny_env, cfg, base=base)["sha256"] == reference["sha256"]
    weights = load_file(base / "model.safetensors")
    from safetensors.torch import save_file

    first = next(iter(weights))
    weights[first] = weights[first] + 1e-3
    save_file(weights, base / "model.safetensors")
    assert fpr.differing_keys(reference, _fingerprint(tiny_env, cfg, base=base)) == ["base_model"]
    rows = read_jsonl(tiny_env["train"])
    assert fpr.differing_keys(
        reference, _fingerprint(tiny_env, cfg, train_rows=rows[1:] + rows[:1])
    ) == ["train_data"]


def test_checkpoint_without_fingerprint_is_refused(
    tiny_env, small_config, run_copy, tmp_path, train_args
):
    path = run_copy / ckpt_mod.CHECKPOINT_NAME
    ckpt = torch.load(path, weights_only=False)
    del ckpt["fingerprint"]
    torch.save(ckpt, path)
    config = _write_config(tmp_path / "same.yaml", small_config, lr=1e-4)
    with pytest.raises(SystemExit, match="no run fingerprint"):
        tt.main(train_args(config, run_copy))


# --------------------------------------------------------------------- broken and partial writes


@pytest.mark.parametrize("keep", [0.5, 0.0], ids=["truncated", "empty"])
def test_unreadable_checkpoint_names_the_file_and_the_way_out(
    keep, tiny_env, small_config, run_copy, tmp_path, train_args
):
    path = run_copy / ckpt_mod.CHECKPOINT_NAME
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    config = _write_config(tmp_path / "same.yaml", small_config, lr=1e-4)
    with pytest.raises(SystemExit) as exc:
        tt.main(train_args(config, run_copy))
    message = str(exc.value)
    assert str(path) in message and "truncated or corrupt" in message
    assert "Delete it to restart" in message


def test_a_failed_checkpoint_write_keeps_the_previous_one(run_copy, monkeypatch, tiny_env):
    """torch.save dying mid-write (disk full, kill) leaves the old checkpoint and no temp file."""
    path = run_copy / ckpt_mod.CHECKPOINT_NAME
    before = path.read_bytes()
    ckpt = torch.load(path, weights_only=False)

    def dying_save(obj, fh):
        fh.write(b"PK\x03\x04 partial")
        raise OSError("No space left on device")

    monkeypatch.setattr(tt.torch, "save", dying_save)
    settings_state = tt.State(
        policy=torch.nn.Linear(1, 1),
        optimizer=torch.optim.AdamW(torch.nn.Linear(1, 1).parameters()),
        sampler=tt.PromptSampler(4, 0),
        step=3,
    )
    with pytest.raises(OSError, match="No space"):
        ckpt_mod.save_checkpoint(settings_state, run_copy, ckpt["fingerprint"])
    assert path.read_bytes() == before
    assert sorted(p.name for p in run_copy.iterdir() if p.name.startswith(".")) == []


def test_asking_for_fewer_steps_than_the_checkpoint_is_a_clear_error(
    tiny_env, small_config, run_copy, tmp_path, train_args
):
    """A checkpoint at step 2 and --steps 1: one line naming the file and the way out, no
    traceback of a bare ValueError; the run folder is left as it was."""
    config = _write_config(tmp_path / "same.yaml", small_config, lr=1e-4)
    before = {p.name: p.stat().st_mtime_ns for p in run_copy.iterdir()}
    with pytest.raises(SystemExit) as exc:
        tt.main(train_args(config, run_copy, "pacs", 0, "--steps", 1))
    message = str(exc.value)
    assert message.startswith("error: ")
    assert str(run_copy / ckpt_mod.CHECKPOINT_NAME) in message
    assert "step 2, past the 1 steps asked for" in message and "at least 2 steps" in message
    assert {p.name: p.stat().st_mtime_ns for p in run_copy.iterdir()} == before


def test_temp_files_of_a_killed_run_are_removed_by_the_next(
    tiny_env, small_config, run_copy, tmp_path, train_args
):
    """A run killed mid-write leaves `.checkpoint.pt.*.tmp` (and the like); the next run of the
    folder deletes them, and leaves files that are not its own alone."""
    stale = [
        run_copy / ".checkpoint.pt.k1l3d.tmp",
        run_copy / ".metrics.jsonl.x9.tmp",
        run_copy / ".summary.json.ab.tmp",
    ]
    for path in stale:
        path.write_bytes(b"partial")
    (run_copy / ".model.q7z").mkdir()
    (run_copy / ".model.q7z" / "model.safetensors").write_bytes(b"partial")
    foreign = run_copy / ".notes.tmp"
    foreign.write_text("not a training output")
    config = _write_config(tmp_path / "same.yaml", small_config, lr=1e-4)
    tt.main(train_args(config, run_copy))
    assert not any(p.exists() for p in stale) and not (run_copy / ".model.q7z").exists()
    assert foreign.read_text() == "not a training output"
    assert json.loads((run_copy / "summary.json").read_text())["resumed"] is True
