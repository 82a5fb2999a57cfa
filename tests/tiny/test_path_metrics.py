"""The tiny engine logs path statistics of its rollouts on the paths task, and nothing elsewhere."""

from __future__ import annotations

import pytest

from pacs.tiny.train import path_metrics


def test_path_metrics_on_the_paths_task():
    rows = [{"answer": "6", "quantities": [1, 2, 3]}, {"answer": "15", "quantities": [4, 5, 6]}]
    texts = ["1+2=3. 3+3=6.", "3+2=5. 5+1=6.", "4+5=9. 9+6=15.", "4+5=9. 9+6=15."]
    got = path_metrics(texts, [1.0, 1.0, 1.0, 1.0], rows, 2)
    assert got == {"path_diversity": pytest.approx(0.5), "path_entropy": pytest.approx(0.6931 / 2, abs=1e-4)}  # ln 2 and 0


def test_no_path_metrics_on_the_arithmetic_task():
    assert path_metrics(["12+7=19."], [1.0], [{"answer": "19"}], 1) == {}
