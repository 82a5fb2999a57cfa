"""CLI: ``python -m pacs.report --config CONFIG --results results/<profile> --out
paper_figures/<profile>``."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from pacs.config import RELEASED_RUN, load_profile
from pacs.evaluation.io import FormatError
from pacs.fingerprint import COMMIT_ENV

from .claims import write_claims
from .context import ReportContext
from .loaders import GLOBS, load_results
from .outputs import OutputLog
from .paper import PAPER_CSV, load_paper_numbers
from .released import write_released
from .runs import write_runs
from .science_data import write_raw_data
from .tables import write_tables


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m pacs.report", description=__doc__)
    p.add_argument("--config", required=True, type=Path, help="profile config (configs/*.yaml)")
    p.add_argument("--results", required=True, type=Path, help="results/<profile> folder")
    p.add_argument(
        "--out", required=True, type=Path, help="output folder, e.g. paper_figures/<profile>"
    )
    p.add_argument(
        "--paper-numbers",
        type=Path,
        default=PAPER_CSV,
        help="the paper's numbers (default: the packaged paper_numbers.csv)",
    )
    p.add_argument(
        "--skip-figures",
        action="store_true",
        help="write tables and README only (figures of an earlier run are removed: "
        "they could be stale)",
    )
    return p.parse_args(argv)


def build_report(
    config: Path, results: Path, out: Path, *, paper_numbers: Path = PAPER_CSV, figures: bool = True
) -> OutputLog:
    """Load everything, write every table and figure that can be honest, then the README."""
    spec = load_profile(config)
    res = load_results(results)
    ctx = ReportContext(
        spec, res, load_paper_numbers(paper_numbers), config_path=config, results_path=results
    )
    log = OutputLog(Path(out))
    write_tables(ctx, log)
    write_runs(ctx, log)  # every run: steps done, the step the tables report, time, provenance
    write_released(ctx, log)  # Table 1's open models (eval.released), evaluated by the DAG
    write_claims(ctx, log, figures=figures)  # only for configs with a claims: block
    if spec.study is not None:  # the study's raw data, enough to recompute its claims cells
        write_raw_data(res, log)
    if figures:
        from .figures import write_figures  # matplotlib/seaborn only when figures are wanted

        write_figures(ctx, log)
    else:
        log.skip("all figures", "--skip-figures was given")
    missing = ctx.missing_results()
    if missing:
        shown = ", ".join(missing[:4]) + (", ..." if len(missing) > 4 else "")
        log.skip(
            f"pass@k of {len(missing)} evaluation(s) the experiment matrix expects ({shown})",
            "no passk.json under the results folder",
        )
    for run in (r for r in ctx.unknown_runs if r != RELEASED_RUN):  # released: its own table
        log.skip(f"results of run {run!r}", "the config has no such run (its meaning is unknown)")
    log.remove_stale()
    log.write_readme(readme_header(ctx, res))
    return log


def readme_header(ctx: ReportContext, res) -> list[str]:
    counts = ", ".join(f"{len(v)} {k}" for k, v in res.files.items())
    globs = "; ".join(f"`{g}`" for g in GLOBS.values())
    return [
        f"# PACS reproduction report: profile `{ctx.profile}`",
        "",
        (
            f"Written by `python -m pacs.report --config {ctx.config_path} --results "
            f"{ctx.results_path}` "
            f"on {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}, by the code of {code_version()}."
        ),
        "",
        f"Inputs read under `{ctx.results_path}`: {counts} (globs: {globs}).",
        "",
        (
            "Numbers are percentages unless stated (diversity D, seconds). With several seeds a "
            "cell is "
            "mean ± sample std across seeds, and tables say how many seeds. Rows or bars labelled "
            "'paper' are the paper's own numbers (src/pacs/report/paper_numbers.csv, each cited); "
            "'reference only' marks them where our model is not the paper's, which is not a "
            "comparison of equal things. † marks a paper k label that is inferred."
        ),
    ]


def code_version(where: Path = Path(__file__).parent) -> str:
    """The git commit of the code at ``where`` (and whether tracked files differ from it), so a
    report says what made it; a copy outside git gives the commit its container image was built
    from (``PACS_CODE_COMMIT``, pacs.fingerprint), else says that none is known."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(where), *args], capture_output=True, text=True, check=True, timeout=30
        ).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        edited = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        baked = os.environ.get(COMMIT_ENV, "").strip()
        if baked:
            commit, _, edits = baked.partition("+")
            return (
                f"git commit {commit}"
                + (" with uncommitted edits" if edits else "")
                + (f" (an installed copy: {COMMIT_ENV}, set by the image it was built into)")
            )
        return "an installed copy outside git (no commit known)"
    return f"git commit {commit}" + (" with uncommitted edits" if edited else "")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        log = build_report(
            args.config,
            args.results,
            args.out,
            paper_numbers=args.paper_numbers,
            figures=not args.skip_figures,
        )
    except (FormatError, FileNotFoundError, ValueError) as exc:  # malformed or missing input
        print(f"pacs.report: error: {exc}", file=sys.stderr)
        return 2
    print(
        f"pacs.report: wrote {len(log.written) + 1} files to {args.out} "
        f"({len(log.skipped)} not produced; see README.md)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
