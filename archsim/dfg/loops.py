"""Critical loops and the iteration bound (LayerPipe §III-C; Parhi, VLSI DSP Systems, ch. 2).

T∞ = max over cycles C of (Σ node costs on C) / (Σ delays on C): no schedule of the DFG can run an
iteration faster. It is a maximum cycle ratio, found by parametric search: for a trial λ, a cycle
with Σ cost − λ·Σ delays > 0 exists iff the graph weighted λ·w(e) − cost(src) has a negative
cycle (Bellman–Ford, via networkx). Bisection brackets T∞; the last negative cycle found below it
is a critical loop. A cycle with no delay makes the DFG unschedulable (T∞ = ∞).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import networkx as nx

from archsim.dfg.graph import TrainingDFG


@dataclass(frozen=True)
class IterationBound:
    bound: float
    loop: tuple[tuple[str, str], ...]  # the critical loop's nodes, in order


def _weighted(dfg: TrainingDFG, lam: float) -> nx.DiGraph:
    """Nodes relabelled 0..n−1 (networkx's Bellman–Ford mistakes tuple nodes for edge tuples)."""
    index = {node: i for i, node in enumerate(dfg.nodes)}
    graph = nx.DiGraph()
    graph.add_nodes_from(range(len(dfg.nodes)))
    for e in dfg.edges:  # parallel edges: the one with fewest delays dominates a max-ratio cycle
        u, v = index[e.src], index[e.dst]
        weight = lam * e.delays - dfg.cost(e.src)
        if not graph.has_edge(u, v) or weight < graph[u][v]["weight"]:
            graph.add_edge(u, v, weight=weight, delays=e.delays)
    return graph


def iteration_bound(dfg: TrainingDFG, *, rel_tol: float = 1e-9) -> IterationBound:
    """T∞ and a critical loop. Costs come from ``dfg.costs`` (missing nodes cost 0)."""
    index = {node: i for i, node in enumerate(dfg.nodes)}
    zero = nx.DiGraph([(index[e.src], index[e.dst]) for e in dfg.edges if e.delays == 0])
    try:
        cycle = nx.find_cycle(zero)
        return IterationBound(math.inf, tuple(dfg.nodes[u] for u, _ in cycle))
    except nx.NetworkXNoCycle:
        pass
    total = sum(dfg.cost(n) for n in dfg.nodes)
    low, high = 0.0, total + 1.0
    best_loop: tuple[tuple[str, str], ...] = ()
    if not _has_positive_ratio_cycle(dfg, 0.0):
        return IterationBound(0.0, ())
    while high - low > rel_tol * max(high, 1.0):
        mid = (low + high) / 2
        loop = _positive_ratio_cycle(dfg, mid)
        if loop:
            low, best_loop = mid, loop
        else:
            high = mid
    if not best_loop:
        best_loop = _positive_ratio_cycle(dfg, low * (1 - 1e-12)) or ()
    ratio = _ratio(dfg, best_loop)
    return IterationBound(ratio, best_loop)


def _has_positive_ratio_cycle(dfg: TrainingDFG, lam: float) -> bool:
    return nx.negative_edge_cycle(_weighted(dfg, lam), weight="weight")


def _positive_ratio_cycle(dfg: TrainingDFG, lam: float) -> tuple[tuple[str, str], ...] | None:
    graph = _weighted(dfg, lam)
    if not nx.negative_edge_cycle(graph, weight="weight"):
        return None
    for u, v, data in graph.edges(data=True):  # self-loops first: networkx 3.6's find_negative_cycle
        if u == v and data["weight"] < 0:  # calls its weight function wrongly on them
            return (dfg.nodes[u],)
    graph.remove_edges_from([(u, v) for u, v in graph.edges if u == v])  # non-negative: never critical
    for source in graph.nodes:
        try:
            cycle = nx.find_negative_cycle(graph, source, weight="weight")
            return tuple(dfg.nodes[i] for i in cycle[:-1])
        except nx.NetworkXError:
            continue
    return None


def _ratio(dfg: TrainingDFG, loop) -> float:
    if not loop:
        return 0.0
    pairs = list(zip(loop, loop[1:] + loop[:1]))
    delays = 0
    for u, v in pairs:
        delays += min(e.delays for e in dfg.edges if (e.src, e.dst) == (u, v))
    cost = sum(dfg.cost(n) for n in loop)
    return math.inf if delays == 0 else cost / delays


def loop_ratio(dfg: TrainingDFG, loop) -> float:
    """Σ cost / Σ delays of one loop (nodes in order)."""
    return _ratio(dfg, tuple(loop))
