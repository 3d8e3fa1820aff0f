"""A plan's communication per training iteration of M micro-batches, from its bytes per micro-batch.

A :class:`~archsim.partition.result.Partition` built from a profile at micro-batch size b counts the bytes one
micro-batch moves: its mandatory bytes (activations forward, δ back at each stage boundary) and LayerPipe's
additional bytes (what a borrowed δ or split piece receives and sends). An iteration of M micro-batches of b
samples moves the per-sample parts M times — activations, δ results, partial sums, a non-GEMM δ's saved
tensors — but the weights a borrowing processor receives only once: they change at the iteration's update,
not between its micro-batches. So the iteration moves M × mandatory, and weights + M × (additional − weights).
"""

from __future__ import annotations

from dataclasses import dataclass

from archsim.partition import coster
from archsim.partition.profile import LayerProfile
from archsim.partition.result import Partition


@dataclass(frozen=True)
class IterationBytes:
    """A plan's bytes over one iteration of ``microbatches`` micro-batches: ``mandatory_bytes`` (M × one
    micro-batch's) and ``additional_bytes`` (``weight_bytes`` once, plus M × the rest of one micro-batch's)."""

    microbatches: int
    mandatory_bytes: int
    additional_bytes: int
    weight_bytes: int


def borrowed_weight_bytes(profile: LayerProfile, plan: Partition) -> int:
    """Bytes of weights among ``plan``'s additional bytes: each borrowed δ's (or split piece's) weight slice
    (:func:`~archsim.partition.coster.op_weight_bytes`), as the plan's ``extra_bytes`` count them. 0 for a
    plan that borrows nothing, or a profile without shapes."""
    if not profile.lowered:
        return 0
    index = {name: k for k, name in enumerate(profile.names)}
    return sum(coster.op_weight_bytes(profile, index[op.layer], op.kind, op.split_axis, op.split_part)
               for stage in plan.stages for op in stage.ops if op.borrowed)


def iteration_bytes(profile: LayerProfile, plan: Partition, microbatches: int) -> IterationBytes:
    """``plan``'s bytes per iteration of ``microbatches`` micro-batches, ``plan`` and ``profile`` being one
    micro-batch's (the profile at batch / M): weights once, everything else M times (module docstring)."""
    weights = borrowed_weight_bytes(profile, plan)
    return IterationBytes(microbatches, microbatches * plan.mandatory_bytes,
                          weights + microbatches * (plan.additional_bytes - weights), weights)


__all__ = ["IterationBytes", "borrowed_weight_bytes", "iteration_bytes"]
