"""Result rows rendered without pandas: the same text, CSV and JSON as the rows in a DataFrame.

Importing pandas costs about a quarter of a second, more than a small command's whole answer. A
command whose result is a few records hands :func:`archsim.outputs.render` a :class:`Rows`; this
module renders it as pandas would (``DataFrame(records)``: a column of ints is int64, of ints and
floats float64, of bools bool, of text str), and gives up — returning None, so the caller renders
through pandas — on anything else (missing keys, None, mixed types, no rows, text pandas would
escape). ``tests/test_rows.py`` checks the two paths give the same bytes.

One exception, which a caller asks for by name: :attr:`Rows.counts`, columns of whole numbers some rows have no
value in (``archsim train``'s GEMM shapes, none on a collective's row). pandas makes such a column float64 (``32.0``,
NaN); here it stays whole numbers, ``32`` and an empty CSV cell, JSON's ``null``, a table's ``nan``. The DataFrame
(:meth:`Rows.frame`) keeps pandas' float64, the column as pandas reads that CSV back.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from archsim.json_text import dumps
from archsim.validate import is_nan

_INT64 = (-(2**63), 2**63)


@dataclass(frozen=True)
class Rows:
    """Records (one dict per row, every row with the same keys in the same order); ``counts``: the columns written as
    whole numbers where some rows have none (None), not as pandas' floats (the module's docstring)."""

    records: tuple[dict, ...]
    counts: tuple[str, ...] = ()

    @classmethod
    def of(cls, records, counts: tuple[str, ...] = ()) -> Rows:
        return cls(tuple(records), tuple(counts))

    def frame(self):
        """The same records as a DataFrame (imports pandas)."""
        import pandas as pd

        return pd.DataFrame(list(self.records))


def python_scalar(value: Any) -> Any:
    """``value`` as Python's own scalar where it is numpy's (``np.bool_`` → ``bool``, an integer → ``int``, a
    float → ``float``, each the same value), so a cell prints and compares as Python's; anything else as is."""
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def _kind(values: list) -> str | None:
    """pandas' dtype for a column of these values (bool, int, float, str), or None: not handled here."""
    types = {type(v) for v in values}
    if types == {bool}:
        return "bool"
    if types == {int}:
        return "int" if all(_INT64[0] <= v < _INT64[1] for v in values) else None
    if types == {float} or types == {int, float}:
        return "float"
    if types == {str}:
        return None if any(c in v for v in values for c in "\t\r\n") else "str"
    return None


def _count(values: list) -> bool:
    """Whether a column of :attr:`Rows.counts` is whole numbers (int64's) and no value (None) alone."""
    return all(v is None or (type(v) is int and _INT64[0] <= v < _INT64[1]) for v in values)


def columns(rows: Rows) -> tuple[list[str], list[list], list[str]] | None:
    """Column names, values (floats where pandas makes float64) and kinds (``count``: a column of
    :attr:`Rows.counts`), or None (see the module)."""
    if not rows.records:
        return None
    names = list(rows.records[0])
    if any(not isinstance(n, str) for n in names) or any(list(r) != names for r in rows.records[1:]):
        return None
    values, kinds = [], []
    for name in names:
        column = [python_scalar(r[name]) for r in rows.records]
        kind = "count" if name in rows.counts and _count(column) else _kind(column)
        if kind is None:
            return None
        values.append([float(v) for v in column] if kind == "float" else column)
        kinds.append(kind)
    return names, values, kinds


def table(names: list[str], values: list[list], kinds: list[str], number: Callable[[object], str]) -> str:
    """pandas' ``to_string(index=False)`` after float columns were mapped through ``number``: every
    column right-aligned, a numeric (int, bool) column's header one space wider, one space between."""
    out_columns = []
    for name, column, kind in zip(names, values, kinds):
        cells = [number(v) for v in column] if kind in ("float", "count") else [str(v) for v in column]
        header = str(name)
        width = max(len(header) + (kind in ("int", "bool", "count")), *(len(c) for c in cells))
        out_columns.append([header.rjust(width)] + [c.rjust(width) for c in cells])
    return "\n".join(" ".join(line) for line in zip(*out_columns))


def _csv_cell(value: object, kind: str) -> object:
    if kind == "float":
        return "" if is_nan(value) else repr(value)
    if value is None:
        return ""
    return value


def to_csv(names: list[str], values: list[list], kinds: list[str], extra: Mapping[str, Any]) -> str | None:
    """pandas' ``to_csv(index=False)`` of the columns plus ``extra`` (one value repeated per row)."""
    extra_kinds = {}
    for key, value in extra.items():
        if value is None or isinstance(value, str):
            extra_kinds[key] = "str"
        else:
            kind = _kind([value])
            if kind is None:
                return None
            extra_kinds[key] = kind
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*names, *extra])
    tail = [_csv_cell(float(v) if extra_kinds[k] == "float" else v, extra_kinds[k]) for k, v in extra.items()]
    for row in zip(*values):
        writer.writerow([*(_csv_cell(v, k) for v, k in zip(row, kinds)), *tail])
    return buffer.getvalue()


def to_json(names: list[str], values: list[list], meta: Mapping[str, object]) -> str:
    """``{"meta": …, "rows": […]}`` as :func:`archsim.outputs.render` writes a DataFrame's (NaN: ``null``)."""
    records = [dict(zip(names, row)) for row in zip(*values)]
    return dumps({"meta": meta, "rows": records}, indent=2) + "\n"
