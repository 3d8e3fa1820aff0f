"""``archsim schedule``: run one layer-wise schedule policy over devices and micro-batches."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from archsim.choices.schedules import DP_POLICIES, LIST_SCHEDULES, OOO_POLICIES, ZB_SCHEDULES
from archsim.commands import Command
from archsim.commands.common import (
    add_job_limit_argument,
    add_layer_cost_arguments,
    add_network_arguments,
    add_output_arguments,
    array_from_args,
    emit,
    network_from_args,
    phases,
    positive_int,
    width_meta,
    with_clock,
    with_memory_args,
)
from archsim.commands.schedule_flags import (
    CHUNK_POLICIES,
    DEFAULT_CHUNKS,
    DEFAULT_COMM_UNITS,
    DEFAULT_GROUP,
    DEFAULT_REGION_SIZE,
    DEFAULT_REVERSE_K,
    DEFAULT_STREAMS,
    DEFAULT_SYNC,
    check_policy_flags,
    defer_defaults,
)
from archsim.commands.stage_schedule import STAGE_ONLY, add_stage_arguments, run_stages, stage_mode
from archsim.commands.timeline_outputs import add_timeline_outputs, validated, write_timeline_outputs
from archsim.policies import multistream as ms  # light: its lowering loads when it makes ops
from archsim.validate import check_job_size, non_negative_float_flag, processors_flag

if TYPE_CHECKING:  # the profiles, policies and simulator load when a schedule runs
    from archsim.partition.profile import LayerProfile
    from archsim.policies.stage_profile import StageProfile


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_network_arguments(parser, optional=True)
    parser.add_argument("--policy", default=None,
                        choices=OOO_POLICIES + DP_POLICIES + ZB_SCHEDULES + LIST_SCHEDULES + STAGE_ONLY
                        + ("multistream",),
                        help="schedule policy (required; docs/cli.md and the papers' pages say what each runs)")
    parser.add_argument("--processors", type=processors_flag, default=None,
                        help="devices (pipeline stages, or data-parallel replicas for dp-*): required with NETWORK")
    parser.add_argument("--microbatches", type=positive_int, default=1,
                        help="micro-batches per iteration, M micro-batches of --batch samples each (with 1, a pipeline "
                             "has no overlap to exploit)")
    parser.add_argument("--unit-costs", action="store_true", help="F = D = G = 1, no communication")
    parser.add_argument("--flush", action=argparse.BooleanOptionalAction, default=None,
                        help="backward ops wait for every forward (default: on, except for ooo-pipe2 and mp)")
    parser.add_argument("--group", type=positive_int, default=None,
                        help=f"ooo-pipe2 modulo group size, in layers (default: {DEFAULT_GROUP}; refused with "
                             "other policies)")
    parser.add_argument("--streams", default=None, choices=ms.SCHEDULES,
                        help="multistream: single (baseline), naive (G as soon as ready) or joint (Algorithm 1) "
                             f"(default: {DEFAULT_STREAMS}; refused with other policies)")
    parser.add_argument("--region-size", type=positive_int, default=None,
                        help=f"multistream: δ ops per region (default: {DEFAULT_REGION_SIZE}; refused with other "
                             "policies)")
    parser.add_argument("--chunks", type=positive_int, default=None,
                        help=f"model chunks per device of {', '.join(CHUNK_POLICIES)} and their torch classes "
                             f"(default: {DEFAULT_CHUNKS}; refused with other policies)")
    parser.add_argument("--reverse-k", dest="k", default=None,
                        help="dp-reverse-k: layers to reverse, or 'auto' (the paper's search) "
                             f"(default: {DEFAULT_REVERSE_K}; refused with other policies)")
    parser.add_argument("--k", dest="k", help=argparse.SUPPRESS)  # older name; gemm's --k is a GEMM dimension
    parser.add_argument("--sync", default=None, choices=("ring", "ps"),
                        help="data-parallel synchronization: ring all-reduce or a parameter server (ps) "
                             f"(default: {DEFAULT_SYNC}; refused with other policies)")
    # The link bandwidth is --link-bandwidth (per-stage group below); --bandwidth means DRAM words per
    # cycle in cost and pipeline, so schedule does not take it.
    parser.add_argument("--comm-units", type=non_negative_float_flag, default=None,
                        help="with --unit-costs: synchronization time of each layer (data parallel) "
                             f"(default: {DEFAULT_COMM_UNITS}; refused with other policies)")
    add_layer_cost_arguments(parser, bandwidth_flag="--dram-bandwidth")
    add_timeline_outputs(parser)
    add_output_arguments(parser)
    add_job_limit_argument(parser)
    add_stage_arguments(parser)
    defer_defaults(parser)  # a flag given at its default is seen, and refused where its run would ignore it


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from archsim.errors import InputError
    from archsim.outputs import render
    from archsim.partition import build_profile
    from archsim.partition.profile import collapse_profile
    from archsim.policies import zero_bubble as zb
    from archsim.policies.ooo import default_flush, ooo_problem, require_chain, schedule_metrics, unit_costs
    from archsim.rows import Rows
    from archsim.sim import simulate
    from archsim.workload.shipped import BLOCK_NETWORKS, block_groups, block_network_of

    check_policy_flags(args, stage_mode(args))  # before anything is read or written
    if stage_mode(args):
        return run_stages(args)
    if args.policy == "multistream" and args.processors not in (None, 1):
        raise InputError(f"multistream schedules one device's streams: --processors 1 (or none), got "
                         f"{args.processors}", field="processors")
    if args.policy == "multistream":  # one device's two streams: a row of totals, no timeline to draw
        drawn = [flag for flag, value in (("--gantt", args.gantt), ("--chrome-trace", args.trace),
                                          ("--schedule-csv", args.schedule_csv)) if value]
        if drawn:
            raise InputError(f"{drawn[0]}: multistream writes one row of totals and no timeline; drop "
                             f"{' and '.join(drawn)}", field=drawn[0].lstrip("-"))
    if args.policy == "multistream" and args.microbatches != 1:
        raise InputError(f"multistream schedules one iteration's streams: --microbatches 1, got {args.microbatches}",
                         field="microbatches")
    one_device = args.policy == "multistream"
    for name, value in (("NETWORK", args.network), ("--policy", args.policy), ("--processors", args.processors)):
        if value is None and not (one_device and name == "--processors"):
            raise InputError(f"{name} is required (or give per-stage costs: --stages P --stage-times F,B,W)",
                             field=name.lstrip("-").lower())
    if args.policy in STAGE_ONLY:
        raise InputError(f"{args.policy} runs on per-stage costs: use --stages/--stage-times or --stage-profile",
                         field="policy")
    blocks = BLOCK_NETWORKS.get(args.network.strip().lower().replace("-", "_"))
    if blocks is not None and args.policy not in OOO_POLICIES:
        raise InputError(f"{args.network} (one layer per transformer block) is for the out-of-order backprop "
                         f"pipelines ({', '.join(OOO_POLICIES)}); schedule {blocks} with {args.policy}",
                         field="network")
    network = network_from_args(argparse.Namespace(**{**vars(args), "network": blocks}) if blocks else args)
    groups = block_groups(network) if blocks else None
    name = args.network.strip().lower().replace("-", "_") if blocks else network.name
    flush = args.flush if args.flush is not None else default_flush(args.policy)
    check_job_size(_op_count(args, len(groups) if groups else len(network), flush, first_delta=groups is not None),
                   args.max_ops)
    if args.policy == "multistream":
        return _multistream(args, network)
    with phases(f"schedule {args.policy}", ("costs", "build", "simulate", "validate")) as phase:
        phase("costs")
        if args.unit_costs:  # F = D = G = 1 per layer: per block on a block network
            costs = replace(unit_costs(len(groups)), names=tuple(g for g, _ in groups)) if groups else \
                unit_costs(len(network), network)
            unit = "units"
        else:
            array = with_memory_args(array_from_args(args), args)
            costs = build_profile(network, array, args.batch, args.mode, args.engine)
            if groups:
                costs = collapse_profile(costs, groups)
            unit = "cycles"
        extra: dict = {}
        if args.policy in DP_POLICIES:
            problem, extra = _data_parallel(args, costs, network, phase, None if args.unit_costs else array.element_bytes)
        elif args.policy in ZB_SCHEDULES + LIST_SCHEDULES:
            stage_profile = _stage_profile(args, costs)
            phase("build")
            problem = zb.zb_build(stage_profile, args.microbatches, args.policy, args.chunks)
        else:
            phase("build")
            require_chain(costs, block_network_of(network.name))
            # a first block's δ holds its inner ops' (needed for their G); its first op's is in it only
            # where the mode counts it (paper), so a block network always schedules it
            first_delta = (args.mode == "paper" or groups is not None) and not args.unit_costs
            problem = ooo_problem(costs, args.processors, args.microbatches, args.policy, flush=flush,
                                  group=args.group, first_layer_delta=first_delta)
        phase("simulate")
        timeline = simulate(problem)
        phase("validate")
        validated(timeline)
    takes_flush = {"flush": flush} if args.policy in OOO_POLICIES else {}  # a blank cell would shift a table's row
    metrics = schedule_metrics(problem, timeline)
    if args.policy in DP_POLICIES:  # its iteration window allocates no stash: a 0 would read as "holds none"
        del metrics["peak_activation_bytes"]
    row = {"policy": args.policy, "processors": args.processors, "microbatches": args.microbatches,
           **takes_flush, **metrics, **extra}
    meta = _costs_meta(args, name, unit, None if args.unit_costs else array)
    clock = None if args.unit_costs else with_clock(array_from_args(args, note=False), args).clock_hz
    if clock is not None:  # seconds beside cycles when a clock is known
        meta["clock_ghz"] = clock / 1e9
        meta["makespan_seconds"] = float(row["makespan"]) / clock
    write_timeline_outputs(args, timeline, f"{name}: {args.policy}, {args.processors} devices", unit=unit)
    emit(render(Rows.of([row]), args.format, precision=args.precision, meta=meta), args)
    if args.policy in OOO_POLICIES:  # the paper's allocations can leave a device without layers: say so, as pipeline
        from archsim.console import note
        from archsim.planners import idle_line
        from archsim.policies.ooo import devices_used

        idle = idle_line(f"{args.policy}'s allocation", devices_used(len(costs), args.processors, args.policy,
                                                                    args.group), args.processors)
        if idle:
            note(idle)
    return 0


def _op_count(args: argparse.Namespace, layers: int, flush: bool, first_delta: bool = False) -> int:
    """The ops the policy's problem will have, counted before building it (exact but for dualpipev's bound);
    ``first_delta``: the first layer's δ is scheduled whatever the mode (a block network's)."""
    from archsim.policies import zero_bubble as zb
    from archsim.policies.ooo import op_count as ooo_op_count

    if args.policy in ZB_SCHEDULES:
        return zb.op_count(args.policy, args.processors, args.microbatches, args.chunks)
    if args.policy in LIST_SCHEDULES:
        return 3 * args.processors * args.microbatches
    if args.policy in OOO_POLICIES:
        return ooo_op_count(layers, args.microbatches, first_layer_delta=(args.mode == "paper" or first_delta) and not args.unit_costs,
                            flush=flush)
    return 5 * layers  # one iteration window of data parallelism (F, F', S per layer; G, D in the backward order)


def _link(args: argparse.Namespace) -> float:
    """Bytes per cycle of a link in network mode (--link-bandwidth; 64 when not given)."""
    return DEFAULT_LINK_BYTES_PER_CYCLE if args.link_bandwidth is None else args.link_bandwidth


DEFAULT_LINK_BYTES_PER_CYCLE = 64.0


def _costs_meta(args: argparse.Namespace, network: str, unit: str, array) -> dict[str, object]:
    """The meta keys that say what a NETWORK's costs were: unit costs, or the mode, array, dataflow and
    batch they were computed at, defaults included (as cost and pipeline say)."""
    if array is None:
        return {"network": network, "unit": unit, "costs": "unit"}
    return {"network": network, "unit": unit, "costs": f"{args.mode} mode", "array": f"{array.rows}x{array.cols}",
            "dataflow": array.dataflow, "batch": args.batch, **width_meta(args, array)}


def _multistream(args: argparse.Namespace, network) -> int:
    """One device, main stream (F, δ) and sub-stream (G) under the documented co-run model."""
    from archsim.errors import InputError
    from archsim.outputs import render
    from archsim.rows import Rows

    if args.unit_costs:
        raise InputError("multistream needs utilizations from the array model; drop --unit-costs", field="unit-costs")
    if args.engine != "analytic":
        raise InputError("multistream splits arrays by the analytic model's utilizations; use --engine analytic",
                         field="engine")
    array = array_from_args(args)
    ops = ms.device_ops(network, array, args.batch, args.mode)
    single = ms.run(ops, "single").makespan
    result = ms.run(ops, args.streams, region_size=args.region_size)
    work = sum(t * u for t, u in zip(ops.forward + ops.delta + ops.weight_grad,
                                     ops.forward_util + ops.delta_util + ops.weight_grad_util))
    row = {"policy": f"multistream-{args.streams}", "processors": 1, "microbatches": 1,
           "makespan": result.makespan, "idle_pe_fraction": 1.0 - work / result.makespan,
           "peak_activation_bytes": result.peak_held_bytes, "speedup_vs_single_stream": single / result.makespan}
    meta = {**_costs_meta(args, network.name, "cycles", array),
            "idle_pe_fraction": "idle PE-cycles / (makespan × PEs): one device, so PEs, not devices, idle"}
    emit(render(Rows.of([row]), args.format, precision=args.precision, meta=meta), args)
    return 0


def _stage_profile(args: argparse.Namespace, costs: LayerProfile) -> StageProfile:
    """Per-stage F, I (= δ) and W (= G): equal units, or layers split into stages by PipeDream's DP;
    activation M_B a stage's stashed layer inputs, send bytes its next stage's first input, comm
    --comm, and in cycles a link of --link-bandwidth bytes per cycle (unit costs: latency only)."""
    from archsim.errors import InputError
    from archsim.partition import pipedream_partition, profile_from_costs
    from archsim.policies.stage_profile import StageProfile

    if args.unit_costs:
        ones = (1.0,) * args.processors  # M_B = 1 (peaks count micro-batches) and no M_W: integer peaks
        return StageProfile(ones, ones, ones, args.comm, (1,) * args.processors)
    if args.processors > len(costs):  # said in schedule's terms: PipeDream's check speaks of pipeline's methods
        raise InputError(f"--policy {args.policy} runs one stage of whole layers on each processor (PipeDream's DP "
                         f"splits the chain): this network has {len(costs)} layers, so at most {len(costs)} processors, "
                         f"got {args.processors} (archsim pipeline --method layerpipe splits δs over more)",
                         field="processors")
    names = [f"l{i}" for i in range(len(costs))]
    # PipeDream's DP over the costs alone, as a chain (no activation or weight bytes): the split balances F + I + W
    plan = pipedream_partition(profile_from_costs(names, costs.forward, costs.weight_grad, costs.delta), args.processors)
    stash = [int(x) for x in costs.stash_bytes]
    sums: dict[str, list[float]] = {kind: [] for kind in "FDG"}
    for stage in plan.stages:
        for kind in "FDG":
            sums[kind].append(sum(op.cost for op in stage.ops if op.kind == kind))
    activation = [sum(stash[names.index(n)] for n in stage.layers) for stage in plan.stages]
    # a stage sends the next stage its first layer's input activation (and gets its gradient back)
    send = [stash[names.index(nxt.layers[0])] for nxt in plan.stages[1:]] + [0]
    return StageProfile(tuple(sums["F"]), tuple(sums["D"]), tuple(sums["G"]), args.comm, tuple(activation),
                        send_bytes=tuple(send), bandwidth=_link(args))


def _data_parallel(args: argparse.Namespace, costs: LayerProfile, network, phase, element_bytes: int | None):
    """One device's iteration window under data parallelism over ``--processors`` workers (the
    search for k simulates candidate windows), and the chosen k; ``element_bytes`` (the array's width,
    None with --unit-costs) sizes each layer's gradient sync in bytes."""
    from archsim.errors import InputError
    from archsim.policies import data_parallel as dp

    layers = len(costs)
    if args.unit_costs:
        sync = [args.comm_units] * layers
    else:
        model = dp.SyncModel(workers=args.processors, bandwidth=_link(args), kind=args.sync)
        sync = [model.time(layer.weight_elements * (element_bytes or 1)) for layer in network.layers]
    f, d, g = list(costs.forward), list(costs.delta), list(costs.weight_grad)

    def evaluate(k: int) -> float:
        return dp.window_time(f, d, g, sync, dp.reverse_first_k_order(layers, k))

    k = 0
    phase("build")
    if args.policy == "dp-reverse-k":
        if args.k == "auto":
            k = dp.search_k(evaluate, layers)
        else:
            try:
                k = int(args.k)
            except ValueError:
                raise InputError(f"expected an integer or 'auto', got {args.k!r}", field="k") from None
    order, prioritized = dp.policy_order(args.policy, layers, k)
    return dp.dp_problem(f, d, g, sync, order, prioritized=prioritized), {"reversed_layers": k}


COMMAND = Command("schedule", "layer-wise schedules: pipelines (mp, gpipe, ooo-pipe1/2) and data parallel",
                  add_arguments, run)
