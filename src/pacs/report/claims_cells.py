"""The claims table rebuilt from its raw cells alone (docs/design.md#statistics).

The report writes ``tables/claims_cells.csv`` (:func:`pacs.report.claims.claims_cells`) next
to ``tables/claims.csv``: one line per (comparison, seed, problem) value the statistics used.
:func:`recompute_claims` turns those lines back into every number of ``claims.csv`` with the
same functions (paired t over seeds, the bootstrap beside it, Holm, verdicts), so the table can be
audited from committed data without the results tree.

``python -m pacs.report.claims_cells TABLES --config PROFILE`` rewrites ``TABLES/claims.csv`` and
``TABLES/claims.md`` from ``TABLES/claims_cells.csv`` alone with the current statistics (how
docs/science_report_v2's claims table was brought to the paired t over seeds, docs/science.md).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from pacs.config import ClaimsSpec

from .claims import CLAIMS_COLUMNS, claims_markdown
from .claims_families import tost_margin_of, with_tost
from .claims_stats import NO_DATA, matrix_stats, with_holm_verdicts

HEAD = ["claim", "statement", "metric", "run_a", "run_b"]


def read_cells(path: Path) -> pd.DataFrame:
    """``claims_cells.csv`` as written: problem ids as strings ('' for seed-level metrics),
    seed as nullable int, values as floats (empty = NaN)."""
    return pd.read_csv(
        path,
        dtype={"problem": str, "seed": "Int64", "family": str, **{c: str for c in HEAD}},
        keep_default_na=False,
        na_values={"seed": [""], "value_a": [""], "value_b": [""]},
    )


def cell_matrices(cells: pd.DataFrame) -> tuple[np.ndarray, np.ndarray] | None:
    """[seeds, problems] arrays of value_a and value_b of one comparison's cells, seeds and
    problems in the order they were written (the order the bootstrap saw); None without a
    seed."""
    cells = cells[cells["seed"].notna()]
    if cells.empty:
        return None
    seeds, problems = pd.unique(cells["seed"]), pd.unique(cells["problem"])
    wide = [
        cells.pivot(index="seed", columns="problem", values=v).reindex(
            index=seeds, columns=problems
        )
        for v in ("value_a", "value_b")
    ]
    return wide[0].to_numpy(dtype=np.float64), wide[1].to_numpy(dtype=np.float64)


def recompute_row(cells: pd.DataFrame, settings: ClaimsSpec) -> dict:
    """One claims-table row (before Holm) from the cells of one comparison: its family as the
    cells name it (cells written before families existed: the claim itself), its TOST margin
    from ``settings``."""
    head = cells.iloc[0][HEAD].to_dict()
    family = str(cells.iloc[0]["family"]) if "family" in cells else ""
    head["family"] = family or head["claim"]
    head["tost_margin"] = tost_margin_of(head["claim"], settings)
    m = cell_matrices(cells)
    seed_level = bool((cells["problem"] == "").all())
    got = None if m is None else matrix_stats(m[0], m[1], settings, seed_level)
    return {**head, **(got or {"seeds": 0, "problems": 0, "verdict": NO_DATA})}


def recompute_claims(cells: pd.DataFrame, settings: ClaimsSpec) -> pd.DataFrame:
    """Every row of ``claims.csv`` (CLAIMS_COLUMNS, in the same order) from the cells of
    ``claims_cells.csv`` (:func:`read_cells`) and the profile's ``claims:`` settings."""
    rows = [recompute_row(g, settings) for _, g in cells.groupby("row", sort=True)]
    return with_tost(with_holm_verdicts(pd.DataFrame(rows, columns=CLAIMS_COLUMNS)))


def rewrite_tables(tables: Path, settings: ClaimsSpec) -> pd.DataFrame:
    """``claims.csv`` and ``claims.md`` of the folder ``tables`` recomputed from its
    ``claims_cells.csv`` (the cells are not touched); returns the table."""
    table = recompute_claims(read_cells(tables / "claims_cells.csv"), settings)
    (tables / "claims.csv").write_text(table.to_csv(index=False, lineterminator="\n"))
    note = f"{settings.bootstrap} resamples"
    (tables / "claims.md").write_text(claims_markdown(table, settings, note))
    return table


def main(argv: list[str] | None = None) -> None:
    import argparse

    from pacs.config import load_profile

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tables", type=Path, help="a report's tables/ folder with claims_cells.csv")
    ap.add_argument("--config", type=Path, required=True, help="the profile (its claims: section)")
    args = ap.parse_args(argv)
    settings = load_profile(args.config).claims
    if settings is None:
        raise SystemExit(f"{args.config}: no claims: section")
    rewrite_tables(args.tables, settings)


if __name__ == "__main__":
    main()
