"""The training data-flow graph (LayerPipe §II-A, Fig. 1(b)): F, G, D and U per layer, and the loss.

Edges carry data and *delays* — inter-iteration dependencies, as in DSP data-flow graphs (Parhi,
*VLSI Digital Signal Processing Systems*, ch. 2): an edge u → v with w delays means iteration n of v
reads what u produced in iteration n − w. One iteration is one (micro-)batch.

* F_l (zˡ = Wˡaˡ⁻¹) reads a^{l−1} from each input layer's F, or ``x`` from the network INPUT.
* G_l (Gˡ = δˡaˡ⁻¹ᵀ) reads the same a^{l−1} and δˡ, which comes from the D of every layer that
  consumes layer l's output (their contributions add up), or from the LOSS for an output layer.
* D_l (δ^{l−1} = Wˡᵀδˡ ⊙ f′) is computed "by layer l" and feeds the D and G of l's inputs.
  Layers fed only by the network input get a D only if ``first_layer_delta`` (LayerPipe's paper
  mode computes it; nothing consumes it).
* U_l (Wˡ ← Wˡ − ηGˡ) writes W; F_l and D_l of the *next* iteration read it (one delay each) and
  the W register U_l → U_l holds it (one delay).
* INPUT (samples x and labels y) and OUTPUT (the loss value) are the host nodes: their edges are
  the only feed-forward cutsets of the graph, where pipelining may add delays (LayerPipe §III-A).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from archsim.errors import InputError

if TYPE_CHECKING:
    import networkx as nx

KINDS = ("F", "G", "D", "U")  # per-layer operations (archsim vocabulary, DESIGN.md)


@dataclass(frozen=True, order=True)
class Node:
    """One operation: ``kind`` of ``layer`` (F, G, D, U), or a network-level node (layer "")."""

    layer: str
    kind: str

    def __str__(self) -> str:
        return f"{self.kind}[{self.layer}]" if self.layer else self.kind


INPUT = Node("", "input")
LOSS = Node("", "loss")
OUTPUT = Node("", "output")


@dataclass(frozen=True)
class Edge:
    """``tensor`` flows src → dst; ``delays`` iterations separate the write from the read."""

    src: Node
    dst: Node
    delays: int
    tensor: str


@dataclass(frozen=True)
class TrainingDFG:
    """Nodes and edges of one training iteration; ``costs`` (any unit) are optional, missing = 0."""

    layers: tuple[str, ...]
    inputs: tuple[tuple[str, ...], ...]  # inputs[i]: the layers feeding layers[i] (() = network input)
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    costs: tuple[tuple[Node, float], ...] = ()

    @cached_property
    def _cost(self) -> dict[Node, float]:
        return dict(self.costs)

    def cost(self, node: Node) -> float:
        return self._cost.get(node, 0.0)

    def has(self, node: Node) -> bool:
        return node in self._node_set

    @cached_property
    def _node_set(self) -> frozenset[Node]:
        return frozenset(self.nodes)

    def with_delays(self, delays: Mapping[int, int]) -> TrainingDFG:
        """A copy with the delays of the edges at the given positions replaced."""
        edges = tuple(Edge(e.src, e.dst, delays.get(i, e.delays), e.tensor) for i, e in enumerate(self.edges))
        return TrainingDFG(self.layers, self.inputs, self.nodes, edges, self.costs)

    def with_costs(self, costs: Mapping[Node | tuple[str, str], float]) -> TrainingDFG:
        return TrainingDFG(self.layers, self.inputs, self.nodes, self.edges, _check_costs(costs, self._node_set))

    def to_networkx(self) -> nx.MultiDiGraph:
        """Nodes carry ``cost``; edge keys are positions in ``edges``, with ``delays`` and ``tensor``."""
        import networkx as nx

        graph = nx.MultiDiGraph()
        for node in self.nodes:
            graph.add_node(node, cost=self.cost(node))
        for index, e in enumerate(self.edges):
            graph.add_edge(e.src, e.dst, key=index, delays=e.delays, tensor=e.tensor)
        return graph


def training_dfg(layers: Sequence[str], costs: Mapping[Node | tuple[str, str], float] | None = None, *,
                 inputs: Mapping[str, Sequence[str]] | None = None, first_layer_delta: bool = True) -> TrainingDFG:
    """The training DFG of ``layers`` (in topological order). Without ``inputs`` the layers form a
    chain; otherwise ``inputs[name]`` lists the layers feeding ``name`` (empty: the network input).
    ``costs`` maps (layer, kind) — or INPUT/LOSS/OUTPUT — to a cost."""
    names = tuple(layers)
    if not names:
        raise InputError("a training DFG needs at least one layer", field="layers")
    for name in names:
        if not isinstance(name, str) or not name:
            raise InputError(f"layer names must be non-empty strings, got {name!r}", field="layers")
    if len(set(names)) != len(names):
        raise InputError("layer names must be distinct", field="layers")
    feeds = _inputs(names, inputs)
    consumers: dict[str, list[str]] = {name: [] for name in names}
    for name, sources in zip(names, feeds):
        for source in sources:
            consumers[source].append(name)

    nodes: list[Node] = [INPUT]
    for name, sources in zip(names, feeds):
        nodes += [Node(name, "F"), Node(name, "G")]
        if sources or first_layer_delta:
            nodes.append(Node(name, "D"))
        nodes.append(Node(name, "U"))
    nodes += [LOSS, OUTPUT]
    present = frozenset(nodes)

    edges: list[Edge] = []
    for name, sources in zip(names, feeds):
        f, g, d, u = (Node(name, kind) for kind in KINDS)
        for source in sources or ("",):  # a^{l−1}: F and G read it
            producer, tensor = (Node(source, "F"), f"a[{source}]") if source else (INPUT, "x")
            edges += [Edge(producer, f, 0, tensor), Edge(producer, g, 0, tensor)]
        for consumer in consumers[name] or ("",):  # δˡ: G and D read it
            producer = Node(consumer, "D") if consumer else LOSS
            edges.append(Edge(producer, g, 0, f"delta[{name}]"))
            if d in present:
                edges.append(Edge(producer, d, 0, f"delta[{name}]"))
        edges.append(Edge(g, u, 0, f"G[{name}]"))
        edges.append(Edge(u, f, 1, f"W[{name}]"))
        if d in present:
            edges.append(Edge(u, d, 1, f"W[{name}]"))
        edges.append(Edge(u, u, 1, f"W[{name}]"))
    for name in names:
        if not consumers[name]:
            edges.append(Edge(Node(name, "F"), LOSS, 0, f"a[{name}]"))
    edges += [Edge(INPUT, LOSS, 0, "y"), Edge(LOSS, OUTPUT, 0, "loss")]
    return TrainingDFG(names, feeds, tuple(nodes), tuple(edges), _check_costs(costs or {}, present))


def with_delta_parts(dfg: TrainingDFG, parts: Mapping[str, Sequence[str]]) -> TrainingDFG:
    """``dfg`` with D of each layer in ``parts`` replaced by one node per part (kinds such as ``D1``, ``D2``:
    LayerPipe's δ′ and δ″, or a whole δ run away from its layer), each with every edge D had — δˡ in, W in
    (one delay), its share of δ^{l−1} out to the inputs' G and D (or their parts). Costs are dropped: give
    the parts theirs with :meth:`TrainingDFG.with_costs`."""
    split = {Node(name, "D"): tuple(Node(name, kind) for kind in kinds) for name, kinds in parts.items() if kinds}
    for node in split:
        if not dfg.has(node):
            raise InputError(f"layer {node.layer!r} has no δ to split into parts", field="parts")
    nodes = tuple(part for node in dfg.nodes for part in split.get(node, (node,)))
    if len(set(nodes)) != len(nodes):
        raise InputError("a δ part is named twice", field="parts")
    edges = tuple(Edge(src, dst, e.delays, e.tensor) for e in dfg.edges
                  for src in split.get(e.src, (e.src,)) for dst in split.get(e.dst, (e.dst,)))
    return TrainingDFG(dfg.layers, dfg.inputs, nodes, edges)


def _inputs(names: tuple[str, ...], inputs: Mapping[str, Sequence[str]] | None) -> tuple[tuple[str, ...], ...]:
    if inputs is None:
        return tuple(((names[i - 1],) if i else ()) for i in range(len(names)))
    unknown = set(inputs) - set(names)
    if unknown:
        raise InputError(f"inputs names layers that are not in the network: {sorted(unknown)}", field="inputs")
    position = {name: i for i, name in enumerate(names)}
    feeds = []
    for i, name in enumerate(names):
        sources = tuple(inputs.get(name, ()))
        for source in sources:
            if source not in position:
                raise InputError(f"layer {name!r} reads unknown layer {source!r}", field="inputs")
            if position[source] >= i:
                raise InputError(f"layer {name!r} reads {source!r}, which does not come before it "
                                 "(list the layers in topological order)", field="inputs")
        if len(set(sources)) != len(sources):
            raise InputError(f"layer {name!r} lists an input twice", field="inputs")
        feeds.append(sources)
    return tuple(feeds)


def _check_costs(costs: Mapping[Node | tuple[str, str], float], present: frozenset[Node]
                 ) -> tuple[tuple[Node, float], ...]:
    out = []
    for key, value in costs.items():
        if not isinstance(key, Node) and not (isinstance(key, tuple) and len(key) == 2):
            raise InputError(f"cost keys must be (layer, kind) pairs or Nodes, got {key!r}", field="costs")
        node = key if isinstance(key, Node) else Node(*key)
        if node not in present:
            raise InputError(f"cost given for {node}, which is not in the graph", field="costs")
        if not value >= 0:  # also catches NaN
            raise InputError(f"cost of {node} must be a non-negative number, got {value!r}", field="costs")
        out.append((node, float(value)))
    return tuple(out)
