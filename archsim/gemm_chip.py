"""``archsim gemm``'s chip column: where ``--config`` is a device file of several arrays, each GEMM's seconds on the
whole chip (``chip_seconds``) and the chip in the meta (``chip_*``, ``per_array``), added to the rows of
:func:`archsim.array.gemm_run.run_gemm` by its two callers, the command and :func:`archsim.gemm`. Here, one level
above ``array/``, because the chip is read and timed by the device model (:mod:`archsim.chip_time`, ``devices/``),
which the array package never imports. The rule is the one ``cost`` and ``energy`` take
(:func:`archsim.chip_time.chip_seconds`): train's op timing, under ``--engine cycle`` the cycle engine's cycles
of the busiest array's share of the GEMM at the chip's clock, floored at the GEMM's HBM bytes ÷ ``hbm_gbps`` (the
meta's ``chip_hbm_floor_ops``: the GEMMs it bound). Seconds."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from archsim.array.gemm_run import GemmRun

ONE_ARRAY_FIGURES = ("cycles, their seconds, folds and utilizations: one array's (SCALE-Sim's count); the SRAM and "
                     "DRAM counts: the GEMM's, the same on one array or all")
"""The meta's ``per_array`` on a device file of several arrays, before what it says of ``chip_seconds``."""


def per_array(engine: str) -> str:
    """The meta's ``per_array``: which of gemm's figures are one array's and which the chip's, under ``engine``."""
    chip = "train's op timing" if engine != "cycle" else "the cycle engine's, as chip_seconds_by says"
    return f"{ONE_ARRAY_FIGURES}; chip_seconds: the chip's, {chip}"


def with_chip_seconds(done: GemmRun, config: str | Path | None, *, engine: str, dtype: str | None,
                      shapes: bool) -> GemmRun:
    """``done`` with a ``chip_seconds`` column (last) and the chip's meta where ``config`` is a device file of several
    arrays that ``train`` reads (:func:`~archsim.chip_time.several_array_chip`, its arrays of the costed array's
    clock and of each row's shape and dataflow); ``done`` itself otherwise. ``dtype``: the ``--dtype`` given (None: the width's own
    name, else SCALE-Sim's int8); ``shapes``: the rows came from a shapes file, each naming its own array, so the
    meta names no ``chip_array``."""
    if config is None:
        return done
    from dataclasses import replace

    from archsim.array.gemm_run import SHAPE_COLUMNS
    from archsim.array.options import dtype_meta
    from archsim.chip_time import chip_meta, floor_meta, gemm_chip_seconds, several_array_chip
    from archsim.choices.devices import SCALESIM_DTYPE
    from archsim.rows import Rows

    table = done.table
    rows = ([tuple(record[column] for column in SHAPE_COLUMNS) for record in table.records] if isinstance(table, Rows)
            else list(table[list(SHAPE_COLUMNS)].itertuples(index=False, name=None)))
    array = done.array
    if not shapes:  # one GEMM, on --array and --dataflow where given: the chip's arrays the meta names
        [(_, _, _, height, width, dataflow)] = rows
        array = replace(array, rows=int(height), cols=int(width), dataflow=str(dataflow))
    chip = several_array_chip(config, array)
    if chip is None:
        return done
    seconds, floored = gemm_chip_seconds(rows, chip, done.array, engine,
                                         dtype_meta(dtype, done.array) or SCALESIM_DTYPE, done.array.element_bytes)
    if isinstance(table, Rows):
        table = Rows.of([{**record, "chip_seconds": value} for record, value in zip(table.records, seconds, strict=True)],
                        table.counts)
    else:
        table = table.assign(chip_seconds=seconds)
    named = {name: value for name, value in chip_meta(chip, engine).items() if not (shapes and name == "chip_array")}
    return replace(done, table=table, meta={**done.meta, **named, **floor_meta(floored, engine),
                                            "per_array": per_array(engine)})


__all__ = ["per_array", "with_chip_seconds"]
