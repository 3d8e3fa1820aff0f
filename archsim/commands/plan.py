"""``archsim plan``: synchronous pipeline planning over a heterogeneous cluster (SPP)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import pandas as pd

from archsim.cli import Command
from archsim.commands.common import (MODE_HELP, add_array_arguments, add_network_arguments, add_output_arguments,
                                     add_timeline_outputs, array_from_args, emit, network_from_args, positive_int,
                                     write_timeline_outputs)
from archsim.errors import InputError
from archsim.lowering import MODES
from archsim.outputs import render
from archsim.spp.baselines import BASELINES, baseline
from archsim.spp.plan import spp
from archsim.spp.profiles import load_graph_txt, profile_from_network
from archsim.spp.topology import load_topology_file

METHODS = ("spp", *BASELINES)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_network_arguments(parser)
    parser.add_argument("--cluster", required=True, metavar="CONFIG.toml", help="cluster topology (configs/clusters/)")
    parser.add_argument("--microbatches", type=positive_int, required=True, help="micro-batches per iteration")
    parser.add_argument("--method", default="spp", choices=METHODS,
                        help="planner (the table prints the others beside it as baselines)")
    parser.add_argument("--seed", type=int, default=None, help="redraw the cluster's bandwidth ranges")
    parser.add_argument("--max-stages", type=positive_int, default=None,
                        help="try at most this many stages (default: as many as devices and layers allow)")
    add_array_arguments(parser)
    parser.add_argument("--batch", type=positive_int, default=4, help="micro-batch size (array-model costs)")
    parser.add_argument("--mode", default="exact", choices=MODES, help=MODE_HELP)
    parser.add_argument("--clock-ghz", type=float, default=1.0, help="array clock, to turn cycles into seconds")
    add_timeline_outputs(parser)
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:
    topology = load_topology_file(args.cluster, seed=args.seed)
    if Path(args.network).suffix == ".txt":
        profile, names = load_graph_txt(args.network)
    else:
        if args.clock_ghz <= 0:
            raise InputError("must be positive", field="clock-ghz")
        array = replace(array_from_args(args), clock_hz=args.clock_ghz * 1e9)
        profile, names = profile_from_network(network_from_args(args), array, args.batch, args.mode)
    result = spp(profile, topology, args.microbatches, max_stages=args.max_stages)
    others = {method: float(baseline(method, profile, topology, args.microbatches)) for method in BASELINES}
    rows = [{"stage": n + 1, "first_layer": names[a], "last_layer": names[b - 1], "layers": b - a,
             "replicas": len(d), "devices": " ".join(f"g{x}" for x in d)}
            for n, ((a, b), d) in enumerate(zip(result.plan.stages, result.plan.devices))]
    if args.method != "spp":
        row = {"method": args.method, "makespan_seconds": others[args.method], "spp_makespan_seconds": result.makespan}
        emit(render(pd.DataFrame([row]), args.format, precision=args.precision, meta={"cluster": topology.name}),
             args)
        return 0
    meta = {"method": args.method, "cluster": topology.name, "devices": topology.devices,
            "microbatches": args.microbatches, "makespan_seconds": result.makespan,
            "stage_counts": "; ".join(f"{s}:{t:.4g}s" for s, _, t in result.by_stage_count),
            "baselines_seconds": "; ".join(f"{m}:{t:.4g}" for m, t in others.items()),
            "device_order": " ".join(f"g{x}" for x in result.order)}
    write_timeline_outputs(args, result.timeline, f"SPP on {topology.name}, {args.microbatches} micro-batches")
    emit(render(pd.DataFrame(rows), args.format, precision=args.precision, meta=meta), args)
    return 0


COMMAND = Command("plan", "synchronous pipeline planning over a heterogeneous cluster (SPP)", add_arguments, run)
