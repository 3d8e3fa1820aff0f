"""A plan's pipelined, retimed training DFG: the derivation of :func:`~archsim.dfg.pipelining.pipeline`
run on the layers a :class:`~archsim.partition.result.Partition` gives each processor, with the
profile's costs on the nodes, and the iteration bound of the result.

Why a stage is a processor holding layers: the DFG has F, G, D and U per layer (LayerPipe §III-A),
each run by its layer's stage. LayerPipe's Algorithm 1 may move part or all of a layer's δ (D) to a
later processor (borrowed; δ′/δ″ where it is split); the DFG keeps D with its layer and says which
processors run its parts (``delta_processors``). A processor that runs only borrowed δ parts holds
no layer and is no stage of the DFG (``borrowed_only``): the closed form of ``archsim pipeline``'s
weight versions counts it as a stage, the DFG does not, so each processor before it gets one version more
from the table. Two meanings, both kept. The DFG's ``stage_weight_versions`` counts the dependences: a
borrowed δ part run elsewhere crosses as many pipeline boundaries as δ on its lender does (δ of layer l+1 →
the part → layer l−1's G and δ), one more only where layer l−1 shares the lender's processor, so with each
δ in its lender's stage the count holds wherever that is not so — both shipped cases (VGG16's conv4_3 alone on
p10 of 12, its δ′ on p11; paper mode's δ of conv1 on layerpipe_sample at 4 on 128×128, which feeds nothing).
The table's counts the window of the 1F1B schedule archsim simulates, which gives the borrower a stage of
its own (``--memory``: 4 micro-batches in flight on layerpipe_sample's p1): the memory that schedule needs.
"""

from __future__ import annotations

from dataclasses import dataclass

from archsim.dfg.graph import KINDS, Node, training_dfg
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
    borrowed_only: tuple[int, ...]  # processors running only borrowed δ parts: no stage of the DFG
    bound: IterationBound

    @property
    def stages(self) -> int:
        return len(self.processor_of_stage)

    def stage_weight_versions(self) -> tuple[int, ...]:
        """Per DFG stage, the weight versions its processor holds: the most any of its layers holds
        (a first layer without δ holds 1, LayerPipe's exact mode: nothing reads its W after F)."""
        most = [0] * self.stages
        for item in self.pipelined.layers:
            most[item.stage - 1] = max(most[item.stage - 1], item.weight_versions)
        return tuple(most)

    def processor(self, node: Node) -> int | None:
        """The processor that runs ``node`` by the DFG's places (its layer's; INPUT the first stage's,
        the loss and OUTPUT the last layer's); None for none of these."""
        stage = dict(self.pipelined.stage_of)
        if node.layer:
            return self.processor_of_stage[stage[node.layer] - 1]
        last = [e.src.layer for e in self.pipelined.original.edges if e.dst.kind == "loss" and e.src.layer]
        return self.processor_of_stage[0 if node.kind == "input" else max(stage[name] for name in last) - 1]


def plan_dfg(plan, profile) -> PlanDFG:
    """The pipelined, retimed training DFG of ``plan`` (a Partition) over ``profile`` (its LayerProfile):
    the profile's layers and edges, each layer in the stage of the processor that holds it, node costs
    F, G and D from the profile (U, the loss and the host nodes cost 0: archsim does not price them)."""
    names = tuple(profile.names)
    homes = [stage for stage in plan.stages if stage.layers]
    number = {stage.index: s for s, stage in enumerate(homes, start=1)}
    stage_of = {name: number[stage.index] for stage in homes for name in stage.layers}
    missing = [name for name in names if name not in stage_of]
    if missing:
        raise InputError(f"the plan places no stage for layer {missing[0]!r}", field="plan")
    inputs = {name: tuple(names[j] for j in profile.producers(i)) for i, name in enumerate(names)}
    sources = [i for i, name in enumerate(names) if not inputs[name]]
    first_delta = any(float(profile.delta[i]) > 0 for i in sources)  # paper mode prices the first layer's δ
    columns = {"F": profile.forward, "G": profile.weight_grad, "D": profile.delta}
    costs: dict[Node | tuple[str, str], float] = {(name, kind): float(columns[kind][i]) for i, name in enumerate(names) for kind in KINDS
             if kind in columns and (kind != "D" or i not in sources or first_delta)}
    dfg = training_dfg(names, costs, inputs=inputs, first_layer_delta=first_delta)
    pipelined = pipeline(dfg, stage_of)
    runs: dict[str, set[int]] = {}
    for stage in plan.stages:
        for op in stage.ops:
            if op.kind in DELTA_KINDS:
                runs.setdefault(op.layer, set()).add(stage.index + 1)
    borrowed_only = tuple(stage.index + 1 for stage in plan.stages if not stage.layers and stage.ops)
    return PlanDFG(pipelined, profile.unit, tuple(stage.index + 1 for stage in homes),
                   tuple((name, tuple(sorted(runs[name]))) for name in names if name in runs), borrowed_only,
                   iteration_bound(pipelined.retimed))


__all__ = ["DELTA_KINDS", "PlanDFG", "plan_dfg"]
