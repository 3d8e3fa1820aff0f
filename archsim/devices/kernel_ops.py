"""Training ops → seconds by the fp32 kernel model (:mod:`archsim.devices.kernels`), on a catalog GPU.

Why: fp32 training runs SIMT sgemm and plain PyTorch memory-bound kernels, the kernels NeuSight
measured on five GPUs and :mod:`archsim.devices.kernels` is fitted on. So an fp32 op list is timed by
that one model, with its fitted constants (:data:`~archsim.devices.kernels.FITTED`) and the GPU's
chip (:class:`~archsim.devices.catalog.GpuSpec`), never by the fp16 tensor-core efficiencies
(:mod:`archsim.devices.gpu_cost`, fitted on vTrain's fp16 A100 runs). Per op (one kernel each):

* each :class:`~archsim.lowering.Gemm` of the op: one (batched) GEMM kernel,
  :func:`~archsim.devices.kernels.gemm_seconds` (its tiles, waves, split-K, HBM roofline and launch);
* a forward softmax or layer norm (``op.kernel`` = ``("softmax" | "ln", rows, row)``):
  :func:`~archsim.devices.kernels.memory_bound_seconds` on that rows × row tensor;
* any other memory-bound op: its ``vector_elements`` at the element size, at the fitted achieved
  fraction of HBM bandwidth of its class — a backward softmax or layer norm at the softmax /
  layer-norm fraction, the rest at the elementwise one — plus one launch. (NeuSight measured the
  forward kernels only; a backward kernel is a read-and-write stream like them.)

A fused op (FlashAttention) has no fp32 kernel (FlashAttention runs fp16/bf16 only): refused.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from archsim.devices.catalog import GpuSpec
from archsim.devices.kernels import FITTED, KernelConstants, element_bytes, gemm_seconds, memory_bound_seconds
from archsim.errors import InputError
from archsim.lowering import TrainingOp

KERNEL_CLASSES = ("softmax", "ln")  # the memory-bound kernels an op may name (``TrainingOp.kernel``)


def op_kernel_seconds(ops: Sequence[TrainingOp], chip: GpuSpec, dtype: str = "fp32",
                      constants: KernelConstants = FITTED) -> np.ndarray:
    """Seconds of each op on ``chip`` by the kernel model (module docstring): GEMM kernels plus its
    memory-bound kernel, each with its launch. Units: elements in, seconds out."""
    size = element_bytes(dtype)
    fraction = {"softmax": constants.softmax, "ln": constants.layernorm, "": constants.memory}
    seconds = np.zeros(len(ops))
    for i, op in enumerate(ops):
        if op.fused:
            raise InputError(f"{op.layer}: a fused attention kernel has no {dtype} kernel time (FlashAttention runs "
                             "fp16/bf16); use --attention standard", field="attention")
        if op.gemms:
            b, m, n, k = np.array([(g.count, g.m, g.n, g.k) for g in op.gemms], dtype=np.float64).T
            seconds[i] += float(gemm_seconds(b, m, n, k, chip, constants, dtype).sum())
        name = op.kernel[0] if op.kernel else ""
        if name and name not in KERNEL_CLASSES:
            raise InputError(f"{op.layer}: unknown kernel {name!r}; known: {', '.join(KERNEL_CLASSES)}", field="op")
        if op.kernel and op.kind == "F":
            _, rows, row = op.kernel
            seconds[i] += float(memory_bound_seconds(name, rows, row, chip, constants, dtype))
        elif op.vector_elements > 0:
            seconds[i] += stream_seconds(op.vector_elements * size, chip, fraction[name], constants=constants)
    return seconds


def stream_seconds(nbytes: float, chip: GpuSpec, fraction: float | None = None, kernels: int = 1,
                   constants: KernelConstants = FITTED) -> float:
    """Seconds of ``kernels`` memory-bound kernels moving ``nbytes`` in all, at ``fraction`` of HBM
    bandwidth (default the fitted elementwise one), plus their launches."""
    achieved = constants.memory if fraction is None else fraction
    return nbytes / (chip.memory_bytes_per_s * achieved) + kernels * constants.launch_s


__all__ = ["KERNEL_CLASSES", "op_kernel_seconds", "stream_seconds"]
