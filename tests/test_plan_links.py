"""plan --links: the SPP paper's transfer (bytes / bandwidth, the default) and the exact one, which pays the
pair's link as train's pipeline hop does (its launch latency α₀ plus the bytes at η·bandwidth)."""

import json
from pathlib import Path

import numpy as np
import pytest
from test_spp import random_profile

from archsim.cli import main
from archsim.collectives import Spanning, collective_seconds
from archsim.errors import InputError
from archsim.links import A100_NVLINK, NIC_EFFICIENCY, infiniband, nvlink
from archsim.partition import profile_from_costs
from archsim.spp.plan import stage_plans
from archsim.spp.prm import PRMPlan, plan_value, prm, prm_tables
from archsim.spp.topology import LINK_MODELS, build_topology
from archsim.training.cluster_file import named_devices

CLUSTERS = Path(__file__).resolve().parents[1] / "configs" / "clusters"
TWO_A100 = {"cluster": {"name": "two"}, "servers": [{"gpus": 2, "intra_server_gbps": 4800, "gpu": "a100-80gb"}]}
ACTIVATION, DELTA = 3_000_000, 2_000_000  # bytes layer 0 sends forward, layer 1 sends back


def _topology(spec: dict, links: str):
    return build_topology(spec, links=links, devices=named_devices(spec, CLUSTERS, "two.toml"))


def _two_layers():
    return profile_from_costs(["a", "b"], [1e-3, 1e-3], [0.0, 0.0], [2e-3, 2e-3],
                              activation_bytes=[ACTIVATION, 1], delta_bytes=[1, DELTA], weight_bytes=[10, 10])


TWO_STAGES = PRMPlan(0.0, ((0, 1), (1, 2)), (1, 1), ((0,), (1,)))


def test_a_two_gpu_plan_pays_the_links_latency_and_efficiency():
    """Two A100s on NVSwitch: the file's 4800 Gbit/s (both directions) is 300 GB/s a direction; NVLink's
    fitted η and launch latency α₀. Each way across the stage boundary costs α₀ + bytes / (B·η)."""
    bandwidth = 4800 * 1e9 / 8 / 2
    eta, alpha0 = A100_NVLINK["efficiency"], A100_NVLINK["launch_s"]
    topology = _topology(TWO_A100, "exact")
    first, _ = stage_plans(_two_layers(), TWO_STAGES, topology.bandwidth, topology.latency)
    assert first.comm_forward == pytest.approx(ACTIVATION / (bandwidth * eta) + alpha0, rel=1e-12)
    assert first.comm_backward == pytest.approx(DELTA / (bandwidth * eta) + alpha0, rel=1e-12)
    # train's p2p on the same link prices the same send
    hop = float(collective_seconds("p2p", ACTIVATION, 2, nvlink(bandwidth)))
    assert first.comm_forward == pytest.approx(hop, rel=1e-12)


def test_the_paper_default_keeps_bytes_over_bandwidth():
    """The default is the paper's model: no latency, no η (the figures docs/papers/spp.md compares)."""
    bandwidth = 4800 * 1e9 / 8 / 2
    topology = build_topology(TWO_A100)
    assert topology.latency == 0.0 and topology.bandwidth[0, 1] == bandwidth
    first, _ = stage_plans(_two_layers(), TWO_STAGES, topology.bandwidth, topology.latency)
    assert first.comm_forward == ACTIVATION / bandwidth and first.comm_backward == DELTA / bandwidth


def test_a_pair_across_servers_pays_the_nics_latency_and_efficiency():
    """Two servers of one A100 each, 200 Gbit/s between them (25 GB/s): the NIC's η (NCCL's channel speed) and
    α₀; the min-cut capacities keep the stated figure."""
    spec = {"cluster": {"name": "two", "inter_server_gbps": 200},
            "servers": [{"count": 2, "gpus": 1, "intra_server_gbps": 4800, "gpu": "a100-80gb"}]}
    topology = _topology(spec, "exact")
    nic = 200e9 / 8
    assert topology.bandwidth[0, 1] == pytest.approx(nic * NIC_EFFICIENCY, rel=1e-12)
    assert topology.latency[0, 1] == infiniband(nic).launch_s > 0
    assert topology.capacity[0, 1] == nic


TWO_SERVERS = {"cluster": {"name": "two", "inter_server_gbps": 200},
               "servers": [{"count": 3, "gpus": 2, "intra_server_gbps": 4800, "gpu": "a100-80gb"}]}
WEIGHTS = 40_000_000  # bytes of parameters in each of the two layers


def _weighted_layers():
    return profile_from_costs(["a", "b"], [1e-3, 1e-3], [0.0, 0.0], [2e-3, 2e-3],
                              activation_bytes=[ACTIVATION, 1], delta_bytes=[1, DELTA],
                              weight_bytes=[WEIGHTS, WEIGHTS])


# stage 0 on four GPUs (two servers: its slowest link is a NIC), stage 1 on the third server's two GPUs (NVLink)
SPREAD = PRMPlan(0.0, ((0, 1), (1, 2)), (4, 2), ((0, 1, 2, 3), (4, 5)))


def test_exact_links_price_a_replicated_stages_allreduce_as_train_does():
    """Three servers of two A100s, 200 Gbit/s between them (25 GB/s, one NIC a server shared by its two GPUs),
    NVSwitch inside (300 GB/s a direction). A stage on all four GPUs of two servers all-reduces as train's group
    over servers: NVLink inside each, between them the group's share of the NICs (two GPUs' halves: 25 GB/s),
    per-step latencies included (tests/test_plan_exact_search.py: by hand); a stage on one server's two GPUs:
    train's all-reduce on NVLink at 300 GB/s. The plan's partition states the same."""
    from archsim.spp.plan import prm_partition

    topology = _topology(TWO_SERVERS, "exact")
    first, second = stage_plans(_weighted_layers(), SPREAD, topology.bandwidth, topology.latency, topology.links)
    across = float(collective_seconds("all-reduce", WEIGHTS, 4,
                                      Spanning(nvlink(4800e9 / 8 / 2), infiniband(200e9 / 8), 2)))
    inside = float(collective_seconds("all-reduce", WEIGHTS, 2, nvlink(4800e9 / 8 / 2)))
    assert first.allreduce == pytest.approx(across, rel=1e-12)
    assert second.allreduce == pytest.approx(inside, rel=1e-12)
    # the per-step latency is paid: more than the bytes at η·B alone
    assert first.allreduce > 2 * 3 / 4 * WEIGHTS / (200e9 / 8 * NIC_EFFICIENCY) + infiniband(1.0).launch_s
    partition = prm_partition(_weighted_layers(), SPREAD, topology.bandwidth, "spp", 1.0, topology.links)
    assert [s.allreduce_cost for s in partition.stages] == pytest.approx([across, inside], rel=1e-12)


def test_paper_links_keep_spps_allreduce():
    """The paper's A = 2(k − 1)·Σα / (k·min b): no η, no latency (the figures docs/papers/spp.md compares)."""
    topology = build_topology(TWO_SERVERS)
    assert topology.links is None
    first, second = stage_plans(_weighted_layers(), SPREAD, topology.bandwidth, topology.latency, topology.links)
    assert first.allreduce == pytest.approx(2 * 3 * WEIGHTS / (4 * 200e9 / 8), rel=1e-12)
    assert second.allreduce == pytest.approx(2 * 1 * WEIGHTS / (2 * 4800e9 / 8 / 2), rel=1e-12)


@pytest.mark.long  # the first DGX-1 ring search (cached afterwards) takes most of a second
def test_the_dgx1_pairs_take_their_own_link_class():
    """A DGX-1 of V100s: a pair joined by NVLink rings and a pair on PCIe each pay their own class's η."""
    spec = {"cluster": {"name": "dgx1"}, "servers": [{"gpus": 8, "gpu": "v100-32gb"}]}
    paper, exact = build_topology(spec), _topology(spec, "exact")
    ratio = exact.bandwidth / np.where(paper.bandwidth > 0, paper.bandwidth, 1.0)
    off = ~np.eye(8, dtype=bool)
    assert np.allclose(ratio[off], 0.903) and np.all(exact.latency[off] == 37.9e-6)


def test_exact_links_refuse_a_cluster_of_links_alone():
    """A server naming no device has no link class to price its pairs: one clear refusal."""
    spec = {"cluster": {"name": "bare"}, "servers": [{"gpus": 2, "intra_server_gbps": 256}]}
    with pytest.raises(InputError) as error:
        build_topology(spec, links="exact")
    assert error.value.where.field == "servers" and "--links paper" in error.value.message


def test_prm_tables_equal_brute_force_with_latency():
    """The vectorized PRM (numba kernel) and the brute-force recurrence agree when sends pay a latency."""
    rng = np.random.default_rng(3)
    for seed in range(6):
        profile = random_profile(seed, 4)
        bandwidth = rng.uniform(1.0, 4.0, (4, 4))
        bandwidth = (bandwidth + bandwidth.T) / 2
        np.fill_diagonal(bandwidth, 0.0)
        latency = rng.uniform(0.0, 2.0, (4, 4))
        latency = (latency + latency.T) / 2
        order = [2, 0, 3, 1]
        tables = prm_tables(profile, order, bandwidth, 3, 4, latency)
        for stages, plan in enumerate(tables, start=1):
            brute = prm(profile, order, bandwidth, 3, stages, latency)
            assert plan.value == pytest.approx(brute.value, rel=1e-12)
            assert plan.value == pytest.approx(plan_value(profile, 3, plan.stages, plan.devices, bandwidth, latency),
                                               rel=1e-12)
        slow = prm_tables(profile, order, bandwidth, 3, 4, latency + 100.0)[-1]  # four stages: three channels
        assert slow.value > tables[-1].value >= prm_tables(profile, order, bandwidth, 3, 4)[-1].value


def test_cli_links_flag(capsys):
    """plan --links exact on the 1080 Ti testbed: stated in the meta and slower than the paper's default;
    on a cluster of links alone, exit 2 with one line naming the key."""
    from archsim.plan_flags import LINK_MODELS as CLI_MODELS

    assert CLI_MODELS == LINK_MODELS
    base = ["plan", "ffnn8", "--cluster", str(CLUSTERS / "testbed_1080ti_gpu.toml"), "--dtype", "fp32",
            "--microbatches", "4", "--format", "json"]
    seconds = {}
    for links in LINK_MODELS:
        assert main([*base, "--links", links]) == 0
        meta = json.loads(capsys.readouterr().out)["meta"]
        assert meta.get("links", "paper") == links
        seconds[links] = meta["makespan_seconds"]
    assert seconds["exact"] > seconds["paper"]
    assert main(["plan", "ffnn8", "--cluster", str(CLUSTERS / "testbed_1080ti.toml"), "--microbatches", "4",
                 "--links", "exact"]) == 2
    assert "servers" in capsys.readouterr().err
