"""``archsim plan --method pipedream``: PipeDream's optimizer as released, its plan laid on the cluster's GPUs and
run under SPP's synchronous PE schedule (:mod:`archsim.commands.plan` reads the flags, the cluster and the layers)."""

from __future__ import annotations

import argparse

from archsim.commands.common import emit
from archsim.commands.timeline_outputs import write_timeline_outputs
from archsim.errors import InputError


def run_pipedream(args: argparse.Namespace, profile, topology, priced_on: dict[str, str],
                   device_memory: float | None) -> int:
    """PipeDream's optimizer on the cluster's uniform levels; the simulated makespan runs the plan
    on the cluster's real links under SPP's synchronous PE schedule (a named difference)."""
    from archsim.outputs import render
    from archsim.partition.pipedream import describe
    from archsim.partition.pipedream_tables import DEFAULT_MEMORY_BYTES, PipeDreamOptions
    from archsim.rows import Rows
    from archsim.spp.placement import pipedream_on_cluster  # not spp.baselines: it loads SPP's search

    options = PipeDreamOptions(
        activation_compression_ratio=args.activation_compression_ratio, memory_constraint=args.memory_constraint,
        memory_bytes=device_memory or topology.gpu_memory_bytes or DEFAULT_MEMORY_BYTES, straight_pipeline=args.straight_pipeline,
        use_fewer_machines=args.use_fewer_machines)
    try:  # its uniform hierarchy first: unequal servers or links are the cluster file's mistake, not the network's
        topology.uniform_levels()
    except InputError as error:
        raise InputError(f"{error.message} (--method pipedream; --method spp takes such a cluster)", file=args.cluster,
                         field=error.where.field) from None
    from archsim.commands.common import phases

    try:  # its DP over every layer and GPU count takes seconds on a large model: a bar on a terminal says so
        with phases("PipeDream plan", ("optimize",)) as phase:
            phase("optimize")
            plan, partition, stage_plans = pipedream_on_cluster(profile, topology, options)
    except InputError as error:  # name the profile the problem is in
        if error.where.file is not None:
            raise
        raise InputError(error.message, file=args.network, field=error.where.field) from None
    timeline = None
    if args.gantt or args.trace or args.schedule_csv:  # a timeline to write: the simulator, validated
        from archsim.commands.timeline_outputs import validated
        from archsim.spp.pe import pe_makespan

        with phases("PipeDream plan", ("simulate", "validate")) as phase:
            phase("simulate")
            makespan, timeline = pe_makespan(stage_plans, args.microbatches)
            phase("validate")
            validated(timeline)
    else:  # the makespan alone: the same schedule's end without the simulator's import and timeline
        from archsim.spp.pe_order import pe_finish_time

        makespan = pe_finish_time(stage_plans, args.microbatches)
    blocks = plan.stages()
    rows = []
    for stage, (block, machines) in zip(partition.stages, blocks):
        rows.append({"stage": stage.index + 1, "states": f"{block.start}-{block.end}", "nodes": len(stage.layers),
                     "first_node": stage.layers[0], "last_node": stage.layers[-1], "replicas": machines,
                     "compute_seconds": block.compute, "stage_seconds": stage.total_cost})
    levels = [{"level": len(plan.levels) - number,
               "blocks": [[[b.start, b.end, b.compute, b.replicas] for b in group] for group in groups]}
              for number, groups in enumerate(plan.levels)]
    meta = {"method": "pipedream", "settings": describe(plan), "cluster": topology.name,
            "gpus": topology.devices, "state_count": len(plan.states), "time_per_stage": plan.time_per_stage,
            "single_stage_time": plan.single_stage_time,
            "time_per_stage_by_machines": [None if t == float("inf") else t for t in plan.by_machines],
            "levels": levels, "microbatches": args.microbatches, "simulated_makespan_seconds": makespan,
            "simulation": "the plan's stages on consecutive GPUs, the cluster's real links, SPP's PE schedule",
            **({"links": args.links} if args.links != "paper" else {}), **priced_on}
    if args.format != "json":
        meta = {k: v for k, v in meta.items() if k not in ("levels", "time_per_stage_by_machines")}
    if timeline is not None:
        write_timeline_outputs(args, timeline, f"PipeDream's plan on {topology.name}, {args.microbatches} micro-batches",
                               unit=profile.unit, rows_title="stage / channel")
    emit(render(Rows.of(rows), args.format, precision=args.precision, meta=meta), args)
    return 0
