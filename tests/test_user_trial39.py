"""A systems researcher's trial of the out-of-order backprop, SPP, BPPSA and SPB/Jigsaw parts, new to archsim.

Tests marked "failed before" are defects the trial found (each failed on the code before its fix); the others
are the trial's hand checks, the arithmetic written out in the docstring.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

import archsim

ROOT = Path(__file__).resolve().parents[1]


def _csv_layer_names(path: Path) -> list[str]:
    """The layer names as the topology CSV writes them (its first column), read without archsim."""
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    return [row[0].strip() for row in rows[1:] if row and row[0].strip()]


@pytest.mark.parametrize("policy", ["mp", "gpipe", "ooo-pipe1", "ooo-pipe2"])
@pytest.mark.parametrize("unit_costs", [True, False])
def test_ooo_timeline_names_the_networks_layers(policy, unit_costs):
    """Failed before: the out-of-order pipelines tagged every op's ``layer`` ``l1`` … ``lL`` (to_frame's column,
    the Chrome trace's ``args.layer``) though the network's layers are ``fc1`` … ``fc8``."""
    names = _csv_layer_names(ROOT / "layers" / "ffnn8.csv")
    result = archsim.schedule("ffnn8", policy=policy, processors=2, microbatches=2, unit_costs=unit_costs)
    frame = result.to_frame()
    assert set(frame["layer"].dropna()) == set(names)  # a flush barrier names no layer
    # F1:0 is the first layer's forward: its tag names that layer
    assert frame.set_index("op").loc["F1:0", "layer"] == names[0]


def test_three_layer_ooo_schedules_by_hand(tmp_path):
    """Three layers (unit F = δ = G, no δ for the first), 2 devices, 1 micro-batch, by hand.

    mp / gpipe (l1, l2 on d1; l3 on d2): F1 F2 on d1 [0, 2), F3 on d2 [2, 3), then layer by layer
    G3 D3 on d2 [3, 5), G2 D2 on d1 [5, 7), G1 [7, 8) → 8.
    ooo-pipe1 (same allocation, δ first): D3 on d2 [3, 4); D2 on d1 [4, 5) beside G3 on d2; G2 [5, 6),
    G1 [6, 7) on d1 → 7.
    ooo-pipe2 (modulo: l1, l3 on d1, l2 on d2): F1 [0, 1) d1, F2 [1, 2) d2, F3 [2, 3) d1, D3 [3, 4) d1,
    D2 [4, 5) d2 beside G3 [4, 5) d1, G1 [5, 6) d1 beside G2 [5, 6) d2 → 6; busy 8 of 2 × 6 → bubble 1/3.
    """
    network = tmp_path / "net3.csv"  # ffnn8's first three layers: a chain fc1 → fc2 → fc3
    network.write_text("".join((ROOT / "layers" / "ffnn8.csv").read_text().splitlines(keepends=True)[:4]))
    got = {policy: archsim.schedule(str(network), policy=policy, processors=2, unit_costs=True)
           for policy in ("mp", "gpipe", "ooo-pipe1", "ooo-pipe2")}
    assert {policy: run.makespan for policy, run in got.items()} == {"mp": 8, "gpipe": 8, "ooo-pipe1": 7,
                                                                      "ooo-pipe2": 6}
    assert got["ooo-pipe2"].row["bubble_fraction"] == pytest.approx(1 / 3)
    frame = got["ooo-pipe2"].to_frame().set_index("op")
    assert frame.loc["D2:0", "start"] == 4 and frame.loc["D2:0", "processor"] == "d2"
    assert frame.loc["G1:0", "start"] == 5 and frame.loc["G1:0", "processor"] == "d1"


@pytest.mark.parametrize("policy", ["dp-wfbp", "dp-priority", "dp-reverse-k"])
def test_data_parallel_timeline_names_the_networks_layers(policy):
    """Failed before: the data-parallel windows tagged every op's ``layer`` ``l1`` … ``lL``, not the network's."""
    names = _csv_layer_names(ROOT / "layers" / "ffnn8.csv")
    frame = archsim.schedule("ffnn8", policy=policy, processors=4, unit_costs=True).to_frame().set_index("op")
    assert set(frame["layer"].dropna()) == set(names)
    assert frame.loc["F1", "layer"] == names[0] and frame.loc["S8", "layer"] == names[7]


def test_utilization_series_last_bin_ends_at_the_makespan():
    """Failed before: one 100 s job alone on one GPU keeps it busy to the end, so every 60 s bin of the report's
    utilization plot should read 1; the last bin ran to 120 s, past the makespan, and read 40/60 = 0.67."""
    from archsim.cluster import JobCluster, SimConfig, simulate_trace, summarize
    from archsim.cluster.metrics import utilization_series
    from archsim.cluster.trace import TraceJob

    result = simulate_trace((TraceJob("a", 1, 0.0, 0, "resnet50", 100.0),), JobCluster.uniform(1, 1), "gandiva",
                            SimConfig(interval_s=0))
    assert summarize(result)["utilization"] == pytest.approx(1.0)
    series = utilization_series(result, 60.0)
    assert list(series["time_s"]) == [0.0, 60.0]
    assert list(series["utilization"]) == pytest.approx([1.0, 1.0])
