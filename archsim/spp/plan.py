"""SPP (Alg. 3): order devices by RDO, and for every stage count take PRM's best partition,
replication and mapping, schedule it with PE, and keep the stage count with the least makespan."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from archsim.errors import InputError
from archsim.matrix_collectives import ring_allreduce_on
from archsim.partition.profile import LayerProfile
from archsim.partition.result import Partition, Stage, mandatory_bytes, placed_ops
from archsim.spp import SEARCH_BYTES_LIMIT
from archsim.spp.pe_order import StagePlan

if TYPE_CHECKING:  # PRM and RDO load with SPP's search: a PipeDream plan laid on GPUs needs neither
    from archsim.spp.prm import PRMPlan
    from archsim.spp.topology import Topology


@dataclass(frozen=True)
class SPPResult:
    """SPP's answer: the plan (the one plan type, with its makespan), PRM's own form of it, the
    RDO device order, every stage count tried and the PE timeline of the best."""

    partition: Partition
    plan: PRMPlan
    makespan: float
    order: tuple[int, ...]
    by_stage_count: tuple[tuple[int, float, float], ...]  # (|S|, 𝒲(|S|), T_PE)
    timeline: object


def prm_partition(profile: LayerProfile, plan: PRMPlan, bandwidth, method: str, makespan: float,
                  links=None) -> Partition:
    """A PRM plan as the one plan type: each stage's layers and ops (costs per micro-batch, shared by
    its replicas), its devices, the ring all-reduce of its parameters at its slowest link, and the
    makespan PE gave it."""
    placed = placed_ops(profile)
    stages = tuple(Stage(n, profile.names[first:last], tuple(op for k in range(first, last) for op in placed[k]),
                         replicas=len(devices),
                         allreduce_cost=ring_allreduce_on(float(sum(profile.weight_bytes[first:last])), devices,
                                                            bandwidth, links))
                   for n, ((first, last), devices) in enumerate(zip(plan.stages, plan.devices)))
    stage_of = {name: stage.index for stage in stages for name in stage.layers}
    return Partition(method, stages, mandatory_bytes(profile, stage_of), 0, unit=profile.unit,
                     devices=tuple(tuple(d) for d in plan.devices), makespan=makespan)


def stage_plans(profile: LayerProfile, plan: PRMPlan, bandwidth, latency=0.0, links=None,
                samples: int | None = None) -> list[StagePlan]:
    """Per-micro-batch stage and channel times of a PRM plan (replicas share a micro-batch: each runs
    :func:`~archsim.spp.prm.replica_seconds` of it, 1/r or with m ``samples`` ⌈m/r⌉/m); each send whose
    bytes are not 0 pays the largest ``latency`` between the two stages' devices (:mod:`archsim.spp.prm`); a
    replicated stage's all-reduce is :func:`~archsim.matrix_collectives.ring_allreduce_on` (``links``: train's price)."""
    from archsim.matrix_collectives import pair_latency
    from archsim.spp.prm import boundary_directions, channel_time, replica_seconds

    forward_bytes, back_bytes = boundary_directions(profile)
    plans = []
    for n, ((first, last), devices) in enumerate(zip(plan.stages, plan.devices)):
        r = len(devices)
        forward = replica_seconds(float(sum(profile.forward[first:last])), r, samples)
        backward = replica_seconds(float(sum(profile.backward[first:last])), r, samples)
        allreduce = ring_allreduce_on(float(sum(profile.weight_bytes[first:last])), devices, bandwidth, links)
        cf = cb = 0.0
        if n + 1 < len(plan.stages):
            both = channel_time(profile, 1, last, devices, plan.devices[n + 1], bandwidth, 0.0, links)  # bytes alone
            size = forward_bytes[last - 1] + back_bytes[last - 1]
            cf = both * float(forward_bytes[last - 1]) / size if size else 0.0
            cb = both - cf
            lag = pair_latency(latency, devices, plan.devices[n + 1])
            cf += lag if float(forward_bytes[last - 1]) > 0 else 0.0
            cb += lag if float(back_bytes[last - 1]) > 0 else 0.0
        plans.append(StagePlan(forward, backward, allreduce, cf, cb))
    return plans


def spp(profile: LayerProfile, topology: Topology, microbatches: int, *, max_stages: int | None = None,
        on_stage_count=None, samples: int | None = None, on_level=None, objective: str = "paper") -> SPPResult:
    """``on_level(ξ)``, if given, is called after each level ξ ≥ 2 of the PRM tables is built and
    ``on_stage_count(n)`` after each stage count is scheduled (progress: the levels take nearly all the time).
    Each stage count's makespan is :func:`~archsim.spp.pe_order.pe_finish_time` (PE's makespan); the
    event simulator runs once, on the chosen plan, for its timeline. ``samples``: the m samples of a
    micro-batch, each replica taking whole ones (:func:`~archsim.spp.prm.replica_seconds`); None: the paper's 1/r.
    ``objective``: ``paper`` schedules each stage count's best plan by 𝒲 (§IV-B), ``exact`` the one PE runs fastest
    among the tables' candidates (:mod:`archsim.spp.prm_exact`; a row's 𝒲 is then the chosen plan's)."""
    from archsim.spp.pe import pe_makespan  # the simulator: here, not at the top (a PipeDream plan needs none)
    from archsim.spp.pe_order import pe_finish_time
    from archsim.spp.rdo import recursive_device_order

    order = recursive_device_order(topology).order
    limit = stage_count_limit(profile, topology, max_stages)

    def times(plan: PRMPlan) -> list[StagePlan]:
        return stage_plans(profile, plan, topology.bandwidth, topology.latency, topology.links, samples)

    def schedule(plan: PRMPlan) -> float:
        return pe_finish_time(times(plan), microbatches)

    best = None
    table = []
    for plan, makespan in _picks(profile, order, topology, microbatches, limit, samples, on_level, objective,
                                 schedule, times):
        count = len(plan.stages)
        table.append((count, plan.value, makespan))
        if on_stage_count is not None:
            on_stage_count(count)
        if best is None or makespan < best[1]:
            best = (plan, makespan)
    if best is None:  # m replicas a stage fill fewer GPUs than there are (plan refuses it before the search)
        raise InputError(f"no plan puts all {topology.devices} GPUs to work with at most {samples} replicas a stage "
                         f"and {limit} stages", field="replication")
    _, timeline = pe_makespan(stage_plans(profile, best[0], topology.bandwidth, topology.latency, topology.links,
                                          samples), microbatches)
    timeline = replace(timeline, unit=profile.unit)  # seconds: a Gantt's axis and a frame's attrs say so, not cycles
    partition = prm_partition(profile, best[0], topology.bandwidth, "spp", best[1], topology.links)
    return SPPResult(partition, best[0], best[1], order, tuple(table), timeline)


def _picks(profile: LayerProfile, order, topology: Topology, microbatches: int, limit: int, samples, on_level,
           objective: str, schedule, times) -> Iterator[tuple[PRMPlan, float]]:
    """Each stage count's plan and PE makespan under ``objective`` (:func:`spp`)."""
    from archsim.spp.prm import most_replicas, prm_plans, prm_search

    tables, choice, inputs = prm_search(profile, order, topology.bandwidth, microbatches, limit, topology.latency,
                                        topology.links, samples, on_level)
    if objective == "paper":
        yield from ((plan, schedule(plan)) for plan in prm_plans(tables, choice, order))
        return
    from archsim.spp.prm_exact import candidates, fastest, pipeline_bound

    for xi in range(1, limit + 1):
        pick = fastest(candidates(tables, choice, inputs, order, xi, microbatches,
                                  most_replicas(len(order), samples)), schedule,
                       lambda plan: pipeline_bound(times(plan), microbatches))
        if pick is not None:
            yield pick


def stage_count_limit(profile: LayerProfile, topology: Topology, max_stages: int | None = None) -> int:
    """How many stage counts SPP tries: up to the layers, the devices and ``max_stages``."""
    return min(len(profile), topology.devices, max_stages or topology.devices)


def check_search_size(profile: LayerProfile, topology: Topology, max_stages: int | None, limit: int,
                      baselines: Sequence[str] = (), *, droppable: bool = False) -> None:
    """Refuse, before any table is built, the PRM searches a plan runs — SPP's up to ``max_stages`` stages and,
    where ``baselines`` (those the run will price) name ``pipedream-prm``, that baseline's over every stage count —
    of more than ``limit`` PRM steps in all, or either search holding more than 4 GB of arrays
    (:func:`~archsim.spp.prm.prm_search_parts`, naming the largest part; one search runs after the other), with the
    estimate and what lifts or avoids the limit (its size grows as L²V³ in layers and GPUs, so a typo in a cluster
    file fails in a second, not after hours). ``droppable``: the baselines may be left out (``plan --baselines
    none``), named first where SPP's search alone fits and the baseline's share is what crosses the limit."""
    from archsim.spp.prm import prm_search_parts, prm_search_size

    layers, devices = len(profile), topology.devices
    stages = stage_count_limit(profile, topology, max_stages)
    every = stage_count_limit(profile, topology) if "pipedream-prm" in baselines else 0
    # the exact links' all-reduce tables are left out: their number (one per distinct group, few on a real
    # cluster) is known only once priced, and their bound, V(V-1)/2, would refuse searches that fit
    steps, size = prm_search_size(layers, devices, stages)
    extra, extra_size = prm_search_size(layers, devices, every) if every else (0, 0)
    total = steps + extra
    spp_search = f"SPP's search over {layers} layers, {devices} GPUs and up to {stages} stages is about {steps:,} steps"
    estimate = (f"{spp_search} and {size / 1e9:.3g} GB of tables, and the pipedream-prm baseline's over every stage "
                f"count up to {every} about {extra:,} steps and {extra_size / 1e9:.3g} GB: {total:,} steps in all "
                f"(≈{total * 0.9e-9:.3g} s)" if every else
                f"{spp_search} (≈{steps * 0.9e-9:.3g} s) and {size / 1e9:.3g} GB of tables")
    if max(size, extra_size) > SEARCH_BYTES_LIMIT:
        parts = prm_search_parts(layers, devices, max(stages, every))
        largest = max(parts, key=lambda part: parts[part])
        fix = ("fewer GPUs (--max-stages bounds SPP's search, not the pipedream-prm baseline's)"
               if extra_size > SEARCH_BYTES_LIMIT else "fewer GPUs or --max-stages")
        if droppable and size <= SEARCH_BYTES_LIMIT:
            fix = f"--baselines none to run SPP's search alone, or {fix}"
        raise InputError(f"{estimate}, above the {SEARCH_BYTES_LIMIT / 1e9:.0f} GB bound ({largest}: "
                         f"{parts[largest] / 1e9:.3g} GB); use {fix}", field="cluster")
    if total > limit:
        alone = (f"--baselines none to run SPP's search alone ({steps:,} steps), "
                 if droppable and extra and steps <= limit else "")
        raise InputError(f"{estimate}, above the limit of {limit:,} steps; give {alone}--max-search-steps {total} "
                         f"to run it anyway, or {_shorter(layers, devices, stages, extra, limit)}",
                         field="max-search-steps")


def _shorter(layers: int, devices: int, stages: int, extra: int, limit: int) -> str:
    """The advice that brings a plan's PRM steps under ``limit``: fewer --max-stages where SPP's search alone
    counts, the most stages that fit beside the pipedream-prm baseline's ``extra`` steps (which --max-stages
    leaves as they are), else a cluster of fewer GPUs."""
    from archsim.spp.prm import prm_search_size

    if not extra:
        return "fewer --max-stages"
    fit = next((s for s in range(stages - 1, 0, -1) if prm_search_size(layers, devices, s)[0] + extra <= limit), 0)
    if fit:
        return (f"--max-stages {fit}{' or fewer' if fit > 1 else ''} (it bounds SPP's search only; the pipedream-prm "
                "baseline tries every stage count)")
    return (f"a cluster of fewer GPUs: --max-stages bounds SPP's search only, and the pipedream-prm baseline's, "
            f"{extra:,} steps, is above the limit alone")
