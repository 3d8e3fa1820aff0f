"""One look for every report: op-kind colours and labels, and how tables print numbers.

The same colour means the same op kind in every figure (Gantt charts, per-layer breakdowns):
F blue, G orange, D (δ) green, its split parts D1 (δ′) teal and D2 (δ″) purple, communication grey, a
data-parallel gradient synchronization (S) red.
"""

from __future__ import annotations

from archsim.validate import is_nan

# the zero-bubble names (I, W) take the colours of archsim's ops they are (D, G); B is both, FB SPP's fused block
KIND_COLORS = {"F": "#4C78A8", "G": "#F58518", "D": "#54A24B", "D1": "#72B7B2", "D2": "#B279A2",
               "U": "#9D755D", "comm": "#BAB0AC", "S": "#E45756", "I": "#54A24B", "W": "#F58518", "B": "#EECA3B",
               "FB": "#FF9DA6", "A": "#E45756"}
KIND_LABELS = {"F": "F (forward)", "G": "G (weight gradient)", "D": "D (δ, input gradient)", "D1": "D1 (δ′, split part)",
               "D2": "D2 (δ″, split part)", "U": "U (weight update)", "comm": "communication",
               "S": "S (gradient synchronization)", "I": "I (backward: input gradient)",
               "W": "W (backward: weight gradient)", "B": "B (backward: input and weight gradients)",
               "FB": "FB (a stage's forward then backward)", "A": "A (gradient all-reduce)"}

# a sweep's methods, in LayerPipe's paper's order (the page's order after the spec's: sweep_order.method_order)
METHOD_COLORS = {"layerpipe": "#E45756", "pipedream": "#4C78A8", "gpipe": "#72B7B2",
                 "layerpipe (gainful)": "#F58518"}  # LayerPipe's --borrow gainful rows (archsim.sweep.report)

# A design sweep's axes (archsim.sweep.design's columns that set a design, not its results), in the words a
# figure's title names them: the summary's means average over them (archsim.sweep.summary keys on these too
# for its "best with at most P processors", so the list lives here, where both read it).
DESIGN_AXIS_WORDS = {"sram_kb": "SRAM sizes", "bandwidth_words_per_cycle": "DRAM bandwidths",
                     "element_bytes": "element widths", "microbatches": "micro-batch counts",
                     "energy_table": "energy tables", "clock_ghz": "clocks", "dtype": "dtypes"}


def table_number(value: float, digits: int = 4) -> str:
    """A table cell: ``digits`` significant digits, but never an exponent for large values
    (109,000 rather than 1.09e+05)."""
    if is_nan(value):
        return ""
    if abs(value) >= 10 ** digits:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"
