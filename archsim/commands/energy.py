"""``archsim energy``: energy of one training iteration by part (MACs, array registers, SRAM reads and
writes per operand, DRAM, vector unit, leakage) and op kind, plus the array's area."""

from __future__ import annotations

import argparse
from pathlib import Path

from archsim.array.config import ArrayConfig
from archsim.commands import Command
from archsim.commands.common import (
    MODE_HELP,
    add_array_arguments,
    add_clock_argument,
    add_engine_arguments,
    add_network_arguments,
    add_output_arguments,
    costed_array,
    emit,
    network_from_args,
    positive_int,
    warn_array_size,
    width_meta,
    with_clock,
    with_memory_args,
)
from archsim.console import say_after_run
from archsim.modes import MODES


def add_energy_table_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--energy-table", default=None, metavar="NAME|FILE.toml",
                        help="per-access energy/area table (default: the .cfg's [energy] table, else horowitz45; "
                             "configs/energy/)")


def energies_from_args(array: ArrayConfig, args: argparse.Namespace):
    """(table, per-event energies) for ``array`` (:func:`archsim.energy.table.energies_for`)."""
    from archsim.energy.table import energies_for

    return energies_for(array, args.energy_table, getattr(args, "config", None))


def energy_array(args: argparse.Namespace) -> ArrayConfig:
    """The array energy prices: a ``.cfg``'s or the flags' (:func:`~archsim.commands.common.costed_array`), or a
    device TOML's one array kind as train's energy model reads it
    (:func:`~archsim.training.energy.device_file_array`), reshaped, sized and clocked by the same flags, with the
    notes a ``.cfg`` device file gets and the warnings train gives the file, said after the run."""
    if not (args.config and Path(args.config).suffix.lower() == ".toml"):
        return costed_array(args)
    from archsim.array.device_sections import device_arrays_note, device_dtype_note
    from archsim.array.options import element_width, reshaped
    from archsim.devices.device_file import implausible_figures
    from archsim.training.energy import device_file_array

    width = element_width(args.dtype, args.element_bytes)
    device, found = device_file_array(args.config, 1 if width is None else width)
    array = reshaped(found, args.array, args.dataflow)
    warn_array_size(array.rows, array.cols, args.array, args.config)
    for text in (device_arrays_note(args.config), None if width is not None else device_dtype_note(args.config)):
        if text:
            say_after_run("note", text)
    for line in implausible_figures(device):
        say_after_run("warning", line)
    return with_clock(with_memory_args(array, args), args)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_network_arguments(parser)
    add_array_arguments(parser)
    parser.add_argument("--batch", type=positive_int, default=32, help="mini-batch size (default 32)")
    parser.add_argument("--microbatches", type=positive_int, default=1,
                        help="run the batch as M micro-batches of batch/M (default 1)")
    parser.add_argument("--mode", default="exact", choices=MODES, help=MODE_HELP)
    add_engine_arguments(parser)
    add_clock_argument(parser)
    add_energy_table_argument(parser)
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from archsim.array.options import memory_meta
    from archsim.energy import array_area
    from archsim.energy.model import iteration_energy_rows
    from archsim.outputs import render
    from archsim.rows import Rows

    network = network_from_args(args)
    array = energy_array(args)
    table, energies = energies_from_args(array, args)
    rows = iteration_energy_rows(network, array, args.batch, args.mode, args.engine, energies, args.microbatches)
    meta: dict[str, object] = {
        "network": network.name, "array": f"{array.rows}x{array.cols}", "dataflow": array.dataflow,
        "batch": args.batch, "microbatches": args.microbatches, "mode": args.mode, "engine": args.engine,
        **width_meta(args, array), "energy_table": table.name,
        "dram_counts": "cycle engine" if args.engine == "cycle" else "compulsory (each operand once per GEMM)",
        **memory_meta(array), **array_area(array, table).as_dict(),
    }
    if array.clock_hz is not None:
        meta["clock_ghz"] = array.clock_hz / 1e9
        total = rows[-1]  # the TOTAL row
        seconds = float(total["cycles"]) / array.clock_hz
        meta["iteration_seconds"] = seconds
        meta["average_power_w"] = float(total["energy_pj"]) * 1e-12 / seconds
    emit(render(Rows.of(rows), args.format, precision=args.precision, meta=meta), args)
    if args.config:
        from archsim.array.device_sections import device_static_note

        static = device_static_note(args.config)  # a chip's static power is train's and search's, unread here
        if static:
            say_after_run("note", static)
    return 0


COMMAND = Command("energy", "energy of one training iteration by part and op, and the array's area",
                  add_arguments, run)
