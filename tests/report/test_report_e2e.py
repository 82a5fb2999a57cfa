"""End to end: a hand-made results tree -> python -m pacs.report -> files whose numbers we check."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pandas as pd
import pytest
import yaml

from pacs.report.__main__ import main

TABLE_STEMS = [
    "table1_pass1",
    "table2_6_passk",
    "table9_13_score_ablation",
    "table_beta_ablation",
    "table3_diversity",
    "table4_5_settings",
    "table_runtime",
]
FIGURE_STEMS = [
    "fig3_eval_curve",
    "fig4_beta_ablation",
    "fig5a_entropy",
    "fig5b_pca_tiny_synthetic",
    "fig6_ood",
    "passk_curves_tiny",
]


# ------------------------------------------------------------------ helpers


def json_values(results: Path, run: str, bench: str, k: int) -> list[float]:
    """pass@k in % straight from the passk.json files, one per seed."""
    out = []
    for path in sorted((results / "eval" / "tiny" / run).glob(f"seed*/{bench}/passk.json")):
        doc = json.loads(path.read_text())
        out += [100 * e["value"] for e in doc["pass_at_k"] if e["k"] == k]
    return out


def md_sections(path: Path) -> dict[str, pd.DataFrame]:
    """Heading -> table (all strings) for every '## ' section of a report Markdown file."""
    out, heading, rows = {}, None, []
    for line in path.read_text().splitlines() + ["## <end>"]:
        if line.startswith("## "):
            if heading and rows:
                out[heading] = pd.DataFrame(rows[2:], columns=rows[0])
            heading, rows = line[3:], []
        elif line.startswith("|"):
            rows.append([c.strip() for c in line.strip()[1:-1].split(" | ")])
    return out


def md_row(frame: pd.DataFrame, label: str, after: str | None = None) -> pd.Series:
    """The row whose first cell is ``label`` (the first one after row ``after`` if given)."""
    labels = list(frame["Method"])
    start = labels.index(after) + 1 if after else 0
    return frame.iloc[start + labels[start:].index(label)]


def csv_row(df: pd.DataFrame, **where) -> pd.Series:
    sel = df
    for key, value in where.items():
        sel = sel[sel[key] == value]
    assert len(sel) == 1, where
    return sel.iloc[0]


# ------------------------------------------------------------------ files


def test_every_expected_file_is_written_and_not_empty(report_run) -> None:
    out = report_run["out"]
    expected = [f"tables/{s}.{e}" for s in TABLE_STEMS for e in ("csv", "md", "tex")]
    expected += [f"figures/{s}.{e}" for s in FIGURE_STEMS for e in ("png", "pdf")]
    expected.append("README.md")
    for rel in expected:
        path = out / rel
        assert path.is_file() and path.stat().st_size > 0, rel
    assert (out / "figures" / "fig3_eval_curve.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "figures" / "fig3_eval_curve.pdf").read_bytes()[:4] == b"%PDF"
    assert not list(out.rglob("*.tmp")), "temporary files left behind"


def test_readme_lists_every_file_and_what_was_not_produced(report_run) -> None:
    out = report_run["out"]
    readme = (out / "README.md").read_text()
    listed = set(re.findall(r"^\| `([^`]+)` \|", readme, flags=re.MULTILINE))
    on_disk = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert listed == on_disk
    assert "not produced: Tables 7 & 8" in readme and "MATH500" in readme
    assert "reference" in readme.split("fig6_ood.png")[1].splitlines()[0]


# ------------------------------------------------------------------ numbers


def test_passk_csv_equals_json_seed_mean(report_run) -> None:
    table = pd.read_csv(report_run["out"] / "tables" / "table2_6_passk.csv")
    for run, bench, k in [
        ("pacs", "synthetic", 4),
        ("grpo", "aime24", 16),
        ("base", "synthetic", 1),
    ]:
        vals = json_values(report_run["results"], run, bench, k)
        assert len(vals) == 2
        row = csv_row(table, run=run, benchmark=bench, k=k)
        assert row["mean_pct"] == pytest.approx(sum(vals) / 2, abs=1e-9)
        assert row["std_pct"] == pytest.approx(statistics.stdev(vals), abs=1e-9)
        assert row["n_seeds"] == 2 and row["seeds"] == "0;1"


def test_passk_markdown_cells_equal_json(report_run) -> None:
    sections = md_sections(report_run["out"] / "tables" / "table2_6_passk.md")
    syn = sections["tiny — Synthetic (n = 16 samples per problem, 50 problems)"]
    vals = json_values(report_run["results"], "pacs", "synthetic", 4)
    mean, std = sum(vals) / 2, statistics.stdev(vals)
    row = md_row(syn, "PACS")
    assert row["k=4"] == f"{mean:.2f} ± {std:.2f}"
    assert row["seeds"] == "2"
    one = md_row(syn, "PACS w/o weight")  # one seed: the value alone
    assert one["seeds"] == "1"
    assert (
        one["k=1"]
        == f"{json_values(report_run['results'], 'pacs_noweight', 'synthetic', 1)[0]:.2f}"
    )
    assert list(syn.columns) == ["Method", "seeds", "k=1", "k=2", "k=4", "k=8", "k=16"]


def test_table1_average_is_the_seed_mean_of_per_seed_averages(report_run) -> None:
    res = report_run["results"]
    per_seed = [
        (a + b) / 2
        for a, b in zip(
            json_values(res, "pacs", "synthetic", 1), json_values(res, "pacs", "aime24", 1)
        )
    ]
    table = pd.read_csv(report_run["out"] / "tables" / "table1_pass1.csv")
    row = csv_row(table, run="pacs", benchmark="avg")
    assert row["mean_pct"] == pytest.approx(statistics.mean(per_seed), abs=1e-9)
    assert row["std_pct"] == pytest.approx(statistics.stdev(per_seed), abs=1e-9)
    assert pd.isna(row["paper_pct"])  # our benchmarks are not the paper's five


# ------------------------------------------------------------------ the paper beside ours


def test_paper_column_holds_the_papers_value_for_matching_cells(report_run) -> None:
    table = pd.read_csv(report_run["out"] / "tables" / "table2_6_passk.csv")
    k1 = csv_row(table, run="pacs", benchmark="aime24", k=1)
    assert k1["paper_pct"] == 57.58 and k1["paper_source"] == "paper, Table 2"
    assert k1["paper_model"] == "Qwen3-8B" and k1["paper_comparison"] == "reference only"
    k4 = csv_row(table, run="pacs_noweight", benchmark="aime24", k=4)
    assert k4["paper_pct"] == 76.64 and bool(k4["paper_k_inferred"])
    assert pd.isna(
        csv_row(table, run="pacs", benchmark="aime24", k=2)["paper_pct"]
    )  # paper has no k=2
    assert table.loc[table["benchmark"] == "synthetic", "paper_pct"].isna().all()

    md = report_run["out"] / "tables" / "table2_6_passk.md"
    aime = md_sections(md)["tiny — AIME24 (n = 16 samples per problem, 50 problems)"]
    paper_row = md_row(aime, "paper (Qwen3-8B, reference only; Table 2)", after="PACS")
    assert paper_row["k=1"] == "57.58" and paper_row["k=4"] == "76.24†" and paper_row["k=2"] == "–"
    text = md.read_text()
    assert "not a comparison of equal things" in text and "inferred" in text


def test_table1_takes_pass1_from_table1_first(report_run) -> None:
    table = pd.read_csv(report_run["out"] / "tables" / "table1_pass1.csv")
    pacs = csv_row(table, run="pacs", benchmark="aime24")
    assert (pacs["paper_pct"], pacs["paper_source"]) == (57.58, "paper, Table 1")
    grpo = csv_row(table, run="grpo", benchmark="aime24")  # Table 1 has no GRPO row
    assert (grpo["paper_pct"], grpo["paper_source"]) == (54.56, "paper, Table 2")
    assert csv_row(table, run="base", benchmark="aime24")["paper_pct"] == 46.98


def test_ablation_tables_carry_the_design_note_with_mini_batches(report_run) -> None:
    for stem in ("table9_13_score_ablation", "table_beta_ablation"):
        text = (report_run["out"] / "tables" / f"{stem}.md").read_text()
        assert (
            "docs/design.md#when-the-ablations-are-no-ops" in text
            and "train.mini_batches = 4" in text
        ), stem
        assert "no-op" in text
    score = pd.read_csv(report_run["out"] / "tables" / "table9_13_score_ablation.csv")
    hit = csv_row(score, run="pacs_score_grpo", benchmark="aime24", k=1)
    assert (hit["paper_pct"], hit["paper_source"], hit["paper_model"]) == (
        56.02,
        "paper, Table 11",
        "Qwen3-4B",
    )
    assert set(score["run"]) == {"pacs", "pacs_score_grpo"}
    beta = pd.read_csv(report_run["out"] / "tables" / "table_beta_ablation.csv")
    assert set(beta["run"]) == {"pacs", "pacs_beta2"} and beta["paper_pct"].isna().all()


def test_diversity_table_equals_json(report_run) -> None:
    table = pd.read_csv(report_run["out"] / "tables" / "table3_diversity.csv")
    assert csv_row(table, run="pacs", benchmark="synthetic")["D"] == 0.031
    aime = csv_row(table, run="pacs", benchmark="aime24")
    assert aime["D"] == 0.05 and aime["paper_D"] == 0.0272
    assert pd.isna(csv_row(table, run="grpo", benchmark="aime24")["D"])
    md = md_sections(report_run["out"] / "tables" / "table3_diversity.md")["tiny"]
    assert md_row(md, "GRPO")["AIME24"] == "–" and md_row(md, "PACS")["Synthetic"] == "0.0310"


def test_runtime_table_equals_metrics_by_hand(report_run) -> None:
    res = report_run["results"]
    per_seed = []
    for seed in (0, 1):
        rows = [
            json.loads(line)
            for line in (res / "train" / "tiny" / "ppo" / f"seed{seed}" / "metrics.jsonl")
            .read_text()
            .splitlines()
        ]
        per_seed.append(statistics.mean(r["time_total"] for r in rows))
    table = pd.read_csv(report_run["out"] / "tables" / "table_runtime.csv")
    row = csv_row(table, run="ppo")
    assert row["time_total_mean_s"] == pytest.approx(statistics.mean(per_seed), abs=1e-12)
    assert row["time_update_mean_s"] == pytest.approx(0.5)
    assert row["n_seeds"] == 2 and row["steps_mean"] == 10


def test_latex_is_escaped(report_run) -> None:
    tex = (report_run["out"] / "tables" / "table2_6_passk.tex").read_text()
    assert r"\begin{tabular}" in tex and r"$\pm$" in tex and r"76.24$^\dagger$" in tex
    body = "\n".join(line for line in tex.splitlines() if not line.startswith("%"))
    assert re.search(r"(?<!\\)[_%#]", body) is None  # '&' is the column separator
    assert r"Tables 2 \& 6" in body and r"paper\_numbers.csv" in body


# ------------------------------------------------------------------ other profiles and inputs


def test_paper_profile_compares_same_model(
    tmp_path: Path, config_dict: dict, results_builder
) -> None:
    cfg = {
        **config_dict,
        "profile": "paper",
        "engine": "verl",
        "models": {"qwen3_8b": {"hf_id": "Qwen/Qwen3-8B", "steps": 320}},
        "train": {
            **config_dict["train"],
            "mini_batch_size": 2,
            "micro_batch_per_gpu": 8,
            "max_prompt_length": 1024,
        },
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    tree = results_builder(tmp_path / "tmp")
    doc = json.loads((tree / "eval/tiny/pacs/seed0/aime24/passk.json").read_text())
    doc["model"] = "qwen3_8b"
    target = tmp_path / "res" / "eval" / "qwen3_8b" / "pacs" / "seed0" / "aime24" / "passk.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(doc))
    main(
        [
            "--config",
            str(tmp_path / "c.yaml"),
            "--results",
            str(tmp_path / "res"),
            "--out",
            str(tmp_path / "out"),
            "--skip-figures",
        ]
    )
    text = (tmp_path / "out" / "tables" / "table2_6_passk.md").read_text()
    assert "| paper (Table 2) |" in text and "reference only" not in text
    t1 = pd.read_csv(tmp_path / "out" / "tables" / "table1_pass1.csv")
    assert csv_row(t1, run="pacs", benchmark="aime24")["paper_comparison"] == "same model"


def test_empty_results_write_only_honest_outputs(tmp_path: Path, tiny_config: Path) -> None:
    (tmp_path / "empty").mkdir()
    main(
        [
            "--config",
            str(tiny_config),
            "--results",
            str(tmp_path / "empty"),
            "--out",
            str(tmp_path / "o"),
        ]
    )
    files = {
        p.relative_to(tmp_path / "o").as_posix() for p in (tmp_path / "o").rglob("*") if p.is_file()
    }
    # The paper's reference bars, and the settings table (it reads only the config).
    assert files == {
        "README.md",
        "figures/fig6_ood.png",
        "figures/fig6_ood.pdf",
        *(f"tables/table4_5_settings.{ext}" for ext in ("csv", "md", "tex")),
    }
    readme = (tmp_path / "o" / "README.md").read_text()
    assert readme.count("not produced:") == 16  # the runs table too: no run has any file
    assert "not produced: runs table (table_runs)" in readme
    # base + 3 main runs x 2 seeds + 3 ablation runs = 10 evaluations x 2 benchmarks
    assert (
        "not produced: pass@k of 20 evaluation(s) the experiment matrix expects "
        "(tiny/base/seed0/synthetic, " in readme
    )


def test_rerun_removes_stale_outputs(tmp_path: Path, tiny_config: Path, fake_results: Path) -> None:
    stale = tmp_path / "o" / "tables" / "table7_8_math500_passk.md"
    stale.parent.mkdir(parents=True)
    stale.write_text("old")
    main(
        [
            "--config",
            str(tiny_config),
            "--results",
            str(fake_results),
            "--out",
            str(tmp_path / "o"),
            "--skip-figures",
        ]
    )
    assert not stale.exists()
    assert (
        "table7_8_math500_passk.md" in (tmp_path / "o" / "README.md").read_text()
    )  # "removed stale"


def test_unknown_runs_are_listed_not_reported(
    tmp_path: Path, tiny_config: Path, fake_results: Path
) -> None:
    src = fake_results / "eval" / "tiny" / "pacs" / "seed0" / "synthetic" / "passk.json"
    doc = json.loads(src.read_text())
    doc["run"] = "mystery"
    dst = fake_results / "eval" / "tiny" / "mystery" / "seed0" / "synthetic" / "passk.json"
    dst.parent.mkdir(parents=True)
    dst.write_text(json.dumps(doc))
    main(
        [
            "--config",
            str(tiny_config),
            "--results",
            str(fake_results),
            "--out",
            str(tmp_path / "o"),
            "--skip-figures",
        ]
    )
    assert "mystery" not in (tmp_path / "o" / "tables" / "table2_6_passk.csv").read_text()
    assert "not produced: results of run 'mystery'" in (tmp_path / "o" / "README.md").read_text()


def write_qwen3_results(res: Path) -> None:
    """pass@k of base, pacs and pacs_score_grpo on the paper's five benchmarks, and a Table 3 D,
    for qwen3_4b and qwen3_8b under the results folder ``res``."""
    ks = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    for model in ("qwen3_4b", "qwen3_8b"):
        for run in ("base", "pacs", "pacs_score_grpo"):
            for bench in ("math500", "amc23", "aime24", "aime25", "beyondaime"):
                doc = {
                    "benchmark": bench,
                    "model": model,
                    "run": run,
                    "seed": 0,
                    "n_problems": 30,
                    "n_min": 256,
                    "pass_at_k": [
                        {"k": k, "value": min(1.0, 0.3 + 0.05 * i)} for i, k in enumerate(ks)
                    ],
                }
                path = res / "eval" / model / run / "seed0" / bench / "passk.json"
                path.parent.mkdir(parents=True)
                path.write_text(json.dumps(doc))
        div = res / "diversity" / model / "aime25.json"
        div.parent.mkdir(parents=True)
        methods = {"grpo": {"D": 0.02, "n_problems": 5, "n_correct": 100}}
        div.write_text(json.dumps({"benchmark": "aime25", "methods": methods}))


def test_paper_config_maps_qwen3_models_to_their_tables(tmp_path: Path, repo_root: Path) -> None:
    """configs/paper.yaml: qwen3_4b sits beside Tables 6/1, qwen3_8b beside Table 2 (same model)."""
    from pacs.config import load_config

    config = repo_root / "configs" / "paper.yaml"
    cfg = load_config(config)
    write_qwen3_results(tmp_path / "res")
    main(
        [
            "--config",
            str(config),
            "--results",
            str(tmp_path / "res"),
            "--out",
            str(tmp_path / "out"),
            "--skip-figures",
        ]
    )
    tables = tmp_path / "out" / "tables"
    t26 = pd.read_csv(tables / "table2_6_passk.csv")
    assert (
        csv_row(t26, model="qwen3_4b", run="pacs", benchmark="aime24", k=64)["paper_source"]
        == "paper, Table 6"
    )
    row8 = csv_row(t26, model="qwen3_8b", run="pacs", benchmark="aime24", k=64)
    assert (row8["paper_pct"], row8["paper_comparison"]) == (85.0, "same model")
    assert pd.isna(
        csv_row(t26, model="qwen3_8b", run="pacs", benchmark="aime24", k=256)["paper_pct"]
    )
    t1 = pd.read_csv(tables / "table1_pass1.csv")
    assert csv_row(t1, model="qwen3_4b", run="pacs", benchmark="avg")["paper_pct"] == 62.63
    t78 = pd.read_csv(tables / "table7_8_math500_passk.csv")
    assert csv_row(t78, model="qwen3_8b", run="base", k=1)["paper_source"] == "paper, Table 8"
    score = pd.read_csv(tables / "table9_13_score_ablation.csv")
    hit = csv_row(score, model="qwen3_4b", run="pacs_score_grpo", benchmark="beyondaime", k=1)
    assert (hit["paper_pct"], hit["paper_source"]) == (26.41, "paper, Table 13")
    assert score.loc[score["model"] == "qwen3_8b", "paper_pct"].isna().all()  # 4B only in the paper
    assert (
        f"train.mini_batches = {cfg['train']['mini_batches']}"
        in (tables / "table9_13_score_ablation.md").read_text()
    )
    t3 = pd.read_csv(tables / "table3_diversity.csv")
    assert csv_row(t3, model="qwen3_4b", run="grpo", benchmark="aime25")["paper_D"] == 0.0266


def test_cli_reports_a_malformed_input_and_exits_2(
    tmp_path: Path, tiny_config: Path, fake_results: Path, capsys
) -> None:
    path = fake_results / "eval/tiny/grpo/seed0/synthetic/passk.json"
    doc = json.loads(path.read_text())
    doc["pass_at_k"][3]["value"] = None
    path.write_text(json.dumps(doc))
    rc = main(
        ["--config", str(tiny_config), "--results", str(fake_results), "--out", str(tmp_path / "o")]
    )
    err = capsys.readouterr().err
    assert rc == 2 and str(path) in err and "pass_at_k[3]: field 'value'" in err
    assert not (tmp_path / "o" / "README.md").exists()
