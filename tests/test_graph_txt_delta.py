"""A PipeDream ``graph.txt`` profile states each node's own output (``activation_size``); the δ a node
sends back is the gradient of its *inputs*, each the size of its producer's output — the convention of
every other profile (``lowering.TensorBytes.delta_bytes``, SPP's ``[0, *activation[:-1]]``), which SPP's
backward hops (``spp/prm.py``) and the pipelines' stash read. Sizes below are written by hand."""

from archsim.partition.graph_txt import load_graph_txt

GRAPH = """\
node1 -- Input0 -- forward_compute_time=0.0, backward_compute_time=0.0, activation_size=600.0, parameter_size=0.0
node2 -- Conv2d(a) -- forward_compute_time=1.0, backward_compute_time=2.0, activation_size=1000.0, parameter_size=10.0
node3 -- ReLU(b) -- forward_compute_time=0.5, backward_compute_time=0.5, activation_size=300.0, parameter_size=0.0
node4 -- Conv2d(c) -- forward_compute_time=1.0, backward_compute_time=2.0, activation_size=200.0, parameter_size=20.0
node5 -- Add(d) -- forward_compute_time=0.1, backward_compute_time=0.1, activation_size=50.0, parameter_size=0.0
\tnode1 -- node2
\tnode2 -- node3
\tnode2 -- node4
\tnode3 -- node5
\tnode4 -- node5
"""


def test_delta_bytes_are_the_inputs_gradients_not_the_nodes_own_output(tmp_path):
    path = tmp_path / "graph.txt"
    path.write_text(GRAPH)
    profile = load_graph_txt(path)
    assert list(profile.names) == ["node2", "node3", "node4", "node5"]  # the Input source is dropped
    assert list(profile.activation_bytes) == [1000, 300, 200, 50]
    # node2's input is the dropped data source (no gradient sent); node3 and node4 read node2's 1,000
    # bytes; the Add reads node3's 300 and node4's 200
    assert list(profile.delta_bytes) == [0, 1000, 1000, 500]
