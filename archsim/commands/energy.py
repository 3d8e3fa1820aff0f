"""``archsim energy``: energy of one training iteration by part (MACs, array registers, SRAM reads and
writes per operand, DRAM, vector unit, leakage) and op kind, plus the array's area."""

from __future__ import annotations

import argparse

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
    with_clock,
    with_memory_args,
)
from archsim.console import say_after_run
from archsim.modes import MODES


def add_energy_table_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--energy-table", default=None, metavar="NAME|FILE.toml",
                        help="per-access energy/area table (default: the .cfg's [energy] table, else horowitz45; "
                             "configs/energy/)")


def energy_array(args: argparse.Namespace) -> ArrayConfig:
    """The array energy prices: a ``.cfg``'s or the flags' (:func:`~archsim.commands.common.costed_array`), or a
    device TOML's one array kind (:func:`archsim.energy_run.device_toml_array`), sized and clocked by the same
    flags."""
    from archsim.array.options import element_width
    from archsim.energy_run import device_toml_array, is_device_toml

    if not is_device_toml(args.config):
        return costed_array(args)
    width = element_width(args.dtype, args.element_bytes)
    array = device_toml_array(args.config, args.array, args.dataflow, width)
    if args.engine == "cycle" and args.dram_bandwidth is None:  # as a .cfg's (commands.common.array_from_args)
        from archsim.array.options import hbm_unread_note

        unread = hbm_unread_note(args.config, width or 1, args.bandwidth_flag.lstrip("-"))
        if unread:
            say_after_run("note", unread)
    return with_clock(with_memory_args(array, args), args)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_network_arguments(parser)
    add_array_arguments(parser, device_toml=True)
    parser.add_argument("--batch", type=positive_int, default=32, help="mini-batch size (default 32)")
    parser.add_argument("--microbatches", type=positive_int, default=1,
                        help="run the batch as M micro-batches of batch/M (default 1)")
    parser.add_argument("--mode", default="exact", choices=MODES, help=MODE_HELP)
    add_engine_arguments(parser)
    add_clock_argument(parser)
    add_energy_table_argument(parser)
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from archsim.energy_run import energy_document
    from archsim.outputs import render
    from archsim.rows import Rows

    network = network_from_args(args)
    array = energy_array(args)
    rows, meta, static = energy_document(network, array, batch=args.batch, microbatches=args.microbatches,
                                         mode=args.mode, engine=args.engine, dtype=args.dtype,
                                         energy_table=args.energy_table, config=args.config)
    emit(render(Rows.of(rows), args.format, precision=args.precision, meta=meta), args)
    if static:  # a chip's static power is train's and search's, unread here
        say_after_run("note", static)
    return 0


COMMAND = Command("energy", "energy of one training iteration by part and op, and the array's area",
                  add_arguments, run)
