"""``archsim cost``: per-layer F/G/D cycles, utilization and bytes of one network on one array
(with ``--engine cycle``: memory-aware cycles, plus stall cycles and DRAM bytes per layer)."""

from __future__ import annotations

import argparse

import pandas as pd

from archsim.array.costing import cost_network
from archsim.cli import Command
from archsim.commands.common import (add_array_arguments, add_engine_arguments, add_network_arguments,
                                     add_output_arguments, array_from_args, emit, memory_meta, network_from_args,
                                     positive_int, with_memory_args)
from archsim.lowering import MODES
from archsim.outputs import render


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_network_arguments(parser)
    add_array_arguments(parser)
    parser.add_argument("--batch", type=positive_int, default=32, help="mini-batch size (default 32)")
    parser.add_argument("--mode", default="paper", choices=MODES,
                        help="paper: LayerPipe's simplifications; exact: real training (default paper)")
    add_engine_arguments(parser)
    parser.add_argument("--geometry", default="archsim", choices=("archsim", "scalesim"),
                        help="output-size rule: archsim (with padding) or scalesim (ceil, no padding)")
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:
    network = network_from_args(args, args.geometry)
    array = with_memory_args(array_from_args(args), args)
    table = cost_network(network, array, args.batch, args.mode, args.engine)
    totals = {column: table[column].sum() for column in table.columns if column.endswith("_cycles")
              or column.endswith("_bytes")}
    total_row = pd.DataFrame([{"layer": "TOTAL", "type": "", **totals}])
    for kind in ("F", "G", "D"):
        cycles = table[f"{kind}_cycles"]
        weighted = (table[f"{kind}_utilization"] * cycles).sum()
        total_row[f"{kind}_utilization"] = weighted / cycles.sum() if cycles.sum() else 0.0
    frame = pd.concat([table, total_row[table.columns]], ignore_index=True)
    meta = {"network": network.name, "array": f"{array.rows}x{array.cols}", "dataflow": array.dataflow,
            "batch": args.batch, "mode": args.mode, "engine": args.engine, "geometry": args.geometry,
            "element_bytes": array.element_bytes, **(memory_meta(array) if args.engine == "cycle" else {})}
    emit(render(frame, args.format, precision=args.precision, meta=meta), args)
    return 0


COMMAND = Command("cost", "per-layer F/G/D cycles, utilization and bytes of a network", add_arguments, run)
