"""Training DFG: builder, Leiserson–Saxe retiming, Fig. 2's derivation, and the iteration bound.

Expected values come from LayerPipe §III-A (Fig. 2's counts and the general 2·(S − s + 1)),
PipeDream's weight stashing (S − s + 1 versions), hand-worked loops, and brute force."""

import dataclasses
import itertools
import math

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archsim.dfg import (
    INPUT,
    LOSS,
    OUTPUT,
    SLOTS_PER_MICROBATCH,
    Edge,
    Node,
    TrainingDFG,
    changed_loops,
    check_legal,
    is_legal,
    iteration_bound,
    loop_delays,
    loop_ratio,
    loops,
    pipeline,
    potential,
    retime,
    training_dfg,
)
from archsim.dfg.constraints import Constraint, Infeasible, asap_retiming
from archsim.errors import InputError


def n(layer, kind):
    return Node(layer, kind)


def edge_set(dfg):
    return {(str(e.src), str(e.dst), e.delays) for e in dfg.edges}


# --- the graph ---------------------------------------------------------------------------------

def test_chain_has_exactly_the_papers_edges():
    dfg = training_dfg(["1", "2"])
    expected = {
        ("input", "F[1]", 0), ("input", "G[1]", 0), ("F[1]", "F[2]", 0), ("F[1]", "G[2]", 0), ("F[2]", "loss", 0),
        ("loss", "D[2]", 0), ("loss", "G[2]", 0), ("D[2]", "D[1]", 0), ("D[2]", "G[1]", 0),
        ("G[1]", "U[1]", 0), ("G[2]", "U[2]", 0), ("input", "loss", 0), ("loss", "output", 0),
    } | {(f"U[{i}]", f"{k}[{i}]", 1) for i in "12" for k in "FDU"}
    assert edge_set(dfg) == expected
    assert len(dfg.edges) == len(expected)
    assert n("1", "D") not in training_dfg(["1", "2"], first_layer_delta=False).nodes


def test_dag_builder_sums_delta_from_every_consumer():
    dfg = training_dfg(["a", "b", "c"], inputs={"a": [], "b": ["a"], "c": ["b", "a"]})
    into_g_a = {str(e.src) for e in dfg.edges if e.dst == n("a", "G")}
    assert into_g_a == {"input", "D[b]", "D[c]"}  # a^0 and δ of a's output from both consumers
    assert {str(e.src) for e in dfg.edges if e.dst == LOSS} == {"F[c]", "input"}
    assert {str(e.src) for e in dfg.edges if e.dst == n("c", "F")} == {"F[a]", "F[b]", "U[c]"}


def test_networkx_view_and_costs():
    dfg = training_dfg(["1", "2"], {("1", "F"): 3.0, LOSS: 1.5})
    graph = dfg.to_networkx()
    assert isinstance(graph, nx.MultiDiGraph)
    assert graph.number_of_nodes() == len(dfg.nodes) == 11 and graph.number_of_edges() == len(dfg.edges)
    assert graph.nodes[n("1", "F")]["cost"] == 3.0 and graph.nodes[LOSS]["cost"] == 1.5
    assert graph.nodes[n("2", "G")]["cost"] == 0.0
    assert graph.edges[n("1", "U"), n("1", "F"), dfg.edges.index(Edge(n("1", "U"), n("1", "F"), 1, "W[1]"))][
        "delays"] == 1


@pytest.mark.parametrize("call", [
    lambda: training_dfg([]), lambda: training_dfg(["a", "a"]), lambda: training_dfg(["a", ""]),
    lambda: training_dfg(["a"], {("b", "F"): 1.0}), lambda: training_dfg(["a"], {("a", "F"): -1.0}),
    lambda: training_dfg(["a", "b"], inputs={"a": ["b"]}), lambda: training_dfg(["a"], inputs={"a": ["x"]}),
    lambda: pipeline(["a", "b"], {"a": 2, "b": 1}), lambda: pipeline(["a", "b"], {"a": 1, "b": 3}),
    lambda: pipeline(["a", "b"], {"a": 1}), lambda: pipeline(["a"], {"a": 1, "z": 1}),
    lambda: pipeline(["a"], {"a": 0}), lambda: pipeline(["a"], {"a": 1.0}),
])
def test_user_mistakes_raise_input_error(call):
    with pytest.raises(InputError):
        call()


# --- retiming ----------------------------------------------------------------------------------

def simple_cycle_sums(dfg):
    """Independent of archsim.dfg.loops: networkx cycles, the fewest delays between two nodes."""
    out = {}
    for cycle in nx.simple_cycles(nx.DiGraph([(e.src, e.dst) for e in dfg.edges])):
        pairs = list(zip(cycle, cycle[1:] + cycle[:1]))
        out[frozenset(pairs)] = sum(min(e.delays for e in dfg.edges if (e.src, e.dst) == p) for p in pairs)
    return out


@pytest.mark.long
@settings(max_examples=40, deadline=None)
@given(data=st.data(), layers=st.integers(1, 4))
def test_any_retiming_preserves_every_loop(data, layers):
    dfg = training_dfg([f"l{i}" for i in range(layers)])
    r = {node: data.draw(st.integers(-3, 3)) for node in dfg.nodes}
    after = retime(dfg, r)
    assert loop_delays(after) == loop_delays(dfg)
    assert simple_cycle_sums(after) == simple_cycle_sums(dfg)
    assert changed_loops(dfg, after) == []
    assert is_legal(after) == all(e.delays >= 0 for e in after.edges)


@st.composite
def random_graphs(draw, max_nodes=7):
    size = draw(st.integers(2, max_nodes))
    nodes = tuple(Node(f"v{i}", "F") for i in range(size))
    edges = tuple(Edge(nodes[i], nodes[j], draw(st.integers(0, 3)), "x")
                  for i, j in itertools.product(range(size), repeat=2) if draw(st.integers(0, 3)) == 0)
    costs = tuple((node, float(draw(st.integers(0, 9)))) for node in nodes)
    return TrainingDFG(("v",), ((),), nodes, edges, costs)


@pytest.mark.long
@settings(max_examples=80, deadline=None)
@given(dfg=random_graphs(), data=st.data())
def test_potential_argument_agrees_with_cycle_enumeration(dfg, data):
    """w_r − w is a potential difference, so it telescopes around every loop; conversely a change of
    delays that keeps every loop sum is a retiming inside each strongly connected component."""
    r = {node: data.draw(st.integers(-4, 4)) for node in dfg.nodes}
    after = retime(dfg, r)
    for e, f in zip(dfg.edges, after.edges):
        assert f.delays - e.delays == r[e.dst] - r[e.src]
    recovered = potential(dfg, after)
    assert recovered is not None and retime(dfg, recovered) == after
    if dfg.edges:  # perturb one edge: the two loop checks must agree
        i = data.draw(st.integers(0, len(dfg.edges) - 1))
        bumped = after.with_delays({i: after.edges[i].delays + data.draw(st.sampled_from([-1, 1]))})
        kept = loop_delays(bumped) == loop_delays(dfg)
        assert (changed_loops(dfg, bumped) == []) == kept
        assert kept == (simple_cycle_sums(bumped) == simple_cycle_sums(dfg))


# --- pipelining (LayerPipe §III-A) -------------------------------------------------------------

def test_fig2_two_layers_two_stages():
    """'four delays and two delays for layers 1 and 2'; PipeDream stashes 2 and 1 versions."""
    result = pipeline(["1", "2"], {"1": 1, "2": 2})
    assert [x.loop_delays for x in result.layers] == [4, 2]  # the paper's count: whole loop, slots
    assert [x.gradient_delays for x in result.layers] == [1, 0]  # raw DLMS delays, micro-batches
    assert [x.gradient_delay_slots for x in result.layers] == [2, 0]  # raw, in slots (P = 2)
    assert [x.weight_versions for x in result.layers] == [2, 1]
    assert [x.activation_stash for x in result.layers] == [2, 1]
    assert check_legal(result, enumerate_loops=True) == []
    w = {(str(e.src), str(e.dst)): e.delays for e in result.retimed.edges}
    # Fig. 2(f): delays between W and δ (weight stash), between a and the backward pass (activation stash)
    assert w["U[1]", "D[1]"] == 4 and w["U[1]", "F[1]"] == 1 and w["U[2]", "D[2]"] == 2
    assert w["input", "G[1]"] - w["input", "F[1]"] == 3 and w["F[1]", "G[2]"] - w["F[1]", "F[2]"] == 1
    # every stage boundary holds a delay, both directions of travel; the G → U delays were retimed away
    assert w["F[1]", "F[2]"] == 1 and w["D[2]", "D[1]"] == 1 and w["D[2]", "G[1]"] == 1
    assert w["G[1]", "U[1]"] == w["G[2]", "U[2]"] == 0
    # feed-forward cutsets: the label reaches the loss one slot after the samples enter; loss leaves at once
    assert w["input", "F[1]"] == 0 and w["input", "loss"] == 1 and w["loss", "output"] == 0
    assert result.latency == 1


@pytest.mark.parametrize("stages", [1, 2, 3, 4, 6])
def test_one_layer_per_stage_matches_the_general_statement(stages):
    names = [f"l{i}" for i in range(1, stages + 1)]
    result = pipeline(names, {name: i for i, name in enumerate(names, start=1)})
    for s, item in enumerate(result.layers, start=1):
        assert item.loop_delays == 2 * (stages - s + 1)  # LayerPipe: twice the stages from this one on
        assert item.gradient_delays == stages - s  # PipeDream's staleness beyond plain SGD
        assert item.weight_versions == item.activation_stash == stages - s + 1  # PipeDream's NOAM
    assert result.latency == stages - 1
    assert check_legal(result, enumerate_loops=stages <= 4) == []


def test_layers_sharing_a_stage_share_the_counts():
    names = ["a", "b", "c", "d", "e"]
    result = pipeline(names, {"a": 1, "b": 1, "c": 2, "d": 2, "e": 3})
    assert [x.loop_delays for x in result.layers] == [6, 6, 4, 4, 2]
    assert [x.gradient_delays for x in result.layers] == [2, 2, 1, 1, 0]
    assert [x.weight_versions for x in result.layers] == [3, 3, 2, 2, 1]
    assert [x.activation_stash for x in result.layers] == [3, 3, 2, 2, 1]
    assert check_legal(result, enumerate_loops=True) == []


def test_one_stage_is_plain_sgd():
    result = pipeline(["a", "b"], {"a": 1, "b": 1})
    assert [x.gradient_delays for x in result.layers] == [0, 0]
    assert [x.loop_delays for x in result.layers] == [2, 2]  # 2·(S − s + 1) with S = 1: one micro-batch
    assert [x.weight_versions for x in result.layers] == [1, 1]


def test_without_a_first_layer_delta_no_weights_are_stashed_there():
    result = pipeline(["a", "b"], {"a": 1, "b": 2}, first_layer_delta=False)
    assert [x.weight_versions for x in result.layers] == [1, 1]  # only F reads W_a
    assert [x.activation_stash for x in result.layers] == [2, 1]
    assert [x.loop_delays for x in result.layers] == [4, 2]


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_derived_retiming_is_a_1f1b_schedule(stages):
    """Node v runs micro-batch m in slot P·m + r(v): each processor alternates forward and backward."""
    names = [f"l{i}" for i in range(1, 2 * stages + 1)]
    result = pipeline(names, {name: (i + 1) // 2 for i, name in enumerate(names, start=1)})
    for s in range(1, stages + 1):
        mine = [node for node in result.original.nodes if node.layer and result.layer(node.layer).stage == s]
        forward = {result.lag(v) % 2 for v in mine if v.kind == "F"}
        backward = {result.lag(v) % 2 for v in mine if v.kind != "F"}
        assert len(forward) == len(backward) == 1 and forward != backward
        assert {result.lag(v) for v in mine if v.kind == "F"} == {s - 1}
        assert {result.lag(v) for v in mine if v.kind in "GD"} == {2 * stages - s}


def brute_min_gradient_delays(result, bound):
    """Fewest total DLMS delays by trying every vector of k, feasibility by Bellman–Ford."""
    dfg, p = result.original, SLOTS_PER_MICROBATCH
    index = {node: i for i, node in enumerate(dfg.nodes)}
    names = list(dfg.layers)
    constraints = [Constraint(index[e.src], index[e.dst], p * e.delays, req,
                              names.index(e.src.layer) if (e.src.kind, e.dst.kind) == ("G", "U") else None)
                   for e, req in zip(dfg.edges, result.required)]
    best = math.inf
    for k in itertools.product(range(bound + 1), repeat=len(names)):
        try:
            asap_retiming(len(dfg.nodes), constraints, k, p, index[INPUT])
            best = min(best, sum(k))
        except Infeasible:
            pass
    return best


@st.composite
def dags_with_stages(draw):
    size = draw(st.integers(1, 4))
    names = [f"l{i}" for i in range(size)]
    inputs = {name: sorted(draw(st.sets(st.sampled_from(names[:i]), max_size=2))) if i else []
              for i, name in enumerate(names)}
    stage, stages = {}, {}
    for name in names:  # a stage may not read a later one
        low = max([stage[s] for s in inputs[name]], default=1)
        stage[name] = draw(st.integers(low, low + 1))
    used = sorted(set(stage.values()))
    stages = {name: used.index(stage[name]) + 1 for name in names}
    return names, inputs, stages


@pytest.mark.long
@settings(max_examples=30, deadline=None)
@given(case=dags_with_stages())
def test_dag_pipelining_is_legal_and_minimal(case):
    names, inputs, stages = case
    result = pipeline(names, stages, inputs=inputs)
    assert check_legal(result, enumerate_loops=True) == []
    total = sum(x.gradient_delays for x in result.layers)
    assert total == brute_min_gradient_delays(result, max(stages.values()))
    for item in result.layers:
        assert item.loop_delays == SLOTS_PER_MICROBATCH * (1 + item.gradient_delays)


def test_check_legal_reports_a_broken_pipeline():
    good = pipeline(["1", "2"], {"1": 1, "2": 2})
    i = next(i for i, e in enumerate(good.retimed.edges) if (str(e.src), str(e.dst)) == ("F[1]", "F[2]"))
    broken = dataclasses.replace(good, retimed=good.retimed.with_delays({i: 0}))
    problems = check_legal(broken, enumerate_loops=True)
    assert any("boundary" in p for p in problems) and any("changed" in p for p in problems)
    assert any("holds" in p for p in problems)


# --- critical loops and the iteration bound (§III-C) -------------------------------------------

def brute_bound(dfg):
    best = 0.0
    for cycle, delays in simple_cycle_sums(dfg).items():
        cost = sum(dfg.cost(u) for u, _ in cycle)
        best = max(best, math.inf if delays == 0 else cost / delays)
    return best


@pytest.mark.long
@settings(max_examples=120, deadline=None)
@given(dfg=random_graphs())
def test_iteration_bound_equals_brute_force_on_random_graphs(dfg):
    result = iteration_bound(dfg)
    expected = brute_bound(dfg)
    assert result.bound == pytest.approx(expected, rel=1e-9, abs=1e-12)
    if result.loop:
        assert loop_ratio(dfg, result.loop) == pytest.approx(expected, rel=1e-9)
        assert result.cost / result.delays == result.bound if result.delays else result.bound == math.inf
    else:
        assert expected == 0.0


COSTS = {"F": 3.0, "G": 2.0, "D": 5.0, "U": 1.0}


def four_layer_costs(dfg):
    costs = {node: COSTS[node.kind] for node in dfg.nodes if node.layer}
    return {**costs, LOSS: 1.0}


def test_critical_loop_runs_through_delta_and_first_layer_g():
    names = ["1", "2", "3", "4"]
    plain = training_dfg(names)
    dfg = plain.with_costs(four_layer_costs(plain))
    result = iteration_bound(dfg)
    # By hand: the loop F1→F2→F3→F4→loss→D4→D3→D2→G1→U1→F1 has one delay and cost 4·3 + 1 + 3·5 + 2 + 1 = 31;
    # layer l's loop drops F_1..F_{l−1} and D_2..D_l (31 − 8(l − 1)); loops through two U's have two delays.
    assert result.bound == pytest.approx(31.0) and result.delays == 1
    assert set(map(str, result.loop)) == {"F[1]", "F[2]", "F[3]", "F[4]", "loss", "D[4]", "D[3]", "D[2]", "G[1]",
                                         "U[1]"}


def test_pipelining_divides_each_loop_by_its_delays():
    """4 stages: layer l's loop holds 2·(5 − l) slots; costs 31, 23, 15, 7 → T∞ = 31/8 per slot."""
    names = ["1", "2", "3", "4"]
    result = pipeline(names, {name: i for i, name in enumerate(names, start=1)})
    costs = four_layer_costs(result.original)
    inserted, retimed = result.inserted.with_costs(costs), result.retimed.with_costs(costs)
    before, after = iteration_bound(inserted), iteration_bound(retimed)
    assert after.bound == pytest.approx(31 / 8) and before.bound == pytest.approx(31 / 8)  # retiming keeps T∞
    assert set(map(str, after.loop)) >= {"D[4]", "D[3]", "D[2]", "G[1]"} and "G[2]" not in set(map(str, after.loop))
    assert SLOTS_PER_MICROBATCH * after.bound < iteration_bound(result.original.with_costs(costs)).bound


def test_zero_delay_loop_is_unschedulable_and_acyclic_graph_has_no_bound():
    a, b = Node("a", "F"), Node("b", "F")
    looped = TrainingDFG(("a",), ((),), (a, b), (Edge(a, b, 0, "x"), Edge(b, a, 0, "y")), ((a, 1.0),))
    assert iteration_bound(looped).bound == math.inf and set(iteration_bound(looped).loop) == {a, b}
    acyclic = TrainingDFG(("a",), ((),), (a, b), (Edge(a, b, 0, "x"),), ((a, 1.0),))
    assert iteration_bound(acyclic).bound == 0.0 and iteration_bound(acyclic).loop == ()
    assert loops(acyclic) == [] and OUTPUT not in acyclic.nodes
