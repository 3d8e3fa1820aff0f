"""A device sweep report's scatter names its front's designs beside their markers: a page read as a picture (printed,
or a screenshot in a review) showed five unnamed diamonds, the design of each on hover alone, until 2026-12-04."""

from __future__ import annotations

import pandas as pd

from archsim.report.pareto import device_pareto_figure


def _rows(**extra: list) -> pd.DataFrame:
    # three designs: two on the front (fast and costly, slow and cheap), one beaten by the first in both
    return pd.DataFrame({"model": ["m"] * 3, "gpu": ["chip"] * 3, "arrays": ["8x256x256", "2x512x512", "8x256x256"],
                         "hbm_gbps": [4000.0, 4000.0, 1000.0], "gpus": [64, 16, 64],
                         "iteration_seconds": [0.38, 2.4, 0.72], "energy_j": [23644.0, 22050.0, 23700.0],
                         "peak_memory_gib": [22.97] * 3, "fits_memory": [True] * 3,
                         "pareto_optimal": [True, True, False], **extra})


def test_each_front_point_is_named_at_its_place_and_no_other():
    figure = device_pareto_figure(_rows())
    named = {(a.x, a.y): a.text for a in figure.layout.annotations}  # at each marker: joules, as the axis (2026-12-05)
    assert named == {(0.38, 23644.0): "8x256x256, 4000 GB/s, 64 chips", (2.4, 22050.0): "2x512x512, 4000 GB/s, 16 chips"}


def test_a_swept_clock_sram_and_layout_are_named_too():
    figure = device_pareto_figure(_rows(clock_ghz=[1.2, 0.8, 1.2], sram_kib_per_array=[8192, 96, 8192],
                                        tp=[1, 2, 1], pp=[1, 1, 1], dp=[64, 8, 64]))
    texts = sorted(a.text for a in figure.layout.annotations)
    assert texts == ["2x512x512, SRAM 96 KiB, 0.8 GHz, 4000 GB/s, 16 chips (TP 2 × PP 1 × DP 8)",
                     "8x256x256, SRAM 8192 KiB, 1.2 GHz, 4000 GB/s, 64 chips (TP 1 × PP 1 × DP 64)"]
