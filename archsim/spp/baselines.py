"""SPP's baselines on the same costs and cluster (001_655b4b8cd650573f.txt §V-A), all synchronous:

* ``dp``: data parallel — every GPU holds the whole model and 1/V of each micro-batch; one ring
  AllReduce of all parameters over all GPUs at the slowest link.
* ``gpipe``: one stage per GPU (layers split to balance computation, ignoring links), GPUs in
  their given order, GPipe's fill-drain schedule.
* ``pipedream-prm``: the SPP paper's synchronous PipeDream, a named variant of PipeDream (whose own
  optimizer is ``archsim plan --method pipedream``): PRM's partition/replication over GPUs in
  their given order (no RDO) with SPP's per-micro-batch costs on the cluster's real links,
  choosing the stage count that minimizes 𝒲 — the slowest stage or channel — then PE.
* ``hetpipe``: one pipeline per server (a "virtual worker", one stage per GPU, PE schedule) on
  M / servers micro-batches each, then an AllReduce of all parameters across servers.
"""

from __future__ import annotations

from archsim.collectives import ring_allreduce_on
from archsim.partition.gpipe import gpipe_partition
from archsim.partition.profile import LayerProfile
from archsim.partition.result import Partition, Stage, mandatory_bytes, placed_ops
from archsim.spp.pe_order import StagePlan, pe_finish_time
from archsim.spp.plan import prm_partition, stage_plans
from archsim.spp.prm import PRMPlan, prm_tables
from archsim.spp.topology import Topology

BASELINES = ("dp", "gpipe", "pipedream-prm", "hetpipe")


def data_parallel(profile: LayerProfile, topology: Topology, microbatches: int) -> Partition:
    """One stage of every layer on every GPU; its makespan is M micro-batches' compute spread over
    the V GPUs plus one ring all-reduce of all parameters at the slowest link."""
    compute = microbatches * float(sum(profile.forward) + sum(profile.backward)) / topology.devices
    devices = tuple(range(topology.devices))
    allreduce = ring_allreduce_on(float(sum(profile.weight_bytes)), devices, topology.bandwidth)
    ops = tuple(op for layer in placed_ops(profile) for op in layer)
    stage = Stage(0, profile.names, ops, replicas=topology.devices, allreduce_cost=allreduce)
    return Partition("dp", (stage,), mandatory_bytes(profile, dict.fromkeys(profile.names, 0)), 0,
                     unit=profile.unit, devices=(devices,), makespan=compute + allreduce)


def _balanced_plan(profile: LayerProfile, devices) -> PRMPlan:
    """GPipe's compute-balanced partition (:func:`~archsim.partition.gpipe.gpipe_partition`) on
    ``devices`` in their given order, one stage per device."""
    partition = gpipe_partition(profile, len(devices), balance="compute")
    bounds, position = [], 0
    for stage in partition.stages:
        bounds.append((position, position + len(stage.layers)))
        position += len(stage.layers)
    used = tuple(devices[:len(bounds)])
    return PRMPlan(0.0, tuple(bounds), (1,) * len(bounds), tuple((d,) for d in used))


def gpipe(profile: LayerProfile, topology: Topology, microbatches: int) -> Partition:
    plan = _balanced_plan(profile, list(range(topology.devices)))
    makespan = pe_finish_time(stage_plans(profile, plan, topology.bandwidth), microbatches, order="gpipe")
    return prm_partition(profile, plan, topology.bandwidth, "gpipe", makespan)


def pipedream_prm(profile: LayerProfile, topology: Topology, microbatches: int) -> Partition:
    order = list(range(topology.devices))
    plans = prm_tables(profile, order, topology.bandwidth, microbatches, min(len(profile), topology.devices))
    best = min(plans, key=lambda p: p.value)
    makespan = pe_finish_time(stage_plans(profile, best, topology.bandwidth), microbatches)
    return prm_partition(profile, best, topology.bandwidth, "pipedream-prm", makespan)


def hetpipe(profile: LayerProfile, topology: Topology, microbatches: int) -> Partition:
    """One pipeline per server on ⌈M / servers⌉ micro-batches, then a ring all-reduce of all
    parameters over one GPU of each server. The plan shows the slowest server's pipeline."""
    servers = sorted(set(topology.servers))
    per_server = max(1, -(-microbatches // len(servers)))
    slowest, shown = 0.0, None
    for server in servers:
        devices = [d for d, s in enumerate(topology.servers) if s == server]
        plan = _balanced_plan(profile, devices)
        makespan = pe_finish_time(stage_plans(profile, plan, topology.bandwidth), per_server)
        if shown is None or makespan > slowest:
            slowest, shown = makespan, plan
    leaders = [next(d for d, s in enumerate(topology.servers) if s == server) for server in servers]
    total = slowest + ring_allreduce_on(float(sum(profile.weight_bytes)), leaders, topology.bandwidth)
    assert shown is not None
    return prm_partition(profile, shown, topology.bandwidth, "hetpipe", total)


def baseline(method: str, profile: LayerProfile, topology: Topology, microbatches: int) -> Partition:
    """The baseline's plan, its makespan (seconds, or the profile's unit) in ``.makespan``."""
    return {"dp": data_parallel, "gpipe": gpipe, "pipedream-prm": pipedream_prm, "hetpipe": hetpipe}[method](
        profile, topology, microbatches)


__all__ = ["BASELINES", "StagePlan", "baseline", "data_parallel", "gpipe", "hetpipe", "pipedream_prm"]
