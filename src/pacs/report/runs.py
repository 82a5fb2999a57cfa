"""The runs table (``tables/table_runs.{csv,md,tex}``): for every training run of the profile, and
each base model, what was run and what the tables report.

Per run: method, model (and its weights' source), seed, steps planned and done, the checkpoint step
the tables report, wall time, GPU-hours where known, the commit of the code that trained it and the
run's config fingerprint (:mod:`pacs.fingerprint`). Sources, all under
``train/<model>/<run>/seed<k>/``:
``metrics.jsonl`` (steps done: its last ``step``; the steps' time: the sum of ``time_total``),
``summary.json`` (written last: the run finished; the job's own start and end, ``job_started_at``,
``job_finished_at`` and ``job_seconds``, which are the wall time; ``commit``, in full with its
``+edits`` flag, where the trainer recorded one; the tiny engine's ``fingerprint``; a verl run's
``command`` holds ``trainer.nnodes`` and ``trainer.n_gpus_per_node``, so GPU-hours = wall time ×
nodes × GPUs per node) and ``checkpoints/pacs_fingerprint.json`` (a verl run's fingerprint). A run
whose
summary has no job times (written before they were recorded) shows its steps' time, marked "steps
only": a lower bound that leaves out loading, evaluation and saving. The tiny base's row reads its
SFT warm-up's ``models/<model>/base/sft_summary.json`` (job times or the SFT loop's
``train_seconds``, commit); a hub base, not trained here, shows '–'.

The step the tables report: every table and figure but Fig. 3 evaluates a run's final policy,
``model/``, saved at its last step (the paper reports its runs after App. C's 120 / 320 steps); a
run without ``summary.json`` has no ``model/`` and is not evaluated. Fig. 3 evaluates the
checkpoints every ``eval.curve_every`` steps (verl) or the in-loop held-out pass@1 (tiny).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from pacs import layout
from pacs.config import BASE_RUN

from .context import ReportContext
from .outputs import OutputLog
from .render import Section, TableDoc

VERL_FINGERPRINT = "checkpoints/pacs_fingerprint.json"  # pacs.verl_plugin.launch.resume
RUNS_CSV_COLUMNS = [
    "model",
    "model_source",
    "run",
    "label",
    "method",
    "seed",
    "steps_planned",
    "steps_done",
    "finished",
    "table_step",
    "wall_time_h",
    "wall_time_source",
    "job_started_at",
    "job_finished_at",
    "steps_time_h",
    "resumed",
    "gpus",
    "gpu_hours",
    "commit",
    "fingerprint",
    # What the run optimised (summary.json's ``objective``, pacs.methods.Objective) and how often
    # its clip bound (metrics.jsonl's clip_bound, the share of each step's updates).
    "loss_agg_mode",
    "loss_scale",
    "clip_norm",
    "dual_clip_c",
    "clip_bound_share",
    "grad_norm_median",
]
OBJECTIVE_KEYS = ("loss_agg_mode", "loss_scale", "clip_norm", "dual_clip_c")


def _read_json(path: Path) -> dict | None:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None


def _gpus(summary: dict | None) -> int | None:
    """Nodes × GPUs per node of a verl run, read from its command; None for the tiny engine."""
    command = (summary or {}).get("command")
    text = " ".join(command) if isinstance(command, list) else str(command or "")
    nodes = re.search(r"trainer\.nnodes=(\d+)", text)
    per_node = re.search(r"trainer\.n_gpus_per_node=(\d+)", text)
    return int(nodes.group(1)) * int(per_node.group(1)) if nodes and per_node else None


def _fingerprint(folder: Path, summary: dict | None) -> str | None:
    if summary and summary.get("fingerprint"):
        return str(summary["fingerprint"])
    stored = _read_json(folder / VERL_FINGERPRINT)
    return str(stored["sha256"]) if stored and stored.get("sha256") else None


def _job_wall(summary: dict | None) -> dict[str, Any]:
    """Wall time from the job's own start and end, where its summary recorded them."""
    seconds = (summary or {}).get("job_seconds")
    if seconds is None:
        return {"wall_time_h": None, "wall_time_source": None}
    return {
        "wall_time_h": float(seconds) / 3600,
        "wall_time_source": "job",
        "job_started_at": summary.get("job_started_at"),
        "job_finished_at": summary.get("job_finished_at"),
    }


def _resumed(summary: dict | None) -> bool | None:
    """Whether the finishing launch resumed a checkpoint (its job time is that launch's only)."""
    if summary is None:
        return None
    if "resumed_from_step" in summary:  # verl
        return summary["resumed_from_step"] is not None
    return summary.get("resumed")


def _planned(ctx: ReportContext, model: str) -> int | None:
    spec = ctx.spec
    return spec.train.steps if spec.engine == "tiny" else spec.models[model].steps


def _source(ctx: ReportContext, model: str) -> str:
    entry = ctx.spec.models.get(model)
    if entry is None:
        return ""
    if entry.path or entry.hf_id:
        return str(entry.path or entry.hf_id) + (f"@{entry.revision}" if entry.revision else "")
    return "built locally (tiny, pacs.tiny.build + SFT)"


def run_record(ctx: ReportContext, model: str, run: str, seed: int) -> dict[str, Any]:
    """One row of the runs table (see the module doc for where each value comes from)."""
    folder = Path(layout.train_dir(ctx.results_path, model, run, seed))
    summary = _read_json(folder / "summary.json")
    m = ctx.results.metrics
    m = m[(m["model"] == model) & (m["run"] == run) & (m["seed"] == seed)]
    done = int(m["step"].max()) if len(m) else None
    steps_h = (
        float(m["time_total"].sum()) / 3600 if len(m) and m["time_total"].notna().any() else None
    )
    wall = _job_wall(summary)
    if wall["wall_time_h"] is None and steps_h is not None:
        wall = {"wall_time_h": steps_h, "wall_time_source": "steps only"}
    wall_h, gpus, info = wall["wall_time_h"], _gpus(summary), ctx.runs.get(run)
    return {
        "model": model,
        "model_source": _source(ctx, model),
        "run": run,
        "label": info.label if info else run,
        "method": info.method if info else "",
        "seed": seed,
        "steps_planned": _planned(ctx, model),
        "steps_done": done,
        "finished": summary is not None,
        "table_step": done if summary is not None else None,
        **wall,
        "steps_time_h": steps_h,
        "resumed": _resumed(summary),
        "gpus": gpus,
        "gpu_hours": wall_h * gpus if wall_h is not None and gpus else None,
        "commit": (summary or {}).get("commit"),
        "fingerprint": _fingerprint(folder, summary),
        **_objective(summary, m),
    }


def _objective(summary: dict | None, metrics: pd.DataFrame) -> dict[str, Any]:
    """The run's recorded objective (absent keys: None, shown as 'not recorded') and its
    updates' clip statistics from metrics.jsonl (NaN where the engine logged none)."""
    recorded = (summary or {}).get("objective") or {}
    out: dict[str, Any] = {key: recorded.get(key) for key in OBJECTIVE_KEYS}
    out["recorded"] = bool(recorded)
    bound = metrics["clip_bound"].dropna() if "clip_bound" in metrics else pd.Series(dtype=float)
    norms = metrics["grad_norm"].dropna() if "grad_norm" in metrics else pd.Series(dtype=float)
    out["clip_bound_share"] = float(bound.mean()) if len(bound) else None
    out["grad_norm_median"] = float(norms.median()) if len(norms) else None
    return out


def base_record(ctx: ReportContext, model: str) -> dict[str, Any]:
    """The base model: evaluated as it is (tiny: after its SFT warm-up), step 0 of RL."""
    rec = dict.fromkeys(RUNS_CSV_COLUMNS)
    rec.update(model=model, model_source=_source(ctx, model), run=BASE_RUN, label="Base")
    rec.update(method="base", seed=0, steps_planned=0, steps_done=0, finished=True, table_step=0)
    sft = _read_json(Path(layout.sft_summary_file(ctx.results_path, model)))
    if sft:  # the tiny base is trained here (its SFT warm-up); a hub base is not
        rec.update(commit=sft.get("commit"), resumed=False, **_job_wall(sft))
        seconds = sft.get("train_seconds")
        if rec["wall_time_h"] is None and seconds:
            rec.update(wall_time_h=seconds / 3600, wall_time_source="SFT loop only")
    rec["trained_here"] = sft is not None
    return rec


def _commit_cell(r: dict) -> str:
    """The full commit with its ``+edits`` flag (a dirty tree's run must say so in every format);
    '–' for a base model not trained here (a hub snapshot)."""
    if r["commit"]:
        return _text(r["commit"])
    return "–" if r.get("trained_here") is False else "not recorded"


def _text(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _duration(hours: float | None) -> str:
    """``42 s``, ``3.5 min`` or ``12.3 h``."""
    if hours is None or pd.isna(hours):
        return "–"
    seconds = hours * 3600
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 7200 else f"{hours:.1f} h"


def _wall_cell(r: dict) -> str:
    """The wall time, with what it covers where that is not one whole job."""
    text = _duration(r["wall_time_h"])
    if r.get("wall_time_source") not in (None, "job"):
        return f"{text} ({r['wall_time_source']})"
    return f"{text} (last launch)" if r.get("resumed") else text


def _display(records: list[dict], engine: str) -> pd.DataFrame:
    no_gpus = "– (CPU run)" if engine == "tiny" else "– (no GPU count)"
    rows = []
    for r in records:
        step = _text(r["table_step"]) if r["finished"] else "not evaluated (unfinished)"
        rows.append(
            {
                "Run": f"{r['label']} ({r['method']})",
                "model": r["model"],
                "seed": r["seed"],
                "steps done / planned": f"{_text(r['steps_done'])} / {_text(r['steps_planned'])}",
                "tables report step": step,
                "wall time": _wall_cell(r),
                "GPU-hours": _text(r["gpu_hours"], 1) if r["gpus"] else no_gpus,
                "commit": _commit_cell(r),
                "fingerprint": _text(r["fingerprint"])[:12] if r["fingerprint"] else "–",
            }
        )
    return pd.DataFrame(rows)


def _objective_display(records: list[dict]) -> pd.DataFrame:
    """What each run optimised: the aggregation, the factor on it, the clip and how often it
    bound, the dual-clip cap (none for the base model, which is not trained here)."""
    rows = []
    for r in records:
        if r["method"] == "base":
            continue
        known = r.get("recorded")
        rows.append(
            {
                "Run": f"{r['label']} ({r['method']})",
                "loss aggregation": (r["loss_agg_mode"] or "one term per response")
                if known
                else "not recorded",
                "loss scale": f"×{r['loss_scale']}" if known else "not recorded",
                "clip norm": _clip_text(r["clip_norm"]) if known else "not recorded",
                "clip bound (share of updates)": _share(r["clip_bound_share"]),
                "median pre-clip norm": _text(r["grad_norm_median"], 3),
                "dual-clip c": _text(r["dual_clip_c"], 1) if known else "not recorded",
            }
        )
    return pd.DataFrame(rows)


def _clip_text(clip: float | None) -> str:
    return "none" if clip is None else f"{clip:g}"


def _share(share: float | None) -> str:
    return "–" if share is None or pd.isna(share) else f"{100 * share:.1f} %"


def table_runs(ctx: ReportContext) -> TableDoc:
    """Every base model and every run of the matrix (and any other run found under train/)."""
    jobs = list(ctx.matrix.train_jobs)
    found = ctx.results.metrics.loc[:, ["model", "run", "seed"]].drop_duplicates()
    jobs += [
        (m, r, int(s))
        for m, r, s in found.itertuples(index=False)
        if (m, r, int(s)) not in jobs and r in ctx.runs
    ]
    records = [base_record(ctx, m) for m in ctx.spec.models]
    records += [run_record(ctx, m, r, s) for m, r, s in jobs]
    notes = [
        (
            "Tables report each run's final policy (train/<model>/<run>/seed<k>/model/, saved at "
            "its "
            "last step: 'tables report step'), as the paper reports its runs after App. C's 120 / "
            "320 "
            "steps; Fig. 3 alone evaluates intermediate checkpoints."
        ),
        (
            "Wall time: from the job's own start to its end (summary.json's job_seconds: loading, "
            "evaluation and saving included); '(last launch)': the run resumed a checkpoint, "
            "earlier "
            "launches not counted; '(steps only)': no job times recorded, the sum of the steps' "
            "time_total (metrics.jsonl), a lower bound. GPU-hours = wall time × the nodes × GPUs "
            "per "
            "node of its verl command (the tiny engine runs on a CPU). Fingerprint: sha256 of the "
            "settings that decide what is trained (docs/formats.md, 'Resuming and the run "
            "fingerprint'); commit: the trainer's record in full, '+edits' where tracked files "
            "differed from it, 'not recorded' where the run's summary.json names none, '–' for a "
            "base model not trained here."
        ),
    ]
    return TableDoc(
        "table_runs",
        "Runs: what was trained and which step the tables report",
        "One row per base model and training run; '–' = not known.",
        [
            Section("", _display(records, ctx.spec.engine)),
            Section("What each run optimised", _objective_display(records)),
        ],
        pd.DataFrame(records, columns=RUNS_CSV_COLUMNS),
        [*notes, OBJECTIVE_NOTE],
        "Every run: method, model, seed, steps done, the step the tables report, wall time, "
        "GPU-hours, commit and config fingerprint",
    )


OBJECTIVE_NOTE = (
    "What each run optimised, as its trainer recorded it (summary.json's objective): loss "
    "aggregation, verl's name for how token losses become one number ('one term per response': "
    "PACS, REAL); loss scale, the factor on verl 0.9.1's aggregation (×8: the official GRPO/PPO "
    "scripts' verl 0.3.1 summed each micro-batch of 8 sequences); clip norm, the max gradient "
    "norm ('none': the official PACS actor never clips); clip bound, the share of its optimizer "
    "updates whose pre-clip norm exceeded the clip (metrics.jsonl's clip_bound); dual-clip c, "
    "the cap of the clipped surrogate for negative advantages (docs/design.md#ppo-and-grpo and "
    "docs/design.md#gradient-clipping)."
)


def write_runs(ctx: ReportContext, log: OutputLog) -> None:
    """The runs table, once any run has left a metrics.jsonl or summary.json."""
    summaries = Path(ctx.results_path).glob(layout.train_dir("", "*", "*", "*") + "/summary.json")
    if ctx.results.metrics.empty and next(summaries, None) is None:
        log.skip("runs table (table_runs)", "no training run has metrics.jsonl or summary.json")
        return
    log.write_table(table_runs(ctx))
