"""SPP (Alg. 3): order devices by RDO, and for every stage count take PRM's best partition,
replication and mapping, schedule it with PE, and keep the stage count with the least makespan."""

from __future__ import annotations

from dataclasses import dataclass

from archsim.spp.pe import StagePlan, pe_makespan
from archsim.spp.prm import LayerProfileSPP, PRMPlan, channel_time, prm_tables, stage_time
from archsim.spp.rdo import recursive_device_order
from archsim.spp.topology import Topology


@dataclass(frozen=True)
class SPPResult:
    plan: PRMPlan
    makespan: float
    order: tuple[int, ...]
    by_stage_count: tuple[tuple[int, float, float], ...]  # (|S|, 𝒲(|S|), T_PE)
    timeline: object


def stage_plans(profile: LayerProfileSPP, plan: PRMPlan, bandwidth) -> list[StagePlan]:
    """Per-micro-batch stage and channel times of a PRM plan (replicas share a micro-batch)."""
    plans = []
    for n, ((first, last), devices) in enumerate(zip(plan.stages, plan.devices)):
        r = len(devices)
        forward = sum(profile.forward[first:last]) / r
        backward = sum(profile.backward[first:last]) / r
        allreduce = stage_time(profile, 1, first, last, devices, bandwidth) - forward - backward if r > 1 else 0.0
        cf = cb = 0.0
        if n + 1 < len(plan.stages):
            both = channel_time(profile, 1, last, devices, plan.devices[n + 1], bandwidth)
            size = profile.activations[last - 1] + profile.gradients[last - 1]
            cf = both * profile.activations[last - 1] / size if size else 0.0
            cb = both - cf
        plans.append(StagePlan(forward, backward, allreduce, cf, cb))
    return plans


def spp(profile: LayerProfileSPP, topology: Topology, microbatches: int, *, max_stages: int | None = None) -> SPPResult:
    order = recursive_device_order(topology).order
    limit = min(len(profile), topology.devices, max_stages or topology.devices)
    best = None
    table = []
    for plan in prm_tables(profile, order, topology.bandwidth, microbatches, limit):
        count = len(plan.stages)
        makespan, timeline = pe_makespan(stage_plans(profile, plan, topology.bandwidth), microbatches)
        table.append((count, plan.value, makespan))
        if best is None or makespan < best[1]:
            best = (plan, makespan, timeline)
    assert best is not None
    return SPPResult(best[0], best[1], order, tuple(table), best[2])
