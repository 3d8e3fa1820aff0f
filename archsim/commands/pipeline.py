"""``archsim pipeline``: partition a network over P processors (LayerPipe Table III style)."""

from __future__ import annotations

import argparse

from archsim.cli import Command
from archsim.commands.common import (add_array_arguments, add_output_arguments, array_from_args, emit,
                                     positive_int)
from archsim.errors import InputError
from archsim.lowering import MODES, SPLIT_AXES
from archsim.outputs import render
from archsim.partition import METHODS, build_profile, partition
from archsim.workload import load_network


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("network", metavar="NETWORK", help="topology CSV path or shipped network name")
    parser.add_argument("--processors", type=positive_int, required=True, help="number of processors")
    parser.add_argument("--method", default="layerpipe", choices=METHODS)
    add_array_arguments(parser)
    parser.add_argument("--batch", type=positive_int, default=32)
    parser.add_argument("--mode", default="paper", choices=MODES)
    parser.add_argument("--only", default=None, metavar="KIND[,KIND]", help="keep only these layer kinds")
    parser.add_argument("--split-axes", default=",".join(SPLIT_AXES),
                        help=f"δ split axes LayerPipe may use (default {','.join(SPLIT_AXES)})")
    parser.add_argument("--alpha", type=float, default=1.001, help="LayerPipe target relaxation factor")
    parser.add_argument("--microbatches", type=positive_int, default=None,
                        help="also simulate M micro-batches and report the makespan")
    parser.add_argument("--gantt", default=None, metavar="OUT.html", help="write a plotly Gantt (needs --microbatches)")
    parser.add_argument("--trace", default=None, metavar="OUT.json", help="Chrome trace JSON (opens in Perfetto)")
    parser.add_argument("--schedule-csv", default=None, metavar="OUT.csv",
                        help="per-rank action CSV in torch.distributed.pipelining's layout")
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:
    network = load_network(args.network)
    if args.only:
        network = network.only(*[k.strip() for k in args.only.split(",") if k.strip()])
    array = array_from_args(args)
    profile = build_profile(network, array, args.batch, args.mode)
    options: dict[str, object] = {}
    if args.method == "layerpipe":
        axes = tuple(a.strip() for a in args.split_axes.split(",") if a.strip())
        bad = [a for a in axes if a not in SPLIT_AXES]
        if bad:
            raise InputError(f"unknown split axis {bad[0]!r}; choose from {', '.join(SPLIT_AXES)}", field="split-axes")
        options = {"alpha": args.alpha, "axes": axes}
    plan = partition(profile, args.processors, args.method, **options)
    single = float(profile.total.sum())
    frame = plan.to_frame()
    meta: dict[str, object] = {
        "network": network.name, "method": plan.method, "processors": args.processors,
        "array": f"{array.rows}x{array.cols}", "dataflow": array.dataflow, "batch": args.batch, "mode": args.mode,
        "single_processor_cycles": single, "cycles_per_iteration": plan.max_stage_cycles,
        "speedup": single / plan.max_stage_cycles,
        "mandatory_comm_bytes": plan.mandatory_bytes, "additional_comm_bytes": plan.additional_bytes,
    }
    stash = _stash_depths(plan, network)
    if stash is not None:
        frame["weight_versions"] = stash
    if args.microbatches or args.gantt or args.trace or args.schedule_csv:
        from archsim.policies.pipeline import simulate_partition

        if not args.microbatches:
            raise InputError("--gantt, --trace and --schedule-csv need --microbatches", field="microbatches")
        result = simulate_partition(plan, profile, args.microbatches)
        from archsim.commands.schedule import _exports

        _exports(args, result.timeline)
        meta["microbatches"] = args.microbatches
        meta["makespan"] = result.timeline.makespan
        utilization = result.timeline.utilization()
        frame["utilization"] = [utilization.get(f"p{i + 1}", 0.0) for i in range(len(frame))]
        if args.gantt:
            from archsim.report.gantt import write_gantt

            write_gantt(result.timeline, args.gantt, title=f"{network.name}: {plan.method}, {args.processors} processors")
    emit(render(frame, args.format, meta=meta), args)
    return 0


def _stash_depths(plan, network) -> list[int] | None:
    """Weight versions each processor stashes, derived from the pipelined training DFG (chains only)."""
    from archsim.dfg import pipeline

    if any(len(layer.inputs) != 1 for layer in network.layers):
        return None
    homes = [stage for stage in plan.stages if stage.layers]
    stage_of = {name: number for number, stage in enumerate(homes, start=1) for name in stage.layers}
    derived = pipeline([layer.name for layer in network.layers], stage_of)
    versions = {stage_of[item.layer]: item.weight_versions for item in derived.layers}
    number = {stage.index: n for n, stage in enumerate(homes, start=1)}
    return [versions.get(number.get(stage.index, 0), 0) for stage in plan.stages]


COMMAND = Command("pipeline", "partition a network over processors (layerpipe, pipedream, gpipe)", add_arguments, run)
