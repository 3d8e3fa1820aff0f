"""A pass's GPU time split by op class, and a probe's measured GEMMs matched to the same GEMMs.

Why: to find *where* a GPU is mispredicted, an iteration's error is broken down into archsim's
GEMM time (tile/wave compute or the HBM roofline), memory-bound time (bytes at HBM bandwidth ×
``efficiency.memory``) and launch time (``efficiency.launch_s`` per kernel), and each class is set
beside what a microbenchmark measured for the same work (``benchmarks/bench_hopper_breakdown.py``).
Nothing here fits a constant: it only reads :func:`archsim.devices.kernel_ops.op_seconds`'s terms apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from archsim.devices.device import Device
from archsim.devices.kernel_constants import KernelConstants
from archsim.devices.kernel_ops import device_gemm_seconds, op_parts
from archsim.lowering import TrainingOp
from archsim.training.calibrate import ProbeRow
from archsim.training.compute_classes import ClassSeconds, summed_classes


def class_seconds(ops: Sequence[TrainingOp], device: Device, efficiency: KernelConstants,
                  precision: str = "fp16") -> ClassSeconds:
    """``ops``' GPU time split into GEMM, memory-bound and launch seconds: the sums over ops of
    :func:`~archsim.devices.kernel_ops.op_parts` (``op_seconds``' own terms) at ``efficiency``, one
    ``efficiency.launch_s`` per kernel."""
    return summed_classes(op_parts(ops, device, efficiency, precision), efficiency.launch_s)


@dataclass(frozen=True)
class GemmMatch:
    """archsim's GEMM seconds (launch excluded) and a probe's measured seconds, summed over the GEMMs of
    an op list whose (m, k, n, count) a probe row has; ``unmatched``: GEMMs no probe row has."""

    predicted: float
    measured: float
    matched: int
    unmatched: int


def match_probe_gemms(ops: Sequence[TrainingOp], rows: Sequence[ProbeRow], device: Device,
                      efficiency: KernelConstants, precision: str = "fp16") -> GemmMatch:
    """Sum archsim's and the probe's seconds over the GEMMs of ``ops`` a probe row times (same shape)."""
    measured_by_shape: dict[tuple[int, int, int, int], list[float]] = {}
    for r in rows:
        if r.section == "gemm":
            measured_by_shape.setdefault((r.m, r.k, r.n, r.count), []).append(r.seconds)
    no_launch = replace(efficiency, launch_s=0.0)
    predicted = measured = 0.0
    matched = unmatched = 0
    for op in ops:
        for g in op.gemms:
            times = measured_by_shape.get((g.m, g.k, g.n, g.count))
            if times is None:
                unmatched += 1
                continue
            matched += 1
            measured += float(np.median(times))
            predicted += float(device_gemm_seconds(g.m, g.k, g.n, g.count, device, no_launch, precision))
    return GemmMatch(predicted, measured, matched, unmatched)


def achieved_fraction(rows: Sequence[ProbeRow], hbm_bytes_per_s: float) -> dict[str, float]:
    """Median fraction of HBM bandwidth each probe memory kernel kind reached (bytes / seconds / peak),
    keyed by the row name without its pass suffix and size (``softmax.D`` → ``softmax.D``)."""
    kinds: dict[str, list[float]] = {}
    for r in rows:
        if r.section == "memory" and r.bytes > 0:
            kinds.setdefault(r.name, []).append(r.bytes / r.seconds / hbm_bytes_per_s)
    return {name: float(np.median(v)) for name, v in sorted(kinds.items())}


def memory_at_fractions(ops: Sequence[TrainingOp], fractions: dict[str, float], kinds: dict[str, str],
                        hbm_bytes_per_s: float, element_bytes: int = 2) -> tuple[float, float]:
    """(seconds, bytes) of the memory-bound ops of ``ops`` that ``kinds`` maps (op layer name → a
    kernel kind) to a kind whose fraction ``fractions`` has, each at ``fractions[kind + "." + pass]``
    of ``hbm_bytes_per_s`` (pass F for forward ops, D otherwise; F where only F was measured)."""
    seconds = moved = 0.0
    for op in ops:
        kind = kinds.get(op.layer)
        if kind is None or op.vector_elements <= 0 or op.fused:
            continue
        fraction = fractions.get(f"{kind}.{'F' if op.kind == 'F' else 'D'}", fractions.get(f"{kind}.F"))
        if fraction is None:
            continue
        size = op.vector_elements * element_bytes
        seconds += size / (hbm_bytes_per_s * fraction)
        moved += size
    return seconds, moved


__all__ = ["GemmMatch", "achieved_fraction", "class_seconds", "match_probe_gemms",
           "memory_at_fractions"]
