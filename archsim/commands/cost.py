"""``archsim cost``: per-layer F/G/D cycles, utilization and bytes of one network on one array
(with ``--engine cycle``: memory-aware cycles, plus stall cycles and DRAM bytes per layer)."""

from __future__ import annotations

import argparse

from archsim.choices.networks import GEOMETRIES
from archsim.commands import Command
from archsim.commands.common import (
    add_array_arguments,
    add_clock_argument,
    add_engine_arguments,
    add_network_arguments,
    add_output_arguments,
    array_from_args,
    emit,
    memory_meta,
    network_from_args,
    positive_int,
    with_clock,
    with_memory_args,
)
from archsim.commands.energy import add_energy_table_argument, energies_from_args, table_from_args
from archsim.modes import MODES
from archsim.seconds import add_seconds


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_network_arguments(parser)
    add_array_arguments(parser)
    parser.add_argument("--batch", type=positive_int, default=32, help="mini-batch size (default 32)")
    parser.add_argument("--mode", default="exact", choices=MODES,
                        help="exact: real training (default); paper: LayerPipe's simplifications")
    add_engine_arguments(parser)
    add_clock_argument(parser)
    parser.add_argument("--energy", action="store_true",
                        help="add each layer's F/G/D energy (pJ; `archsim energy` breaks it down by part)")
    add_energy_table_argument(parser)
    parser.add_argument("--geometry", default="archsim", choices=GEOMETRIES,
                        help="output-size rule: archsim (with padding) or scalesim (ceil, no padding)")
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from archsim.array.costing import layer_cost_rows
    from archsim.lowering import lower_network
    from archsim.outputs import render
    from archsim.rows import Rows

    network = network_from_args(args, args.geometry)
    array = with_clock(with_memory_args(array_from_args(args), args), args)
    lowered = lower_network(network, args.batch, args.mode, array.element_bytes)
    rows = layer_cost_rows(lowered, array, args.engine)
    energy_table = None
    if args.energy:
        from archsim.energy.model import with_layer_energy

        energy_table, energies = energies_from_args(array, args)
        rows = with_layer_energy(rows, lowered, array, energies, args.engine)
    rows.append(total_row(rows))
    meta = {"network": network.name, "array": f"{array.rows}x{array.cols}", "dataflow": array.dataflow,
            "batch": args.batch, "mode": args.mode, "engine": args.engine, "geometry": args.geometry,
            "element_bytes": array.element_bytes, **(memory_meta(array) if args.engine == "cycle" else {})}
    from archsim.energy import array_area

    if energy_table is None:
        energy_table = table_from_args(args)
    if array.element_bytes in energy_table.mac_um2:  # area needs the table's figures at this width
        meta.update(array_area(array, energy_table).as_dict(), energy_table=energy_table.name)
    if array.clock_hz is not None:
        meta["clock_ghz"] = array.clock_hz / 1e9
    emit(render(add_seconds(Rows.of(rows), array.clock_hz), args.format, precision=args.precision, meta=meta), args)
    return 0


def total_row(rows: list[dict]) -> dict:
    """The TOTAL row: sums of every ``_cycles``, ``_bytes`` and ``_pj`` column (numpy's sums, as a
    DataFrame's), and each F/G/D utilization weighted by that op's cycles."""
    import numpy as np

    columns = {name: np.asarray([row[name] for row in rows]) for name in rows[0]}
    total: dict[str, object] = {"layer": "TOTAL", "type": ""}
    for name, values in columns.items():
        if name.endswith(("_cycles", "_bytes", "_pj")):
            total[name] = values.sum().item()
    for kind in ("F", "G", "D"):
        cycles = columns[f"{kind}_cycles"]
        weighted = (columns[f"{kind}_utilization"].astype(np.float64) * cycles).sum()
        total[f"{kind}_utilization"] = float(weighted / cycles.sum()) if cycles.sum() else 0.0
    return {name: total[name] for name in rows[0]}


COMMAND = Command("cost", "per-layer F/G/D cycles, utilization and bytes of a network", add_arguments, run)
