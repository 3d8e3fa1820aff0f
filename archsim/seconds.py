"""Seconds beside cycles: a table's ``X_cycles`` columns at an array clock (Hz), for the array
commands and ``archsim.cost`` alike. Imports neither numpy nor pandas until a table needs them."""

from __future__ import annotations


def add_seconds(frame, clock_hz: float | None):
    """A copy of ``frame`` (a DataFrame or :class:`~archsim.rows.Rows`) with ``X_seconds`` right after
    every numeric ``X_cycles`` column (``seconds`` after ``cycles``) at ``clock_hz``; ``frame`` itself
    when the clock is unknown. Rows stay rows (no pandas) where every such column is all numbers."""
    if clock_hz is None:
        return frame
    from archsim.rows import Rows

    if isinstance(frame, Rows):
        rows = _rows_with_seconds(frame, clock_hz)
        if rows is not None:
            return rows
        frame = frame.frame()
    import pandas as pd

    out = frame.copy()
    for column in [str(c) for c in frame.columns if str(c).endswith("cycles")]:
        name = column[: -len("cycles")] + "seconds"
        if name not in out.columns:
            values = pd.to_numeric(frame[column], errors="coerce") / clock_hz
            out.insert(out.columns.get_loc(column) + 1, name, values)
    return out


def _rows_with_seconds(rows, clock_hz: float):
    """:func:`add_seconds` on plain rows, or None where a ``cycles`` column is not all numbers (pandas'
    coercion to NaN then decides) or the rows differ in their keys."""
    from numbers import Real

    from archsim.rows import Rows

    if not rows.records or any(list(r) != list(rows.records[0]) for r in rows.records):
        return None
    names = [str(c) for c in rows.records[0] if str(c).endswith("cycles")]
    if any(not isinstance(r[c], Real) or isinstance(r[c], bool) for r in rows.records for c in names):
        return None
    out = []
    for record in rows.records:
        row = {}
        for key, value in record.items():
            row[key] = value
            name = str(key)[: -len("cycles")] + "seconds"
            if key in names and name not in record:
                row[name] = float(value) / clock_hz
        out.append(row)
    return Rows.of(out)
