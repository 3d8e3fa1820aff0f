"""``speedup_upto`` is each configuration's best speedup with at most P processors. In a design sweep a
configuration includes its design (SRAM, DRAM bandwidth, element width, micro-batches, energy table,
clock): the summary used to group by network, array, dataflow and batch alone, so "best with ≤ P" took
the best over different SRAM sizes — at the sweep's smallest P, where it must equal the speedup, it
did not (the report's "(≤P)" columns showed it)."""

from __future__ import annotations

import math

import pandas as pd

from archsim.sweep.design import DESIGN_COLUMNS
from archsim.sweep.summary import DESIGN_AXES, summarize


def _row(sram_kb: int, processors: int, speedup: float, clock: float = math.nan) -> dict[str, object]:
    return {"network": "n", "only": "all", "rows": 8, "cols": 8, "dataflow": "ws", "batch": 4, "mode": "exact",
            "processors": processors, "method": "pipedream", "speedup": speedup, "additional_comm_bytes": 0.0,
            "mandatory_comm_bytes": 0.0, "sram_kb": sram_kb, "bandwidth_words_per_cycle": 10,
            "element_bytes": 1, "microbatches": 1, "energy_table": "horowitz45", "clock_ghz": clock}


def test_best_with_at_most_p_processors_stays_within_one_design():
    # SRAM 64 KiB: 1.2 at 2 processors, 1.5 at 3; SRAM 256 KiB: 1.8 at 2, 1.6 at 3 (a dip)
    results = pd.DataFrame([_row(64, 2, 1.2), _row(64, 3, 1.5), _row(256, 2, 1.8), _row(256, 3, 1.6)])
    summary = summarize(results).set_index("processors")
    assert summary.loc[2, "speedup_upto"] == (1.2 + 1.8) / 2  # the smallest P: each design's own speedup
    assert summary.loc[3, "speedup_upto"] == (1.5 + 1.8) / 2  # the 256 KiB design keeps its 1.8


def test_an_absent_clock_still_counts_every_row():
    """A design sweep without clocks writes clock_ghz as NaN: grouping by it must not drop the rows."""
    results = pd.DataFrame([_row(64, 2, 1.2), _row(64, 3, 1.5)])
    summary = summarize(results).set_index("processors")
    assert summary.loc[3, "speedup_upto"] == 1.5 and summary.loc[3, "configs"] == 1


def test_the_axes_are_design_columns():
    assert set(DESIGN_AXES) <= set(DESIGN_COLUMNS)
