"""The HF code path, exercised offline: `datasets` and `huggingface_hub` are replaced by fakes."""

from __future__ import annotations

import json
import re
import sys
import types

import pytest

from pacs.data import DataError
from pacs.data.benchmarks import ALL_BENCHMARKS
from pacs.data.prepare import prepare_eval
from pacs.data.sources import SOURCES, resolve_revision


def _fake_datasets(monkeypatch, rows, calls):
    class FakeDataset:
        def to_list(self):
            return rows

    def load_dataset(*args, **kwargs):
        calls.append((args, kwargs))
        return FakeDataset()

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))


def _fake_hub(monkeypatch, func):
    monkeypatch.setitem(sys.modules, "huggingface_hub", types.SimpleNamespace(hf_hub_download=func))


def test_every_benchmark_has_a_source_and_pins_are_full_shas():
    assert set(ALL_BENCHMARKS) | {"deepscaler"} == set(SOURCES)
    for name, source in SOURCES.items():
        assert source.revision is None or re.fullmatch(r"[0-9a-f]{40}", source.revision), name
    assert SOURCES["aime25"].revision.startswith("6f71d77b")
    assert SOURCES["beyondaime"].revision.startswith("c705198a")


def test_unknown_revision_must_be_given():
    with pytest.raises(
        DataError, match="no pinned revision is known for zwhe99/amc23; pass --revision"
    ):
        resolve_revision("amc23")
    assert resolve_revision("amc23", "main") == "main"
    assert resolve_revision("aime24") == SOURCES["aime24"].revision


def test_hf_math_path_passes_the_pinned_revision(monkeypatch, tmp_path):
    calls = []
    _fake_datasets(
        monkeypatch, [{"ID": "2024-I-1", "Problem": "p", "Solution": "s", "Answer": 7}], calls
    )
    out = prepare_eval("aime24", "hf", tmp_path / "aime24.jsonl")
    assert calls == [
        (
            ("Maxwell-Jia/AIME_2024", None),
            {"split": "train", "revision": SOURCES["aime24"].revision},
        )
    ]
    manifest = json.loads((tmp_path / "aime24.manifest.json").read_text())
    assert manifest["source"] == "hf" and manifest["dataset_id"] == "Maxwell-Jia/AIME_2024"
    assert manifest["revision"] == SOURCES["aime24"].revision and manifest["local_path"] is None
    assert json.loads(out.read_text())["answer"] == "7"


def test_hf_errors_name_the_dataset(monkeypatch, tmp_path):
    calls = []
    _fake_datasets(monkeypatch, [{"ID": "1", "Problem": "p"}], calls)
    with pytest.raises(
        DataError, match=r"hf://datasets/Maxwell-Jia/AIME_2024@8d88b287\w+, row 1, field 'Answer'"
    ):
        prepare_eval("aime24", "hf", tmp_path / "a.jsonl")

    def broken(*args, **kwargs):
        raise ConnectionError("no network")

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=broken))
    with pytest.raises(
        DataError, match=r"MATH-500@6e4ed1a2\w+: download failed: ConnectionError: no network"
    ):
        prepare_eval("math500", "hf", tmp_path / "m.jsonl")
    assert not list(tmp_path.iterdir())


def test_gated_gpqa_tells_how_to_log_in(monkeypatch, tmp_path):
    class GatedRepoError(Exception):
        pass

    def download(*args, **kwargs):
        raise GatedRepoError("403 Client Error. Cannot access gated repo Idavidrein/gpqa")

    _fake_hub(monkeypatch, download)
    with pytest.raises(DataError) as err:
        prepare_eval("gpqa", "hf", tmp_path / "gpqa.jsonl", revision="main")
    assert "huggingface-cli login" in str(err.value) and "HF_TOKEN" in str(err.value)
    assert "https://huggingface.co/datasets/Idavidrein/gpqa" in str(err.value)


def test_hf_livecodebench_reads_every_release_file(monkeypatch, tmp_path):
    def record(qid, when):
        return {
            "question_content": "q",
            "question_id": qid,
            "contest_date": when,
            "starter_code": "",
            "public_test_cases": json.dumps([{"input": "1", "output": "1", "testtype": "stdin"}]),
            "metadata": "{}",
        }

    contents = {
        "test3.jsonl": [record("old", "2024-04-01T00:00:00")],
        "test4.jsonl": [record("a", "2024-07-15T00:00:00")],
        "test5.jsonl": [record("b", "2024-12-01T00:00:00"), record("new", "2025-01-02T00:00:00")],
    }
    seen = []

    def download(repo_id, filename, repo_type, revision):
        seen.append((repo_id, filename, repo_type, revision))
        path = tmp_path / "cache" / filename
        path.parent.mkdir(exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in contents[filename]))
        return str(path)

    _fake_hub(monkeypatch, download)
    out = prepare_eval("livecodebench", "hf", tmp_path / "out" / "livecodebench.jsonl")
    rev = SOURCES["livecodebench"].revision
    assert seen == [("livecodebench/code_generation_lite", f, "dataset", rev) for f in contents]
    assert [json.loads(line)["problem_id"] for line in out.read_text().splitlines()] == [
        "livecodebench/a",
        "livecodebench/b",
    ]
    manifest = json.loads((tmp_path / "out" / "livecodebench.manifest.json").read_text())
    assert manifest["dropped"] == 2 and manifest["revision"] == rev

    contents["test5.jsonl"].append(record("a", "2024-08-01T00:00:00"))
    with pytest.raises(
        DataError,
        match=r"test5\.jsonl, row 3, field 'problem_id': duplicate .*first at test4\.jsonl row 1",
    ):
        prepare_eval("livecodebench", "hf", tmp_path / "out2" / "livecodebench.jsonl")
