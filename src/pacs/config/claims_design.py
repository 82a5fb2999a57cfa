"""Which claims the report can compute for a profile, and the load-time check of a design's
``claims:`` declarations against it (docs/science.md, the fourth design).

:func:`claim_catalogue` lists every claim id the claims table (:mod:`pacs.report.claims`) gives
for the profile's runs, with its metric: C1-C4 (and, with a ``study:``, C1-n, exact C4 and sampled
C4-s) of the first main run of ``claims.subject`` against each baseline; the same ids suffixed
``@<run>`` for every further main run of the subject (an *arm*, e.g. the unclipped official
PACS), with ``arm@<run>`` (hard-split pass@1) and ``arm-n@<run>`` (in-loop held-out pass@1)
comparing that arm with the first subject run; C3-ref (and C3-ref-cost, C3-ref-cost-n) of each
reference ablation; C5-C7 of the score, weight and β ablations. ``tests/report/
test_claims_families.py`` checks that the report's rows carry exactly these ids.

:func:`claims_problems` is what :class:`pacs.config.Profile` raises at load: a family or a TOST
claim naming a claim the report cannot compute, a claim in two families, a TOST claim that is not
an in-loop pass@1 claim or a margin without claims, and a hard-split endpoint over several
checkpoints (no DAG evaluates the hard split before the last step yet).
"""

from __future__ import annotations

from typing import Any

HELDOUT = "heldout_pass_at_1"


def _baseline_ids(suffix: str, study: bool) -> dict[str, str]:
    ids = {"C1": "pass_at_k", "C2": "pass_at_k", "C3": "entropy"}
    if study:
        ids |= {"C1-n": HELDOUT, "C4": "exact", "C4-s": "sampled_paths"}
    else:
        ids["C4"] = "sampled_paths"
    return {f"{claim}{suffix}": metric for claim, metric in ids.items()}


def claim_catalogue(profile: Any) -> dict[str, str]:
    """Claim id -> its metric kind, for every claim the report computes for ``profile``'s runs
    (empty without a main run of the subject method or without a baseline)."""
    choices = profile.claims
    if choices is None:
        return {}
    main = [(n, r) for n, r in profile.runs.items() if r.ablation == "main"]
    subjects = [n for n, r in main if r.method.name == choices.subject]
    baselines = [n for n, r in main if r.method.name in choices.baselines]
    if not subjects:
        return {}
    study = profile.study is not None
    out: dict[str, str] = {}
    if baselines:
        out |= _baseline_ids("", study)
    for run in profile.runs.values():
        if run.ablation == "ref":
            out["C3-ref"] = "entropy"
            if study:
                out |= {"C3-ref-cost": "pass_at_k", "C3-ref-cost-n": HELDOUT}
        claim = {"score": "C5", "weight": "C6", "beta": "C7"}.get(run.ablation)
        if claim:
            out[claim] = "pass_at_k"
    for arm in subjects[1:]:
        if baselines:
            out |= _baseline_ids(f"@{arm}", study)
        out[f"arm@{arm}"] = "pass_at_k"
        if study:
            out[f"arm-n@{arm}"] = HELDOUT
    return out


def claims_problems(profile: Any) -> list[str]:
    """What the report could not compute of the profile's ``claims:`` declarations, one line
    each naming the field and the claim."""
    choices = profile.claims
    if choices is None:
        return []
    known = claim_catalogue(profile)
    listing = ", ".join(known) or "none: no main run of the subject and a baseline"
    problems, seen = [], {}
    for family, claims in choices.families.items():
        for claim in claims:
            where = f"claims.families.{family}: {claim!r}"
            if claim not in known:
                problems.append(f"{where} is no claim the report computes here ({listing})")
            elif claim in seen:
                problems.append(f"{where} is already in family {seen[claim]!r}")
            seen.setdefault(claim, family)
    for claim in choices.tost_claims:
        if claim not in known:
            problems.append(
                f"claims.tost_claims: {claim!r} is no claim the report computes here ({listing})"
            )
        elif known[claim] != HELDOUT:
            problems.append(
                f"claims.tost_claims: {claim!r} is not an in-loop held-out pass@1 claim "
                "(the margin is in its points)"
            )
    if choices.tost_claims and choices.tost_margin is None:
        problems.append("claims.tost_claims: needs claims.tost_margin")
    if choices.tost_margin is not None and not choices.tost_claims:
        problems.append("claims.tost_margin: names no claim (claims.tost_claims is empty)")
    if choices.hard_checkpoints > 1:
        problems.append(
            f"claims.hard_checkpoints={choices.hard_checkpoints}: the report cannot compute the "
            "hard split over several checkpoints: no rule evaluates it before the last step"
        )
    return problems
