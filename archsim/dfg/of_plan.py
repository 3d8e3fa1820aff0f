"""A plan's pipelined, retimed training DFG: the derivation of :func:`~archsim.dfg.pipelining.pipeline`
run on the layers a :class:`~archsim.partition.result.Partition` gives each processor, with the
profile's costs on the nodes, and the iteration bound of the result.

Why a stage is a busy processor: the DFG has F, G, D and U per layer (LayerPipe §III-A), each run by its
layer's stage. LayerPipe's Algorithm 1 may move part or all of a layer's δ (D) to a later processor
(borrowed; δ′/δ″ where it is split). Such a δ gets one node per part (D1, D2, or a whole D run away), each
on the processor that runs it, with every edge D had (:func:`~archsim.dfg.graph.with_delta_parts`): δˡ in, W
in, its share of δ^{l−1} out. A processor that runs only borrowed δ parts (``borrowed_only``) is a stage of
the DFG holding no layer. Where layer l−1 sits on the lender, the part's result crosses back to it, one
boundary more on the loops through it, and the derivation prices that.

Weight versions. A layer's ``weight_versions`` is its delay line U → (F, D and its parts) in micro-batches:
the versions its lender stashes. A borrowed-only stage holds 1: each part of micro-batch m reads m's version
while it runs, the line's one delay at the boundary into it (the rest stays in the lender's stash). These are
the counts the dependences need (``stage_weight_versions_needed``). The 1F1B window archsim simulates counts
every busy processor as a stage, so on a processor before a borrowed-only one whose part adds no boundary
(both shipped cases: VGG16's conv4_3 alone on p10 of 12, its δ′ on p11; paper mode's δ of conv1 on
layerpipe_sample at 4 on 128×128, which feeds nothing) the schedule holds one version more than needed:
``archsim pipeline``'s ``weight_versions`` (and ``--memory``'s) state what the schedule holds, a different
name for a different count.
"""

from __future__ import annotations

from dataclasses import dataclass

from archsim.dfg.graph import KINDS, Node, training_dfg, with_delta_parts
from archsim.dfg.loops import IterationBound, iteration_bound
from archsim.dfg.pipelining import PipelinedDFG, pipeline
from archsim.errors import InputError

DELTA_KINDS = ("D", "D1", "D2")  # a plan's δ ops: whole, or its two parts δ′/δ″


@dataclass(frozen=True)
class PlanDFG:
    """The derivation for one plan. Costs (and the bound) are in ``unit`` (cycles or seconds); the
    bound is per slot of the retimed DFG, :data:`~archsim.dfg.pipelining.SLOTS_PER_MICROBATCH` slots per micro-batch."""

    pipelined: PipelinedDFG
    unit: str
    processor_of_stage: tuple[int, ...]  # DFG stage s runs on processor processor_of_stage[s − 1] (1-based)
    delta_processors: tuple[tuple[str, tuple[int, ...]], ...]  # per layer with a δ: processors running its parts
    borrowed_only: tuple[int, ...]  # processors running only borrowed δ parts: DFG stages holding no layer
    bound: IterationBound

    def __repr__(self) -> str:
        """One line, not every node and edge of the derivation (a notebook shows a cell's value by its repr, and the
        dataclass's ran to 16,000 characters on a 4-layer network): ``.pipelined`` and ``.bound`` hold them."""
        return (f"PlanDFG({len(self.pipelined.layers)} layers on {self.stages} stages, weight versions "
                f"{self.stage_weight_versions_needed()}, iteration bound {self.bound.bound:g} {self.unit} per slot "
                f"over a loop of {self.bound.delays} delays)")

    @property
    def stages(self) -> int:
        return len(self.processor_of_stage)

    def stage_weight_versions_needed(self) -> tuple[int, ...]:
        """Per DFG stage, the weight versions the dependences need its processor to hold: the most any of
        its layers holds (a first layer without δ holds 1, LayerPipe's exact mode: nothing reads its W after
        F); 1 on a stage of borrowed δ parts only (the version its running part reads)."""
        holding = {item.stage for item in self.pipelined.layers}
        most = [0 if s in holding else 1 for s in range(1, self.stages + 1)]
        for item in self.pipelined.layers:
            most[item.stage - 1] = max(most[item.stage - 1], item.weight_versions)
        return tuple(most)

    def processor(self, node: Node) -> int | None:
        """The processor that runs ``node`` by the DFG's places (its own for a borrowed δ part, else its
        layer's; INPUT the first stage's, the loss and OUTPUT the last layer's); None for none of these."""
        stage = self.pipelined.stage_of_node(node)
        if stage is not None:
            return self.processor_of_stage[stage - 1]
        layer_stage = dict(self.pipelined.stage_of)
        last = [e.src.layer for e in self.pipelined.original.edges if e.dst.kind == "loss" and e.src.layer]
        return self.processor_of_stage[0 if node.kind == "input" else max(layer_stage[name] for name in last) - 1]


def plan_dfg(plan, profile) -> PlanDFG:
    """The pipelined, retimed training DFG of ``plan`` (a Partition) over ``profile`` (its LayerProfile):
    the profile's layers and edges, each layer in the stage of the processor that holds it and each δ split
    or run away in parts on the processors that run them, node costs F, G and D from the profile, a part's
    from the plan (U, the loss and the host nodes cost 0: archsim does not price them)."""
    names = tuple(profile.names)
    busy = [stage for stage in plan.stages if stage.layers or stage.ops]
    number = {stage.index: s for s, stage in enumerate(busy, start=1)}
    stage_of = {name: number[stage.index] for stage in busy for name in stage.layers}
    missing = [name for name in names if name not in stage_of]
    if missing:
        raise InputError(f"the plan places no stage for layer {missing[0]!r}", field="plan")
    inputs = {name: tuple(names[j] for j in profile.producers(i)) for i, name in enumerate(names)}
    sources = [i for i, name in enumerate(names) if not inputs[name]]
    first_delta = any(float(profile.delta[i]) > 0 for i in sources)  # paper mode prices the first layer's δ
    columns = {"F": profile.forward, "G": profile.weight_grad, "D": profile.delta}
    costs: dict[Node | tuple[str, str], float] = {(name, kind): float(columns[kind][i]) for i, name in enumerate(names) for kind in KINDS
             if kind in columns and (kind != "D" or i not in sources or first_delta)}
    deltas: dict[str, list[tuple[str, int, float]]] = {}  # layer → its δ ops: (kind, DFG stage, cost)
    for stage in plan.stages:
        for op in stage.ops:
            if op.kind in DELTA_KINDS:
                deltas.setdefault(op.layer, []).append((op.kind, number[stage.index], float(op.cost)))
    apart = {name: ops for name, ops in deltas.items() if [(k, s) for k, s, _ in ops] != [("D", stage_of[name])]}
    dfg = training_dfg(names, inputs=inputs, first_layer_delta=first_delta)
    dfg = with_delta_parts(dfg, {name: [kind for kind, _, _ in ops] for name, ops in apart.items()})
    for name, ops in apart.items():
        del costs[(name, "D")]
        costs.update({(name, kind): cost for kind, _, cost in ops})
    placed = {Node(name, kind): s for name, ops in apart.items() for kind, s, _ in ops}
    pipelined = pipeline(dfg.with_costs(costs), stage_of, placed=placed)
    borrowed_only = tuple(stage.index + 1 for stage in plan.stages if not stage.layers and stage.ops)
    return PlanDFG(pipelined, profile.unit, tuple(stage.index + 1 for stage in busy),
                   tuple((name, tuple(sorted({s.index + 1 for s in plan.stages for op in s.ops
                                              if op.layer == name and op.kind in DELTA_KINDS})))
                         for name in names if name in deltas), borrowed_only,
                   iteration_bound(pipelined.retimed))


__all__ = ["DELTA_KINDS", "PlanDFG", "plan_dfg"]
