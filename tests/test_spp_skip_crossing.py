"""A residual's skip tensor crosses every stage boundary between its producer and its last reader: SPP's channel
prices it (forward and back), and the PipeDream plan laid on a cluster sends it once a boundary, however many
layers beyond read it. References are byte counts and times worked out by hand."""

import numpy as np
import pytest

from archsim.partition.graph_txt import load_graph_txt
from archsim.partition.profile import profile_from_costs
from archsim.partition.result import Partition, Stage
from archsim.spp.placement import partition_stage_plans
from archsim.spp.prm import boundary_directions

BIG, SMALL = 100_000_000, 1_000
# node1 → node2 → node3 and node1 → node3 (node3 adds node1's big output to node2's small one)
GRAPH = f"""\
node1 -- Conv -- forward_compute_time=1.0, backward_compute_time=2.0, activation_size={BIG}.0, parameter_size=1000000000.0
node2 -- Conv -- forward_compute_time=1.0, backward_compute_time=2.0, activation_size={SMALL}.0, parameter_size=1000000000.0
node3 -- Add -- forward_compute_time=1.0, backward_compute_time=2.0, activation_size={SMALL}.0, parameter_size=1000000000.0
\tnode1 -- node2
\tnode1 -- node3
\tnode2 -- node3
"""
CLUSTER = """\
[cluster]
name = "two"
inter_server_gbps = 8

[[servers]]
count = 2
gpus = 1
intra_server_gbps = 80
"""


@pytest.fixture
def graph(tmp_path):
    path = tmp_path / "graph.txt"
    path.write_text(GRAPH)
    return path


def test_a_cut_the_skip_spans_sends_the_skip_forward_as_well_as_back(graph):
    forward, back = boundary_directions(load_graph_txt(graph))
    # after node1: node1's output once (node2 and node3 both read it beyond); its gradient once, summed there
    # after node2: node2's output and node1's skip; back, node3's inputs' gradients (graph.txt: both)
    assert forward.tolist() == [BIG, BIG + SMALL, 0]
    assert back.tolist() == [BIG, BIG + SMALL, 0]


def test_array_profile_residual_cut_inside_the_block():
    import archsim

    profile = archsim.profile("docs/examples/tiny_resnet.csv", array="32x32", batch=4)
    # stem, conv_a, conv_b, add(conv_b, stem), pool, fc; stem's output is 4 × 32 × 32 × 16 = 65,536 bytes at int8
    tensor = 4 * 32 * 32 * 16
    forward, back = boundary_directions(profile)
    assert forward[:4].tolist() == [tensor, 2 * tensor, 2 * tensor, tensor]  # the skip beside conv_a's, conv_b's
    # back after conv_a: conv_b's δ and stem's gradient from the add; after conv_b the add's one δ (both inputs')
    assert back[:4].tolist() == [tensor, 2 * tensor, tensor, tensor]


def test_chain_profiles_keep_the_chain_rule():
    chain = profile_from_costs(["a", "b", "c"], forward=[1, 1, 1], weight_grad=[1, 1, 1], delta=[0, 1, 1],
                               activation_bytes=[10, 20, 30], delta_bytes=[0, 7, 9], edges=((0, 1), (1, 2)))
    forward, back = boundary_directions(chain)
    assert forward.tolist() == [10, 20, 0] and back.tolist() == [7, 9, 0]


def test_spp_plan_pays_the_skip(graph, tmp_path):
    import archsim

    cluster = tmp_path / "two.toml"
    cluster.write_text(CLUSTER)
    result = archsim.plan(str(graph), cluster=str(cluster), microbatches=1, max_stages=2, baselines="none")
    # one link of 8 Gb/s = 1 GB/s; 3 × 10⁹ parameter bytes make data parallelism slow, so two stages. Cut after
    # node1: F 1 ms, 10⁸ bytes (0.1 s), F + B of node2 and node3 6 ms, the gradient back (0.1 s), node1's B 2 ms.
    # Cut after node2 sends 10⁸ + 10³ bytes each way, 2 µs more (before the skip was priced forward, 0.109002 s).
    assert result.meta["makespan_seconds"] == pytest.approx(0.001 + 0.1 + 0.006 + 0.1 + 0.002, rel=1e-12)


def test_pipedream_placement_sends_a_tensor_once_a_boundary(graph):
    profile = load_graph_txt(graph)
    partition = Partition("pipedream", (Stage(0, ("node1",), ()), Stage(1, ("node2", "node3"), ())), 0, 0,
                          unit="seconds")
    bandwidth = np.full((2, 2), 1e9)
    plans = partition_stage_plans(profile, partition, bandwidth)
    # node1's output crosses once although node2 and node3 both read it (before: twice, 0.2 s)
    assert plans[0].comm_forward == pytest.approx(BIG / 1e9)
