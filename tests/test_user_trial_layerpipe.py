"""A LayerPipe reader's checks: the sweep report's paper columns and plot axes say what the paper and
archsim print, with units."""

from __future__ import annotations

import pandas as pd

from archsim.report.sweep_report import table_iv


def _vgg16_summary(processors: list[int]) -> pd.DataFrame:
    return pd.DataFrame([{"network": "vgg16", "method": method, "processors": p, "speedup": 2.0,
                          "speedup_upto": 2.0, "additional_comm_bytes": 0}
                         for p in processors for method in ("layerpipe", "pipedream")])


def test_paper_improvement_column_is_the_papers_printed_column():
    """Table IV's "Improvement" as printed (LayerPipe paper, Table IV), not recomputed from its rounded speedups:
    3 processors 18.4% (2.75 / 2.32 − 1 = 18.5%), 4 processors 31.7% (31.5%), 9 processors 80.0% (79.8%)."""
    table = table_iv(_vgg16_summary([3, 4, 9]), "vgg16").set_index("processors")
    assert table["paper improvement %"].to_dict() == {3: 18.4, 4: 31.7, 9: 80.0}
