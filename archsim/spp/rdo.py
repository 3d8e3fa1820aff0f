"""Recursive device ordering (SPP Alg. 2): split the device graph at a global min-cut
(Stoer–Wagner, networkx, on link capacities — see :mod:`archsim.spp.topology`), order each side
recursively, and concatenate.

Each cut's two sides become two contiguous blocks of the order, so when stages are laid along the
order, the cut's (slow) links carry traffic of one boundary or one replicated stage only.
"""

from __future__ import annotations

from dataclasses import dataclass

from archsim.spp.topology import Topology


@dataclass(frozen=True)
class Ordering:
    order: tuple[int, ...]  # device ids, rank 1 first
    cuts: tuple[tuple[frozenset[int], frozenset[int]], ...]  # every split made, outermost first


def recursive_device_order(topology: Topology) -> Ordering:
    import networkx as nx  # here, not at the top: importing spp.plan (as PipeDream's plans do) skips it

    graph = topology.graph()
    cuts: list[tuple[frozenset[int], frozenset[int]]] = []

    def order(nodes: list[int]) -> list[int]:
        if len(nodes) == 1:
            return nodes
        sub = graph.subgraph(nodes)
        _, (first, second) = nx.stoer_wagner(sub, weight="capacity")
        first, second = sorted(first), sorted(second)
        if min(first) > min(second):  # deterministic: the side with the lowest id goes first
            first, second = second, first
        cuts.append((frozenset(first), frozenset(second)))
        return order(first) + order(second)

    return Ordering(tuple(order(list(range(topology.devices)))), tuple(cuts))
