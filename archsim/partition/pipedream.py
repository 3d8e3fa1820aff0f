"""PipeDream's optimizer (Narayanan et al., SOSP'19 §3.1; the released
``optimizer_graph_hierarchical.py``), giving its answer on its inputs.

Over the antichain states s_0 … s_{n−1} (:mod:`archsim.partition.antichain`) and, per level of the
machine hierarchy, N machines joined at bandwidth B, it computes

    A(i, j, m) = min( T(i..j on m+1 replicas),
                      min_{k ancestor of j, 1 ≤ m′ ≤ m} max( A(i, k, m − m′), T(k+1..j on m′), transfers ) )

with T(x on r) = (compute + 4(r − 1)·params / (B·r) / W) / r (W: machines inside one machine of
this level, the previous level's N; the all-reduce of a split stage leaves W out, as the released
code does), transfers 2·a/(B·m′) of the bytes a crossing each cut (divided by the activation
compression ratio; ignored when there is none, the CLI's default), and, with the memory
constraint, a stage skipped when ⌈(N − r)/r⌉·(activations + params) exceeds the memory. Level ℓ+1
reads level ℓ's A(·, ·, N_ℓ − 1) as its compute time. The final level needs only i = 0.

Everything is the released code's arithmetic in its order, so ``time_per_stage`` equals its
output; ties go to the first split in ascending state order and the fewest replicas, which is
where the released code (whose ancestor order is a Python set's) usually lands. The split search
is compiled (:mod:`archsim.partition.pipedream_kernel`), except on small final levels, where one
dense numpy pass (:mod:`archsim.partition.pipedream_dense`) is cheaper than loading numba.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from archsim.errors import InputError
from archsim.partition.antichain import AntichainStates, antichain_states
from archsim.partition.pipedream_allreduce import replica_allreduce
from archsim.partition.pipedream_tables import (  # the tables' inputs and blocks: exported here
    Block,
    Level,
    LevelTable,
    PipeDreamOptions,
    analyze,
    level_tables,
)
from archsim.partition.profile import LayerProfile
from archsim.partition.result import Partition, Stage, mandatory_bytes, placed_ops

DEFAULT_OPTIONS = PipeDreamOptions()  # the optimizer's own defaults (frozen)


@dataclass(frozen=True)
class PipeDreamPlan:
    """The optimizer's answer: time per stage, and per level (top first) the blocks it printed,
    one list per block of the level above, in its own state numbering."""

    time_per_stage: float
    single_stage_time: float
    levels: tuple[tuple[tuple[Block, ...], ...], ...]
    states: AntichainStates
    hierarchy: tuple[Level, ...]
    options: PipeDreamOptions
    by_machines: tuple[float, ...]  # the final level's optimum on 1 … N machines (inf: no plan)

    def stages(self) -> list[tuple[Block, int]]:
        """Level-1 blocks in pipeline order with their total replication (× every level above)."""
        out: list[tuple[Block, int]] = []

        def walk(level: int, group: int, factor: int) -> None:
            offset = sum(len(g) for g in self.levels[level][:group])  # this group's first block, level-wide
            for position, block in enumerate(self.levels[level][group]):
                if level == len(self.levels) - 1:
                    out.append((block, factor * block.replicas))
                else:
                    walk(level + 1, offset + position, factor * block.replicas)

        walk(0, 0, 1)
        return out


def pipedream_plan(profile: LayerProfile, hierarchy: tuple[Level, ...] | list[Level],
                   options: PipeDreamOptions = DEFAULT_OPTIONS) -> PipeDreamPlan:
    """Run PipeDream's optimizer on ``profile`` over ``hierarchy`` (innermost level first)."""
    hierarchy = tuple(hierarchy)
    if not hierarchy:
        raise InputError("at least one level of machines is needed", field="machines")
    return pipedream_plans(profile, hierarchy[:-1], hierarchy[-1].bandwidth, [hierarchy[-1].machines], options)[0]


def pipedream_plans(profile: LayerProfile, inner: tuple[Level, ...] | list[Level], bandwidth: float,
                    machines: Sequence[int], options: PipeDreamOptions = DEFAULT_OPTIONS) -> list[PipeDreamPlan]:
    """PipeDream's plans for each count in ``machines`` of an outermost level at ``bandwidth``
    above the levels ``inner`` (innermost first; empty: one level), each equal to
    :func:`pipedream_plan`'s for that hierarchy.

    The outermost level's entry A(0, n − 1, m) and its splits depend on that level's machine count
    only through the memory constraint, so without it one table, solved for the largest count,
    holds every count's plan (a sweep over processor counts solves once)."""
    machines = [int(count) for count in machines]
    if not machines:
        return []
    hierarchies = [(*tuple(inner), Level(count, bandwidth)) for count in machines]
    for level in (*tuple(inner), *(h[-1] for h in hierarchies)):
        if level.machines < 1:
            raise InputError(f"machines per level must be positive, got {level.machines}", field="machines")
        if not level.bandwidth > 0:  # inf: free links
            raise InputError(f"bandwidth must be positive, got {level.bandwidth}", field="bandwidth")
    ratio = options.activation_compression_ratio
    if ratio is not None and not (ratio > 0 and math.isfinite(ratio)):
        raise InputError(f"must be positive and finite, got {ratio}", field="activation-compression-ratio")
    if options.memory_constraint:
        return [_plan(antichain_states(profile), level_tables(antichain_states(profile), h, options), h, options)
                for h in hierarchies]
    widest = (*tuple(inner), Level(max(machines), bandwidth))
    tables = level_tables(antichain_states(profile), widest, options)
    return [_plan(antichain_states(profile), tables, h, options) for h in hierarchies]


def _plan(states: AntichainStates, all_a: list[LevelTable], hierarchy: tuple[Level, ...],
          options: PipeDreamOptions) -> PipeDreamPlan:
    """The plan for ``hierarchy`` read from its tables (the outermost may hold more machines)."""
    n = len(states)
    last, machines = all_a[-1], hierarchy[-1].machines
    time = float(last.value[0, n - 1, machines - 1])
    if not math.isfinite(time):
        raise InputError(f"PipeDream's optimizer finds no plan: {n} states on {machines} machines"
                         + (" under the memory constraint" if options.memory_constraint else "")
                         + ("" if options.use_fewer_machines else " (allow fewer machines to leave some idle)"),
                         field="machines")
    levels = []
    splits = [(0, n)]
    for number in reversed(range(len(hierarchy))):
        groups, new_splits = [], list[tuple[int, int]]()
        for start, end in splits:
            blocks = analyze(all_a[number], states, start, end, hierarchy[number].machines)
            groups.append(tuple(blocks))
            new_splits.extend((b.start, b.end) for b in blocks)
        levels.append(tuple(groups))
        splits = new_splits
    return PipeDreamPlan(time, float(states.compute[-1]), tuple(levels), states, hierarchy, options,
                         tuple(float(v) for v in last.value[0, n - 1, :machines]))


def pipedream_partition(profile: LayerProfile, processors: int | None = None, *, bandwidth: float | None = None,
                        replication: bool = False, use_fewer_machines: bool = False,
                        hierarchy: tuple[Level, ...] | list[Level] | None = None,
                        options: PipeDreamOptions | None = None) -> Partition:
    """PipeDream's plan as archsim's :class:`Partition` (what schedules and the simulator read).

    The short form is LayerPipe's comparison: ``processors`` machines on one level joined at
    ``bandwidth`` bytes per time unit (None: free links, activation transfers ignored; given:
    transfers counted, compression ratio 1); ``replication`` False is the optimizer's
    ``--straight_pipeline``; ``use_fewer_machines`` its flag of that name (without it, a plan
    must use every machine). ``hierarchy`` and ``options`` give every flag of the optimizer.
    Each stage's time is the optimizer's own term for it, so ``max_stage_cost`` is its
    ``time_per_stage``.
    """
    if options is None:
        options = _short_options(bandwidth, replication, use_fewer_machines)
    if hierarchy is None:
        if processors is None or processors <= 0:
            raise InputError(f"processors must be positive, got {processors}", field="processors")
        _check_counts(profile, [processors], options)
        hierarchy = (Level(processors, math.inf if bandwidth is None else bandwidth),)
    plan = pipedream_plan(profile, hierarchy, options)
    return plan_partition(profile, plan)


def pipedream_partitions(profile: LayerProfile, processors: Sequence[int], *, bandwidth: float | None = None,
                         replication: bool = False, use_fewer_machines: bool = False) -> list[Partition]:
    """:func:`pipedream_partition`'s short form for every count in ``processors``, in that order,
    from one solve of the optimizer's table (see :func:`pipedream_plans`): what a sweep over
    processor counts calls. Each equals ``pipedream_partition(profile, count, ...)``."""
    for count in processors:
        if count <= 0:
            raise InputError(f"processors must be positive, got {count}", field="processors")
    options = _short_options(bandwidth, replication, use_fewer_machines)
    _check_counts(profile, processors, options)
    plans = pipedream_plans(profile, (), math.inf if bandwidth is None else bandwidth, processors, options)
    return [plan_partition(profile, plan) for plan in plans]


def layer_groups(profile: LayerProfile) -> int:
    """The most processors :func:`pipedream_partitions`' short form (a straight pipeline, whole layers on every
    machine) fills: the network's layer groups (antichain states). Why separate: a sweep skips the counts above
    it before its first unit is computed, not after minutes of other units."""
    return len(antichain_states(profile))


def _check_counts(profile: LayerProfile, counts: Sequence[int], options: PipeDreamOptions) -> None:
    """Refuse a straight pipeline on more processors than the network has layer groups (every
    stage holds at least one antichain state), with the largest count that works."""
    if not options.straight_pipeline or options.use_fewer_machines:
        return
    states = len(antichain_states(profile))
    if max(counts, default=0) > states:
        raise InputError(f"PipeDream's straight pipeline puts whole layers on every processor: this network has "
                         f"{states} layer {'group (antichain state)' if states == 1 else 'groups (antichain states)'}, "
                         f"so at most {states} processor{'' if states == 1 else 's'}, got "
                         f"{max(counts)} (gpipe and ooo leave extra processors idle; layerpipe splits δs over them)",
                         field="processors")


def _short_options(bandwidth: float | None, replication: bool, use_fewer_machines: bool) -> PipeDreamOptions:
    return PipeDreamOptions(activation_compression_ratio=None if bandwidth is None else 1.0,
                            straight_pipeline=not replication, use_fewer_machines=use_fewer_machines)


def plan_partition(profile: LayerProfile, plan: PipeDreamPlan) -> Partition:
    """Stages (innermost blocks, in pipeline order) with the optimizer's time terms.

    A level above replicates a block r times and adds its all-reduce a before dividing, so what a
    stage or transfer t inside it costs is (t + a) / r, applied level by level outwards."""
    ratio = plan.options.activation_compression_ratio
    n = len(plan.states)
    stages: list[Stage] = []
    boundaries: list[float] = []
    placed = placed_ops(profile)

    def outwards(value: float, above: list[tuple[float, int]]) -> float:
        for extra, replicas in above:
            value = (value + extra) / replicas
        return value

    def walk(level: int, group: int, above: list[tuple[float, int]]) -> None:
        number = len(plan.levels) - level  # 1: the innermost level
        spec = plan.hierarchy[number - 1]
        within = plan.hierarchy[number - 2].machines if number > 1 else 1
        offset = sum(len(g) for g in plan.levels[level][:group])
        for position, block in enumerate(plan.levels[level][group]):
            r = block.replicas
            parameters = plan.states.parameters[block.end - 1] - (
                plan.states.parameters[block.start - 1] if block.start else 0.0)
            # The released code divides the all-reduce by `within` only in its one-stage base case.
            allreduce = replica_allreduce(r, parameters, spec.bandwidth) / (within if position == 0 else 1)
            if position and ratio is not None:
                incoming = 2.0 * plan.states.crossing[block.start - 1] / (spec.bandwidth * r) / ratio
                outgoing = 2.0 * plan.states.crossing[block.end - 1] / (spec.bandwidth * r) / ratio \
                    if block.end < n else 0.0
                boundaries.append(outwards(max(incoming, outgoing), above))
            if number > 1:
                walk(level + 1, offset + position, [(allreduce, r), *above])
                continue
            nodes = plan.states.nodes_between(block.start, block.end)
            ops = tuple(op for k in nodes for op in placed[k])
            compute = sum(op.cost for op in ops)
            machines = r * math.prod(replicas for _, replicas in above)
            time = outwards((compute + allreduce) / r, above)
            stages.append(Stage(len(stages), tuple(profile.names[k] for k in nodes), ops, replicas=machines,
                                allreduce_cost=time - compute / machines))

    walk(0, 0, [])
    stage_of = {name: stage.index for stage in stages for name in stage.layers}
    return Partition("pipedream", tuple(stages), mandatory_bytes(profile, stage_of), 0, tuple(boundaries),
                     (describe(plan),), unit=profile.unit)


def describe(plan: PipeDreamPlan) -> str:
    """Which of the optimizer's settings a result used (outputs say so)."""
    options = plan.options
    levels = " × ".join(f"{level.machines} machines, free links" if math.isinf(level.bandwidth)
                        else f"{level.machines} machines at {level.bandwidth:.4g} bytes per time unit"
                        for level in plan.hierarchy)
    parts = [f"PipeDream's optimizer: {levels}",
             "straight pipeline" if options.straight_pipeline else "stage replication",
             "activation transfers ignored" if options.activation_compression_ratio is None
             else f"activation compression ratio {options.activation_compression_ratio:g}"]
    if options.memory_constraint:
        parts.append(f"memory constraint {options.memory_bytes:.4g} B")
    if options.use_fewer_machines:
        parts.append("fewer machines allowed")
    return "; ".join(parts)


__all__ = ["PipeDreamPlan", "pipedream_partition",
           "pipedream_partitions", "pipedream_plan", "pipedream_plans", "plan_partition"]
