"""LayerPipe Table II (004_2cd4e01df0d40184.txt): the sample network on a 32×32 ws array, batch 32.

The expected values are the paper's printed numbers (three significant digits); archsim must be
within 2% of every one of the 16 entries in ``paper`` mode. docs/papers/layerpipe.md explains the residual
(largest on conv1's BP_G: the paper's G folds carry ~3-4 more cycles each than SCALE-Sim's).
"""

import pytest

from archsim.array.config import ArrayConfig
from archsim.array.costing import cost_network
from archsim.workload import load_network

TABLE_II = {  # layer: (FP, BP_G, BP_δ, Total)
    "conv1": (1.20e6, 2.16e6, 4.01e7, 4.35e7),
    "conv2": (5.02e6, 5.63e6, 2.01e7, 3.07e7),
    "conv3": (1.81e6, 2.11e6, 7.23e6, 1.12e7),
    "conv4": (3.63e6, 3.92e6, 3.63e6, 1.12e7),
}
TABLE_II_BP_OVERHEAD_MIB = {"conv1": 4.59, "conv2": 12.25, "conv3": 6.13, "conv4": 3.06}


@pytest.fixture(scope="module")
def table():
    frame = cost_network(load_network("layerpipe_sample"), ArrayConfig(32, 32, "ws"), batch=32, mode="paper")
    return frame.set_index("layer")


@pytest.mark.parametrize("layer", sorted(TABLE_II))
@pytest.mark.parametrize("column, index", [("F_cycles", 0), ("G_cycles", 1), ("D_cycles", 2), ("total_cycles", 3)])
def test_cycles_within_two_percent_of_table_ii(table, layer, column, index):
    paper = TABLE_II[layer][index]
    ours = table.loc[layer, column]
    assert abs(ours - paper) / paper <= 0.02, f"{layer} {column}: archsim {ours:.4g} vs paper {paper:.3g}"


def test_only_g_entries_and_conv3_total_differ_in_the_third_digit(table):
    """F and δ agree to the paper's 3 printed digits; every G is a little low (the paper's simulator
    adds a few cycles per fold of G, see docs/papers/layerpipe.md) and conv3's total rounds the other way."""
    off = []
    for layer, values in TABLE_II.items():
        for column, paper in zip(("F_cycles", "G_cycles", "D_cycles", "total_cycles"), values):
            if float(f"{table.loc[layer, column]:.2e}") != paper:
                off.append((layer, column))
    assert sorted(off) == [("conv1", "G_cycles"), ("conv2", "G_cycles"), ("conv3", "G_cycles"),
                           ("conv3", "total_cycles"), ("conv4", "G_cycles")]


@pytest.mark.parametrize("layer", sorted(TABLE_II_BP_OVERHEAD_MIB))
def test_bp_overhead_is_delta_of_layer_input(table, layer):
    """Table II's "BP Overhead" is δ of the layer input at 1 byte/element, in MiB (printed as MB)."""
    assert table.loc[layer, "delta_bytes"] / 2**20 == pytest.approx(TABLE_II_BP_OVERHEAD_MIB[layer], abs=0.006)
