"""docs/formats.md's figures for a row folded from asymmetric ONNX padding: its δ and ``delta_bytes`` count the added
row and column (a 16-channel 32 × 32 map padded ``[0, 0, 1, 1]`` reads as 33 × 33), which the ONNX import docs had
said without figures and the network format's page not at all. Counted by hand, then found on the page."""

from __future__ import annotations

from pathlib import Path

from onnx import helper

from archsim.api import cost
from archsim.workload import load_onnx
from tests.onnx_models import model, value, weight

DOCS = Path(__file__).resolve().parents[1] / "docs" / "formats.md"


def _midpad():
    """conv (3 → 16 channels, 32 × 32, pad 1) → stride-2 conv (16 → 32) padded below and right only."""
    nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], name="Conv_0", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["a", "w1"], ["y"], name="Conv_1", pads=[0, 0, 1, 1], strides=[2, 2])]
    return model(nodes, [value("x", [1, 3, 32, 32])], [value("y", ["n", "c", "h", "w"])],
                 [weight("w0", 16, 3, 3, 3), weight("w1", 32, 16, 3, 3)])


def test_the_folded_rows_delta_bytes_count_the_added_row_and_column_as_documented():
    table = cost(load_onnx(_midpad()), batch=8).table.set_index("layer")
    folded, produced = 33 * 33 * 16 * 8, 32 * 32 * 16 * 8  # positions × channels × samples, 1-byte elements
    assert (int(table.loc["Conv_1", "delta_bytes"]), int(table.loc["Conv_0", "activation_bytes"])) == (folded,
                                                                                                     produced)
    page = " ".join(DOCS.read_text(encoding="utf-8").split())
    assert (f"33 · 33 · 16 · 8 = {folded:,} where its producer's `activation_bytes` is 32 · 32 · 16 · 8 = "
            f"{produced:,}") in page
