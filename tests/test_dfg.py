"""Training DFG: Fig. 2's derivation, retiming legality, and the iteration bound vs brute force."""

import itertools

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archsim.dfg import (LOSS, Edge, TrainingDFG, check_legal, iteration_bound, loop_ratio, pipeline, retime,
                         training_dfg)


def test_fig2_two_layers_two_stages():
    """LayerPipe Fig. 2: 'four delays and two delays for layers 1 and 2'; PipeDream stashes 2 and 1."""
    result = pipeline(["l1", "l2"], {"l1": 1, "l2": 2})
    assert [x.loop_delays for x in result.layers] == [4, 2]
    assert [x.gradient_delays for x in result.layers] == [3, 1]  # DLMS delays beside the W register
    assert [x.weight_versions for x in result.layers] == [2, 1]
    assert [x.activation_stash for x in result.layers] == [2, 1]
    assert check_legal(result.inserted, result.retimed) == []


@pytest.mark.parametrize("stages", [1, 2, 3, 4, 6])
def test_one_layer_per_stage_gives_twice_the_stages_after(stages):
    names = [f"l{i}" for i in range(1, stages + 1)]
    result = pipeline(names, {n: i for i, n in enumerate(names, start=1)})
    for s, item in enumerate(result.layers, start=1):
        assert item.loop_delays == 2 * (stages - s + 1)
        assert item.weight_versions == item.activation_stash == stages - s + 1  # PipeDream's NOAM per stage
    assert check_legal(result.inserted, result.retimed) == []


def test_layers_sharing_a_stage_share_the_counts():
    names = ["a", "b", "c", "d", "e"]
    result = pipeline(names, {"a": 1, "b": 1, "c": 2, "d": 2, "e": 3})
    assert [x.weight_versions for x in result.layers] == [3, 3, 2, 2, 1]
    assert [x.loop_delays for x in result.layers] == [6, 6, 4, 4, 2]


def test_single_stage_needs_no_gradient_delay():
    result = pipeline(["a", "b"], {"a": 1, "b": 1}, first_layer_delta=True)
    assert [x.gradient_delays for x in result.layers] == [1, 1] and [x.weight_versions for x in result.layers] == [1, 1]


def cycles_with_delays(dfg):
    graph = nx.DiGraph([(e.src, e.dst) for e in dfg.edges])
    for cycle in nx.simple_cycles(graph):
        pairs = list(zip(cycle, cycle[1:] + cycle[:1]))
        yield cycle, sum(min(e.delays for e in dfg.edges if (e.src, e.dst) == p) for p in pairs)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), layers=st.integers(1, 4))
def test_any_retiming_preserves_every_loop(data, layers):
    dfg = training_dfg([f"l{i}" for i in range(layers)])
    r = {node: data.draw(st.integers(-3, 3)) for node in dfg.nodes}
    after = retime(dfg, r)
    before_loops = dict((tuple(c), d) for c, d in cycles_with_delays(dfg))
    after_loops = dict((tuple(c), d) for c, d in cycles_with_delays(after))
    assert before_loops == after_loops
    negative = any(e.delays < 0 for e in after.edges)
    assert bool(check_legal(dfg, after)) == negative


def test_critical_loop_runs_through_delta_and_first_layer_g():
    names = ["l1", "l2", "l3", "l4"]
    costs = {(n, k): c for n in names for k, c in (("F", 3.0), ("G", 2.0), ("D", 5.0), ("U", 1.0))}
    costs[LOSS] = 1.0
    dfg = training_dfg(names, {k: v for k, v in costs.items() if k in training_dfg(names).nodes})
    result = iteration_bound(dfg)
    # By hand: the longest loop is F1→F2→F3→F4→loss→D4→D3→D2→G1→U1→F1 with one delay:
    # 4·3 + 1 + 3·5 + 2 + 1 = 31.
    assert result.bound == pytest.approx(31.0)
    assert set(result.loop) == {("l1", "F"), ("l2", "F"), ("l3", "F"), ("l4", "F"), LOSS, ("l4", "D"), ("l3", "D"),
                                ("l2", "D"), ("l1", "G"), ("l1", "U")}


def brute_bound(dfg):
    best = 0.0
    for cycle, delays in cycles_with_delays(dfg):
        cost = sum(dfg.cost(n) for n in cycle)
        best = max(best, float("inf") if delays == 0 else cost / delays)
    return best


@settings(max_examples=80, deadline=None)
@given(data=st.data(), n=st.integers(2, 6))
def test_iteration_bound_equals_brute_force_on_random_graphs(data, n):
    nodes = [(f"v{i}", "F") for i in range(n)]
    edges = []
    for i, j in itertools.product(range(n), repeat=2):
        if data.draw(st.booleans()):
            edges.append(Edge(nodes[i], nodes[j], data.draw(st.integers(1, 3)), "x"))
    costs = tuple((node, float(data.draw(st.integers(0, 9)))) for node in nodes)
    dfg = TrainingDFG(("v",), tuple(nodes), tuple(edges), costs)
    result = iteration_bound(dfg)
    expected = brute_bound(dfg)
    assert result.bound == pytest.approx(expected, rel=1e-6, abs=1e-9)
    if expected > 0:
        assert loop_ratio(dfg, result.loop) == pytest.approx(expected, rel=1e-6)


def test_zero_delay_loop_is_unschedulable():
    a, b = ("a", "F"), ("b", "F")
    dfg = TrainingDFG(("a",), (a, b), (Edge(a, b, 0, "x"), Edge(b, a, 0, "y")), ((a, 1.0),))
    assert iteration_bound(dfg).bound == float("inf")


def test_pipelining_cuts_the_bound_by_the_inserted_delays():
    """The retimed DFG's loops hold k_l delays, so T∞ falls from Σ(loop costs)/1 accordingly."""
    names = ["l1", "l2"]
    nodes = training_dfg(names).nodes
    costs = {node: 1.0 for node in nodes}
    before = iteration_bound(training_dfg(names, costs)).bound
    result = pipeline(names, {"l1": 1, "l2": 2})
    after = iteration_bound(TrainingDFG(result.retimed.layers, result.retimed.nodes, result.retimed.edges,
                                        tuple(costs.items()))).bound
    assert before == pytest.approx(6.0)  # F1 → F2 → loss → D2 → G1 → U1 → F1: 6 unit costs over 1 delay
    assert after < before
