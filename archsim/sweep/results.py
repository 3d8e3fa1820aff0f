"""results.csv's columns and rows: a unit's settings columns, the names older versions wrote read as today's, and
cached unit files assembled into one frame sorted by configuration (so order of completion never shows)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from archsim.errors import InputError
from archsim.split_axis import SPLIT_AXES
from archsim.sweep.spec import BORROW_COLUMN, DEFAULT_BORROW, SETTING_COLUMNS
from archsim.validate import parse_json, read_text

RESULT_COLUMNS = ["network", "only", "rows", "cols", "dataflow", "batch", "mode", "processors", "method",
                  "stages", "single_processor_cycles", "iteration_cycles", "speedup", "mandatory_comm_bytes",
                  "additional_comm_bytes"]
PROVENANCE_COLUMNS = ["network_path", "network_sha256"]  # the network a row costed: path or shipped name, hash
ARRAY_COLUMN = "array_path"  # the .cfg a row's array was read from: a column only where a spec names one
SORT_COLUMNS = ["network", "only", "rows", "cols", "dataflow", "batch", "mode", "processors", "method"]
# Columns results.csv (and its cached unit rows) named otherwise before every output took one name per
# quantity (docs/formats.md): old name → today's. Files written by older versions are read through it.
RENAMED_COLUMNS = {"single_cycles": "single_processor_cycles", "mandatory_bytes": "mandatory_comm_bytes",
                   "comm_overhead_bytes": "additional_comm_bytes", "cycles_per_iteration": "iteration_cycles",
                   "seconds_per_iteration": "iteration_seconds", "bandwidth": "bandwidth_words_per_cycle"}
DESIGN_BANDWIDTH = "bandwidth_words_per_cycle"  # a design row's DRAM words/cycle: the cycle engine's alone


def layerpipe_settings(method: str, alpha: float, axes: Iterable[str]) -> dict[str, object]:
    """A row's :data:`SETTING_COLUMNS`: ``alpha`` and the δ split ``axes`` where ``method`` is LayerPipe's, which
    reads them, else NaN (an empty cell): two folders run at two alphas give rows told apart."""
    if method != "layerpipe":
        return dict.fromkeys(SETTING_COLUMNS, math.nan)
    return {"alpha": float(alpha), "split_axes": "+".join(axes)}


def borrow_cell(swept: tuple[str, ...], borrow: str | None) -> dict[str, object]:
    """A row's ``borrow`` cell where the sweep runs LayerPipe's δ moves other than as printed alone (``swept``,
    the spec's ``borrow``): the value its LayerPipe plan used, NaN (empty) on another method's row; no cell
    at the default, so such a sweep writes the files it wrote before the key."""
    if swept == DEFAULT_BORROW:
        return {}
    return {BORROW_COLUMN: borrow if borrow is not None else math.nan}


def written_columns(columns: Iterable[str], borrow: bool = False) -> list[str]:
    """``columns`` with :data:`SETTING_COLUMNS` right after ``method`` (and ``borrow`` after them where ``borrow``:
    a sweep that runs it, :func:`borrow_cell`): their order in results.csv and summary.csv."""
    settings = SETTING_COLUMNS + ([BORROW_COLUMN] if borrow else [])
    columns = [c for c in columns if c not in settings]
    at = columns.index("method") + 1
    return columns[:at] + settings + columns[at:]


def current_names(names: Iterable[str]) -> dict[str, str]:
    """The renaming that gives older results' columns today's names (none already present is renamed
    onto a column the file has)."""
    names = list(names)
    return {old: new for old, new in RENAMED_COLUMNS.items() if old in names and new not in names}


def cached_rows(file: Path) -> list[dict[str, object]]:
    try:
        data = parse_json(read_text(file, "sweep cache file"), str(file))
    except InputError as exc:
        raise InputError(f"unreadable sweep cache file ({exc.__class__.__name__}); delete it to recompute",
                         file=str(file)) from None
    rows = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise InputError("unreadable sweep cache file (no rows); delete it to recompute", file=str(file))
    unit = data.get("unit") if isinstance(data, dict) else None
    return [_without_analytic_bandwidth(_with_settings(_renamed(row), unit), unit) if isinstance(row, dict) else row
            for row in rows]


def _without_analytic_bandwidth(row: dict[str, object], unit: object) -> dict[str, object]:
    """An analytic design row's ``bandwidth_words_per_cycle`` as today's (NaN: that engine reads no DRAM bandwidth):
    an entry written before 2026-12-05 holds the unused default 10, not recomputed."""
    if DESIGN_BANDWIDTH not in row or not isinstance(unit, dict) or unit.get("engine", "analytic") == "cycle":
        return row
    return {**row, DESIGN_BANDWIDTH: math.nan}


def _with_settings(row: dict[str, object], unit: object) -> dict[str, object]:
    """An array sweep's cached row with :data:`SETTING_COLUMNS`: an entry written before they were columns takes
    them from the unit it records (its key's settings, so never another alpha's), not recomputed."""
    if "alpha" in row or "method" not in row or not isinstance(unit, dict) or "alpha" not in unit:
        return row  # today's row, or a device point's
    axes = unit.get("split_axes", SPLIT_AXES)  # an entry from before the axes were a setting: every axis
    return {**row, **layerpipe_settings(str(row["method"]), float(unit["alpha"]), axes)}


def _renamed(row: dict[str, object]) -> dict[str, object]:
    """A cached row with an older version's column names under today's, and its nulls as the NaN they
    were written from (no sweep column holds None; older files wrote ``NaN`` itself)."""
    names = current_names(row)
    return {names.get(key, key): math.nan if value is None else value for key, value in row.items()}


def results_frame(rows: list[dict[str, object]]) -> pd.DataFrame:
    """Rows as results.csv orders them: sorted by configuration, design columns only when present."""
    from archsim.sweep.design import DESIGN_COLUMNS

    present = set().union(*rows)
    design = [c for c in DESIGN_COLUMNS if c in present]
    array = [ARRAY_COLUMN] if ARRAY_COLUMN in present else []  # two .cfg files of one shape are two arrays
    columns = written_columns(RESULT_COLUMNS, BORROW_COLUMN in present) + PROVENANCE_COLUMNS + array + design
    frame = pd.DataFrame(rows, columns=columns)
    # a configuration's two LayerPipe rows (paper, gainful) keep the spec's order: the rows come in units' order,
    # each unit's in method_runs', never in order of completion, and the sort is stable
    return frame.sort_values(SORT_COLUMNS + array + design[:6], kind="stable").reset_index(drop=True)


__all__ = ["ARRAY_COLUMN", "PROVENANCE_COLUMNS", "RENAMED_COLUMNS", "RESULT_COLUMNS", "SORT_COLUMNS", "borrow_cell",
           "cached_rows", "current_names", "layerpipe_settings", "results_frame", "written_columns"]
