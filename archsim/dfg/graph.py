"""The training data-flow graph (LayerPipe §II-A, Fig. 1(b)): F, G, D and U per layer, and the loss.

Edges carry data and *delays* — inter-iteration dependencies, as in DSP data-flow graphs: the
weight Wˡ written by the update U_l in iteration n is read by F_l and D_l in iteration n + 1 (one
delay on U_l → F_l and U_l → D_l, and the W register U_l → U_l). Everything else is same-iteration
data: a^{l−1} (F_{l−1} → F_l and → G_l), δˡ (D_{l+1} → D_l and → G_l; the loss feeds layer L), G_l → U_l.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import networkx as nx

from archsim.errors import InputError

LOSS = ("loss", "L")


@dataclass(frozen=True)
class Edge:
    src: tuple[str, str]
    dst: tuple[str, str]
    delays: int
    tensor: str


@dataclass(frozen=True)
class TrainingDFG:
    """Nodes are (layer, kind) pairs — kind in F, G, D, U — plus ``LOSS``; costs are optional."""

    layers: tuple[str, ...]
    nodes: tuple[tuple[str, str], ...]
    edges: tuple[Edge, ...]
    costs: tuple[tuple[tuple[str, str], float], ...] = ()

    def cost(self, node: tuple[str, str]) -> float:
        return dict(self.costs).get(node, 0.0)

    def to_networkx(self) -> nx.MultiDiGraph:
        graph = nx.MultiDiGraph()
        for node in self.nodes:
            graph.add_node(node, cost=self.cost(node))
        for edge in self.edges:
            graph.add_edge(edge.src, edge.dst, delays=edge.delays, tensor=edge.tensor)
        return graph

    def with_delays(self, delays: Mapping[int, int]) -> "TrainingDFG":
        """A copy with the delays of the edges at the given positions replaced."""
        edges = tuple(Edge(e.src, e.dst, delays.get(i, e.delays), e.tensor) for i, e in enumerate(self.edges))
        return TrainingDFG(self.layers, self.nodes, edges, self.costs)


def training_dfg(layers: Sequence[str], costs: Mapping[tuple[str, str], float] | None = None, *,
                 first_layer_delta: bool = False) -> TrainingDFG:
    """The DFG of a chain of layers. ``first_layer_delta`` adds D for layer 1 (δ of the network
    input, which LayerPipe's paper mode computes and nothing consumes)."""
    names = tuple(layers)
    if not names or len(set(names)) != len(names) or "loss" in names:
        raise InputError("layers must be non-empty, distinct, and not named 'loss'", field="layers")
    nodes: list[tuple[str, str]] = []
    edges: list[Edge] = []
    for index, name in enumerate(names):
        nodes += [(name, "F"), (name, "G"), (name, "U")]
        if index > 0 or first_layer_delta:
            nodes.append((name, "D"))
    nodes.append(LOSS)
    for index, name in enumerate(names):
        previous = names[index - 1] if index else None
        upstream = (names[index + 1], "D") if index + 1 < len(names) else LOSS
        if previous is not None:
            edges.append(Edge((previous, "F"), (name, "F"), 0, f"a{index}"))
            edges.append(Edge((previous, "F"), (name, "G"), 0, f"a{index}"))
        edges.append(Edge(upstream, (name, "G"), 0, f"delta{index + 1}"))
        if (name, "D") in nodes:
            edges.append(Edge(upstream, (name, "D"), 0, f"delta{index + 1}"))
            edges.append(Edge((name, "U"), (name, "D"), 1, f"W{index + 1}"))
        edges.append(Edge((name, "G"), (name, "U"), 0, f"G{index + 1}"))
        edges.append(Edge((name, "U"), (name, "F"), 1, f"W{index + 1}"))
        edges.append(Edge((name, "U"), (name, "U"), 1, f"W{index + 1}"))
    edges.append(Edge((names[-1], "F"), LOSS, 0, f"a{len(names)}"))
    unknown = set(costs or {}) - set(nodes)
    if unknown:
        raise InputError(f"costs name nodes not in the graph: {sorted(unknown)[:3]}", field="costs")
    return TrainingDFG(names, tuple(nodes), tuple(edges), tuple((costs or {}).items()))
