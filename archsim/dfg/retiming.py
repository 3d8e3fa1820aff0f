"""Leiserson–Saxe retiming of a DFG, and the loop invariants that make it legal (LayerPipe §III-A).

A retiming r assigns every node an integer lag; edge u → v then carries w_r(e) = w(e) + r(v) − r(u)
delays (moving r(v) delays from each of v's outputs onto each of its inputs is LayerPipe's
"retiming cutset" around v). Along any cycle the r terms telescope to zero, so **retiming never
changes the delay sum of a loop** — the potential argument: w_r − w is the difference of a
potential. A retiming is legal when every w_r(e) ≥ 0. Conversely, within a strongly connected
component the directed cycles span the cycle space, so two delay assignments with equal delay sums
on every loop differ by a retiming there: :func:`changed_loops` checks that in O(E) by recovering
the potential, and :func:`loops` enumerates simple cycles for small graphs (tests, reports).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from archsim.dfg.graph import Edge, Node, TrainingDFG
from archsim.errors import InputError


def retime(dfg: TrainingDFG, r: Mapping[Node, int]) -> TrainingDFG:
    """w_r(u → v) = w(u → v) + r(v) − r(u); nodes missing from ``r`` have lag 0."""
    unknown = set(r) - set(dfg.nodes)
    if unknown:
        raise InputError(f"retiming names nodes not in the graph: {sorted(map(str, unknown))[:3]}", field="r")
    edges = tuple(Edge(e.src, e.dst, e.delays + r.get(e.dst, 0) - r.get(e.src, 0), e.tensor) for e in dfg.edges)
    return TrainingDFG(dfg.layers, dfg.inputs, dfg.nodes, edges, dfg.costs)


def is_legal(dfg: TrainingDFG) -> bool:
    """A DFG is realizable only if no edge needs data from the future (every delay count ≥ 0)."""
    return all(e.delays >= 0 for e in dfg.edges)


@dataclass(frozen=True)
class Loop:
    """A simple cycle: its nodes in order and the positions (in ``dfg.edges``) of its edges."""

    nodes: tuple[Node, ...]
    edges: tuple[int, ...]
    delays: int


def loops(dfg: TrainingDFG, *, limit: int = 100_000) -> list[Loop]:
    """Every simple cycle (parallel edges give separate loops). Exponential in general: for small
    graphs; more than ``limit`` cycles is an error rather than a hang."""
    import networkx as nx

    by_pair: dict[tuple[Node, Node], list[int]] = {}
    for index, e in enumerate(dfg.edges):
        by_pair.setdefault((e.src, e.dst), []).append(index)
    out: list[Loop] = []
    for cycle in nx.simple_cycles(nx.DiGraph(list(by_pair))):
        start = cycle.index(min(cycle))  # canonical rotation, so equal loops compare equal
        cycle = cycle[start:] + cycle[:start]
        choices: list[list[int]] = [[]]
        for pair in zip(cycle, cycle[1:] + cycle[:1]):
            choices = [chosen + [i] for chosen in choices for i in by_pair[pair]]
        for chosen in choices:
            out.append(Loop(tuple(cycle), tuple(chosen), sum(dfg.edges[i].delays for i in chosen)))
            if len(out) > limit:
                raise InputError(f"more than {limit} loops; enumerate loops on smaller graphs", field="dfg")
    return out


def loop_delays(dfg: TrainingDFG) -> dict[tuple[int, ...], int]:
    """Delay sum of every simple loop, keyed by its edge positions (comparable across retimings)."""
    return {loop.edges: loop.delays for loop in loops(dfg)}


def potential(before: TrainingDFG, after: TrainingDFG) -> dict[Node, int] | None:
    """A retiming r with ``after == retime(before, r)``, or None if there is none."""
    _same_structure(before, after)
    r, bad = _potential(before, after, range(len(before.edges)))
    return None if bad else r


def changed_loops(before: TrainingDFG, after: TrainingDFG) -> list[str]:
    """Why ``after`` does not keep every loop's delay sum of ``before`` (empty: it does). Exact and
    O(E): a potential is recovered inside each strongly connected component; edges between
    components lie on no loop and may carry any delays."""
    import networkx as nx

    _same_structure(before, after)
    graph = nx.DiGraph([(e.src, e.dst) for e in before.edges])
    graph.add_nodes_from(before.nodes)
    component = {node: i for i, nodes in enumerate(nx.strongly_connected_components(graph)) for node in nodes}
    inner = [i for i, e in enumerate(before.edges) if component[e.src] == component[e.dst]]
    _, bad = _potential(before, after, inner)
    return [f"a loop through {before.edges[i].src} -> {before.edges[i].dst} changed its delay sum "
            f"({before.edges[i].delays} -> {after.edges[i].delays} delays on that edge)" for i in bad]


def _potential(before: TrainingDFG, after: TrainingDFG, positions) -> tuple[dict[Node, int], list[int]]:
    """Potential on a spanning forest of the chosen edges (r = 0 at each tree root), and the
    positions of the chosen edges it does not explain."""
    adjacent: dict[Node, list[tuple[Node, int]]] = {node: [] for node in before.nodes}
    chosen = list(positions)
    for i in chosen:
        e, step = before.edges[i], after.edges[i].delays - before.edges[i].delays  # r(dst) − r(src)
        adjacent[e.src].append((e.dst, step))
        adjacent[e.dst].append((e.src, -step))
    r: dict[Node, int] = {}
    for root in before.nodes:
        if root in r:
            continue
        r[root] = 0
        stack = [root]
        while stack:
            node = stack.pop()
            for other, step in adjacent[node]:
                if other not in r:
                    r[other] = r[node] + step
                    stack.append(other)
    bad = [i for i in chosen if after.edges[i].delays - before.edges[i].delays != r[before.edges[i].dst]
           - r[before.edges[i].src]]
    return r, bad


def _same_structure(before: TrainingDFG, after: TrainingDFG) -> None:
    if before.nodes != after.nodes or [(e.src, e.dst) for e in before.edges] != [(e.src, e.dst) for e in after.edges]:
        raise InputError("the two graphs must have the same nodes and edges, in the same order", field="dfg")
