"""A design-space sweep as a new user runs it: the Pareto front of its report compares designs on one
workload (network and batch), never a small batch's iteration against a large one's."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from archsim.cli import main
from archsim.pareto_rule import pareto_mask
from archsim.report.pareto import front_table, with_front

SPEC = """[sweep]
name = "two_batches"
networks = ["layerpipe_sample"]
arrays = ["16x16", "32x32"]
batches = [1, 8]
processors = [1]
methods = ["pipedream"]
sram_kb = [8, 64]
clocks_ghz = [1.0]
"""


def _sweep(tmp_path) -> tuple[pd.DataFrame, str]:
    spec = tmp_path / "two_batches.toml"
    spec.write_text(SPEC)
    report = tmp_path / "r.html"
    assert main(["sweep", str(spec), "--out", str(tmp_path / "r"), "--quiet", "--report", str(report)]) == 0
    return pd.read_csv(tmp_path / "r" / "results.csv"), report.read_text()


def test_front_is_per_batch_not_across_batches(tmp_path) -> None:
    """Batch 8 does 8× batch 1's work per iteration, so every batch-8 design is 'dominated' by some batch-1
    design in time and energy; a front over both batches hid every batch-8 design. Each batch's front
    must be exactly its own non-dominated designs (brute force over that batch's rows alone)."""
    rows, _ = _sweep(tmp_path)
    assert sorted(rows.batch.unique()) == [1, 8]
    front = with_front(rows)
    for batch, part in front.groupby("batch"):
        values = part[["iteration_seconds", "energy_pj", "area_mm2"]].to_numpy()
        expected = [not any((other <= row).all() and (other < row).any() for other in values) for row in values]
        assert part.pareto.tolist() == expected, batch
        assert part.pareto.any(), f"batch {batch} has no design on the front"
    assert pareto_mask(rows[["iteration_seconds", "energy_pj", "area_mm2"]].to_numpy(), ties="all")[rows.batch == 8].sum() == 0


def test_front_table_and_hover_name_the_batch(tmp_path) -> None:
    """The front's table and the plot's hover text say which batch a design was run at."""
    rows, html = _sweep(tmp_path)
    table = front_table(rows, "layerpipe_sample")
    assert "batch" in table.columns and set(table.batch) == {1, 8}
    assert "batch 8" in html and "batch 1," in html


def test_hover_text_carries_units() -> None:
    """Hovering a point of the Pareto plot or a Gantt bar shows its time with the unit: seconds where every
    row has a clock, cycles otherwise (the axis title says which; the hover text said a bare number)."""
    from archsim.report.gantt import gantt_figure
    from archsim.report.pareto import pareto_figure

    base = {"network": "n", "batch": 1, "rows": 16, "cols": 16, "dataflow": "ws", "sram_kb": 8,
            "bandwidth_words_per_cycle": 10, "element_bytes": 2, "microbatches": 1, "processors": 1,
            "method": "pipedream", "energy_table": "horowitz45", "iteration_cycles": 100.0, "energy_pj": 5.0,
            "area_mm2": 1.0}
    for clock, unit in ((1.0, " s<br>"), (float("nan"), " cycles<br>")):
        rows = pd.DataFrame([{**base, "clock_ghz": clock, "iteration_seconds": 100e-9 / clock},
                             {**base, "rows": 32, "cols": 32, "clock_ghz": clock, "iteration_seconds": 50e-9 / clock,
                              "iteration_cycles": 50.0, "area_mm2": 4.0}])
        for trace in pareto_figure(rows, "n").data:
            assert "time %{x:.4g}" + unit in trace.hovertemplate, trace.hovertemplate
            assert all("SRAM 8 KiB, DRAM 10 words/cycle" in text for text in trace.text), trace.text
    frame = pd.DataFrame({"op": ["F1"], "processor": [0], "start": [0.0], "end": [10.0], "kind": ["F"]})
    for trace in gantt_figure(frame, unit="cycles").data:
        assert "start %{base:.4g} cycles" in trace.hovertemplate and "duration %{x:.4g} cycles" in trace.hovertemplate


def test_energy_parts_show_every_front_design() -> None:
    """Two designs on the front that differ only in processors (with leakage: different energies, one
    faster, one smaller) are two bars; the chart kept the first and hid the other."""
    from archsim.report.pareto import energy_parts_figure

    base = {"network": "n", "batch": 1, "rows": 16, "cols": 16, "dataflow": "ws", "sram_kb": 8,
            "bandwidth_words_per_cycle": 10, "element_bytes": 2, "microbatches": 1, "method": "pipedream",
            "energy_table": "leaky", "clock_ghz": 1.0, "mac_pj": 4.0, "register_pj": 0.0, "sram_pj": 0.0,
            "dram_pj": 0.0, "vector_pj": 0.0}
    rows = pd.DataFrame([{**base, "processors": 1, "iteration_cycles": 100.0, "iteration_seconds": 100e-9,
                          "leakage_pj": 1.0, "energy_pj": 5.0, "area_mm2": 1.0},
                         {**base, "processors": 2, "iteration_cycles": 60.0, "iteration_seconds": 60e-9,
                          "leakage_pj": 1.2, "energy_pj": 5.2, "area_mm2": 2.0}])
    assert with_front(rows).pareto.all()
    leakage = next(t for t in energy_parts_figure(rows, "n").data if t.name == "leakage")
    assert len(set(leakage.x)) == 2 and sorted(leakage.y) == [1.0, 1.2]  # pJ, as the rows (since 2026-12-05)


def test_pareto_figure_plots_the_front_tables_pj() -> None:
    """A design sweep's Pareto figure drew energy in mJ (4.153) beside the front's table in pJ (``energy_pj``,
    4.153e+09): one read 10⁹ × the other. The figure, its hover and its axis title are in the table's pJ, as are
    the energy-by-part bars beside them."""
    from archsim.report.pareto import energy_parts_figure, pareto_figure

    base = {"network": "n", "batch": 1, "dataflow": "ws", "sram_kb": 8, "bandwidth_words_per_cycle": 10,
            "element_bytes": 1, "microbatches": 1, "processors": 1, "method": "pipedream", "energy_table": "t",
            "clock_ghz": 1.0, "mac_pj": 3e9, "register_pj": 0.0, "sram_pj": 1.153e9, "dram_pj": 0.0, "vector_pj": 0.0,
            "leakage_pj": 0.0}
    rows = pd.DataFrame([{**base, "rows": 16, "cols": 16, "iteration_cycles": 100.0, "iteration_seconds": 100e-9,
                          "energy_pj": 4.153e9, "area_mm2": 1.0},
                         {**base, "rows": 32, "cols": 32, "iteration_cycles": 50.0, "iteration_seconds": 50e-9,
                          "energy_pj": 8.0e9, "area_mm2": 4.0}])
    table = front_table(rows, "n")
    figure = pareto_figure(rows, "n")
    assert "pJ" in figure.layout.yaxis.title.text and "mJ" not in figure.layout.yaxis.title.text
    plotted = sorted(float(y) for trace in figure.data for y in trace.y)
    assert plotted == sorted(table["energy_pj"]) == [4.153e9, 8.0e9]
    assert all("energy %{y:.4g} pJ" in trace.hovertemplate for trace in figure.data)
    parts = energy_parts_figure(rows, "n")
    assert parts.layout.yaxis.title.text == "pJ"
    mac = next(trace for trace in parts.data if trace.name == "mac")
    assert list(mac.y) == [3e9, 3e9]


def test_per_layer_section_shows_the_fastest_design(tmp_path) -> None:
    """A design sweep's per-layer breakdown and Gantt are of its fastest design (at the smallest batch),
    not of the smallest array, which here is the slowest: 16x16 does the work of 32x32 in ~4× the time."""
    rows, html = _sweep(tmp_path)
    batch1 = rows[rows.batch == 1]
    best = batch1.loc[batch1.iteration_seconds.idxmin()]
    worst = batch1.loc[batch1.iteration_seconds.idxmax()]
    assert (best.rows, worst.rows) == (32, 16)
    assert "per-layer F/G/D cycles (32x32 ws, batch 1)" in html
    assert "--array 32x32 --dataflow ws --batch 1 " in html and "--array 16x16" not in html


def test_device_sweep_table_tells_energies_apart() -> None:
    """bench_device_sweep's table printed kJ to two decimals: on a small transformer (GPT-2, ~70 J an
    iteration) every design read 0.06 or 0.07 kJ, so the table could not show why one design is on the
    front and its neighbour is not. Energies that differ by more than 0.1% must print differently."""
    from benchmark_scripts import load_benchmark

    bench = load_benchmark("bench_device_sweep")
    root = Path(__file__).resolve().parents[1]
    rows = bench.with_front(bench.sweep(str(root / "configs/devices/tpu_v4_like.toml"),
                                        str(root / "configs/transformers/gpt2.json"), 16))
    printed = [line.split("|")[5].strip() for line in bench.device_markdown(rows).splitlines()[2:]]
    assert len(printed) == len(rows)
    for a, text_a in zip(rows, printed):
        for b, text_b in zip(rows, printed):
            if abs(a["energy_j"] - b["energy_j"]) > 1e-3 * max(a["energy_j"], b["energy_j"]):
                assert text_a != text_b, (a["energy_j"], b["energy_j"], text_a)
