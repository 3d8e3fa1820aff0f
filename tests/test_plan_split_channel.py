"""``plan --links exact``: a boundary's transfer split over the r′·r replica pairs of two stages, all sending at once
(SPP §III-B), is priced on the links those pairs share — a NIC between servers, a GPU's own link in a server — not at
each pair's whole link, the paper's model (its graph gives every GPU pair an edge of its own: c = d / (r′·r·min b)),
which ``--links paper`` keeps."""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim.links import NIC_EFFICIENCY, infiniband
from archsim.partition import profile_from_costs
from archsim.spp.plan import stage_plans
from archsim.spp.prm import PRMPlan, plan_value, prm, prm_tables
from archsim.spp.topology import build_topology
from archsim.training.cluster_file import named_devices

CLUSTERS = Path(__file__).resolve().parents[1] / "configs" / "clusters"
D = 3_211_264  # bytes stage 1 sends forward a micro-batch (VGG16's conv4_1 output, 4 samples of fp16)
NIC = 100e9 / 8  # 100 Gb/s a direction
LAUNCH = infiniband(NIC).launch_s  # a send's α₀ on the NIC


def _cluster(gpus: tuple[int, ...], link: str = "shared") -> dict:
    return {"cluster": {"name": "split", "inter_server_gbps": 100, "inter_server_link": link},
            "servers": [{"gpus": g, "gpu": "a100-80gb"} for g in gpus]}


def _topology(spec: dict, links: str):
    return build_topology(spec, links=links, devices=named_devices(spec, CLUSTERS, "split.toml"))


def _two_layers():
    """Layer 0 sends D forward, nothing back (its δ is 0 bytes): the forward channel alone."""
    return profile_from_costs(["a", "b"], [1e-3, 1e-3], [0.0, 0.0], [2e-3, 2e-3], activation_bytes=[D, 1],
                              delta_bytes=[1, 0], weight_bytes=[0, 0])


def _forward(spec: dict, links: str, before: tuple[int, ...], after: tuple[int, ...]) -> float:
    topology = _topology(spec, links)
    plan = PRMPlan(0.0, ((0, 1), (1, 2)), (len(before), len(after)), (before, after))
    first, _ = stage_plans(_two_layers(), plan, topology.bandwidth, topology.latency, topology.links)
    return first.comm_forward


def test_two_gpus_behind_one_nic_send_to_two_behind_another_at_that_nics_speed():
    """2 + 2 GPUs, one NIC a server: the four replica pairs' quarters all leave on server 0's NIC, so D bytes take
    D / (η·B) (plus the send's α₀), not D / (4·η·B) as if each pair had the whole NIC."""
    exact = _forward(_cluster((2, 2)), "exact", (0, 1), (2, 3))
    assert exact == pytest.approx(LAUNCH + D / (NIC_EFFICIENCY * NIC), rel=1e-12)


def test_one_nic_per_gpu_carries_its_own_gpus_half():
    """The same stages on a NIC per GPU: each sender's NIC carries its two quarters, D / 2 at η·B."""
    exact = _forward(_cluster((2, 2), "per_gpu_pair"), "exact", (0, 1), (2, 3))
    assert exact == pytest.approx(LAUNCH + D / 2 / (NIC_EFFICIENCY * NIC), rel=1e-12)


def test_a_gpu_alone_on_its_shared_nic_gets_all_of_it():
    """One GPU of server 0 to one of server 1 (each NIC shared by two GPUs, the others idle): the whole NIC, D / (η·B)
    — not the min-cut capacity B / (2·2) that assumes all four pairs of the two NICs busy."""
    exact = _forward(_cluster((2, 2)), "exact", (1,), (2,))
    assert exact == pytest.approx(LAUNCH + D / (NIC_EFFICIENCY * NIC), rel=1e-12)


def test_five_replicas_feeding_three_over_one_nic_pair():
    """5 + 3 GPUs, one 100 Gb/s NIC a server: the paper's channel moves D in D / (15·B) = 17.13 µs, 15 times
    what the one NIC pair carries; exact, D / (η·B) = 267.6 µs plus α₀."""
    spec = _cluster((5, 3))
    paper = _forward(spec, "paper", (0, 1, 2, 3, 4), (5, 6, 7))
    assert paper == pytest.approx(D / (15 * NIC), rel=1e-12) and paper == pytest.approx(17.13e-6, rel=1e-3)
    exact = _forward(spec, "exact", (0, 1, 2, 3, 4), (5, 6, 7))
    assert exact == pytest.approx(LAUNCH + D / (NIC_EFFICIENCY * NIC), rel=1e-12)


def test_the_paper_keeps_each_pair_its_whole_link():
    """--links paper: c = d / (r′·r·min b), the paper's split (§III-B), byte for byte."""
    assert _forward(_cluster((2, 2)), "paper", (0, 1), (2, 3)) == D / (4 * NIC)


def test_the_search_prices_the_channel_as_the_plan_reports_it():
    """PRM's tables, its recurrence and the plan's own stage plans agree on the shared channel: 4 GPUs of 2 servers,
    one NIC each, a profile whose boundary bytes weigh."""
    spec = _cluster((2, 2))
    topology = _topology(spec, "exact")
    profile = profile_from_costs(["a", "b", "c"], [1e-4, 1e-4, 1e-4], [0.0] * 3, [2e-4] * 3,
                                 activation_bytes=[4e7, 4e7, 1], delta_bytes=[1, 4e7, 4e7], weight_bytes=[1e3] * 3)
    order = (0, 1, 2, 3)
    tables = {len(p.stages): p for p in prm_tables(profile, order, topology.bandwidth, 4, 3, topology.latency,
                                                   topology.links)}
    for stages, plan in tables.items():
        recurrence = prm(profile, order, topology.bandwidth, 4, stages, topology.latency, topology.links)
        assert plan.value == pytest.approx(recurrence.value, rel=1e-12)
        assert plan.value == pytest.approx(plan_value(profile, 4, plan.stages, plan.devices, topology.bandwidth,
                                                      topology.latency, topology.links), rel=1e-12)
