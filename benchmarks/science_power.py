"""The power table of the next science study (docs/design.md#the-study-design), from the last
study's committed data alone: docs/science_report_v2/tables/study_checkpoints.csv (in-loop pass@1
per run × seed × checkpoint) and claims.csv (the paired SD of every claims row).

    python benchmarks/science_power.py            # prints the Markdown table

For each endpoint: the paired SD of A − B across the 8 seeds of the last study, the minimum
detectable effect of a two-sided α = 0.05 paired t-test with 80 % power (noncentral t:
pacs.report.claims_stats.t_mde) at the planned pairs, the power for a 3-point (or the named)
difference, and the pairs that difference needs. An SD from 8 pairs is itself uncertain (7 df):
the primary endpoint also gets the SD's one-sided 80 % upper confidence bound, s·√(7/χ²₀.₂(7)).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from pacs.report.claims_stats import t_mde, t_pairs_for

TABLES = Path(__file__).resolve().parents[1] / "docs" / "science_report_v2" / "tables"


def power(effect: float, sd: float, n: int) -> float:
    crit, ncp = stats.t.ppf(0.975, n - 1), effect * np.sqrt(n) / sd
    return float(stats.nct.sf(crit, n - 1, ncp) + stats.nct.cdf(-crit, n - 1, ncp))


def heldout_sd(run_a: str, run_b: str, steps: list[int]) -> float:
    """Paired SD over seeds of A − B of the in-loop pass@1 (points), mean over ``steps``."""
    d = pd.read_csv(TABLES / "study_checkpoints.csv")
    w = d[d["step"].isin(steps)].pivot_table(index="seed", columns="run", values="pass_at_1")
    return float(((w[run_a] - w[run_b]) * 100).std(ddof=1))


def claims_sd(claim: str, metric_start: str) -> float:
    t = pd.read_csv(TABLES / "claims.csv")
    row = t[(t["claim"] == claim) & t["metric"].str.startswith(metric_start)]
    return float(row["sd"].iloc[0])


def rows() -> list[tuple]:
    last3 = [96, 112, 128]
    sd = heldout_sd("pacs", "grpo", last3)
    sd_hi = sd * np.sqrt(7 / stats.chi2.ppf(0.2, 7))
    out = [
        ("in-loop pass@1, mean of steps 96/112/128 (PACS − GRPO), primary", sd, 24, 3.0),
        ("  the same, SD at its 80 % upper confidence bound", sd_hi, 24, 3.0),
        ("  the same, at the last study's 8 pairs", sd, 8, 3.0),
        ("in-loop pass@1, step 128 only (the last study's C1-n)",
         heldout_sd("pacs", "grpo", [128]), 24, 3.0),
        ("hard-split pass@1, final policy (C1)", claims_sd("C1", "pass@1"), 24, 3.0),
        ("token entropy, steps 97–128 (C3), nats", claims_sd("C3", "token"), 24, 0.004),
        ("exact path entropy, hard split (C4), nats",
         claims_sd("C4", "exact path entropy"), 24, 0.1),
        ("in-loop pass@1, steps 96/112/128, reset − fixed reference (C3-ref-cost-n)",
         heldout_sd("pacs", "pacs_ref_fixed", last3), 4, 10.0),
        ("token entropy, fixed reference − reset (C3-ref), nats", _ref_sd(), 4, 0.05),
    ]  # fmt: skip
    return out


def _ref_sd() -> float:
    t = pd.read_csv(TABLES / "claims.csv")
    row = t[(t["claim"] == "C3-ref") & (t["run_b"] == "pacs")]
    return float(row["sd"].iloc[0])


def main() -> None:
    print(
        "| endpoint | paired SD (last study) | pairs | MDE (80 %, α 0.05) | effect | power "
        "| pairs for it |"
    )
    print("|:---|---:|---:|---:|---:|---:|---:|")
    for name, sd, n, effect in rows():
        print(
            f"| {name} | {sd:.4g} | {n} | {t_mde(sd, n):.3g} | {effect:g} | "
            f"{power(effect, sd, n):.2f} | {t_pairs_for(effect, sd)} |"
        )


if __name__ == "__main__":
    main()
