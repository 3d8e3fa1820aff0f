"""The training DFG: nodes F, G, D, U per layer, delays, pipelining with delayed gradients,
retiming, and the iteration bound (LayerPipe §III)."""

from archsim.dfg.graph import LOSS, Edge, TrainingDFG, training_dfg
from archsim.dfg.loops import IterationBound, iteration_bound, loop_ratio
from archsim.dfg.pipelining import LayerPipelining, PipelinedDFG, check_legal, pipeline, retime

__all__ = ["LOSS", "Edge", "IterationBound", "LayerPipelining", "PipelinedDFG", "TrainingDFG", "check_legal",
           "iteration_bound", "loop_ratio", "pipeline", "retime", "training_dfg"]
