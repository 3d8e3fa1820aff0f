"""The rows of ``gpu_efficiency_probe.py``'s CSV: its columns and one row per measurement (``section``
names what was measured; read by :func:`archsim.training.calibrate.read_probe`)."""

from __future__ import annotations

from benchmarks.gpu_timing import Spread

COLUMNS = ("section", "name", "model", "micro_batch", "layout", "m", "k", "n", "count", "bytes", "ops",
           "seconds", "min_seconds", "max_seconds", "repeats")


def row(section: str, name: str, timing: Spread, columns: tuple[str, ...] = COLUMNS, **fields) -> dict[str, object]:
    """One measurement: its spread in seconds (median, min, max, repeats) and the named columns; the rest of
    ``columns`` (this probe's, or another measuring script's with the same timing columns) empty."""
    median, low, high, repeats = timing
    out: dict[str, object] = {c: "" for c in columns}
    out.update(section=section, name=name, seconds=f"{median:.6e}", min_seconds=f"{low:.6e}",
               max_seconds=f"{high:.6e}", repeats=repeats, **fields)
    return out
