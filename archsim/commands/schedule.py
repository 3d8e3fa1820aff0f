"""``archsim schedule``: run one layer-wise schedule policy over devices and micro-batches."""

from __future__ import annotations

import argparse

import pandas as pd

from archsim.cli import Command
from archsim.commands.common import (add_array_arguments, add_output_arguments, array_from_args, emit,
                                     positive_int)
from archsim.lowering import MODES
from archsim.outputs import render
from archsim.partition import build_profile
from archsim.policies.ooo import POLICIES, LayerCosts, ooo_schedule, schedule_metrics
from archsim.workload import load_network


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("network", metavar="NETWORK", help="topology CSV path or shipped network name")
    parser.add_argument("--policy", required=True, choices=POLICIES)
    parser.add_argument("--processors", type=positive_int, required=True, help="devices")
    parser.add_argument("--microbatches", type=positive_int, default=1)
    parser.add_argument("--unit-costs", action="store_true", help="F = D = G = 1, no communication")
    parser.add_argument("--flush", action=argparse.BooleanOptionalAction, default=None,
                        help="backward ops wait for every forward (default: on, except for ooo-pipe2)")
    parser.add_argument("--group", type=positive_int, default=1, help="ooo-pipe2 modulo group size")
    add_array_arguments(parser)
    parser.add_argument("--batch", type=positive_int, default=32)
    parser.add_argument("--mode", default="paper", choices=MODES)
    parser.add_argument("--only", default=None, metavar="KIND[,KIND]")
    parser.add_argument("--gantt", default=None, metavar="OUT.html")
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:
    network = load_network(args.network)
    if args.only:
        network = network.only(*[k.strip() for k in args.only.split(",") if k.strip()])
    flush = args.flush if args.flush is not None else args.policy != "ooo-pipe2"
    if args.unit_costs:
        costs = LayerCosts.unit(len(network))
        unit = "units"
    else:
        array = array_from_args(args)
        profile = build_profile(network, array, args.batch, args.mode)
        costs = LayerCosts(tuple(profile.forward), tuple(profile.delta), tuple(profile.weight_grad),
                           first_layer_delta=args.mode == "paper", stash_bytes=tuple(int(x) for x in profile.delta_bytes))
        unit = "cycles"
    problem, timeline = ooo_schedule(costs, args.processors, args.microbatches, args.policy, flush=flush,
                                     group=args.group)
    row = {"policy": args.policy, "processors": args.processors, "microbatches": args.microbatches,
           "flush": flush, **schedule_metrics(problem, timeline)}
    meta = {"network": network.name, "unit": unit, "costs": "unit" if args.unit_costs else f"{args.mode} mode"}
    if args.gantt:
        from archsim.report.gantt import write_gantt

        write_gantt(timeline, args.gantt, title=f"{network.name}: {args.policy}, {args.processors} devices")
    emit(render(pd.DataFrame([row]), args.format, meta=meta), args)
    return 0


COMMAND = Command("schedule", "layer-wise schedules across devices (mp, gpipe, ooo-pipe1, ooo-pipe2)",
                  add_arguments, run)
