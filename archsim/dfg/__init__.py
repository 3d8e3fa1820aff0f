"""The training DFG: nodes F, G, D, U per layer, delays, pipelining with delayed gradients derived
by solving retiming constraints, Leiserson–Saxe retiming, and the iteration bound (LayerPipe §III).

``archsim pipeline --dfg FILE`` and :func:`archsim.api.pipeline_dfg` write it for a plan
(:mod:`archsim.dfg.of_plan`, :mod:`archsim.dfg.document`). The library's closed forms of what it
derives (the weight versions S − s + 1 of ``archsim pipeline`` and :mod:`archsim.footprint`) do not
call it: the tests check the two derivations agree. networkx and scipy load only when a function
that needs them runs."""

from archsim.dfg.graph import INPUT, KINDS, LOSS, OUTPUT, Edge, Node, TrainingDFG, training_dfg
from archsim.dfg.loops import IterationBound, iteration_bound, loop_ratio
from archsim.dfg.pipelining import SLOTS_PER_MICROBATCH, LayerPipelining, PipelinedDFG, check_legal, pipeline
from archsim.dfg.retiming import Loop, changed_loops, is_legal, loop_delays, loops, potential, retime

__all__ = [
    "INPUT", "KINDS", "LOSS", "OUTPUT", "SLOTS_PER_MICROBATCH", "Edge", "IterationBound", "LayerPipelining", "Loop",
    "Node", "PipelinedDFG", "TrainingDFG", "changed_loops", "check_legal", "is_legal", "iteration_bound",
    "loop_delays", "loop_ratio", "loops", "pipeline", "potential", "retime", "training_dfg",
]
