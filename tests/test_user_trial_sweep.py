"""A design-space sweep as a new user runs it: the Pareto front of its report compares designs on one
workload (network and batch), never a small batch's iteration against a large one's."""

from __future__ import annotations

import pandas as pd

from archsim.cli import main
from archsim.report.pareto import front_table, pareto_mask, with_front

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
    assert pareto_mask(rows[["iteration_seconds", "energy_pj", "area_mm2"]].to_numpy())[rows.batch == 8].sum() == 0


def test_front_table_and_hover_name_the_batch(tmp_path) -> None:
    """The front's table and the plot's hover text say which batch a design was run at."""
    rows, html = _sweep(tmp_path)
    table = front_table(rows, "layerpipe_sample")
    assert "batch" in table.columns and set(table.batch) == {1, 8}
    assert "batch 8" in html and "batch 1," in html
