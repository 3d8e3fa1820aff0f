"""The table/csv/json renderings every command shares (files are written by :mod:`archsim.output_files`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from archsim.choices.outputs import FORMATS
from archsim.errors import InputError
from archsim.json_text import dumps
from archsim.output_files import write_output
from archsim.rows import Rows, columns, python_scalar, table, to_csv, to_json

if TYPE_CHECKING:
    import pandas as pd


atomic_write_text = write_output  # the older name, which the benchmark scripts call
__all__ = ["PAIRS", "PairLine", "atomic_write_text", "csv_frame", "csv_number", "flat_meta", "format_number",
           "meta_columns", "render", "with_meta_columns",]


@dataclass(frozen=True)
class PairLine:
    """How csv and the table write one of :data:`PAIRS` in one line: ``key{link}value{unit}``, joined by ``sep``."""

    unit: str = ""
    link: str = ":"
    sep: str = "; "


# JSON meta entries of numbers by a key that csv and the table write as one ``key:value; …`` line (a csv cell and a
# ``# name:`` line hold one value, where a JSON reader wants the numbers). A list of records (plan's
# ``stage_counts``: ``{"stages": 2, "makespan_seconds": 0.14}``; ``bppsa pruned-vgg11``'s ``*_by_up_levels``:
# ``{"up_levels": 1, "steps": 12}``) pairs each record's first field with its second; an object (plan's
# ``baselines_seconds``: method → seconds; ``energy_figures``: key → pJ) each name with its value.
PAIRS = {"stage_counts": PairLine(unit="s"), "baselines_seconds": PairLine(), "steps_by_up_levels": PairLine(),
         "critical_path_flops_by_up_levels": PairLine(), "work_flops_by_up_levels": PairLine(),
         "energy_figures": PairLine(link="=", sep=", "), "jacobian_density": PairLine()}


def format_number(value: object, float_format: str = "{:.4g}") -> str:
    """How a table shows one value: integers (and integral floats, e.g. cycle sums) in full, other floats with
    ``float_format`` (4 significant digits by default) — but never with a positive exponent below 10¹⁵: a float
    those digits would write as ``2.069e+09`` is shown to the unit, ``2069069434``, as a whole one is, so a column
    of cycles reads alike whether or not a value is whole (as the HTML pages' tables show numbers:
    :func:`archsim.report.style.table_number`); no value (None: JSON's null) as ``nan``, as a NaN shows,
    everything else as is."""
    value = python_scalar(value)
    if value is None:
        return "nan"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if abs(value) < 1e15 and (value.is_integer() or "e+" in float_format.format(value)):
            return str(round(value))
        return float_format.format(value)
    return str(value)


def csv_number(value: object) -> str:
    """A number as csv writes it in a line of text: a float at full precision (``repr``, so a reader gets JSON's
    float back), anything else as ``str``."""
    value = python_scalar(value)
    return repr(value) if isinstance(value, float) else str(value)


def flat_meta(meta: Mapping[str, object] | None, show: Callable[[object], str] = csv_number) -> dict:
    """``meta`` with each of :data:`PAIRS` (JSON's numbers by a key) as one ``key:value; …`` line (its
    :class:`PairLine`), each value written by ``show`` (csv: :func:`csv_number`, full precision; the table: :func:`format_number` to its digits,
    ``--precision``) and followed by its unit; every other entry as is."""
    out = dict(meta or {})
    for name, line in PAIRS.items():
        value = out.get(name)
        if isinstance(value, dict):
            pairs = list(value.items())
        elif isinstance(value, list) and all(isinstance(record, dict) for record in value):
            pairs = [tuple(list(record.values())[:2]) for record in value]
        else:
            continue
        out[name] = line.sep.join(f"{key}{line.link}{show(number)}{line.unit}" for key, number in pairs)
    return out


def meta_columns(meta: Mapping[str, object] | None, columns) -> dict[str, object]:
    """The meta entries a CSV carries as columns: every single value (numbers, text, flags) whose name
    is not already a column, :data:`PAIRS` as one line of text each (:func:`flat_meta`); other lists and tables
    (JSON's nested entries) have no cell to go in."""
    return {key: python_scalar(value) for key, value in flat_meta(meta).items()
            if key not in columns and (value is None or isinstance(value, (str, int, float, bool, np.generic)))}


def with_meta_columns(frame: pd.DataFrame, meta: Mapping[str, object] | None) -> pd.DataFrame:
    extra = meta_columns(meta, set(frame.columns))
    return frame.assign(**extra) if extra and len(frame) else frame


def csv_frame(frame: pd.DataFrame | Rows, meta: Mapping[str, object] | None = None) -> pd.DataFrame:
    """The rows :func:`render` writes as ``--format csv``, as a DataFrame: ``frame``'s columns, then each single
    meta value as a column of its own (:func:`meta_columns`); what every result's ``to_frame()`` returns, so a
    result's frame and its command's CSV are one table (imports pandas)."""
    return with_meta_columns(frame.frame() if isinstance(frame, Rows) else frame, meta)


def _table_header(meta: Mapping[str, object] | None, float_format: str) -> str:
    """The ``# key: value`` lines above a table: each value by :func:`format_number`, :data:`PAIRS`' numbers too."""
    def show(value: object) -> str:
        return format_number(value, float_format)

    return "".join(f"# {k}: {show(v)}\n" for k, v in flat_meta(meta, show).items())


def _blank_column(cells: list) -> bool:
    """Whether a table leaves this column out: rows, and every cell empty text (search's ``cp_comm`` at CP 1, its
    ``stage_layers`` on Megatron's even split, a sweep's ``error`` where every point ran). Why: a blank column under
    its name reads as the next column's numbers shifted; optional columns are already absent where no row sets
    them (``ep``, ``fsdp``, ``cp_hierarchy``). CSV and JSON keep it: their readers find the column by name."""
    return bool(cells) and all(isinstance(cell, str) and not cell for cell in cells)


def render(frame: pd.DataFrame | Rows, fmt: str, *, meta: Mapping[str, object] | None = None,
           float_format: str = "{:.4g}", precision: int | None = None) -> str:
    """Render a result frame as an aligned table, CSV, or JSON (``{"meta": …, "rows": […]}``; RFC 8259:
    NaN and infinities are ``null``, :mod:`archsim.json_text`).

    The table (for reading) formats numbers with :func:`format_number`, in the ``# key: value``
    header lines too (:data:`PAIRS`' numbers in their one line each), to ``precision`` significant digits when
    given, and leaves out a column empty in every row
    (:func:`_blank_column`); CSV and JSON keep full precision and every column (csv :data:`PAIRS` as one line each).
    Plain :class:`~archsim.rows.Rows` render the same bytes without importing pandas where they can."""
    if precision is not None:
        float_format = f"{{:.{precision}g}}"
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}", field="format")
    if isinstance(frame, Rows):
        text = _render_rows(frame, fmt, meta, float_format)
        if text is not None:
            return text
        frame = frame.frame()
    import pandas as pd
    if fmt == "csv":  # the meta's values too (as columns after the rows' own), so csv loses nothing json has
        return csv_frame(frame, meta).to_csv(index=False)
    if fmt == "json":
        return dumps({"meta": meta or {}, "rows": frame.to_dict(orient="records")}, indent=2) + "\n"
    shown = frame[[c for c in frame.columns if not _blank_column(frame[c].tolist())]].copy()
    for column in shown.columns:
        if pd.api.types.is_float_dtype(shown[column]):
            shown[column] = shown[column].map(lambda x: format_number(x, float_format))
        elif pd.api.types.is_object_dtype(shown[column]):  # None among text or flags: no value, "nan"
            shown[column] = shown[column].map(lambda x: "nan" if x is None else x)
    header = _table_header(meta, float_format)
    if shown.empty:  # pandas would print "Empty DataFrame / Columns: […] / Index: []"
        return header + " ".join(map(str, shown.columns)) + "\n"
    return header + shown.to_string(index=False) + "\n"


def _render_rows(rows: Rows, fmt: str, meta: Mapping[str, object] | None, float_format: str) -> str | None:
    """:func:`render`'s bytes for plain rows, or None when only pandas renders them (see archsim.rows)."""
    parsed = columns(rows)
    if parsed is None:
        return None
    names, values, kinds = parsed
    if fmt == "csv":
        return to_csv(names, values, kinds, meta_columns(meta, set(names)))
    if fmt == "json":
        return to_json(names, values, meta or {})
    kept = [i for i, column in enumerate(values) if not _blank_column(column)]
    names, values, kinds = [names[i] for i in kept], [values[i] for i in kept], [kinds[i] for i in kept]
    header = _table_header(meta, float_format)
    return header + table(names, values, kinds, lambda x: format_number(x, float_format)) + "\n"
