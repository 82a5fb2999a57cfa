"""Small pieces: run -> paper row mapping, paper model choice, seed stats, formatting, escaping."""

from __future__ import annotations

import math
import subprocess

import pandas as pd
import pytest

from pacs.config import RunSpec, parse_profile
from pacs.methods import PacsSpec, PpoSpec
from pacs.report.context import fmt_mean_std, seed_stats, seeds_text
from pacs.report.paper import (
    load_paper_numbers,
    lookup,
    paper_method_for_run,
    paper_model_for,
    paper_ref,
)
from pacs.report.render import Section, TableDoc, latex_escape, to_markdown
from pacs.report.style import RUN_COLORS, run_palette


@pytest.fixture(scope="module")
def paper() -> pd.DataFrame:
    return load_paper_numbers()


@pytest.mark.parametrize(
    "run, expected",
    [
        ("pacs", "pacs"),
        ("grpo", "grpo"),
        ("ppo", "ppo"),
        ("pacs_noweight", "pacs_noweight"),
        ("pacs_score_grpo", "pacs_score_grpo"),
        ("pacs_beta2", None),
    ],
)
def test_paper_method_for_config_runs(config_dict, run, expected) -> None:
    assert paper_method_for_run(parse_profile(config_dict).runs[run]) == expected


def _run(method) -> RunSpec:
    return RunSpec(name="r", label="r", method=method)


def test_paper_method_needs_all_other_knobs_at_paper_defaults() -> None:
    assert paper_method_for_run(_run(PacsSpec(ref="periodic", ref_reset_every=10))) is None
    assert paper_method_for_run(_run(PacsSpec(ref="fixed"))) is None
    assert paper_method_for_run(_run(PacsSpec(use_weight=False, score="grpo"))) is None
    assert paper_method_for_run(_run(PacsSpec(score="drgrpo"))) == "pacs_score_drgrpo"
    assert paper_method_for_run(_run(PacsSpec(beta=1))) == "pacs"
    assert paper_method_for_run(_run(PpoSpec(critic_lr=1e-3))) == "ppo"
    assert paper_method_for_run(None) == "base"


def test_paper_model_for_keys_and_hf_ids() -> None:
    cfg = {
        "models": {
            "qwen3_4b": {},
            "big": {"hf_id": "Qwen/Qwen3-8B"},
            "q14": {"hf_id": "Qwen/Qwen3-14B"},
            "tiny": {"build": {"hidden_size": 128}},
        }
    }
    assert paper_model_for(cfg, "qwen3_4b") == "Qwen3-4B"
    assert paper_model_for(cfg, "big") == "Qwen3-8B"
    assert paper_model_for(cfg, "q14") is None
    assert paper_model_for(cfg, "tiny") is None


def test_paper_ref_same_vs_reference(paper) -> None:
    cfg = {"profile": "paper", "models": {"qwen3_4b": {}, "tiny": {}}}
    assert paper_ref(cfg, "qwen3_4b", paper, ["Table 2", "Table 6"]).same
    ref = paper_ref(cfg, "tiny", paper, ["Table 9", "Table 10"])
    assert (ref.model, ref.same) == ("Qwen3-4B", False)  # the score ablation exists for 4B only
    tiny = paper_ref({**cfg, "profile": "tiny"}, "qwen3_4b", paper, ["Table 2", "Table 6"])
    assert (tiny.model, tiny.same) == ("Qwen3-8B", False)
    assert "reference only" in tiny.label(["Table 2"])
    assert paper_ref(cfg, "tiny", paper, []).model is None


def test_lookup_prefers_tables_in_order(paper) -> None:
    hit = lookup(
        paper,
        model="Qwen3-8B",
        benchmark="aime24",
        method="pacs",
        k=1,
        tables=["Table 2", "Table 1"],
    )
    assert hit["source"] == "paper, Table 2" and hit["value"] == 57.58
    assert (
        lookup(paper, model="Qwen3-8B", benchmark="aime24", method="pacs", k=2, tables=["Table 2"])
        is None
    )
    assert (
        lookup(paper, model="Qwen3-8B", benchmark="aime24", method=None, k=1, tables=["Table 2"])
        is None
    )


def test_seed_stats_uses_sample_std_and_counts() -> None:
    df = pd.DataFrame(
        {"run": ["a", "a", "a", "b"], "k": [1, 1, 1, 1], "value": [1.0, 2.0, 4.0, 5.0]}
    )
    out = seed_stats(df, ["run", "k"]).set_index("run")
    assert out.loc["a", "mean"] == pytest.approx(7 / 3)
    assert out.loc["a", "std"] == pytest.approx(
        math.sqrt(((1 - 7 / 3) ** 2 + (2 - 7 / 3) ** 2 + (4 - 7 / 3) ** 2) / 2)
    )
    assert out.loc["a", "n_seeds"] == 3 and math.isnan(out.loc["b", "std"])


def test_formatting() -> None:
    assert fmt_mean_std(88.123, 0.456) == "88.12 ± 0.46"
    assert fmt_mean_std(88.123, float("nan")) == "88.12"
    assert fmt_mean_std(float("nan"), 1.0) == "–"
    assert seeds_text([2, 2]) == "2" and seeds_text([1, 3, 2]) == "1–3"


def test_latex_escape_and_markdown_pipes() -> None:
    assert latex_escape("a_b & 50% ± β†") == r"a\_b \& 50\% $\pm$ $\beta$$^\dagger$"
    doc = TableDoc(
        "t",
        "T",
        "cap",
        [Section("h", pd.DataFrame({"Method": ["a|b"], "x": ["1"]}))],
        pd.DataFrame(),
        notes=["n"],
    )
    md = to_markdown(doc)
    assert r"| a\|b | 1 |" in md and "- n" in md


def test_palette_is_fixed_per_method() -> None:
    pal = run_palette(["ppo", "mystery", "pacs", "grpo", "other"])
    assert pal["pacs"] == RUN_COLORS["pacs"] and pal["grpo"] == RUN_COLORS["grpo"]
    assert pal["mystery"] != pal["other"] and pal["mystery"] not in RUN_COLORS.values()
    assert run_palette(["mystery"])["mystery"] == pal["mystery"]  # deterministic


def test_pca_figure_falls_back_to_scatter_with_too_few_points(config_dict, fake_results) -> None:
    from pacs.report.context import ReportContext
    from pacs.report.figures import _kde_ok, _pca_figure
    from pacs.report.loaders import load_results

    res = load_results(fake_results)
    ctx = ReportContext(parse_profile(config_dict), res, load_paper_numbers())
    pts = res.pca
    assert _kde_ok(pts[pts["method"] == "pacs"]) and not _kde_ok(pts[pts["method"] == "grpo"])
    line = pd.DataFrame({"pc1": range(20), "pc2": [2.0 * i for i in range(20)]})
    assert not _kde_ok(line)  # collinear: singular covariance
    fig = _pca_figure(ctx, pts, ["pacs", "grpo"], "tiny", "synthetic")
    assert "too few points for a KDE (GRPO: 4 pts): scatter only" in fig.axes[0].get_title()


def test_the_report_names_the_commit_of_the_code_that_wrote_it(tmp_path, monkeypatch):
    from pacs.report.__main__ import code_version

    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))  # even under a git TMPDIR

    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    assert code_version(tmp_path) == "an installed copy outside git (no commit known)"
    git("init", "-q")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", "code.py")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    sha = subprocess.run(
        ["git", "-C", str(tmp_path), "rev-parse", "HEAD"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (tmp_path / "results.json").write_text("{}")  # untracked outputs are not edits to the code
    assert code_version(tmp_path) == f"git commit {sha}"
    (tmp_path / "code.py").write_text("x = 2\n")
    assert code_version(tmp_path) == f"git commit {sha} with uncommitted edits"


def test_runtime_notes_count_dynamic_sampling_rounds_and_capped_steps():
    """DAPO's extra generation is in its times; the note says how much and when the cap hit."""
    import pandas as pd

    from pacs.report.runtime_table import dynamic_sampling_notes

    class Ctx:
        @staticmethod
        def label(run):
            return run.upper()

    m = pd.DataFrame(
        {
            "run": ["dapo", "dapo", "dapo", "pacs"],
            "ds_rounds": [1.0, 3.0, 2.0, float("nan")],
            "ds_cap_hit": [0.0, 1.0, 0.0, float("nan")],
        }
    )
    (note,) = dynamic_sampling_notes(Ctx(), m)
    assert note.startswith("DAPO: generate and reward include every dynamic-sampling round")
    assert "2.00 rounds per step on average; 1 of 3 steps hit the cap" in note
    assert dynamic_sampling_notes(Ctx(), m.drop(columns=["ds_rounds"])) == []


def test_table1_names_runs_of_methods_not_in_the_paper():
    from types import SimpleNamespace

    from pacs.methods import spec_class, traits
    from pacs.report.tables import not_in_paper_note

    runs = [
        SimpleNamespace(
            name=n,
            traits=traits(m) if m else None,
            spec=SimpleNamespace(method=spec_class(m)()) if m else None,
        )
        for n, m in (("base", None), ("pacs", "pacs"), ("dapo", "dapo"), ("real", "real"))
    ]
    (note,) = not_in_paper_note(runs)
    assert note.startswith("Not in the paper: DAPO, REAL (dapo, real), later baselines")
    assert not_in_paper_note(runs[:2]) == []
