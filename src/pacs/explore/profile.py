"""One ``results/<profile>`` folder opened for exploring: its config (the pipeline's copy, the
profile's ``configs/*.yaml``, or one inferred from the run folders), its result tables, the
paper's numbers, and the method families the figures draw one panel each."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from pacs.config import Profile as Spec
from pacs.config import load_config, parse_profile
from pacs.layout import config_snapshot
from pacs.methods import METHOD_NAMES
from pacs.report.context import BASE_RUN, ReportContext
from pacs.report.loaders import load_results
from pacs.report.paper import load_paper_numbers
from pacs.report.style import run_palette

REPO = Path(__file__).resolve().parents[3]
# What an inferred config (a tree with no config of its own) takes its non-run sections from.
TEMPLATE_CONFIG = REPO / "configs" / "default.yaml"
FAMILY_TITLES = {
    "main": "PACS vs GRPO vs PPO",
    "weight": "class weights (PACS ablation)",
    "score": "score function (PACS ablation)",
    "beta": "β (PACS ablation)",
    "ref": "reference schedule (PACS ablation)",
}


@dataclass
class Profile:
    """One ``results/<profile>`` folder with its config, results tables and the paper's numbers."""

    root: Path
    ctx: ReportContext
    config_source: str

    @property
    def results(self):
        return self.ctx.results

    def models(self) -> list[str]:
        r = self.results
        found = set(r.passk.model) | set(r.metrics.model) | set(r.curves.model)
        return [m for m in self.ctx.models if m in found]

    def label(self, run: str) -> str:
        return self.ctx.label(run)

    def palette(self) -> dict[str, str]:
        return run_palette(self.ctx.runs)


def open_profile(root: str | Path) -> Profile:
    """Load ``root`` (a ``results/<profile>`` folder) with the config that made it."""
    root = Path(root)
    results = load_results(root)
    spec, source = find_config(root, results)
    ctx = ReportContext(spec, results, load_paper_numbers(), config_path=source, results_path=root)
    return Profile(root, ctx, source)


def find_config(root: Path, results) -> tuple[Spec, str]:
    """The pipeline's copy ``root/config.yaml``, else the ``configs/*.yaml`` of that profile, else a
    config inferred from the run names found (fabricated or copied trees)."""
    candidates = [Path(config_snapshot(root)), *sorted((REPO / "configs").glob("*.yaml"))]
    for path in candidates:
        if path.is_file():
            raw = load_config(path)
            if raw.get("profile") == root.name and raw.get("runs"):
                return parse_profile(raw, str(path)), str(path)
    source = "inferred from the run folders"
    return parse_profile(inferred_config(root.name, results), source), source


def inferred_config(profile: str, results) -> dict[str, Any]:
    """A config naming every run found (method from the name's prefix, ablation from its suffix)
    and every model found, its other sections those of :data:`TEMPLATE_CONFIG`."""
    tables = (results.passk, results.metrics, results.curves)
    names = sorted(set().union(*(set(t.get("run", [])) for t in tables)) - {BASE_RUN})
    runs = {}
    for name in names:
        method = next((m for m in METHOD_NAMES if name == m or name.startswith(f"{m}_")), None)
        if method is None:
            continue
        ablation = next((k for k in ("weight", "score", "beta", "ref") if k in name), "main")
        runs[name] = {"method": method, "ablation": ablation, "label": name}
    cfg = copy.deepcopy(load_config(TEMPLATE_CONFIG))
    model = next(iter(cfg["models"].values()))
    models = sorted(set().union(*(set(t.get("model", [])) for t in tables)))
    cfg["models"] = {m: copy.deepcopy(model) for m in models} or cfg["models"]
    return {**cfg, "profile": profile, "runs": runs}


def families(profile: Profile, runs_with_data: set[str]) -> list[tuple[str, list[str]]]:
    """(title, run names) per method family: the main comparison, then each ablation beside the
    main PACS run. Only runs with data, and only families with something to show."""
    out = []
    subject = [r.name for r in profile.ctx.subject_runs()[:1]]  # the main PACS run
    for ablation, title in FAMILY_TITLES.items():
        runs = [r.name for r in profile.ctx.runs_in(ablation)]
        if ablation != "main":
            runs = [*subject, *runs]
        runs = [r for r in runs if r in runs_with_data]
        if runs and (ablation == "main" or len(runs) > 1):
            out.append((title, runs))
    return out


def config_order(profile: Profile, runs: list[str]) -> list[str]:
    """``runs`` in the order the config lists them (others last, by name)."""
    order = list(profile.ctx.runs)
    return sorted(runs, key=lambda r: (order.index(r) if r in order else len(order), r))


# ------------------------------------------------------------------------------------ overview


def _seed_list(seeds: pd.Series) -> str:
    """``seed 0`` / ``seeds 0, 1, 2`` / ``—``: a bare "0" read as "no seeds"."""
    ids = sorted({int(s) for s in seeds})
    if not ids:
        return "—"
    return ("seed " if len(ids) == 1 else "seeds ") + ", ".join(map(str, ids))


def overview(profile: Profile) -> pd.DataFrame:
    """Per model and run: the seeds evaluated and trained, the steps logged, the benchmarks."""
    r = profile.results
    rows = []
    for model in profile.models():
        runs = set(r.passk[r.passk.model == model].run) | set(
            r.metrics[r.metrics.model == model].run
        )
        for run in config_order(profile, list(runs)):
            ev = r.passk[(r.passk.model == model) & (r.passk.run == run)]
            tr = r.metrics[(r.metrics.model == model) & (r.metrics.run == run)]
            rows.append(
                {
                    "model": model,
                    "run": run,
                    "label": profile.label(run),
                    "evaluated": _seed_list(ev.seed),
                    "trained": _seed_list(tr.seed),
                    "steps": str(int(tr.step.max())) if len(tr) else "",
                    "benchmarks": ", ".join(sorted(set(ev.benchmark))),
                }
            )
    return pd.DataFrame(rows).set_index(["model", "run"]) if rows else pd.DataFrame()
