"""docs/papers/layerpipe.md compares the paper's headline (§IV-C: "on average 43% improvement over
PipeDream", "greater than 80% improvement with 8 processors") with archsim's Table IV column. The
paper's side is the mean of its printed column; archsim's is the recorded default sweep's summary
(tests/data/sweep_reference, which tests/test_sweep_reference.py keeps byte-identical to a fresh run)."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pandas as pd

from archsim.report.paper_tables import LAYERPIPE_TABLE_IV_IMPROVEMENT_PCT

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "papers" / "layerpipe.md").read_text(encoding="utf-8")
SUMMARY = ROOT / "tests" / "data" / "sweep_reference" / "layerpipe_paper.summary.csv.gz"


def _vgg16_layerpipe() -> pd.DataFrame:
    frame = pd.read_csv(io.BytesIO(gzip.decompress(SUMMARY.read_bytes())))
    return frame[(frame.network == "vgg16") & (frame.method == "layerpipe")].set_index("processors")


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_papers_average_is_its_columns_mean():
    paper = sum(LAYERPIPE_TABLE_IV_IMPROVEMENT_PCT.values()) / len(LAYERPIPE_TABLE_IV_IMPROVEMENT_PCT)
    assert f"Improvement column ({paper:.1f}%)" in _flat(DOC)  # 43.6: the paper says "43%"


def test_archsims_column_as_the_page_states_it():
    rows = _vgg16_layerpipe()
    improvement = rows["improvement_vs_pipedream_pct"]
    doc = _flat(DOC)
    assert f"averages {improvement.mean():.1f}% over 2–12 processors" in doc
    assert f"at most {improvement.max():.1f}% ({improvement.idxmax()} processors)" in doc
    assert f"with 8 processors\" ({improvement[8]:.1f}%)" in doc
    comm = rows["additional_comm_bytes"]
    assert f"reaches {comm.max() / 1024:,.0f} KiB ({comm.idxmax()} processors" in doc
