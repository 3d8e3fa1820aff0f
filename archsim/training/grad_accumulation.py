"""Gradient accumulation over micro-batches: fused into the weight-gradient GEMM, or a separate pass.

Megatron-LM since 2022 (``--gradient-accumulation-fusion``, apex's ``fused_weight_gradient_mlp_cuda``)
has each weight-gradient GEMM add into the held gradient buffer: no pass of its own. Megatron-LM of
2021 (the GPT-3 runs of Narayanan et al. 2021) and plain PyTorch do not: after every micro-batch's
backward but the first, autograd adds the new weight gradient into the held one, one add kernel per
parameter tensor, reading both and writing one (6 bytes per fp16 parameter, 12 in fp32).

A pipeline stage's profile has one weight-backward time for every micro-batch
(:class:`~archsim.policies.stage_profile.StageProfile`), so the m − 1 passes of a stage are spread
evenly over its m weight backwards, (m − 1)/m of a pass each: each rank's total is exact, and so is
a one-GPU iteration's time.
"""

from __future__ import annotations

from archsim.devices.kernels import stream_seconds
from archsim.errors import InputError
from archsim.training.eager_ops import GPT_LAYER_TENSORS
from archsim.training.machine import Machine
from archsim.training.memory import stage_parameters
from archsim.training.parallel import Parallelism
from archsim.workload.transformer import TransformerConfig, layer_widths

# after a micro-batch's backward: the held and the new gradient read, the sum written (fp16 bytes)
UNFUSED_ACCUMULATE_BYTES_PER_PARAMETER = 6


def accumulation(par: Parallelism, machine: Machine) -> str:
    """``fused`` or ``unfused``: ``par.grad_accumulation``, or when None the implementation's own —
    Megatron-LM's fused (today's default), plain PyTorch's unfused (it has no such fusion: ``fused``
    is refused there)."""
    eager = machine.implementation == "pytorch-eager"
    if par.grad_accumulation is None:
        return "unfused" if eager else "fused"
    if eager and par.grad_accumulation == "fused":
        raise InputError("plain PyTorch (--implementation pytorch-eager) has no gradient-accumulation fusion: "
                         "--grad-accumulation unfused only", field="grad-accumulation")
    return par.grad_accumulation


def stage_tensors(c: TransformerConfig, layers: int, first: bool, last: bool, head_copy: bool) -> int:
    """Parameter tensors of a stage as the memory model holds them (:func:`~archsim.training.memory.stage_parameters`),
    one add kernel each: per layer the weights and biases of 2 norms and 4 linears (12), or with a gated
    FFN (Llama) 2 norms' γ and 5 weights (7); the token table and the learned positions on the first
    stage; the final norm's γ and β and the LM head's copy of the token table (``head_copy``) on the last."""
    count = (7 if layer_widths(c).gated else GPT_LAYER_TENSORS) * layers
    if first:
        count += 1 + (c.positions > 0)
    if last:
        count += 2 + head_copy
    return count


def unfused_pass_seconds(c: TransformerConfig, par: Parallelism, machine: Machine, layers: int, first: bool,
                         last: bool) -> float:
    """Seconds of one unfused accumulation pass over a stage's parameters on one GPU: its bytes at the
    machine's memory-bound rate, a kernel per tensor. 0 when fused (or with one micro-batch: nothing
    to add into)."""
    if accumulation(par, machine) == "fused" or par.microbatches == 1:
        return 0.0
    head_copy = par.pp > 1 or not c.tied_embeddings
    parameters = stage_parameters(c, par, layers, first, last)
    moved = parameters * UNFUSED_ACCUMULATE_BYTES_PER_PARAMETER * machine.scale
    kernels = stage_tensors(c, layers, first, last, head_copy)
    return float(stream_seconds(moved, machine.gpu.hbm_bytes_per_s, machine.kernels.memory_bound, kernels=kernels))


def per_microbatch_seconds(c: TransformerConfig, par: Parallelism, machine: Machine, layers: int, first: bool,
                           last: bool) -> float:
    """The stage's accumulation seconds per micro-batch's weight backward: (m − 1)/m of one pass."""
    m = par.microbatches
    return unfused_pass_seconds(c, par, machine, layers, first, last) * (m - 1) / m


__all__ = ["UNFUSED_ACCUMULATE_BYTES_PER_PARAMETER", "accumulation", "per_microbatch_seconds", "stage_tensors",
           "unfused_pass_seconds"]
