"""``eval.released``: Table 1's open models as config (pacs.config.ReleasedModelSpec), each pinned
or saying why not, with a size class; the matrix evaluates them on Table 1's benchmarks only."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from pacs.config import ConfigError, load_config, load_profile, parse_profile

REPO = Path(__file__).resolve().parents[2]
ENTRY = {
    "paper_name": "LIMO",
    "hf_id": "GAIR/LIMO",
    "prompt_source": "https://example.org/card",
    "size_class": "32b",
    "revision": "a" * 40,
}


def paper_with(entry: dict) -> dict:
    cfg = copy.deepcopy(load_config(REPO / "configs" / "paper.yaml"))
    cfg["eval"]["released"] = {"limo": entry}
    return cfg


def error(cfg: dict) -> str:
    with pytest.raises(ConfigError) as err:
        parse_profile(cfg, "configs/x.yaml")
    return str(err.value)


def test_the_paper_profile_lists_table1s_seven_open_models():
    spec = load_profile(REPO / "configs" / "paper.yaml")
    names = {m.paper_name for m in spec.eval.released.values()}
    assert names == {
        "Qwen3-14B", "Deepthought-8B", "Eurus-2-7B-PRIME", "LIMO", "Marco-o1",
        "OpenThinker3-7B", "Sky-T1-7B",
    }  # fmt: skip
    for model in spec.eval.released.values():
        assert (model.revision is None) != (model.unpinned is None)
        assert model.revision is None or len(model.revision) == 40
        assert model.prompt_source.startswith("https://")
    assert spec.eval.released["limo"].system_prompt.endswith("within \\boxed{}.")


def test_a_released_model_is_pinned_or_says_why():
    assert "exactly one of `revision`" in error(paper_with({**ENTRY, "unpinned": "why"}))
    neither = {k: v for k, v in ENTRY.items() if k != "revision"}
    assert "exactly one of `revision`" in error(paper_with(neither))
    assert "size_class" in error(paper_with({**ENTRY, "size_class": "70b"}))
    assert "eval.released.limo.systm_prompt" in error(paper_with({**ENTRY, "systm_prompt": "x"}))


def test_the_matrix_evaluates_released_models_on_table1s_benchmarks_only():
    cfg = paper_with(ENTRY)
    spec = parse_profile(cfg, "x")
    assert spec.matrix.released_jobs == [
        ("limo", "released", 0, b) for b in ("math500", "amc23", "aime24", "aime25", "beyondaime")
    ]
    assert ("limo", "released", 0) not in spec.matrix.eval_jobs  # never trained
