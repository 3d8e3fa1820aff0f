"""LayerPipe's Algorithm 1 laid on a cluster (``archsim plan --method layerpipe``), scheduled and priced as SPP's
baselines are: its stages on the cluster's first devices in their given order, one device a stage (as ``gpipe``'s),
each boundary's transfers at the link between the two consecutive devices, and SPP's PE schedule
(:func:`~archsim.spp.pe_order.pe_finish_time`) of the iteration's micro-batches, so its makespan compares with
SPP's, PipeDream's and the baselines' on the same links.

What carries over from LayerPipe, and what does not (docs/cli.md, ``plan --method layerpipe``):

* the plan is Algorithm 1's (:func:`~archsim.partition.layerpipe.layerpipe_partition`), which balances compute
  over identical processors and reads no link; a δ it borrows runs on the borrowing stage, in that stage's
  backward block, and the result it makes there (the gradient of its layer's input) crosses back to the stages
  before it, besides the boundary's own gradient (:func:`crossing_bytes`);
* δ′/δ″ splits where the layers were priced on an array (``plan --array``/``--config``, or a cluster of no device):
  the split's sub-GEMMs are costed in the array's cycles at its clock, as the profile's costs were
  (:class:`SecondsCoster`), so the plan is ``archsim pipeline --method layerpipe``'s on as many processors; on a
  device (a GPU's tiles, a device file) or a measured profile no sub-GEMM is costed and δ moves whole;
* PE is synchronous: every micro-batch's forward and backward within one iteration, then a flush. LayerPipe's
  retimed pipeline (delayed weight updates, iterations overlapping) and its δ-first priority are not modelled,
  nor a stage's δ″ running beside its lender's δ′ (a stage's backward is one block), nor the weights a borrowed δ
  receives (LayerPipe's additional traffic, once per update).

A cluster of devices of different types is refused: Algorithm 1's target T_p = T_tot / N_p assumes identical
processors, and plan prices every device with one layer profile.
"""

from __future__ import annotations

from dataclasses import replace

from archsim.errors import InputError
from archsim.matrix_collectives import pair_latency, slowest_link
from archsim.partition.coster import DeltaCoster
from archsim.partition.profile import LayerProfile
from archsim.partition.result import Partition
from archsim.split_axis import SplitAxis
from archsim.spp.pe_order import StagePlan, pe_finish_time
from archsim.spp.topology import Topology

DELTA_KINDS = ("D", "D1", "D2")  # a layer's δ, whole or split: the part Algorithm 1 may move


class SecondsCoster(DeltaCoster):
    """The array model's δ-split coster in the seconds of a profile priced on that array at its clock
    (:func:`archsim.spp.profiles.profile_from_network`: cycles × ``period``): the budget is turned into cycles and
    the split's cycles back, so Algorithm 1 splits as it does on the profile in cycles."""

    def __init__(self, profile: LayerProfile, period: float) -> None:
        assert profile.array is not None
        super().__init__(profile.lowered, profile.array, profile.engine)
        self.period = period  # seconds per cycle

    def fitting_split(self, index: int, axis: SplitAxis, budget: float) -> tuple[int, float, float]:  # type: ignore[override]
        part, d1, d2 = super().fitting_split(index, axis, budget / self.period)
        return part, d1 * self.period, d2 * self.period


def seconds_coster(profile: LayerProfile) -> DeltaCoster | None:
    """The split coster of a profile in seconds priced on an array (its lowered layers and the array kept), or None:
    a device's or a measured profile has no sub-GEMM to cost (Algorithm 1 then moves whole δs)."""
    if profile.unit != "seconds" or profile.array is None or not profile.lowered:
        return DeltaCoster.of(profile)  # a profile in cycles: its own coster
    from archsim.spp.profiles import cycle_seconds

    return SecondsCoster(profile, cycle_seconds(profile.array))  # the period profile_from_network priced it at


def check_identical_devices(topology: Topology) -> None:
    """Refuse a cluster whose devices are of different types: Algorithm 1 balances for identical processors."""
    kinds = sorted(set(topology.device_types or ()))
    if len(kinds) > 1:
        raise InputError(f"layerpipe's Algorithm 1 balances its stages for identical processors; this cluster's "
                         f"devices are of {len(kinds)} types ({', '.join(kinds)}): plan a cluster of one device "
                         "type, or use archsim train --balance planned, whose stage split prices each rank on its "
                         "own GPU", field="cluster")


def crossing_bytes(profile: LayerProfile, plan: Partition) -> list[tuple[int, int]]:
    """Per boundary of ``plan``'s stages (stage n and n + 1, forward order), the bytes of one micro-batch that cross
    it forward and back, in SPP's chain model (:func:`archsim.spp.prm.boundary_bytes`: the profile in its node
    order). Forward: the activation of the last layer before the cut. Back: the gradient the layer after the cut
    sends (its δ's result), plus, for each layer before the cut whose δ (or a piece of it) runs after it, borrowed,
    that δ's result, the gradient of the layer's input, once a layer (whole: a reduction split's pieces are partial
    sums of all of it; a channel or row split's are a share of it, counted whole)."""
    names = profile.names
    home = {name: stage.index for stage in plan.stages for name in stage.layers}
    last_delta: dict[int, int] = {}  # layer index → the last stage running its δ or a piece of it
    position = {name: k for k, name in enumerate(names)}
    for stage in plan.stages:
        for op in stage.ops:
            if op.kind in DELTA_KINDS:
                k = position[op.layer]
                last_delta[k] = max(last_delta.get(k, -1), stage.index)
    from archsim.spp.prm import boundary_directions

    forward, back = (side.tolist() for side in boundary_directions(profile))  # after layer l: d^f, d^b (0 at the end)
    delta = profile.delta_bytes.tolist()
    crossing = []
    for cut in range(len(plan.stages) - 1):
        last = max((k for k, name in enumerate(names) if home[name] <= cut), default=-1)
        borrowed = sum(int(delta[k]) for k, stage in last_delta.items() if k <= last and stage > cut)
        crossing.append((int(forward[last]), int(back[last]) + borrowed) if last >= 0 else (0, borrowed))
    return crossing


def layerpipe_stage_plans(profile: LayerProfile, plan: Partition, devices, bandwidth, latency=0.0) -> list[StagePlan]:
    """PE's per-micro-batch blocks of ``plan`` on ``devices`` (one a stage, in order): a stage's forward is its F
    ops, its backward every other op it runs (G, its own δ, what it borrowed); the channel to the next stage carries
    :func:`crossing_bytes` at the link between the two devices, each send whose bytes are not 0 paying its latency
    (as :func:`archsim.spp.plan.stage_plans`)."""
    crossing = crossing_bytes(profile, plan)
    plans = []
    for n, stage in enumerate(plan.stages):
        forward = sum(op.cost for op in stage.ops if op.kind == "F")
        backward = sum(op.cost for op in stage.ops if op.kind != "F")
        cf = cb = 0.0
        if n + 1 < len(plan.stages):
            here, there = (devices[n],), (devices[n + 1],)
            link, lag = float(slowest_link(bandwidth, here, there)), pair_latency(latency, here, there)
            size_f, size_b = crossing[n]
            cf = size_f / link + lag if size_f else 0.0
            cb = size_b / link + lag if size_b else 0.0
        plans.append(StagePlan(forward, backward, 0.0, cf, cb))
    return plans


def layerpipe_on_cluster(profile: LayerProfile, topology: Topology, microbatches: int) -> Partition:
    """Algorithm 1's plan on ``topology.devices`` processors, its stages on devices 0, 1, … in order, scheduled by
    PE over the cluster's links: ``.makespan`` (the profile's unit), ``.devices``, and ``.boundary_costs`` (each
    boundary's channel time of one micro-batch, both ways)."""
    from archsim.partition.layerpipe import layerpipe_partition

    check_identical_devices(topology)
    plan = layerpipe_partition(profile, topology.devices, coster=seconds_coster(profile))
    devices = list(range(len(plan.stages)))
    plans = layerpipe_stage_plans(profile, plan, devices, topology.bandwidth, topology.latency)
    makespan = pe_finish_time(plans, microbatches)
    return replace(plan, devices=tuple((d,) for d in devices), makespan=makespan,
                   boundary_costs=tuple(p.comm_forward + p.comm_backward for p in plans[:-1]))


__all__ = ["SecondsCoster", "check_identical_devices", "crossing_bytes", "layerpipe_on_cluster", "layerpipe_stage_plans",
           "seconds_coster"]
