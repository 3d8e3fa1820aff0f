"""The training DFG: nodes F, G, D, U per layer, delays, pipelining with delayed gradients derived
by solving retiming constraints, Leiserson–Saxe retiming, and the iteration bound (LayerPipe §III).

A test oracle: the library states what it needs of this derivation in closed form (the weight versions
S − s + 1 of ``archsim pipeline`` and of :mod:`archsim.footprint`), without networkx or an integer
program; ``test_stash_depths.py`` and ``test_footprint.py`` check those against the DFG, and
``test_dfg.py`` checks the DFG against the paper's Fig. 2, brute force and networkx."""

from layerpipe_dfg.graph import INPUT, KINDS, LOSS, OUTPUT, Edge, Node, TrainingDFG, training_dfg
from layerpipe_dfg.loops import IterationBound, iteration_bound, loop_ratio
from layerpipe_dfg.pipelining import SLOTS_PER_MICROBATCH, LayerPipelining, PipelinedDFG, check_legal, pipeline
from layerpipe_dfg.retiming import Loop, changed_loops, is_legal, loop_delays, loops, potential, retime

__all__ = [
    "INPUT", "KINDS", "LOSS", "OUTPUT", "SLOTS_PER_MICROBATCH", "Edge", "IterationBound", "LayerPipelining", "Loop",
    "Node", "PipelinedDFG", "TrainingDFG", "changed_loops", "check_legal", "is_legal", "iteration_bound",
    "loop_delays", "loop_ratio", "loops", "pipeline", "potential", "retime", "training_dfg",
]
