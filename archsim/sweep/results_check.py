"""A results folder's results.csv checked before a report draws it: whole rows of numbers, and the rows its
``spec.json`` (the spec last run there) gives. A report of rows cut short, edited, deleted or left by another run
would draw them as the sweep's, or fail on them with a traceback; each is one error line instead."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from archsim.errors import InputError

if TYPE_CHECKING:  # pandas loads when a report is written
    import pandas as pd

DEVICE_NUMBERS = ("rows", "cols", "hbm_gbps", "gpus", "global_batch", "micro_batch", "static_watts", "iteration_seconds",
                  "energy_j", "peak_memory_gib", "memory_capacity_gib")  # a device sweep's, never empty


def check_cells(text: str, frame: pd.DataFrame, path: Path, numeric: list[str], flags: tuple[str, ...] = ()) -> None:
    """Refuse a results.csv a report would draw wrong or fail on: cut inside a row, an empty or edited cell in a
    ``numeric`` column, a ``flags`` cell other than True/False (one line naming the file, line and column)."""
    import pandas as pd

    if not text.endswith("\n"):  # archsim writes whole lines, atomically: a file without one was cut short
        raise InputError("the file ends inside a row (cut short?): rerun the sweep that wrote it", file=str(path),
                         line=text.count("\n") + 1)
    numbers = frame[numeric]
    empty = numbers.isna().to_numpy().nonzero()
    if len(empty[0]):  # a row with fewer cells than the header: a report would show NaN
        row, column = int(empty[0][0]), numbers.columns[int(empty[1][0])]
        raise InputError("empty cell (a row cut short?): rerun the sweep that wrote it", file=str(path),
                         line=row + 2, field=column)
    for column in numbers.columns:  # an edited cell ("x"): a report's figures would fail on it, not say where
        bad = pd.to_numeric(numbers[column], errors="coerce").isna().to_numpy().nonzero()[0]
        if len(bad):
            raise InputError(f"not a number ({numbers[column].iloc[int(bad[0])]!r}): rerun the sweep that wrote it",
                             file=str(path), line=int(bad[0]) + 2, field=column)
    for column in flags:
        bad = (~frame[column].isin([True, False])).to_numpy().nonzero()[0]
        if len(bad):
            raise InputError(f"expected True or False, got {frame[column].iloc[int(bad[0])]!r}: rerun the sweep that "
                             "wrote it", file=str(path), line=int(bad[0]) + 2, field=column)


def check_spec_rows(results: pd.DataFrame, record: dict, path: Path, command: str) -> None:
    """Refuse a results.csv the folder's spec.json (the spec last run there) did not give: a value off its axes
    (an edited spec rerun and stopped before its results were written: the old rows stayed under the new
    record) or another row count than its axes' product (rows deleted at a row boundary). A folder with no
    record, or an older version's, is not compared. The points PipeDream skipped (spec.json's ``skipped_points``)
    have no rows."""
    from archsim.sweep.pipedream_points import skipped_rows
    from archsim.sweep.spec import method_runs

    lists: list[list] = [value for key in ("networks", "arrays", "batches", "processors", "methods")
                         if isinstance(value := record.get(key), list) and value]
    if len(lists) < 5:  # no record, or an older version's: not compared
        return
    networks, arrays, batches, processors, methods = lists
    dataflows, designs = record.get("dataflows") or [], record.get("designs") or []
    values = {"network": {Path(str(n)).stem for n in networks}, "batch": set(batches), "processors": set(processors),
              "method": set(methods), "dataflow": set(dataflows), "mode": {record.get("mode")}}
    rerun = f"rerun `{command}` to bring them together"
    for column, allowed in values.items():
        stray = results.index[~results[column].isin(allowed)] if allowed - {None} else []
        if len(stray):
            raise InputError(f"{column} {results.at[stray[0], column]!r} is not on the axes of the folder's spec.json "
                             f"(the spec last run here): these rows are another run's; {rerun}", file=str(path),
                             line=int(stray[0]) + 2, field=column)
    _check_settings(results, record, path, rerun)
    borrow = recorded_borrow(record)
    _check_borrow(results, borrow, path, rerun)
    runs = len(method_runs(tuple(map(str, methods)), borrow))  # LayerPipe's rows once per borrow value
    clocks = len(designs[0].get("clocks_ghz") or []) if designs and isinstance(designs[0], dict) else 0
    expected = (len(networks) * len(arrays) * max(1, len(dataflows)) * len(batches) * max(1, len(designs))
                * len(processors) * runs * max(1, clocks)) - skipped_rows(record)  # PipeDream's, not run
    if len(results) != expected:
        raise InputError(f"{len(results):,} rows, where the folder's spec.json gives {expected:,} configurations "
                         f"(rows deleted, or another run's?); {rerun}", file=str(path))


def recorded_borrow(record: dict) -> tuple[str, ...]:
    """The LayerPipe ``borrow`` values a folder's spec.json records (a spec without the key records none: the
    printed walk alone, :data:`~archsim.sweep.spec.DEFAULT_BORROW`)."""
    from archsim.sweep.spec import DEFAULT_BORROW

    borrow = record.get("borrow")
    return tuple(map(str, borrow)) if isinstance(borrow, list) and borrow else DEFAULT_BORROW


def _check_borrow(results: pd.DataFrame, borrow: tuple[str, ...], path: Path, rerun: str) -> None:
    """Refuse a ``borrow`` column that spec.json's ``borrow`` does not give: one where it records the printed walk
    alone (no column then), or a LayerPipe row's value off its list."""
    from archsim.sweep.spec import BORROW_COLUMN, DEFAULT_BORROW

    if BORROW_COLUMN not in results.columns:
        if borrow != DEFAULT_BORROW:
            raise InputError(f"no {BORROW_COLUMN} column, where the folder's spec.json runs borrow "
                             f"{', '.join(borrow)}: these rows are another run's; {rerun}", file=str(path), line=1,
                             field=BORROW_COLUMN)
        return
    layerpipe = results[results["method"] == "layerpipe"]
    stray = layerpipe.index[~layerpipe[BORROW_COLUMN].isin(borrow)] if borrow != DEFAULT_BORROW else results.index
    if len(stray):
        raise InputError(f"layerpipe's {BORROW_COLUMN} {results.at[stray[0], BORROW_COLUMN]!r} is not on the folder's "
                         f"spec.json's borrow ({', '.join(borrow)}): these rows are another run's; {rerun}",
                         file=str(path), line=int(stray[0]) + 2, field=BORROW_COLUMN)


def _check_settings(results: pd.DataFrame, record: dict, path: Path, rerun: str) -> None:
    """Refuse LayerPipe rows whose ``alpha`` or ``split_axes`` cell is not the folder's spec.json's: an edited alpha
    rerun and stopped before its results were written leaves the old rows, on the same axes, under the new record.
    A results.csv from before these columns, or a record without them, is not compared."""
    axes = record.get("split_axes")
    alpha = record.get("alpha")
    recorded = {"alpha": float(alpha) if isinstance(alpha, (int, float)) and not isinstance(alpha, bool) else None,
                "split_axes": "+".join(map(str, axes)) if isinstance(axes, list) and axes else None}
    layerpipe = results[results["method"] == "layerpipe"]
    for column, value in recorded.items():
        if value is None or column not in results.columns:
            continue
        stray = layerpipe.index[layerpipe[column] != value]
        if len(stray):
            cell = results.at[stray[0], column]
            shown = "empty" if isinstance(cell, float) and math.isnan(cell) else f"{cell:g}" if isinstance(cell, float) \
                else repr(str(cell))
            said = f"{value:g}" if isinstance(value, float) else repr(value)
            raise InputError(f"layerpipe's {column} {shown} is not the folder's spec.json's {said} (the spec last run "
                             f"here): these rows are another run's; {rerun}", file=str(path), line=int(stray[0]) + 2,
                             field=column)


def check_device_rows(results: pd.DataFrame, record: dict, path: Path, command: str) -> None:
    """Refuse a device sweep's results.csv with another row count than its spec.json's axes multiplied, less the
    skipped layouts' points (rows deleted, or another run's), as :func:`check_spec_rows` refuses a plain sweep's."""
    axes: list[list] = [axis for key in ("arrays", "hbm_gbps", "chips", "sram_kib_per_array")
                        if isinstance(axis := record.get(key), list)]
    if len(axes) < 4:  # no record, or an older version's: not compared
        return
    later = [record.get(key, [None]) for key in ("clocks_ghz", "tp", "pp")]  # a record from before these axes: one
    skipped = record.get("skipped") or []
    if not all(isinstance(axis, list) for axis in later) or not isinstance(skipped, list):
        return
    expected = math.prod([len(axis) for axis in axes + later])
    expected -= len(skipped) * expected // (len(axes[2]) * len(later[1]) * len(later[2]))  # a skipped layout's points
    if len(results) != expected:
        raise InputError(f"{len(results):,} rows, where the folder's spec.json gives {expected:,} points (rows deleted, "
                         f"or another run's?); rerun `{command}` to bring them together", file=str(path))
