"""Pipelining the training DFG with delayed gradients and retiming, *derived* (LayerPipe §III-A, Fig. 2).

LayerPipe derives a pipelined model in two processes: (i) insert delays where that is legal —
on the feed-forward cutsets (network input and output) and, by the DLMS argument (Eq. 6,
W(n) = W(n−1) − ηG(n−M)), between G_l and U_l ("delayed gradients"); (ii) move them by retiming
until every pipeline stage boundary holds a delay. archsim states both as one constraint system and
solves it instead of applying the resulting formula.

**Clock.** A delay in the pipelined DFG is one *slot*: a pipeline transition ("the delay holds the
data for ... the transition or pipeline stage that transfers data to the adjacent processor").
Each processor has a forward slot and a backward slot per micro-batch (1F1B), so one micro-batch
enters every P = ``SLOTS_PER_MICROBATCH`` = 2 slots: the pipelined DFG is the P-slow version of the
training DFG (Parhi ch. 4 — every delay of the original, counted in micro-batches, becomes P).

**Places.** Node v runs in place (stage, phase): F in its layer's stage, forward; G, D and U in the
stage, backward; the loss (and the host OUTPUT) in the last stage, forward; the host INPUT with
stage 1, forward. An edge between different places is a pipeline boundary — a stage boundary,
in either direction of travel, or the turn from a stage's forward to its backward pass (W from
U back to F included) — and must carry ≥ 1 delay after retiming: req(e) = [place(u) ≠ place(v)].

**Constraints.** Unknowns: a retiming r(v) ∈ ℤ and k_l ≥ 0 DLMS delays (micro-batches) on each
G_l → U_l. For every edge e = u → v:  P·w(e) + P·k_l·[e = G_l → U_l] + r(v) − r(u) ≥ req(e).
Σ k is minimized (:mod:`archsim.dfg.constraints`, an integer program), then r is the earliest
solution with r(INPUT) = 0 (Bellman–Ford). Feed-forward cutsets need no variables of their own:
INPUT and OUTPUT lie on no loop, so delays added on all their edges are the retiming of a host;
``latency`` = r(OUTPUT) − r(INPUT) is the total the two cutsets receive (how it is split between
them is a retiming of every other node by a constant, so it is not unique).

**Counts, and the paper's.** The weight loop of layer l in stage s of S (F_l → … → loss → … → G_l →
U_l → F_l) crosses S − s forward boundaries, the turn, S − s backward boundaries and the W
turn: it needs 2(S − s + 1) slots and holds P·(1 + k_l) = 2 + 2k_l, so the solver finds
k_l = S − s (PipeDream's staleness; 0 in the last stage). LayerPipe counts the *whole loop in
slots*, W register included — Eq. 6's M with M = 1 plain SGD: "four delays and two delays for
layers 1 and 2" of Fig. 2 are our ``loop_delays`` (4, 2), P·(1 + k_l); ``gradient_delays`` is the raw
k_l (1, 0) and ``gradient_delay_slots`` is P·k_l (2, 0).

**Stashes** (§III-A: "delays between W and δ correspond to weight stashing, delays between a and the
backward pass correspond to activation stashing"). W_l's delay line is U_l's out-edges; it holds
⌈max delays / P⌉ distinct micro-batches' weights = ``weight_versions``. The activation a^{l−1}
waits w_r(a → G_l) − w_r(a → F_l) = r(G_l) − r(F_l) slots beyond F_l's read; ⌈that / P⌉ micro-batches
are in flight = ``activation_stash``. Both give PipeDream's S − s + 1 (2 and 1 in Fig. 2).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from archsim.dfg.constraints import Constraint, Infeasible, asap_retiming, min_inserted
from archsim.dfg.graph import INPUT, LOSS, OUTPUT, Node, TrainingDFG, training_dfg
from archsim.dfg.retiming import changed_loops, loops, retime
from archsim.errors import InputError

SLOTS_PER_MICROBATCH = 2  # P: one forward and one backward slot per processor per micro-batch (1F1B)


@dataclass(frozen=True)
class LayerPipelining:
    layer: str
    stage: int
    gradient_delays: int  # k_l: DLMS delays inserted on G_l → U_l, in micro-batches (staleness beyond SGD)
    gradient_delay_slots: int  # P·k_l: the same delays in the slot-clocked DFG
    loop_delays: int  # delays on the weight loop after insertion, slots, W register included (paper's count)
    weight_versions: int  # micro-batches' weights held on W_l's delay line (PipeDream's weight stash)
    activation_stash: int  # micro-batches whose a^{l−1} waits for G_l


@dataclass(frozen=True)
class PipelinedDFG:
    original: TrainingDFG  # delays in micro-batches
    stage_of: tuple[tuple[str, int], ...]
    inserted: TrainingDFG  # P-slow original plus the DLMS delays (slots), before retiming
    required: tuple[int, ...]  # per edge: delays it must hold after retiming (1 across a pipeline boundary)
    retiming: tuple[tuple[Node, int], ...]
    retimed: TrainingDFG
    latency: int  # slots from INPUT to OUTPUT: the delays pipelining adds on the feed-forward cutsets
    layers: tuple[LayerPipelining, ...]
    placed: tuple[tuple[Node, int], ...] = ()  # nodes run on a stage other than their layer's (borrowed δ parts)

    def layer(self, name: str) -> LayerPipelining:
        for item in self.layers:
            if item.layer == name:
                return item
        raise InputError(f"no layer named {name!r}", field="layer")

    def lag(self, node: Node) -> int:
        return dict(self.retiming)[node]

    def stage_of_node(self, node: Node) -> int | None:
        """The stage that runs ``node``: its own where it is placed apart, else its layer's (None: a host node)."""
        placed, stage = self._stages
        if node in placed:
            return placed[node]
        return stage[node.layer] if node.layer else None

    @cached_property
    def _stages(self) -> tuple[dict[Node, int], dict[str, int]]:
        return dict(self.placed), dict(self.stage_of)


def pipeline(layers: Sequence[str] | TrainingDFG, stage_of: Mapping[str, int], *,
             inputs: Mapping[str, Sequence[str]] | None = None, first_layer_delta: bool = True,
             placed: Mapping[Node, int] | None = None) -> PipelinedDFG:
    """Derive the pipelined, retimed DFG for an assignment of layers to stages 1..S (see the module
    docstring). ``layers`` is a list of names (a chain, or a DAG with ``inputs``) or a built DFG.
    ``placed``: backward nodes run on a stage other than their layer's (LayerPipe's borrowed δ parts,
    :func:`~archsim.dfg.graph.with_delta_parts`); a stage may hold only such nodes."""
    dfg = layers if isinstance(layers, TrainingDFG) else training_dfg(layers, inputs=inputs,
                                                                        first_layer_delta=first_layer_delta)
    placed = dict(placed or {})
    stage = _check_stages(dfg, stage_of, placed)
    place = _places(dfg, stage, placed)
    p = SLOTS_PER_MICROBATCH
    index = {node: i for i, node in enumerate(dfg.nodes)}
    gradient = {name: j for j, name in enumerate(dfg.layers)}
    required = tuple(int(place[e.src] != place[e.dst]) for e in dfg.edges)
    constraints = [Constraint(index[e.src], index[e.dst], p * e.delays, req,
                              gradient[e.src.layer] if (e.src.kind, e.dst.kind) == ("G", "U") else None)
                   for e, req in zip(dfg.edges, required)]
    try:
        k = min_inserted(len(dfg.nodes), constraints, len(gradient), p, index[INPUT])
        lags = asap_retiming(len(dfg.nodes), constraints, k, p, index[INPUT])
    except Infeasible as error:
        raise InputError(f"no legal pipelining for this stage assignment: {error}", field="stage_of") from error
    inserted = dfg.with_delays({i: p * e.delays + (p * k[gradient[e.src.layer]] if (e.src.kind, e.dst.kind)
                                                    == ("G", "U") else 0) for i, e in enumerate(dfg.edges)})
    r = dict(zip(dfg.nodes, lags))
    retimed = retime(inserted, r)
    fewest = _Fewest(retimed)
    info = tuple(_layer_counts(fewest, name, stage[name], k[gradient[name]]) for name in dfg.layers)
    return PipelinedDFG(dfg, tuple(stage.items()), inserted, required, tuple(r.items()), retimed,
                        r[OUTPUT] - r[INPUT], info, tuple(placed.items()))


def check_legal(pipelined: PipelinedDFG, *, enumerate_loops: bool = False) -> list[str]:
    """Problems with a pipelined DFG (empty: legal): negative delays, a pipeline boundary without a
    delay, inserted delays other than P·w plus P·k on G → U, or a loop whose delay sum is not P times
    the original plus the DLMS delays inserted on it. Loops are checked exactly by the potential
    argument (:func:`~archsim.dfg.retiming.changed_loops`); ``enumerate_loops`` also walks every simple
    cycle (small graphs)."""
    p, original, inserted, retimed = SLOTS_PER_MICROBATCH, pipelined.original, pipelined.inserted, pipelined.retimed
    k = {item.layer: item.gradient_delays for item in pipelined.layers}
    problems = [f"{e.src} -> {e.dst} has {e.delays} delays" for e in retimed.edges if e.delays < 0]
    problems += [f"{e.src} -> {e.dst} crosses a pipeline boundary with {e.delays} delays"
                 for e, req in zip(retimed.edges, pipelined.required) if e.delays < req]
    problems += [f"negative DLMS delays on layer {name}" for name, value in k.items() if value < 0]
    extra = [_dlms(e, k, p) for e in original.edges]
    problems += [f"{e.src} -> {e.dst}: {f.delays} delays inserted, expected {p * e.delays + x}"
                 for e, f, x in zip(original.edges, inserted.edges, extra) if f.delays != p * e.delays + x]
    problems += changed_loops(inserted, retimed)
    if enumerate_loops:
        for loop in loops(original):
            expected = sum(p * original.edges[i].delays + extra[i] for i in loop.edges)
            got = sum(retimed.edges[i].delays for i in loop.edges)
            if got != expected:
                problems.append(f"loop {' -> '.join(map(str, loop.nodes))} holds {got} delays, expected {expected}")
    return problems


def _dlms(edge, k: Mapping[str, int], p: int) -> int:
    return p * k[edge.src.layer] if (edge.src.kind, edge.dst.kind) == ("G", "U") else 0


def _check_stages(dfg: TrainingDFG, stage_of: Mapping[str, int], placed: Mapping[Node, int]) -> dict[str, int]:
    unknown = set(stage_of) - set(dfg.layers)
    if unknown:
        raise InputError(f"stage_of names layers not in the network: {sorted(unknown)[:3]}", field="stage_of")
    stage: dict[str, int] = {}
    for name in dfg.layers:
        value = stage_of.get(name)
        if value is None:
            raise InputError(f"layer {name!r} has no stage", field="stage_of")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"stage of layer {name!r} must be an integer ≥ 1, got {value!r}", field="stage_of")
        stage[name] = value
    for node, value in placed.items():
        if not dfg.has(node) or node.kind in ("F", "U") or not node.layer:
            raise InputError(f"only a layer's backward ops (G, D or its parts) can be placed apart, not {node}",
                             field="placed")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"stage of {node} must be an integer ≥ 1, got {value!r}", field="placed")
    used = set(stage.values()) | set(placed.values())
    if used != set(range(1, max(used) + 1)):
        raise InputError("stages must be numbered 1..S with none empty", field="stage_of")
    for name, sources in zip(dfg.layers, dfg.inputs):
        for source in sources:
            if stage[source] > stage[name]:
                raise InputError(f"layer {name!r} (stage {stage[name]}) reads {source!r} from a later stage "
                                 f"({stage[source]}); stages must hold consecutive layers", field="stage_of")
    return stage


def _places(dfg: TrainingDFG, stage: Mapping[str, int], placed: Mapping[Node, int]) -> dict[Node, tuple[int, str]]:
    last = max(stage[e.src.layer] for e in dfg.edges if e.dst == LOSS and e.src != INPUT)
    place = {INPUT: (1, "forward"), LOSS: (last, "forward"), OUTPUT: (last, "forward")}
    for node in dfg.nodes:
        if node.layer:
            place[node] = (placed.get(node, stage[node.layer]), "forward" if node.kind == "F" else "backward")
    return place


class _Fewest:
    """The retimed DFG's edges by pair, each pair's fewest delays (parallel edges), and the fewest
    delays from every layer's F to every node (scipy's Dijkstra, all sources in one call): built once
    for all layers' counts, not once per layer."""

    def __init__(self, retimed: TrainingDFG) -> None:
        import numpy as np
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import dijkstra

        self.delays: dict[tuple[Node, Node], int] = {}
        self.out: dict[Node, list[int]] = {}
        self.into: dict[Node, set[Node]] = {}
        for e in retimed.edges:
            pair = (e.src, e.dst)
            self.delays[pair] = min(e.delays, self.delays.get(pair, e.delays))
            self.out.setdefault(e.src, []).append(e.delays)
            self.into.setdefault(e.dst, set()).add(e.src)
        self.index = {node: i for i, node in enumerate(retimed.nodes)}
        rows = [self.index[src] for src, _ in self.delays]
        cols = [self.index[dst] for _, dst in self.delays]
        # one entry per pair (a COO duplicate would be summed); explicit zeros stay edges in csgraph
        graph = csr_matrix((np.array(list(self.delays.values()), dtype=float), (rows, cols)),
                           shape=(len(self.index), len(self.index)))
        sources = [self.index[node] for node in retimed.nodes if node.kind == "F"]
        self.row = {source: k for k, source in enumerate(sources)}
        self.lengths = dijkstra(graph, indices=sources) if sources else np.zeros((0, len(self.index)))

    def shortest(self, src: Node, dst: Node) -> int:
        """Fewest delays on a path src → dst (src a layer's F)."""
        length = self.lengths[self.row[self.index[src]], self.index[dst]]
        if length == float("inf"):
            raise InputError(f"no path from {src} to {dst} in the retimed DFG", field="dfg")
        return int(length)


def _layer_counts(fewest: _Fewest, name: str, stage: int, k: int) -> LayerPipelining:
    p = SLOTS_PER_MICROBATCH
    f, g, u = Node(name, "F"), Node(name, "G"), Node(name, "U")
    weight_line = max(fewest.out[u])
    gaps = [fewest.delays[(source, g)] - fewest.delays[(source, f)] for source in fewest.into[f] if source != u]
    forward_to_g = fewest.shortest(f, g)
    loop = forward_to_g + fewest.delays[(g, u)] + fewest.delays[(u, f)]
    return LayerPipelining(name, stage, k, p * k, loop, -(-weight_line // p), max(-(-gap // p) for gap in gaps))
