"""Training ops → seconds on a GPU: the GPU's cost source, behind the array model's interface.

:func:`op_seconds` takes the same :class:`~archsim.lowering.TrainingOp` list as
:func:`archsim.array.costing.op_cycles` and returns each op's time, so anything that costs ops on an
array can cost them on a GPU. Two kinds of work:

* **GEMMs on tensor cores, tile- and wave-quantized.** A GEMM out[m×n] = A[m×k]·B[k×n] (``count``
  of them in one batched launch) is cut into output tiles of tm × tn, as cuBLAS/CUTLASS kernels do;
  one SM computes one tile at a time, so the tiles run in ⌈tiles / SMs⌉ waves of 2·tm·tn·k FLOPs
  each at the SM's share of the dense tensor peak × ``efficiency.gemm`` × the tile's own efficiency
  (:func:`tile_efficiency`: a tile's k-steps load (tm + tn) operands for tm·tn MACs from L2, so small
  tiles are bound by the GPU's L2 bandwidth per SM). The tile is the one of
  :data:`TILES` that finishes first (a library's heuristic picks well on regular shapes). A GEMM
  also moves A, B and out through HBM once: its time is the larger of the two (a roofline per GEMM).
  A *fused* op (FlashAttention) keeps its GEMMs' operands and results on chip: the larger of its
  GEMMs' compute and the HBM traffic it counts in ``vector_elements``, one launch.
* **Memory-bound ops** (norms, softmax, GeLU, dropout, residual adds, the optimizer step, the
  embedding lookup): their ``vector_elements`` count the elements they read and write in HBM, at
  ``element_bytes`` each, moved at HBM bandwidth × ``efficiency.memory``.

* **GEMMs on a device's systolic arrays** (a device whose ``gemm`` is ``arrays``: an accelerator's
  device file, :mod:`archsim.devices.device`): each GEMM's folds, costed exactly as SCALE-Sim costs
  them on one array (:func:`archsim.array.analytic.gemm_cost`), are dealt to the device's arrays in
  ⌈folds · count / arrays⌉ waves of one fold's cycles each at the arrays' clock, ÷ ``efficiency.gemm``;
  the same HBM roofline per GEMM applies (:func:`array_gemm_seconds`).

Every op pays ``efficiency.kernel_s`` per kernel it launches (the gap between kernels on the GPU).
``efficiency.host_s`` is the host's time to issue one op; the iteration model takes, per pass, the
larger of the GPU's time and the host's (the host runs ahead of the GPU asynchronously).

The four efficiencies are the model's only fitted constants on the GPU side (see
:mod:`archsim.training.fitted` for their values and how they were fitted).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from archsim.array.analytic import gemm_cost
from archsim.array.costing import flatten_gemms
from archsim.errors import InputError
from archsim.lowering import TrainingOp

if TYPE_CHECKING:
    from archsim.devices.device import Device

# CTA output tiles (rows × cols) of cuBLAS/CUTLASS fp16 tensor-core GEMMs on Volta–Hopper.
TILES = ((256, 128), (128, 256), (128, 128), (256, 64), (64, 256), (128, 64), (64, 128), (64, 64))


@dataclass(frozen=True)
class Efficiency:
    """gemm: fraction of the dense tensor peak a full wave of tiles reaches; memory: fraction of HBM
    bandwidth memory-bound kernels reach; kernel_s: seconds of overhead per kernel launch on the GPU;
    host_s: seconds the host (Python, PyTorch's dispatcher) spends issuing one op — when a pass's ops
    are issued slower than the GPU runs them, the GPU waits (see :mod:`archsim.training.iteration`)."""

    gemm: float
    memory: float
    kernel_s: float
    host_s: float = 0.0

    def __post_init__(self) -> None:
        if not (0 < self.gemm <= 1 and 0 < self.memory <= 1 and 0 <= self.kernel_s < 1 and 0 <= self.host_s < 1):
            raise InputError(f"efficiencies must be in (0, 1] and kernel overhead in [0, 1) s, got {self}",
                             field="efficiency")


def tile_efficiency(tm: int, tn: int, device: Device, precision: str = "fp16", element_bytes: int = 2) -> float:
    """Fraction of an SM's tensor rate a tm × tn tile can sustain when its operands stream from L2:
    min(1, L2 bytes per clock per SM × tm·tn / ((tm + tn) · element bytes) / MACs per clock per SM)."""
    if not device.l2_bytes_per_clock:
        return 1.0
    macs_per_clock = device.peak(precision) / (2 * device.clock_hz * device.sms)
    fed = device.l2_bytes_per_clock / device.sms * tm * tn / ((tm + tn) * element_bytes)
    return min(1.0, fed / macs_per_clock)


def gemm_seconds(m, k, n, count, device: Device, efficiency: Efficiency, precision: str = "fp16",
                 element_bytes: int = 2) -> np.ndarray:
    """Seconds of each batched GEMM (arrays broadcast): tile/wave-quantized compute vs HBM traffic,
    plus one kernel overhead. Units: elements in, seconds out."""
    m, k, n, count = (np.asarray(x, dtype=np.float64) for x in (m, k, n, count))
    traffic = (m * k + k * n + m * n) * count * element_bytes / (device.hbm_bytes_per_s * efficiency.memory)
    return np.maximum(tile_seconds(m, k, n, count, device, efficiency, precision, element_bytes),
                      traffic) + efficiency.kernel_s


def tile_seconds(m, k, n, count, device: Device, efficiency: Efficiency, precision: str = "fp16",
                 element_bytes: int = 2) -> np.ndarray:
    """Seconds of each batched GEMM's tensor-core compute alone (tile/wave-quantized: no HBM roofline,
    no launch), the part a fused kernel overlaps with its own traffic."""
    m, k, n, count = (np.asarray(x, dtype=np.float64) for x in (m, k, n, count))
    per_sm = device.peak(precision) * efficiency.gemm / device.sms  # FLOP/s of one SM
    best = np.full(np.broadcast(m, k, n, count).shape, np.inf)
    for tm, tn in TILES:
        tiles = np.ceil(m / tm) * np.ceil(n / tn) * count
        waves = np.ceil(tiles / device.sms)
        rate = per_sm * tile_efficiency(tm, tn, device, precision, element_bytes)
        best = np.minimum(best, waves * 2.0 * tm * tn * k / rate)
    return best


def array_gemm_seconds(m, k, n, count, device: Device, efficiency: Efficiency, element_bytes: int = 2,
                       dtype: str = "fp16") -> np.ndarray:
    """Seconds of each batched GEMM on a device's arrays (the lanes for fp32 where it has them):
    the ``count`` GEMMs' folds dealt in waves over the arrays, each wave one fold's SCALE-Sim cycles
    (folds of one GEMM all cost the same), vs its HBM traffic, plus one kernel overhead."""
    units = device.gemm_units(dtype)
    m, k, n, count = (np.asarray(x, dtype=np.int64) for x in (m, k, n, count))
    whole = gemm_cost(m, k, n, units.rows, units.cols, units.dataflow)
    per_fold = (whole.cycles + 1) // whole.folds  # SCALE-Sim's cycles are the last cycle's index
    waves = -(-(whole.folds * count) // units.count)
    compute = (waves * per_fold).astype(np.float64) / (units.clock_hz * efficiency.gemm)
    traffic = ((m * k + k * n + m * n) * count).astype(np.float64) * element_bytes / (
        device.hbm_bytes_per_s * efficiency.memory)
    return np.maximum(compute, traffic) + efficiency.kernel_s


def memory_seconds(elements, device: Device, efficiency: Efficiency, element_bytes: int = 2, kernels=1) -> np.ndarray:
    """Seconds to move ``elements`` (read + written) through HBM, plus ``kernels`` launch overheads."""
    elements = np.asarray(elements, dtype=np.float64)
    return (elements * element_bytes / (device.hbm_bytes_per_s * efficiency.memory)
            + np.asarray(kernels) * efficiency.kernel_s)


def op_seconds(ops: Sequence[TrainingOp], device: Device, efficiency: Efficiency, element_bytes: int = 2,
               precision: str = "fp16") -> np.ndarray:
    """Seconds of each op on ``device`` (a :class:`~archsim.devices.device.Device`: a catalog GPU's
    is :func:`~archsim.devices.device.catalog_device`): its GEMMs (one launch per :class:`~archsim.lowering.Gemm`)
    plus its memory-bound part (one launch when it has ``vector_elements``). The interface of
    :func:`archsim.array.costing.op_cycles`, in seconds."""
    owner, m, k, n, count = flatten_gemms(ops)
    seconds = np.zeros(len(ops))
    fused = np.fromiter((op.fused for op in ops), dtype=bool, count=len(ops))
    if owner.size:
        if device.gemm == "arrays":
            plain = array_gemm_seconds(m, k, n, count, device, efficiency, element_bytes, precision)
            inside = plain - efficiency.kernel_s  # its own traffic is counted once more below: max, not sum
        else:
            plain = gemm_seconds(m, k, n, count, device, efficiency, precision, element_bytes)
            inside = tile_seconds(m, k, n, count, device, efficiency, precision, element_bytes)
        np.add.at(seconds, owner, np.where(fused[owner], inside, plain))
    vector = np.fromiter((op.vector_elements for op in ops), dtype=np.float64, count=len(ops))
    if fused.any():  # one kernel: compute and its own HBM traffic overlap, one launch
        traffic = memory_seconds(vector, device, efficiency, element_bytes, kernels=0)
        seconds = np.where(fused, np.maximum(seconds, traffic) + efficiency.kernel_s, seconds)
        vector = np.where(fused, 0.0, vector)
    seconds += np.where(vector > 0, memory_seconds(vector, device, efficiency, element_bytes), 0.0)
    return seconds


__all__ = ["TILES", "Efficiency", "array_gemm_seconds", "gemm_seconds", "memory_seconds", "op_seconds",
           "tile_efficiency", "tile_seconds"]
