"""The claims curves' per-step band across seeds (pacs.report.claims_figures.seed_band)."""

from __future__ import annotations

import pandas as pd
import pytest

from pacs.report.claims_figures import seed_band


def _rows(seed: int, steps: list[int], values: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"seed": seed, "step": steps, "v": values})


def test_a_step_only_a_later_seed_has_is_drawn_in_step_order() -> None:
    # Seed 0 lacks step 1 (e.g. no two correct rollouts that step): the band must still run 1, 2, 3,
    # not 2, 3, 1 (a line drawn back from the last step to the first).
    df = pd.concat([_rows(0, [3, 2], [30.0, 20.0]), _rows(1, [1, 2, 3], [10.0, 22.0, 34.0])])
    band = seed_band(df, "v", smooth=1)
    assert list(band.index) == [1, 2, 3]
    assert band["mean"].tolist() == [10.0, 21.0, 32.0]
    assert band["seeds"].tolist() == [1, 2, 2]
    assert band["std"].iloc[0] == 0.0  # one seed: no spread
    assert band["std"].iloc[2] == pytest.approx(2.8284271247, rel=1e-9)  # std(30, 34), ddof 1


def test_each_seed_is_smoothed_on_its_own_before_the_mean() -> None:
    # A centred 3-step rolling mean per seed (ends use what they have), then the mean over seeds.
    df = pd.concat([_rows(0, [1, 2, 3], [0.0, 3.0, 6.0]), _rows(1, [1, 2, 3], [6.0, 6.0, 6.0])])
    band = seed_band(df, "v", smooth=3)
    assert band["mean"].tolist() == pytest.approx([(1.5 + 6) / 2, (3 + 6) / 2, (4.5 + 6) / 2])
