"""The verl smoke chain's parts (pacs.verl_plugin.launch.smoke) without running them: which
commands, in which order, and ``--base`` (one built base linked into several chains)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pacs.verl_plugin.launch import smoke

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "verl_smoke.yaml"


def _parts(argv: list[str]) -> list[str]:
    return [name for name, _ in smoke.chain(smoke.parse_args(argv), ["--backend", "hf"])]


def _fake_base(root: Path) -> Path:
    for name in ("data/train.parquet", "data/test.jsonl", "model/base/config.json"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("{}")
    return root


def test_the_chain_builds_first_unless_given_a_base(tmp_path):
    out = ["--config", str(CONFIG), "--out", str(tmp_path / "run")]
    trained = ["train", "resume", "evaluate", "grade", "passk"]
    assert _parts(out) == ["build", *trained]
    assert _parts([*out, "--base", str(tmp_path / "base")]) == trained


def test_a_base_is_linked_and_the_launches_read_it(tmp_path):
    base, out = _fake_base(tmp_path / "base"), tmp_path / "run"
    smoke.link_base(base, out)
    assert (out / "data").resolve() == base.resolve() / "data"
    assert (out / "model" / "base" / "config.json").is_file()
    smoke.link_base(base, out)  # a rerun into the same --out relinks
    args = smoke.parse_args(["--config", str(CONFIG), "--out", str(out), "--base", str(base)])
    train = dict(smoke.chain(args, []))["train"]
    assert f"actor_rollout_ref.model.path={out / 'model' / 'base'}" in train
    assert str(out / "data" / "train.parquet") in train


def test_a_folder_that_is_not_a_base_is_named_with_what_it_lacks(tmp_path):
    base = _fake_base(tmp_path / "base")
    (base / "model" / "base" / "config.json").unlink()
    with pytest.raises(SystemExit, match=r"missing: model/base/config\.json"):
        smoke.link_base(base, tmp_path / "run")


def test_a_real_folder_in_the_way_is_not_replaced(tmp_path):
    base, out = _fake_base(tmp_path / "base"), tmp_path / "run"
    (out / "data").mkdir(parents=True)
    with pytest.raises(SystemExit, match="exists; --base links it"):
        smoke.link_base(base, out)
