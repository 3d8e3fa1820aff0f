"""``archsim plan --method pipedream``'s run (:func:`archsim.plan_run.run_plan` reads the settings, the cluster and
the layers): PipeDream's optimizer as released, its plan laid on the cluster's GPUs and run under SPP's synchronous
PE schedule. Seconds throughout."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from archsim.console import setting
from archsim.errors import InputError
from archsim.plan_result import PlanRun
from archsim.progress import Phases, quiet_phases

if TYPE_CHECKING:
    from archsim.sim.timeline import Timeline


def run_pipedream(args: Any, profile, topology, priced_on: dict[str, str], device_memory: float | None, *,
                  drawn: bool = False, phases: Phases | None = None) -> PlanRun:
    """PipeDream's optimizer on the cluster's uniform levels; the simulated makespan runs the plan
    on the cluster's real links under SPP's synchronous PE schedule (a named difference). ``drawn``: simulate and
    validate the timeline (for the caller to write), else time the schedule's end alone."""
    from archsim.partition.pipedream import describe
    from archsim.partition.pipedream_tables import DEFAULT_MEMORY_BYTES, PipeDreamOptions
    from archsim.spp.placement import pipedream_on_cluster  # not spp.baselines: it loads SPP's search

    phases = phases or quiet_phases
    options = PipeDreamOptions(
        activation_compression_ratio=args.activation_compression_ratio, memory_constraint=args.memory_constraint,
        memory_bytes=device_memory or topology.gpu_memory_bytes or DEFAULT_MEMORY_BYTES,
        straight_pipeline=args.straight_pipeline, use_fewer_machines=args.use_fewer_machines)
    try:  # its uniform hierarchy first: unequal servers or links are the cluster file's mistake, not the network's
        topology.uniform_levels()
    except InputError as error:
        raise InputError(f"{error.message} ({setting('method', 'pipedream')}; {setting('method', 'spp')} takes such "
                         "a cluster)", file=args.cluster, field=error.where.field) from None
    try:  # its DP over every layer and GPU count takes seconds on a large model: a bar on a terminal says so
        with phases("PipeDream plan", ("optimize",)) as phase:
            phase("optimize")
            plan, partition, stage_plans = pipedream_on_cluster(profile, topology, options)
    except InputError as error:  # name the profile the problem is in
        if error.where.file is not None:
            raise
        raise InputError(error.message, file=args.network, field=error.where.field) from None
    timeline: Timeline | None = None
    if drawn:  # a timeline to write: the simulator, validated
        from archsim.sim.timeline import Timeline
        from archsim.sim.validate import assert_valid
        from archsim.spp.pe import pe_makespan

        with phases("PipeDream plan", ("simulate", "validate")) as phase:
            phase("simulate")
            makespan, simulated = pe_makespan(stage_plans, args.microbatches)
            phase("validate")
            assert isinstance(simulated, Timeline), type(simulated)
            assert_valid(simulated.problem, simulated)
            timeline = simulated
    else:  # the makespan alone: the same schedule's end without the simulator's import and timeline
        from archsim.spp.pe_order import pe_finish_time

        makespan = pe_finish_time(stage_plans, args.microbatches)
    rows = []
    for stage, (block, machines) in zip(partition.stages, plan.stages()):
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
    return PlanRun(rows, meta, timeline, f"PipeDream's plan on {topology.name}, {args.microbatches} micro-batches",
                   unit=profile.unit)


__all__ = ["run_pipedream"]
