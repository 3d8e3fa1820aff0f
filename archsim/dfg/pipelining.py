"""Pipelining the training DFG with delayed gradients and retiming (LayerPipe §III-A, Fig. 2).

Given an assignment of consecutive layers to stages 1..S, archsim *derives* the pipelined DFG:

1. **Slot schedule.** One micro-batch enters the pipeline per slot. Each node gets the earliest
   slot σ consistent with the same-iteration (zero-delay) edges, where an edge advances one slot
   when it crosses a stage boundary or turns from the forward to the backward pass (the loss is
   the last stage's forward). These are the pipelining registers on the feed-forward cutsets and
   stage boundaries; U_l runs in G_l's slot.
2. **Delayed gradients (DLMS, Eq. 6).** The weight loop of layer l (F_l → … → G_l → U_l → F_l)
   must then hold k_l = σ(U_l) − σ(F_l) + 1 delays: the first forward that may read the update of
   iteration n runs k_l slots after F_l(n). One delay is the W register already in the loop;
   the other k_l − 1 are the DLMS delays inserted on G_l → U_l. LayerPipe counts the loop total
   k_l ("four delays and two delays for layers 1 and 2" in Fig. 2; in general 2(S − s + 1)).
3. **Retiming** r(v) = σ(v), except r(U_l) = σ(F_l), moves those delays to where Fig. 2(f) shows
   them: w_r(e) = w(e) + r(v) − r(u) is then ≥ 0 on every edge (legal), every loop keeps its delay
   sum, and the delays land between W and the backward pass (weight stashing) and between a and
   the backward pass (activation stashing).
4. **Stashes.** A processor runs one forward and one backward slot per micro-batch, so the k_l
   slots on the weight path U_l → D_l and the slots a^{l−1} waits between F_l and G_l are
   ⌈k_l / 2⌉ = S − s + 1 micro-batches: PipeDream's weight versions and in-flight activations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import networkx as nx

from archsim.dfg.graph import LOSS, Edge, TrainingDFG, training_dfg
from archsim.errors import InputError


@dataclass(frozen=True)
class LayerPipelining:
    layer: str
    stage: int
    loop_delays: int  # k_l: total delays the weight loop needs (LayerPipe's count)
    gradient_delays: int  # DLMS delays inserted on G_l → U_l (k_l − 1: the W register is the other)
    weight_versions: int  # weights a processor stashes (micro-batches in flight)
    activation_stash: int  # activations a^{l−1} stashed for G_l


@dataclass(frozen=True)
class PipelinedDFG:
    original: TrainingDFG
    inserted: TrainingDFG  # the original plus DLMS delays (before retiming)
    retimed: TrainingDFG
    slots: tuple[tuple[tuple[str, str], int], ...]
    retiming: tuple[tuple[tuple[str, str], int], ...]
    layers: tuple[LayerPipelining, ...]

    def layer(self, name: str) -> LayerPipelining:
        return next(item for item in self.layers if item.layer == name)


def _phase(node: tuple[str, str]) -> str:
    return "forward" if node[1] == "F" or node == LOSS else "backward"


def pipeline(layers: Sequence[str], stage_of: Mapping[str, int], *, first_layer_delta: bool = False) -> PipelinedDFG:
    """Derive the pipelined, retimed DFG for ``stage_of`` (consecutive layers, stages 1..S)."""
    dfg = training_dfg(layers, first_layer_delta=first_layer_delta)
    stages = [stage_of.get(name) for name in dfg.layers]
    if any(s is None for s in stages):
        raise InputError("every layer needs a stage", field="stage_of")
    if stages[0] != 1 or any(b - a not in (0, 1) for a, b in zip(stages, stages[1:])):
        raise InputError("stages must start at 1 and cover consecutive layers in order", field="stage_of")
    last = stages[-1]
    stage = {node: (last if node == LOSS else stage_of[node[0]]) for node in dfg.nodes}

    same_iteration = nx.DiGraph()
    same_iteration.add_nodes_from(dfg.nodes)
    for edge in dfg.edges:
        if edge.delays == 0:
            same_iteration.add_edge(edge.src, edge.dst)
    slot: dict[tuple[str, str], int] = {}
    for node in nx.topological_sort(same_iteration):
        slot[node] = 1
        for pred in same_iteration.predecessors(node):
            step = int(stage[pred] != stage[node] or (_phase(pred) == "forward" and _phase(node) == "backward"))
            slot[node] = max(slot[node], slot[pred] + step)
    for name in dfg.layers:  # U applies G's result in the same slot
        slot[(name, "U")] = slot[(name, "G")]

    loop = {name: slot[(name, "U")] - slot[(name, "F")] + 1 for name in dfg.layers}
    inserted_delays = {i: e.delays + loop[e.src[0]] - 1 for i, e in enumerate(dfg.edges)
                       if e.src[1] == "G" and e.dst[1] == "U"}
    inserted = dfg.with_delays(inserted_delays)
    retiming = dict(slot)
    for name in dfg.layers:
        retiming[(name, "U")] = slot[(name, "F")]
    retimed = TrainingDFG(inserted.layers, inserted.nodes,
                          tuple(Edge(e.src, e.dst, e.delays + retiming[e.dst] - retiming[e.src], e.tensor)
                                for e in inserted.edges), inserted.costs)
    info = []
    for name in dfg.layers:
        weight_path = next(e for e in retimed.edges if e.src == (name, "U") and e.dst[1] in ("D", "F")
                           and e.dst == ((name, "D") if (name, "D") in dfg.nodes else (name, "F")))
        weight_slots = weight_path.delays if weight_path.dst[1] == "D" else loop[name]
        activation_slots = slot[(name, "G")] - slot[(name, "F")] + 1
        info.append(LayerPipelining(name, stage_of[name], loop[name], loop[name] - 1, -(-weight_slots // 2),
                                    -(-activation_slots // 2)))
    return PipelinedDFG(dfg, inserted, retimed, tuple(slot.items()), tuple(retiming.items()), tuple(info))


def retime(dfg: TrainingDFG, r: Mapping[tuple[str, str], int]) -> TrainingDFG:
    """Leiserson–Saxe: w_r(u → v) = w(u → v) + r(v) − r(u)."""
    return TrainingDFG(dfg.layers, dfg.nodes, tuple(Edge(e.src, e.dst, e.delays + r.get(e.dst, 0) - r.get(e.src, 0),
                                                         e.tensor) for e in dfg.edges), dfg.costs)


def check_legal(before: TrainingDFG, after: TrainingDFG) -> list[str]:
    """Problems with ``after`` as a retiming of ``before``: negative delays, or a cycle whose delay
    sum changed (checked on every simple cycle; fine for the graphs tests build)."""
    problems = [f"{e.src}->{e.dst} has {e.delays} delays" for e in after.edges if e.delays < 0]
    if [(e.src, e.dst) for e in before.edges] != [(e.src, e.dst) for e in after.edges]:
        return problems + ["the two graphs have different edges"]
    graph = nx.MultiDiGraph()
    for index, e in enumerate(before.edges):
        graph.add_edge(e.src, e.dst, key=index)
    for cycle in nx.simple_cycles(nx.DiGraph(graph)):
        pairs = list(zip(cycle, cycle[1:] + cycle[:1]))
        total_before = sum(min(e.delays for e in before.edges if (e.src, e.dst) == p) for p in pairs)
        total_after = sum(min(e.delays for e in after.edges if (e.src, e.dst) == p) for p in pairs)
        if total_before != total_after:
            problems.append(f"cycle through {cycle[0]} had {total_before} delays, now {total_after}")
    return problems
