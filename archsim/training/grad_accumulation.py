"""Gradient accumulation over micro-batches: fused into the weight-gradient GEMM, or a separate pass.

Megatron-LM since 2022 (``--gradient-accumulation-fusion``, apex's ``fused_weight_gradient_mlp_cuda``)
has each weight-gradient GEMM add into the held gradient buffer: no pass of its own. Megatron-LM of
2021 (the GPT-3 runs of Narayanan et al. 2021) and plain PyTorch do not: after every micro-batch's
backward but the first, autograd adds the new weight gradient into the held one, one add kernel per
parameter tensor, reading both and writing one (:func:`unfused_accumulate_bytes`: 6 bytes per fp16
parameter, 12 in fp32, 10 in bf16, whose held gradient Megatron-LM keeps in fp32).

A pass is priced as its bytes at the machine's memory-bound rate and nothing more: no kernel gap per
add kernel. The training fit's per-kernel gap (``launch_s``) and host time (``host_s``) are per op of
Megatron's op list, not hardware launch times, and since 2026-11-29 a fit's per-op overheads are paid as
often as Megatron's list has ops whatever list runs (docs/accuracy.md, "Hopper check";
:func:`archsim.training.iteration.recounted_op_seconds`). The accumulation's add kernels are extra
kernels of that kind, queued by autograd behind the weight gradients, so they pay no gap of their own.

A pipeline stage's profile has one weight-backward time for every micro-batch
(:class:`~archsim.policies.stage_profile.StageProfile`), so the m − 1 passes of a stage are spread
evenly over its m weight backwards, (m − 1)/m of a pass each: each rank's total is exact, and so is
a one-GPU iteration's time.
"""

from __future__ import annotations

from archsim.choices.devices import ELEMENT_BYTES
from archsim.console import setting
from archsim.devices.kernels import stream_seconds
from archsim.errors import InputError
from archsim.training.machine import Machine
from archsim.training.memory import gradient_bytes, stage_parameters
from archsim.training.parallel import Parallelism
from archsim.workload.transformer import TransformerConfig


def unfused_accumulate_bytes(machine: Machine) -> float:
    """Bytes per parameter of one accumulation add: the held gradient read and the sum written at the
    gradient buffer's width (:func:`~archsim.training.memory.gradient_bytes`: fp32 in bf16, Megatron-LM's
    ``main_grad.add_(grad)``), the new weight gradient read at the parameter's — 6 in fp16, 10 in bf16,
    12 in fp32. ``pytorch-eager`` adds three elements of the dtype: ``benchmarks/train_step.py`` trains fp16
    parameters (not ``torch.autocast``'s fp32 ones), whose ``.grad`` autograd sums in fp16 (6), and fp32 ones in
    fp32 (12)."""
    if machine.implementation == "pytorch-eager":
        return 3 * ELEMENT_BYTES[machine.dtype]
    return 2 * gradient_bytes(machine.dtype) + ELEMENT_BYTES[machine.dtype]


def accumulation(par: Parallelism, machine: Machine) -> str:
    """``fused`` or ``unfused``: ``par.grad_accumulation``, or when None the implementation's own —
    Megatron-LM's fused (today's default), plain PyTorch's unfused (it has no such fusion: ``fused``
    is refused there)."""
    eager = machine.implementation == "pytorch-eager"
    if par.grad_accumulation is None:
        return "unfused" if eager else "fused"
    if eager and par.grad_accumulation == "fused":
        raise InputError(f"plain PyTorch ({setting('implementation', 'pytorch-eager')}) has no gradient-accumulation "
                         f"fusion: {setting('grad-accumulation', 'unfused')} only", field="grad-accumulation")
    return par.grad_accumulation


def unfused_pass_seconds(c: TransformerConfig, par: Parallelism, machine: Machine, layers: int, first: bool,
                         last: bool, dense: int = 0) -> float:
    """Seconds of one unfused accumulation pass over a stage's parameters on one GPU: its bytes at the
    machine's memory-bound rate, no per-kernel gap (module docstring). 0 when fused (or with one
    micro-batch: nothing to add into); ``dense``: how many of the ``layers`` are a mixture's dense kind."""
    if accumulation(par, machine) == "fused" or par.microbatches == 1:
        return 0.0
    parameters = stage_parameters(c, par, layers, first, last, dense=dense)
    moved = parameters * unfused_accumulate_bytes(machine)
    return float(stream_seconds(moved, machine.gpu.hbm_bytes_per_s, machine.kernels.memory_bound, kernels=0))


def per_microbatch_seconds(c: TransformerConfig, par: Parallelism, machine: Machine, layers: int, first: bool,
                           last: bool, dense: int = 0) -> float:
    """The stage's accumulation seconds per micro-batch's weight backward: (m − 1)/m of one pass."""
    m = par.microbatches
    return unfused_pass_seconds(c, par, machine, layers, first, last, dense) * (m - 1) / m


__all__ = ["accumulation", "per_microbatch_seconds", "unfused_accumulate_bytes", "unfused_pass_seconds"]
