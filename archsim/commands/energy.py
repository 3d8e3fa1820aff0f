"""``archsim energy``: energy of one training iteration by part (MACs, array registers, SRAM reads and
writes per operand, DRAM, vector unit, leakage) and op kind, plus the array's area."""

from __future__ import annotations

import argparse

from archsim.commands import Command
from archsim.commands.common import (
    BATCH_HELP,
    MODE_HELP,
    add_array_arguments,
    add_clock_argument,
    add_engine_arguments,
    add_output_arguments,
    config_array,
    emit,
    positive_int,
)
from archsim.commands.network_args import add_network_arguments, network_from_args
from archsim.console import say_after_run
from archsim.modes import MODES
from archsim.training.job_settings import elsewhere


def add_energy_table_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--energy-table", default=None, metavar="NAME|FILE.toml",
                        help="per-access energy/area table: it prices the energy and the meta's areas (pe_array_mm2, "
                             "sram_mm2, area_mm2; cost states those without --energy too) (default: the .cfg's "
                             "[energy] table, else horowitz45; configs/energy/)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_network_arguments(parser)
    add_array_arguments(parser, device_toml=True, fp8=True)
    parser.add_argument("--batch", type=positive_int, default=32, help=f"{BATCH_HELP['energy']} (default 32)")
    parser.add_argument("--microbatches", type=positive_int, default=1,
                        help="run the batch as M micro-batches of batch/M (pipeline's and schedule's "
                             "--microbatches run M of --batch each instead) (default 1)")
    parser.add_argument("--mode", default="exact", choices=MODES, help=MODE_HELP)
    add_engine_arguments(parser)
    add_clock_argument(parser)
    add_energy_table_argument(parser)
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from archsim.device_toml import device_toml_dtype
    from archsim.energy_run import energy_document
    from archsim.outputs import render
    from archsim.rows import Rows

    args.dtype = device_toml_dtype(args.config, args.dtype, args.element_bytes)  # a device TOML's: train's
    network = network_from_args(args)
    array = config_array(args)
    rows, meta, notes = energy_document(network, array, batch=args.batch, microbatches=args.microbatches,
                                         mode=args.mode, engine=args.engine, dtype=args.dtype,
                                         energy_table=args.energy_table, config=args.config)
    emit(render(Rows.of(rows), args.format, precision=args.precision, meta=meta), args)
    for note in notes:  # a chip's static power unread here (train's and search's); its seconds beside the stalls
        say_after_run("note", note)
    return 0


COMMAND = Command("energy", "energy of one training iteration by part and op, and the array's area",
                  add_arguments, run, tuple(elsewhere("energy").items()))
