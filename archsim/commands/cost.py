"""``archsim cost``: per-layer F/G/D cycles, utilization and bytes of one network on one array
(with ``--engine cycle``: memory-aware cycles, plus stall cycles and DRAM bytes per layer)."""

from __future__ import annotations

import argparse

from archsim.choices.networks import GEOMETRIES
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
from archsim.commands.energy import add_energy_table_argument
from archsim.commands.network_args import add_network_arguments, network_from_args
from archsim.modes import MODES
from archsim.training.job_settings import elsewhere


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_network_arguments(parser)
    add_array_arguments(parser, device_toml=True, fp8=True)
    parser.add_argument("--batch", type=positive_int, default=32, help=f"{BATCH_HELP['cost']} (default 32)")
    parser.add_argument("--mode", default="exact", choices=MODES, help=f"{MODE_HELP} (default: exact)")
    add_engine_arguments(parser)
    add_clock_argument(parser)
    parser.add_argument("--energy", action="store_true",
                        help="add each layer's F/G/D energy (pJ; `archsim energy` breaks it down by part)")
    add_energy_table_argument(parser)
    parser.add_argument("--geometry", default="archsim", choices=GEOMETRIES,
                        help="output-size rule: archsim (with padding) or scalesim (ceil, no padding)")
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from archsim.cost_json import cost_document
    from archsim.device_toml import device_toml_dtype
    from archsim.outputs import render
    from archsim.rows import Rows

    args.dtype = device_toml_dtype(args.config, args.dtype, args.element_bytes)  # a device TOML's: train's
    network = network_from_args(args, args.geometry)
    array = config_array(args)
    _, document, notes = cost_document(network, array, batch=args.batch, mode=args.mode, engine=args.engine,
                                       geometry=args.geometry, dtype=args.dtype, energy=args.energy,
                                       energy_table=args.energy_table, config=args.config)
    emit(render(Rows.of(document["rows"]), args.format, precision=args.precision, meta=document["meta"]), args)
    from archsim.console import say_after_run

    for text in notes:  # static_watts unread as energy leaves it; SCALE-Sim's refetch on the cycle engine
        say_after_run("note", text)
    return 0


COMMAND = Command("cost", "per-layer F/G/D cycles, utilization and bytes of a network", add_arguments, run,
                  tuple(elsewhere("cost").items()))
