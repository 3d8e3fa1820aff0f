"""Published numbers the reports compare against (typed from the papers, cited per table)."""

from __future__ import annotations

from typing import TypeVar

Speedup = TypeVar("Speedup")  # a float or a pandas Series of them


def improvement_pct(speedup: Speedup, baseline: Speedup) -> Speedup:
    """LayerPipe's Table IV "Improvement": a speedup ratio − 1, in percent (not a time reduction)."""
    return (speedup / baseline - 1.0) * 100.0  # type: ignore[operator]

# The grid Table IV averages over (§IV-C: "sweeping the systolic array size from 32 × 32 to 256 × 256 and the
# minibatch size from 16 to 256 in powers of 2", weight-stationary arrays): (rows, cols) and batches.
LAYERPIPE_TABLE_IV_ARRAYS = frozenset((side, side) for side in (32, 64, 128, 256))
LAYERPIPE_TABLE_IV_BATCHES = frozenset((16, 32, 64, 128, 256))

# LayerPipe (Unnikrishnan & Parhi, ICCAD 2021) Table IV: VGG16 conv layers, averaged over arrays 32..256 and
# batches 16..256: processors → (LayerPipe speedup, PipeDream speedup, communication overhead KiB:
# the paper's "KB", 1,024 bytes).
LAYERPIPE_TABLE_IV = {
    2: (1.93, 1.80, 0.0), 3: (2.75, 2.32, 0.0), 4: (3.59, 2.73, 0.0), 5: (4.35, 3.10, 0.26),
    6: (5.01, 3.10, 0.01), 7: (5.55, 3.10, 0.01), 8: (5.69, 3.10, 0.01), 9: (6.24, 3.47, 2.73),
    10: (6.69, 4.37, 2.61), 11: (6.88, 6.13, 1.49), 12: (6.88, 6.13, 0.0),
}

# Table IV's "Improvement" column as printed, in percent: the paper's own ratio of unrounded speedups, which the
# rounded speedups above give only to ±0.2 points (3 processors: 2.75 / 2.32 − 1 = 18.5%, printed 18.4%).
LAYERPIPE_TABLE_IV_IMPROVEMENT_PCT = {
    2: 7.2, 3: 18.4, 4: 31.7, 5: 40.2, 6: 61.8, 7: 79.0, 8: 83.5, 9: 80.0, 10: 52.9, 11: 12.4, 12: 12.4,
}
