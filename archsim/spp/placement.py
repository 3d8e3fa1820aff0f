"""A plan made elsewhere (PipeDream's, say) laid on a cluster's GPUs as PE's per-stage plans.

Apart from :mod:`archsim.spp.plan` so that ``archsim plan --method pipedream`` loads neither SPP's
search nor the simulator to price its plan's makespan."""

from __future__ import annotations

from archsim.errors import InputError
from archsim.matrix_collectives import channel_link, pair_latency, ring_allreduce_on
from archsim.partition.profile import LayerProfile
from archsim.spp.pe_order import StagePlan
from archsim.spp.topology import Topology


def consecutive_devices(partition) -> tuple[tuple[int, ...], ...]:
    """Each stage's GPUs when a plan is laid on GPUs in their order: ``replicas`` consecutive ones."""
    groups, first = [], 0
    for stage in partition.stages:
        groups.append(tuple(range(first, first + stage.replicas)))
        first += stage.replicas
    return tuple(groups)


def partition_stage_plans(profile: LayerProfile, partition, bandwidth, latency=0.0, links=None) -> list[StagePlan]:
    """A :class:`~archsim.partition.result.Partition` (a PipeDream plan, say) laid on GPUs in their
    order, each stage on ``replicas`` consecutive GPUs, as PE's per-micro-batch stage plans over the
    cluster's real links: the stage's forward and backward split over its replicas, SPP's ring
    all-reduce of its parameters at its slowest link, and each boundary's crossing tensors split
    over the replica pairs at the slowest link between the two groups (SPP's channel model), each way one send
    paying the largest ``latency`` between them (:mod:`archsim.spp.prm`)."""
    index = {name: k for k, name in enumerate(profile.names)}
    stage_of = {index[name]: s for s, stage in enumerate(partition.stages) for name in stage.layers}
    groups = consecutive_devices(partition)
    first = sum(len(g) for g in groups)
    if first > len(bandwidth):
        raise InputError(f"the plan needs {first} GPUs; the cluster has {len(bandwidth)}", field="cluster")
    crossing = [0.0] * len(partition.stages)  # bytes leaving stage s for a later stage
    for producer in range(len(profile)):  # a tensor crosses each boundary once, however many layers read it beyond
        readers = [stage_of[consumer] for consumer in profile.consumers(producer)]
        for s in range(stage_of[producer], max(readers, default=stage_of[producer])):
            crossing[s] += float(profile.activation_bytes[producer])
    plans = []
    for s, (stage, devices) in enumerate(zip(partition.stages, groups)):
        nodes = [index[name] for name in stage.layers]
        r = len(devices)
        forward = float(sum(profile.forward[k] for k in nodes)) / r
        backward = float(sum(profile.weight_grad[k] + profile.delta[k] for k in nodes)) / r
        allreduce = ring_allreduce_on(float(sum(profile.weight_bytes[k] for k in nodes)), devices, bandwidth, links)
        channel = 0.0
        if s + 1 < len(groups):
            after = groups[s + 1]
            channel = crossing[s] / (r * len(after) * channel_link(bandwidth, devices, after, links))
            if crossing[s] > 0:
                channel += pair_latency(latency, devices, after)
        plans.append(StagePlan(forward, backward, allreduce, channel, channel))
    return plans


def pipedream_on_cluster(profile: LayerProfile, topology: Topology, options=None):
    """PipeDream's optimizer on the cluster's uniform levels (servers, then GPUs in one), its plan as
    the one plan type, and that plan laid on consecutive GPUs as PE's stage plans over the real links:
    ``(plan, partition, stage_plans)``. ``options``: :class:`~archsim.partition.pipedream_tables.PipeDreamOptions`
    (default: its CLI's defaults)."""
    from archsim.partition.pipedream import pipedream_plan, plan_partition
    from archsim.partition.pipedream_tables import Level, PipeDreamOptions

    hierarchy = tuple(Level(machines, bandwidth) for machines, bandwidth in topology.uniform_levels())
    plan = pipedream_plan(profile, hierarchy, options or PipeDreamOptions())
    partition = plan_partition(profile, plan)
    return plan, partition, partition_stage_plans(profile, partition, topology.bandwidth, topology.latency, topology.links)
