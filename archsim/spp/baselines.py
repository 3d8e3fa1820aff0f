"""SPP's baselines on the same costs and cluster (001_655b4b8cd650573f.txt §V-A), all synchronous:

* ``dp``: data parallel — every GPU holds the whole model and 1/V of each micro-batch; one ring
  AllReduce of all parameters over all GPUs at the slowest link.
* ``gpipe``: one stage per GPU (layers split to balance computation, ignoring links), GPUs in
  their given order, GPipe's fill-drain schedule: every stage, the last too, all forwards, then all
  backwards oldest first (:func:`~archsim.spp.pe_order.gpipe_order`, torch's ``ScheduleGPipe``).
* ``pipedream-prm``: the SPP paper's synchronous PipeDream, a named variant of PipeDream (whose own
  optimizer is ``archsim plan --method pipedream``): PRM's partition/replication over GPUs in
  their given order (no RDO) with SPP's per-micro-batch costs on the cluster's real links,
  choosing the stage count that minimizes 𝒲 — the slowest stage or channel — then PE.
* ``hetpipe``: one pipeline per server (a "virtual worker", one stage per GPU, PE schedule) on
  M / servers micro-batches each, then an AllReduce of all parameters across servers.

``config="paper"`` runs the baselines as the paper's §V-A and §II state them, where that differs:
``dp`` with every GPU training a whole mini-batch ("each GPU training the complete model with
mini-batch size amount of data": M micro-batches per GPU, not M / V), ``gpipe`` with "approximately
the same number of DNN layers on each GPU" (layer-count balance, not compute), and PipeDream as its
own optimizer ("minimizing the maximum time to process a single stage" over servers, then GPUs
within one; :func:`pipedream_optimizer`) under the paper's per-iteration barrier. HetPipe's
per-virtual-worker micro-batches are not stated: it runs as above in both (docs/papers/spp.md).
"""

from __future__ import annotations

from dataclasses import replace

from archsim.matrix_collectives import ring_allreduce_on
from archsim.partition.gpipe import gpipe_partition
from archsim.partition.profile import LayerProfile
from archsim.partition.result import Partition, Stage, mandatory_bytes, placed_ops
from archsim.spp.pe_order import pe_finish_time
from archsim.spp.plan import prm_partition, stage_count_limit, stage_plans
from archsim.spp.prm import PRMPlan, prm_tables
from archsim.spp.topology import Topology

BASELINES = ("dp", "gpipe", "pipedream-prm", "hetpipe")
CONFIGS = ("archsim", "paper")  # how the baselines run: archsim's reading, or as the SPP paper states them
PAPER_BASELINES = ("dp", "gpipe", "pipedream", "hetpipe")  # the paper's Table III columns, under config="paper"
PAPER_OPTIONS: dict[str, dict[str, str]] = {"dp": {"per_gpu": "minibatch"}, "gpipe": {"balance": "layers"}}
DP_PER_GPU = ("share", "minibatch")


def data_parallel(profile: LayerProfile, topology: Topology, microbatches: int, *,
                  per_gpu: str = "share") -> Partition:
    """One stage of every layer on every GPU; its makespan is the compute of M micro-batches spread
    over the V GPUs (``per_gpu="share"``: one mini-batch per iteration) or of M on every GPU
    (``"minibatch"``: the SPP paper's DP, V mini-batches per iteration), plus one ring all-reduce of
    all parameters at the slowest link."""
    if per_gpu not in DP_PER_GPU:
        raise ValueError(f"per_gpu must be one of {DP_PER_GPU}, got {per_gpu!r}")
    share = topology.devices if per_gpu == "share" else 1
    compute = microbatches * float(sum(profile.forward) + sum(profile.backward)) / share
    devices = tuple(range(topology.devices))
    allreduce = ring_allreduce_on(float(sum(profile.weight_bytes)), devices, topology.bandwidth, topology.links)
    ops = tuple(op for layer in placed_ops(profile) for op in layer)
    stage = Stage(0, profile.names, ops, replicas=topology.devices, allreduce_cost=allreduce)
    return Partition("dp", (stage,), mandatory_bytes(profile, dict.fromkeys(profile.names, 0)), 0,
                     unit=profile.unit, devices=(devices,), makespan=compute + allreduce)


def _balanced_plan(profile: LayerProfile, devices, balance: str = "compute") -> PRMPlan:
    """GPipe's partition (:func:`~archsim.partition.gpipe.gpipe_partition`, balanced by ``balance``:
    compute, or layer counts) on ``devices`` in their given order, one stage per device."""
    partition = gpipe_partition(profile, len(devices), balance=balance)
    bounds, position = [], 0
    for stage in partition.stages:
        bounds.append((position, position + len(stage.layers)))
        position += len(stage.layers)
    used = tuple(devices[:len(bounds)])
    return PRMPlan(0.0, tuple(bounds), (1,) * len(bounds), tuple((d,) for d in used))


def gpipe(profile: LayerProfile, topology: Topology, microbatches: int, *, balance: str = "compute") -> Partition:
    """One stage per GPU balanced by ``balance`` ("layers": the SPP paper's GPipe), fill-drain order."""
    plan = _balanced_plan(profile, list(range(topology.devices)), balance)
    makespan = pe_finish_time(stage_plans(profile, plan, topology.bandwidth, topology.latency, topology.links), microbatches,
                              order="gpipe")
    return prm_partition(profile, plan, topology.bandwidth, "gpipe", makespan, topology.links)


def pipedream_prm(profile: LayerProfile, topology: Topology, microbatches: int) -> Partition:
    order = list(range(topology.devices))
    plans = prm_tables(profile, order, topology.bandwidth, microbatches, stage_count_limit(profile, topology),
                       topology.latency, topology.links)  # every stage count: plan's search guard counts them
    best = min(plans, key=lambda p: p.value)
    makespan = pe_finish_time(stage_plans(profile, best, topology.bandwidth, topology.latency, topology.links), microbatches)
    return prm_partition(profile, best, topology.bandwidth, "pipedream-prm", makespan, topology.links)


def hetpipe(profile: LayerProfile, topology: Topology, microbatches: int) -> Partition:
    """One pipeline per server on ⌈M / servers⌉ micro-batches, then a ring all-reduce of all
    parameters over one GPU of each server. The plan shows the slowest server's pipeline."""
    servers = sorted(set(topology.servers))
    per_server = max(1, -(-microbatches // len(servers)))
    slowest, shown = 0.0, None
    for server in servers:
        devices = [d for d, s in enumerate(topology.servers) if s == server]
        plan = _balanced_plan(profile, devices)
        makespan = pe_finish_time(stage_plans(profile, plan, topology.bandwidth, topology.latency, topology.links), per_server)
        if shown is None or makespan > slowest:
            slowest, shown = makespan, plan
    leaders = [next(d for d, s in enumerate(topology.servers) if s == server) for server in servers]
    total = slowest + ring_allreduce_on(float(sum(profile.weight_bytes)), leaders, topology.bandwidth, topology.links)
    assert shown is not None
    return prm_partition(profile, shown, topology.bandwidth, "hetpipe", total, topology.links)


def pipedream_optimizer(profile: LayerProfile, topology: Topology, microbatches: int) -> Partition:
    """The SPP paper's PipeDream: its own optimizer's plan (:func:`~archsim.spp.placement.pipedream_on_cluster`), scheduled
    synchronously by PE with a barrier at the iteration's end (§V-A)."""
    from archsim.spp.placement import consecutive_devices, pipedream_on_cluster

    _, partition, plans = pipedream_on_cluster(profile, topology)
    return replace(partition, devices=consecutive_devices(partition), makespan=pe_finish_time(plans, microbatches))


def baseline(method: str, profile: LayerProfile, topology: Topology, microbatches: int,
             config: str = "archsim") -> Partition:
    """The baseline's plan, its makespan (seconds, or the profile's unit) in ``.makespan``; ``config``
    "paper": as the SPP paper configures it (:data:`PAPER_OPTIONS`; ``pipedream`` is its optimizer). ``layerpipe``
    (not one of the paper's: :mod:`archsim.spp.layerpipe_cluster`) runs alike under either."""
    if config not in CONFIGS:
        raise ValueError(f"config must be one of {CONFIGS}, got {config!r}")
    options = PAPER_OPTIONS.get(method, {}) if config == "paper" else {}
    from archsim.spp.layerpipe_cluster import layerpipe_on_cluster

    run = {"dp": data_parallel, "gpipe": gpipe, "pipedream-prm": pipedream_prm, "hetpipe": hetpipe,
           "pipedream": pipedream_optimizer, "layerpipe": layerpipe_on_cluster}[method]
    return run(profile, topology, microbatches, **options)


__all__ = ["BASELINES", "CONFIGS", "PAPER_BASELINES", "PAPER_OPTIONS", "baseline", "data_parallel",
           "gpipe", "hetpipe", "pipedream_optimizer", "pipedream_prm"]
