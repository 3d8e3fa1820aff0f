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
from archsim.partition import pipedream_partition, profile_from_costs
from archsim.partition.profile import LayerProfile
from archsim.spp.pe import StagePlan, pe_makespan
from archsim.spp.plan import stage_plans
from archsim.spp.prm import PRMPlan, prm_tables
from archsim.spp.topology import Topology

BASELINES = ("dp", "gpipe", "pipedream-prm", "hetpipe")


def data_parallel(profile: LayerProfile, topology: Topology, microbatches: int) -> float:
    compute = microbatches * float(sum(profile.forward) + sum(profile.backward)) / topology.devices
    return compute + ring_allreduce_on(float(sum(profile.weight_bytes)), range(topology.devices), topology.bandwidth)


def _balanced_plan(profile: LayerProfile, devices) -> PRMPlan:
    stages = min(len(devices), len(profile))
    costs = profile_from_costs([str(i) for i in range(len(profile))], profile.forward, profile.backward,
                               [0.0] * len(profile))
    partition = pipedream_partition(costs, stages)
    bounds, position = [], 0
    for stage in partition.stages:
        bounds.append((position, position + len(stage.layers)))
        position += len(stage.layers)
    used = tuple(devices[:len(bounds)])
    return PRMPlan(0.0, tuple(bounds), (1,) * len(bounds), tuple((d,) for d in used))


def gpipe(profile: LayerProfile, topology: Topology, microbatches: int) -> float:
    plan = _balanced_plan(profile, list(range(topology.devices)))
    return pe_makespan(stage_plans(profile, plan, topology.bandwidth), microbatches, order="gpipe")[0]


def pipedream_prm(profile: LayerProfile, topology: Topology, microbatches: int) -> float:
    order = list(range(topology.devices))
    plans = prm_tables(profile, order, topology.bandwidth, microbatches, min(len(profile), topology.devices))
    best = min(plans, key=lambda p: p.value)
    return pe_makespan(stage_plans(profile, best, topology.bandwidth), microbatches)[0]


def hetpipe(profile: LayerProfile, topology: Topology, microbatches: int) -> float:
    servers = sorted(set(topology.servers))
    per_server = max(1, -(-microbatches // len(servers)))
    slowest = 0.0
    for server in servers:
        devices = [d for d, s in enumerate(topology.servers) if s == server]
        plan = _balanced_plan(profile, devices)
        slowest = max(slowest, pe_makespan(stage_plans(profile, plan, topology.bandwidth), per_server)[0])
    leaders = [next(d for d, s in enumerate(topology.servers) if s == server) for server in servers]
    return slowest + ring_allreduce_on(float(sum(profile.weight_bytes)), leaders, topology.bandwidth)


def baseline(method: str, profile: LayerProfile, topology: Topology, microbatches: int) -> float:
    return {"dp": data_parallel, "gpipe": gpipe, "pipedream-prm": pipedream_prm, "hetpipe": hetpipe}[method](
        profile, topology, microbatches)


__all__ = ["BASELINES", "StagePlan", "baseline", "data_parallel", "gpipe", "hetpipe", "pipedream_prm"]
