"""Critical loops and the iteration bound (LayerPipe §III-C; Parhi, VLSI DSP Systems, ch. 2).

T∞ = max over loops C of (Σ node costs on C) / (Σ delays on C): no schedule of the DFG, on any
number of processors, runs an iteration faster; a loop attaining it is *critical*. LayerPipe finds
it with a minimum-cycle-mean algorithm; with delays other than 1 per edge it is a maximum cycle
*ratio*, which networkx does not offer, so archsim uses Lawler's parametric search: a loop with
ratio > λ exists iff the graph weighted λ·w(e) − cost(src(e)) has a negative cycle (Bellman–Ford,
vectorized over the edges). Each negative cycle found is a real loop, so the search jumps λ up to its exact ratio
(Dinkelbach's step: it bisects only until a first loop is found, then asks for a loop above the best
ratio, each found loop strictly better than the last); it ends when no loop beats the best found,
whose exact ratio is returned. A loop without delays makes the DFG unschedulable: T∞ = ∞.
Costs and T∞ share a unit (cycles, seconds) per DFG iteration — per slot for a pipelined DFG.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from archsim.dfg.graph import Node, TrainingDFG
from archsim.errors import InputError


@dataclass(frozen=True)
class IterationBound:
    bound: float  # T∞ (0 when the graph has no loop)
    loop: tuple[Node, ...]  # a critical loop's nodes, in order (empty when there is no loop)
    cost: float  # Σ node costs on it
    delays: int  # Σ delays on it


def iteration_bound(dfg: TrainingDFG, *, rel_tol: float = 1e-12) -> IterationBound:
    """T∞ and a critical loop. Costs come from ``dfg.costs``; delays must be ≥ 0."""
    import networkx as nx

    if any(e.delays < 0 for e in dfg.edges):
        raise InputError("the iteration bound needs a legal DFG (no negative delays)", field="dfg")
    nodes = list(dfg.nodes)
    index = {node: i for i, node in enumerate(nodes)}
    fewest: dict[tuple[int, int], int] = {}  # parallel edges: the fewest delays dominate every loop ratio
    for e in dfg.edges:
        pair = (index[e.src], index[e.dst])
        fewest[pair] = min(e.delays, fewest.get(pair, e.delays))
    cost = [dfg.cost(node) for node in nodes]

    zero = nx.DiGraph([pair for pair, d in fewest.items() if d == 0])
    try:
        cycle = nx.find_cycle(zero)
        loop = tuple(nodes[u] for u, _ in cycle)
        return IterationBound(math.inf, loop, sum(dfg.cost(n) for n in loop), 0)
    except nx.NetworkXNoCycle:
        pass

    best: tuple[int, ...] = ()
    low = 0.0
    high = sum(cost) + 1.0  # a loop holds ≥ 1 delay, so no ratio exceeds the total cost
    scale = max(high, 1.0)
    while True:
        lam = (low + high) / 2 if not best and high - low > rel_tol * scale else low
        cycle = _cycle_above(fewest, cost, lam, rel_tol * scale)
        if cycle is not None:
            best, low = cycle, max(low, _ratio(cycle, fewest, cost))
        elif lam == low:
            break
        else:
            high = lam
    if not best:
        return IterationBound(0.0, (), 0.0, 0)
    first = best.index(min(best))  # the loop read from its node earliest in the DFG: one answer per loop
    best = best[first:] + best[:first]
    loop_delays = sum(fewest[pair] for pair in _pairs(best))
    loop_cost = sum(cost[i] for i in best)
    return IterationBound(loop_cost / loop_delays, tuple(nodes[i] for i in best), loop_cost, loop_delays)


def loop_ratio(dfg: TrainingDFG, loop: Sequence[Node]) -> float:
    """Σ cost / Σ delays of one loop (its nodes in order; between two nodes the edge with fewest delays)."""
    loop = tuple(loop)
    if not loop:
        raise InputError("a loop needs at least one node", field="loop")
    delays = 0
    for u, v in zip(loop, loop[1:] + loop[:1]):
        options = [e.delays for e in dfg.edges if (e.src, e.dst) == (u, v)]
        if not options:
            raise InputError(f"{u} -> {v} is not an edge, so this is not a loop", field="loop")
        delays += min(options)
    cost = sum(dfg.cost(n) for n in loop)
    return math.inf if delays == 0 else cost / delays


def _cycle_above(edges: dict[tuple[int, int], int], cost: list[float], lam: float, eps: float
                 ) -> tuple[int, ...] | None:
    """A loop with Σ cost − λ·Σ delays > 0 (by more than ``eps`` per edge), or None: Bellman–Ford from
    a virtual source on weights λ·w − cost(src) + eps, every edge relaxed at once per pass (numpy). Any
    cycle of the predecessor graph is a negative cycle (Cherkassky & Goldberg's parent-graph lemma), and one
    appears while a negative cycle exists, so each pass looks for one; a pass that changes nothing proves
    there is none. (networkx's find_negative_cycle sometimes reports "detected but not found" on float
    weights, so the cycle is extracted here.)"""
    import numpy as np

    size = len(cost)
    pairs = np.array(list(edges), dtype=np.int64).reshape(-1, 2)
    src, dst = pairs[:, 0], pairs[:, 1]
    weight = lam * np.array(list(edges.values()), dtype=float) - np.asarray(cost, dtype=float)[src] + eps
    dist = np.zeros(size)
    pred = np.full(size, -1, dtype=np.int64)
    for _ in range(4 * size + 4):  # a negative cycle closes a predecessor cycle long before this
        candidate = dist[src] + weight
        best = dist.copy()
        np.minimum.at(best, dst, candidate)
        better = candidate < dist[dst]
        if not better.any():
            return None
        won = better & (candidate == best[dst])
        pred[dst[won]] = src[won]
        dist = best
        node = _on_a_cycle(pred)
        if node >= 0:
            cycle = [node]
            while pred[cycle[-1]] != node:
                cycle.append(int(pred[cycle[-1]]))
            cycle.reverse()
            total = sum(cost[u] - lam * edges[(u, v)] for u, v in _pairs(tuple(cycle)))
            return tuple(cycle) if total > 0 else None
    return None


def _on_a_cycle(pred) -> int:
    """A node on a cycle of the predecessor function ``pred`` (−1: none), or −1: follow every node's
    predecessor 2^k ≥ n times by pointer doubling; what is not at the sentinel then lies on a cycle."""
    import numpy as np

    size = len(pred)
    jump = np.where(pred < 0, size, pred)
    jump = np.append(jump, size)  # the sentinel n points to itself
    steps = 1
    while steps < size:
        jump = jump[jump]
        steps *= 2
    ends = jump[:size]
    found = np.flatnonzero(ends < size)
    return int(ends[found[0]]) if len(found) else -1


def _ratio(cycle: tuple[int, ...], fewest: dict[tuple[int, int], int], cost: list[float]) -> float:
    return sum(cost[i] for i in cycle) / sum(fewest[pair] for pair in _pairs(cycle))


def _pairs(cycle: tuple[int, ...]) -> list[tuple[int, int]]:
    return list(zip(cycle, cycle[1:] + cycle[:1]))
