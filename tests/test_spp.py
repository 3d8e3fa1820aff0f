"""SPP: topologies, recursive device ordering, and PRM against brute force and Lemma 2."""

import itertools
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archsim.errors import InputError
from archsim.partition import profile_from_costs
from archsim.partition.profile import LayerProfile
from archsim.spp.prm import phi, plan_value, prm
from archsim.spp.rdo import recursive_device_order
from archsim.spp.topology import Topology, build_topology, load_topology_file


def test_spp_sim_cluster_matches_section_v_b():
    from pathlib import Path

    topo = load_topology_file(Path(__file__).resolve().parents[1] / "configs" / "clusters" / "spp_sim.toml")
    assert topo.devices == 32 and len(set(topo.servers)) == 8
    gbps = topo.bandwidth * 8 / 1e9
    same = np.array(topo.servers)[:, None] == np.array(topo.servers)[None, :]
    off = ~np.eye(32, dtype=bool)
    assert gbps[~same].min() >= 32 and gbps[~same].max() <= 40
    slow = [s for s in range(8) if 96 <= gbps[topo.servers.index(s), topo.servers.index(s) + 1] <= 128]
    assert len(slow) == 3 and np.all(gbps[same & off] >= 96)
    again = load_topology_file(Path(__file__).resolve().parents[1] / "configs" / "clusters" / "spp_sim.toml")
    assert np.array_equal(topo.bandwidth, again.bandwidth)  # seeded


@pytest.mark.parametrize("spec, field", [
    ({"cluster": {"name": "x", "colour": 1}, "servers": [{"count": 1, "gpus": 2, "intra_server_gbps": 10}]}, "colour"),
    ({"cluster": {"inter_server_gbps": [40, 32]}, "servers": [{"count": 2, "gpus": 1, "intra_server_gbps": 9}]},
     "inter_server_gbps"),
    ({"cluster": {}, "servers": [{"count": 1, "gpus": 0, "intra_server_gbps": 10}]}, "servers[1].gpus"),
])
def test_bad_cluster_specs(spec, field):
    with pytest.raises(InputError) as error:
        build_topology(spec)
    assert error.value.where.field == field



def test_inter_server_links_by_hand():
    """Three servers of two GPUs: one inter-server figure fills every pair of servers (Gb/s → bytes/s:
    × 1e9 / 8), a shared NIC divides it by the GPUs at both ends (2 × 2); the in-server figure is both
    directions together, so a transfer gets half of it (÷ 2, as train); a [low, high] range draws one
    figure per pair of servers in the order (0, 1), (0, 2), (1, 2) from numpy's generator of the seed."""
    servers = [{"count": 3, "gpus": 2, "intra_server_gbps": 100}]
    fixed = build_topology({"cluster": {"inter_server_gbps": 25}, "servers": servers})
    inside, between = 100e9 / 8 / 2, 25e9 / 8
    expected = np.array([[0, inside, between, between, between, between],
                         [inside, 0, between, between, between, between],
                         [between, between, 0, inside, between, between],
                         [between, between, inside, 0, between, between],
                         [between, between, between, between, 0, inside],
                         [between, between, between, between, inside, 0]])
    assert np.array_equal(fixed.bandwidth, expected)
    assert np.array_equal(fixed.capacity, np.where(expected == between, between / 4, expected))
    drawn = build_topology({"cluster": {"inter_server_gbps": [30, 40], "seed": 7}, "servers": servers})
    rng = np.random.default_rng(7)
    pair = {(a, b): rng.uniform(30, 40) * 1e9 / 8 for a, b in ((0, 1), (0, 2), (1, 2))}
    for i, j in itertools.product(range(6), repeat=2):
        a, b = sorted((i // 2, j // 2))
        assert drawn.bandwidth[i, j] == (0 if i == j else inside if a == b else pair[(a, b)])
    one = build_topology({"cluster": {"inter_server_gbps": 400}, "servers": [{"count": 1, "gpus": 2,
                                                                              "intra_server_gbps": 100}]})
    assert one.bandwidth[0, 1] == inside  # one server: the inter-server figure is never used
    with pytest.raises(InputError, match="inter_server_gbps"):  # but held to every Gbit/s figure's bound
        build_topology({"cluster": {"inter_server_gbps": "fast"}, "servers": [{"count": 1, "gpus": 2,
                                                                              "intra_server_gbps": 100}]})

def random_topology(seed: int, devices: int) -> Topology:
    rng = np.random.default_rng(seed)
    bandwidth = rng.uniform(1.0, 10.0, (devices, devices))
    bandwidth = np.triu(bandwidth, 1)
    bandwidth = bandwidth + bandwidth.T
    return Topology("random", tuple(range(devices)), bandwidth)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), devices=st.integers(2, 9))
def test_rdo_keeps_every_cut_between_contiguous_blocks(seed, devices):
    """Each min-cut's two sides are contiguous blocks of the order, so its links serve one stage
    boundary (or one replicated stage) of any interval partition along the order."""
    ordering = recursive_device_order(random_topology(seed, devices))
    assert sorted(ordering.order) == list(range(devices))
    rank = {d: i for i, d in enumerate(ordering.order)}
    for first, second in ordering.cuts:
        ranks_a, ranks_b = sorted(rank[d] for d in first), sorted(rank[d] for d in second)
        assert ranks_a == list(range(ranks_a[0], ranks_a[0] + len(ranks_a)))
        assert ranks_b == list(range(ranks_a[-1] + 1, ranks_a[-1] + 1 + len(ranks_b)))


def test_rdo_splits_servers_at_the_slow_links():
    spec = {"cluster": {"inter_server_gbps": 10}, "servers": [{"count": 3, "gpus": 2, "intra_server_gbps": 100}]}
    ordering = recursive_device_order(build_topology(spec))
    servers = [d // 2 for d in ordering.order]
    assert servers == sorted(servers, key=servers.index) and len(set(servers[0:2])) == 1  # servers stay whole


def _runs(ordering, topology) -> int:
    servers = [topology.servers[d] for d in ordering.order]
    return 1 + sum(a != b for a, b in itertools.pairwise(servers))


@pytest.mark.parametrize("seed", range(5))
def test_shared_nic_keeps_every_spp_sim_server_whole(seed):
    """With each server pair's GPU pairs sharing one link, cutting one server off (7 links) is
    lighter than isolating a GPU (3 intra links) or halving the cluster (16 links): RDO keeps the
    8 servers whole, as the paper's ordering intends."""
    path = pathlib.Path(__file__).resolve().parents[1] / "configs" / "clusters" / "spp_sim.toml"
    topology = load_topology_file(path, seed=seed)
    ordering = recursive_device_order(topology)
    assert _runs(ordering, topology) == 8
    first, second = ordering.cuts[0]
    assert sorted((len(first), len(second))) == [4, 28]


def test_shared_capacity_sums_to_the_server_link_and_per_pair_isolates_a_gpu():
    spec = {"cluster": {"inter_server_gbps": 36, "inter_server_link": "shared"},
            "servers": [{"count": 8, "gpus": 4, "intra_server_gbps": 110}]}
    shared = build_topology(spec)
    assert np.array_equal(shared.bandwidth, build_topology({**spec, "cluster": {"inter_server_gbps": 36}}).bandwidth)
    assert shared.capacity[0, 4:8].sum() * 4 == pytest.approx(36e9 / 8)  # server 0 × server 1: one 36 Gbps link
    assert shared.capacity[0, 1] == shared.bandwidth[0, 1] == pytest.approx(110e9 / 8 / 2)  # both directions
    dedicated = build_topology({**spec, "cluster": {"inter_server_gbps": 36, "inter_server_link": "per_gpu_pair"}})
    first, second = recursive_device_order(dedicated).cuts[0]
    assert sorted((len(first), len(second))) == [1, 31]  # 3·55 < 28·36: the lightest cut is one GPU


def test_unknown_inter_server_link_is_an_input_error():
    spec = {"cluster": {"inter_server_gbps": 36, "inter_server_link": "bus"},
            "servers": [{"count": 2, "gpus": 2, "intra_server_gbps": 110}]}
    with pytest.raises(InputError) as error:
        build_topology(spec)
    assert error.value.where.field == "inter_server_link"


def random_profile(seed: int, layers: int) -> LayerProfile:
    """Random chain: times in (0.5, 5), byte sizes in 1..5 (per layer: parameters, activation out,
    δ back in)."""
    rng = np.random.default_rng(seed)
    times = lambda: [float(x) for x in rng.uniform(0.5, 5.0, layers)]
    sizes = lambda: [int(x) for x in rng.integers(1, 6, layers)]
    forward, backward, parameters, activations, deltas = times(), times(), sizes(), sizes(), sizes()
    return profile_from_costs([f"l{k}" for k in range(layers)], forward, [0.0] * layers, backward,
                              activation_bytes=activations, delta_bytes=deltas, weight_bytes=parameters)


def compositions(total: int, parts: int):
    for cuts in itertools.combinations(range(1, total), parts - 1):
        bounds = (0, *cuts, total)
        yield tuple(b - a for a, b in itertools.pairwise(bounds))


def brute_force(profile, order, bandwidth, microbatches, stages):
    best = np.inf
    layers = len(profile)
    for cuts in itertools.combinations(range(1, layers), stages - 1):
        bounds = (0, *cuts, layers)
        partition = tuple(itertools.pairwise(bounds))
        for replicas in compositions(len(order), stages):
            devices, position = [], 0
            for r in replicas:
                devices.append(tuple(order[position:position + r]))
                position += r
            best = min(best, plan_value(profile, microbatches, partition, devices, bandwidth))
    return best


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), layers=st.integers(1, 5), devices=st.integers(1, 5), stages=st.integers(1, 5))
def test_prm_equals_brute_force_over_partitions_and_replications(seed, layers, devices, stages):
    if stages > min(layers, devices):
        return
    profile = random_profile(seed, layers)
    topology = random_topology(seed + 1, devices)
    order = list(range(devices))
    plan = prm(profile, order, topology.bandwidth, 4, stages)
    assert plan.value == pytest.approx(brute_force(profile, order, topology.bandwidth, 4, stages))
    assert plan.value == pytest.approx(plan_value(profile, 4, plan.stages, plan.devices, topology.bandwidth))
    assert sum(plan.replicas) == devices and len(plan.stages) == stages


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), layers=st.integers(2, 4), devices=st.integers(2, 4))
def test_lemma_2_bound_against_every_device_mapping(seed, layers, devices):
    """RDO + PRM is within (1 + Φ) of the best plan over every device permutation."""
    profile = random_profile(seed, layers)
    topology = random_topology(seed + 7, devices)
    order = recursive_device_order(topology).order
    ours = min(prm(profile, order, topology.bandwidth, 4, s).value for s in range(1, min(layers, devices) + 1))
    best = min(brute_force(profile, list(perm), topology.bandwidth, 4, s)
               for perm in itertools.permutations(range(devices)) for s in range(1, min(layers, devices) + 1))
    assert best <= ours + 1e-9
    assert ours <= (1 + phi(profile, topology.bandwidth)) * best + 1e-9


from archsim.spp.pe import lemma1_bound, pe_makespan
from archsim.spp.pe_order import StagePlan, blocks, execution_order


def test_block_list_has_4s_minus_3_blocks():
    assert len(blocks(1)) == 1 and len(blocks(3)) == 9
    assert blocks(2) == [("F", 1), ("cf", 1), ("FB", 2), ("cb", 1), ("B", 1)]


def test_ordering_sweep_by_hand():
    # 2 stages, 2 micro-batches. Sweep 1: F1 takes mb0. Sweep 2: F1 mb1, cf1 mb0. Sweep 3: cf1 mb1,
    # FB2 mb0. … so U_1 = F(0) F(1) B(0) B(1) and U_2 = FB(0) FB(1).
    _, per_stage = execution_order(2, 2)
    assert [(b[0], m) for b, m in per_stage[1]] == [("F", 0), ("F", 1), ("B", 0), ("B", 1)]
    assert [(b[0], m) for b, m in per_stage[2]] == [("FB", 0), ("FB", 1)]


def test_pe_hand_worked_two_stages():
    # F = B = 1 per stage, channels 0: stage 1 F0 [0,1) F1 [1,2); stage 2 FB0 [1,3) FB1 [3,5);
    # stage 1 B0 [3,4) B1 [5,6) → 6.
    makespan, _ = pe_makespan([StagePlan(1, 1), StagePlan(1, 1)], 2)
    assert makespan == 6


@pytest.mark.long
@settings(max_examples=200, deadline=None)
@given(data=st.data(), stages=st.integers(1, 5), microbatches=st.integers(1, 8))
def test_lemma_1_bound_holds_on_random_instances(data, stages, microbatches):
    value = st.floats(0.1, 10)
    plans = [StagePlan(data.draw(value), data.draw(value), data.draw(st.sampled_from([0.0, 3.0])),
                       data.draw(value) if n < stages - 1 else 0.0, data.draw(value) if n < stages - 1 else 0.0)
             for n in range(stages)]
    makespan, _ = pe_makespan(plans, microbatches)
    assert makespan <= lemma1_bound(plans, microbatches) + 1e-9


from archsim.partition.graph_txt import load_graph_txt
from archsim.spp.plan import spp, stage_plans

GRAPH_TXT = """node1 -- Input0 -- forward_compute_time=0.000, backward_compute_time=0.000, activation_size=1000.0, parameter_size=0.000
node2 -- Conv2d(3, 64) -- forward_compute_time=2.000, backward_compute_time=4.000, activation_size=4000.0, parameter_size=1000.000
node3 -- ReLU() -- forward_compute_time=1.000, backward_compute_time=1.000, activation_size=4000.0, parameter_size=0.000 -- stage_id=0
\tnode1 -- node2
\tnode2 -- node3
"""


def test_graph_txt_profile(tmp_path):
    path = tmp_path / "graph.txt"
    path.write_text(GRAPH_TXT)
    profile = load_graph_txt(path)
    assert profile.names == ("node2", "node3")  # the Input source is dropped, as PipeDream's optimizer does
    assert profile.forward.tolist() == [0.002, 0.001] and profile.backward.tolist() == [0.004, 0.001]
    assert profile.weight_bytes[0] == 1000 and profile.activation_bytes[1] == 4000


@pytest.mark.parametrize("text, line, field", [
    ("node1 -- X -- forward_compute_time=1, backward_compute_time=2, activation_size=3\n", 1, "parameter_size"),
    ("node1 -- X -- forward_compute_time=a, backward_compute_time=2, activation_size=3, parameter_size=4\n", 1,
     "forward_compute_time"),
    ("garbage\n", 1, None),
    ("node1 -- X -- forward_compute_time=1, backward_compute_time=2, activation_size=3, parameter_size=4, x=1\n", 1,
     None),
])
def test_bad_graph_txt(tmp_path, text, line, field):
    path = tmp_path / "graph.txt"
    path.write_text(text)
    with pytest.raises(InputError) as error:
        load_graph_txt(path)
    assert (error.value.where.line, error.value.where.field) == (line, field)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), layers=st.integers(2, 5), devices=st.integers(2, 5),
       microbatches=st.integers(1, 8))
def test_spp_picks_the_stage_count_with_the_least_pe_makespan(seed, layers, devices, microbatches):
    profile = random_profile(seed, layers)
    topology = random_topology(seed + 3, devices)
    result = spp(profile, topology, microbatches)
    assert result.makespan == min(t for _, _, t in result.by_stage_count)
    plans = stage_plans(profile, result.plan, topology.bandwidth)
    assert lemma1_bound(plans, microbatches) >= result.makespan - 1e-9


from archsim.spp.baselines import BASELINES, baseline, data_parallel


def test_data_parallel_by_hand():
    # 2 GPUs at 10 B/s, 2 layers: compute M·Σ(p^f + p^b)/V = 4·(1+2+3+4)/2 = 20; ring AllReduce of
    # 100 parameter bytes: 2·(2−1)·100/(2·10) = 10 → 30.
    profile = profile_from_costs(["a", "b"], [1.0, 3.0], [0.0, 0.0], [2.0, 4.0], activation_bytes=[5, 0],
                                 delta_bytes=[0, 5], weight_bytes=[40, 60])
    topology = Topology("t", (0, 1), np.array([[0.0, 10.0], [10.0, 0.0]]))
    assert data_parallel(profile, topology, 4).makespan == pytest.approx(30.0)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), layers=st.integers(2, 5), devices=st.integers(2, 5),
       microbatches=st.integers(1, 8))
def test_spp_is_never_slower_than_data_parallel(seed, layers, devices, microbatches):
    """SPP's one-stage plan on every GPU is data parallelism, so SPP can only do better. No plan beats the
    whole iteration's compute, M·Σ(p^f + p^b), spread evenly over the V GPUs."""
    profile = random_profile(seed, layers)
    topology = random_topology(seed + 5, devices)
    result = spp(profile, topology, microbatches)
    assert result.makespan <= data_parallel(profile, topology, microbatches).makespan + 1e-9
    work = microbatches * float(sum(profile.forward) + sum(profile.backward)) / topology.devices
    assert result.makespan >= work * (1 - 1e-9)
    for method in BASELINES:
        assert baseline(method, profile, topology, microbatches).makespan >= work * (1 - 1e-9)


def test_plan_value_by_hand():
    """The PRM recursion's terms (001_655b4b8cd650573f.txt §IV-B): a stage costs M Σ(p^f + p^b)/r plus its
    ring AllReduce 2(r − 1)/r · Σα / b_min (§III-A); a channel M (d^f + d^b) / (r′ r b_{r′r}).
    3 layers, M = 4, GPU links b01 = 2, b02 = 4, b12 = 10.

    Plan A — layers 0–1 on GPU 0, layer 2 on GPUs 1, 2: stage 1 = 4·(1 + 2 + 2 + 2) = 28; stage 2 =
    4·(3 + 6)/2 + 2·1/2·200/10 = 18 + 20 = 38; channel = 4·(8 + 8)/(1·2·min(2, 4)) = 16 → 38.
    Plan B — layer 0 on GPU 0, layers 1–2 on GPUs 1, 2: 4·(1 + 2) = 12; 4·(2 + 3 + 2 + 6)/2 + 220/10 = 48;
    channel 4·(4 + 4)/4 = 8 → 48. Plan A with d^f = 100 out of layer 1: channel 4·108/4 = 108 → 108."""
    def chain(activations):  # backward time as δ (weight gradient 0); a layer's δ_bytes go back to its producer
        return profile_from_costs(["l0", "l1", "l2"], [1.0, 2.0, 3.0], [0.0] * 3, [2.0, 2.0, 6.0],
                                  activation_bytes=activations, delta_bytes=[0, 4, 8], weight_bytes=[10, 20, 200])

    profile = chain([4, 8, 0])
    links = np.array([[0.0, 2.0, 4.0], [2.0, 0.0, 10.0], [4.0, 10.0, 0.0]])
    assert plan_value(profile, 4, [(0, 2), (2, 3)], [(0,), (1, 2)], links) == pytest.approx(38)
    assert plan_value(profile, 4, [(0, 1), (1, 3)], [(0,), (1, 2)], links) == pytest.approx(48)
    wide = chain([4, 100, 0])
    assert plan_value(wide, 4, [(0, 2), (2, 3)], [(0,), (1, 2)], links) == pytest.approx(108)
    # PRM's optimum over the order (0, 1, 2) with two stages is at most plan A's value.
    assert prm(profile, [0, 1, 2], links, 4, 2).value <= 38 + 1e-9


def test_baselines_by_hand():
    """Two layers (F = B = 1 s per micro-batch, 100 and 300 parameter bytes, no activation traffic),
    two GPUs joined at 50 B/s, M = 2 micro-batches; ring AllReduce of P bytes over k GPUs at the
    slowest link b takes 2(k − 1)P / (k b) (baselines module docstring).

    * dp: 2 · (1 + 1 + 1 + 1) / 2 = 4 s of compute + 2 · 1 · 400 / (2 · 50) = 8 s → 12.
    * gpipe: a stage per GPU, all forwards then all backwards oldest first (test_spp_gpipe.py): stage 1
      F0 [0, 1), F1 [1, 2); stage 2 F0 [1, 2), F1 [2, 3), B0 [3, 4), B1 [4, 5); stage 1 B0 [4, 5), B1 [5, 6) → 6.
    * pipedream-prm: PRM prefers two stages (𝒲 = 2 s) over one stage on both GPUs (2 s + an 8 s
      AllReduce); PE runs them as test_pe_hand_worked_two_stages: → 6.
    * hetpipe, one server: that same two-stage pipeline, no AllReduce between servers → 6; two
      servers of one GPU: each runs ⌈2/2⌉ = 1 micro-batch of both layers (4 s), then the 8 s ring → 12.
    """
    profile = profile_from_costs(["l0", "l1"], [1.0, 1.0], [0.0, 0.0], [1.0, 1.0], weight_bytes=[100, 300])
    link = np.array([[0.0, 50.0], [50.0, 0.0]])
    one_server, two_servers = Topology("one", (0, 0), link), Topology("two", (0, 1), link)
    expected = {"dp": 12.0, "gpipe": 6.0, "pipedream-prm": 6.0, "hetpipe": 6.0}
    assert {m: baseline(m, profile, one_server, 2).makespan for m in BASELINES} == pytest.approx(expected)
    assert baseline("hetpipe", profile, two_servers, 2).makespan == pytest.approx(12.0)


from archsim.spp.prm import prm_tables


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), layers=st.integers(1, 6), devices=st.integers(1, 6))
def test_vectorized_prm_equals_the_recursive_one(seed, layers, devices):
    profile = random_profile(seed, layers)
    topology = random_topology(seed + 11, devices)
    order = list(range(devices))
    fast = {len(p.stages): p for p in prm_tables(profile, order, topology.bandwidth, 3, min(layers, devices))}
    for stages in range(1, min(layers, devices) + 1):
        slow = prm(profile, order, topology.bandwidth, 3, stages)
        assert fast[stages].value == pytest.approx(slow.value)
        assert plan_value(profile, 3, fast[stages].stages, fast[stages].devices, topology.bandwidth) == \
            pytest.approx(slow.value)


@pytest.mark.long
@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 100_000), layers=st.integers(2, 6), devices=st.integers(2, 6),
       microbatches=st.integers(1, 8))
def test_theorem_1_bound(seed, layers, devices, microbatches):
    """T_SPP < (2 + (4V − 4)/M)(1 + Φ) T*. T* is unknown, but T* ≥ M Σ(p^f + p^b) / V (all work on
    V GPUs), so checking against that lower bound checks the theorem (more strictly)."""
    profile = random_profile(seed, layers)
    topology = random_topology(seed + 13, devices)
    makespan = spp(profile, topology, microbatches).makespan
    lower = microbatches * (sum(profile.forward) + sum(profile.backward)) / devices
    assert makespan < (2 + (4 * devices - 4) / microbatches) * (1 + phi(profile, topology.bandwidth)) * lower


def test_bert_large_grouped_into_24_encoder_layers():
    from archsim.array.config import ArrayConfig
    from archsim.spp.profiles import profile_from_network
    from archsim.workload import load_network

    network = load_network("bert_large")
    array = ArrayConfig(64, 64, "ws", element_bytes=2)
    profile = profile_from_network(network, array, 1, "exact", group=lambda n: n.split("_")[0])
    assert profile.names == tuple(f"l{i}" for i in range(1, 25))
    assert sum(profile.weight_bytes) == 2 * sum(layer.weight_elements for layer in network)
    assert profile.activation_bytes[0] == 2 * 512 * 1024  # the layer norm closing each encoder layer
