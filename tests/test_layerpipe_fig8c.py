"""docs/papers/layerpipe.md on Fig. 8c: LayerPipe's gain over PipeDream by array size, from the recorded paper
sweep (tests/data/sweep_reference, kept byte-identical to a fresh run by tests/test_sweep_reference.py), and the
layer share that explains it from `archsim cost`."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pandas as pd

import archsim

ROOT = Path(__file__).resolve().parents[1]
DOC = " ".join((ROOT / "docs" / "papers" / "layerpipe.md").read_text(encoding="utf-8").split())
RESULTS = ROOT / "tests" / "data" / "sweep_reference" / "layerpipe_paper.results.csv.gz"


def test_gain_by_array_size_as_the_page_states_it():
    frame = pd.read_csv(io.BytesIO(gzip.decompress(RESULTS.read_bytes())))
    vgg = frame[frame.network == "vgg16"].groupby(["method", "rows"]).speedup.mean().unstack()
    gain = (vgg.loc["layerpipe"] / vgg.loc["pipedream"] - 1) * 100
    shown = ", ".join(f"{gain[r]:.1f}%" for r in (32, 64, 128)) + f" and {gain[256]:.1f}%"
    assert f"LayerPipe is {shown} above PipeDream" in DOC
    assert gain[256] > gain[32]  # the opposite of the paper's "far more significant" on smaller arrays


def test_largest_layer_share_as_the_page_states_it():
    for array, share in (("256x256", 30), ("32x32", 12)):
        costs = archsim.cost("vgg16", only=["conv"], array=array, batch=32, mode="paper").table
        layers = costs[costs.layer != "TOTAL"].set_index("layer").total_cycles
        assert layers.idxmax() == "conv1_2"
        assert round(100 * layers.max() / layers.sum()) == share
    assert "conv1_2 is 30% of the iteration on 256×256 but 12% on 32×32" in DOC
