"""Measured GPU kernels timed in seconds by the one device model (:mod:`archsim.devices.kernel_ops`).

``validate-gpu``'s GPU-as-arrays view (:mod:`archsim.validation.gpu`) gives cycles that rank kernels;
this gives every measured F/D/G kernel a *time*, from the same ops the arrays view costs (im2col
lowering, padded-phase strided δ, Winograd forwards, the FP32-lane fallback of
:mod:`archsim.validation.gpu_algorithms`), so the two views differ only in how an op is priced:

* a catalog GPU with a board (:data:`archsim.devices.gpu_lookup.BOARD_OF_CHIP`; V100, T4, P100, A100,
  L4, H100, H200, P4, …) and no override of its figures: its :class:`~archsim.devices.device.Device`
  (:func:`~archsim.devices.device.catalog_device`), every op timed by
  :func:`archsim.devices.kernel_ops.op_seconds` at the CSV's dtype — fp16/bf16 on the tensor-core
  tiles with the constants the caller gives (the vTrain fit, :func:`archsim.training.fitted.kernels`:
  ``validation`` may not import ``training``, so the command passes it), fp32 on the SIMT tiles of
  the FP32 lanes with :data:`archsim.devices.kernel_constants.FITTED`;
* a chip without a board (the DeepBench-only GPUs: GTX 1080 Ti, Titan X/Xp, M40, AMD MI25 and Vega)
  or with an override (``--sm-count``, ``--clock-mhz``, …): ``op_seconds``' own GEMM side,
  :func:`archsim.devices.kernel_ops.path_op_seconds`, on the chip's own path
  (:func:`archsim.devices.kernels.spec_path`: SIMT tiles on its FP32 lanes; tensor tiles at the chip's
  peak for fp16) — all of ``op_seconds`` for a GEMM-only op;
* every kernel here is timed alone, back to back (a kernel benchmark), so it pays the launch of a
  kernel timed alone, not a training step's gap between kernels: the rule
  :func:`archsim.devices.kernel_ops.kernel_families` states (``alone``; :func:`~archsim.devices.kernel_ops.timed_alone`);
* an fp16 layer that runs on the FP32 lanes (channels or filters not multiples of 8): the SIMT path
  with :data:`~archsim.devices.kernel_constants.FITTED`, its operands counted at the CSV's element size.

Nothing here is fitted: the constants are the ones fitted elsewhere (NeuSight's five GPUs for fp32,
vTrain's A100 runs for the tensor cores). Units: seconds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from archsim.choices.devices import ELEMENT_BYTES, TORCH_DTYPES
from archsim.devices.catalog import KNOWN_GPUS, GpuSpec
from archsim.devices.device import Device, catalog_device
from archsim.devices.gpu_lookup import BOARD_OF_CHIP
from archsim.devices.kernel_constants import FITTED, TENSOR_DTYPES, KernelConstants
from archsim.devices.kernel_ops import kernel_families, op_seconds, path_op_seconds, timed_alone
from archsim.devices.kernels import GemmPath, simt_path, spec_path, stream_seconds
from archsim.errors import InputError
from archsim.lowering import TrainingOp

CSV_DTYPES = {**{name: name for name in ELEMENT_BYTES}, **TORCH_DTYPES}
"""The CSV metadata's dtype names → archsim's (:data:`archsim.choices.devices.ELEMENT_BYTES`)."""

TensorConstants = Callable[[str], KernelConstants]
"""GPU name → the tensor-core kernel constants (:func:`archsim.training.fitted.kernels`)."""


@dataclass(frozen=True)
class KernelTimer:
    """How one measured table's kernels are timed: ``dtype`` on ``spec`` (the chip after overrides),
    through ``device`` (its catalog board) where it is the catalog's, else on the chip's own path;
    ``constants`` for the dtype's GEMM path (``simt_constants`` for fp32); ``simt_constants``: the fit of
    kernels timed alone (:data:`~archsim.devices.kernel_constants.FITTED` unless a benchmark asks what another fit
    would give) — the FP32 lanes' constants and every family's timed-alone launch; ``note`` says which,
    for the assumptions."""

    spec: GpuSpec
    dtype: str
    device: Device | None
    constants: KernelConstants
    note: str
    simt_constants: KernelConstants = FITTED

    @property
    def simt(self) -> bool:
        """Whether its GEMMs run on the FP32 lanes (fp32; fp16 on a chip without tensor cores)."""
        return not (self.dtype in TENSOR_DTYPES and self.spec.array_unit == "tensor core")


def kernel_timer(spec: GpuSpec, slug: str | None, dtype: str, tensor_constants: TensorConstants | None,
                 simt_constants: KernelConstants = FITTED) -> KernelTimer | None:
    """The timer of ``spec`` (catalog slug ``slug``) at the CSV's ``dtype``; None where the device model
    cannot time it (tf32; fp16/bf16 on tensor cores with no constants given; SIMT work on a chip whose
    FP32 lanes the catalog does not describe). fp16 on a GPU without tensor cores (storage only) runs
    on its FP32 lanes at 2 bytes per element, on the chip's path."""
    name = CSV_DTYPES.get(dtype.strip().lower())
    if name is None or name == "tf32":  # no tf32 GEMM path
        return None
    tensor = name in TENSOR_DTYPES and spec.array_unit == "tensor core"
    if (tensor and tensor_constants is None) or (not tensor and not spec.fp32_lanes_per_sm):
        return None  # no constants for the tensor cores, or FP32 lanes the catalog does not describe
    catalog = KNOWN_GPUS.get(slug or "")
    device = None
    same = catalog is not None and replace(spec, name=catalog.name) == catalog
    if same and slug in BOARD_OF_CHIP and (tensor or name == "fp32"):  # fp16 storage on FP32 lanes: chip path
        device = catalog_device(BOARD_OF_CHIP[slug])
    if tensor:
        assert tensor_constants is not None
        constants = tensor_constants(device.name if device is not None else spec.name)
        fit = "tensor-core tiles, the vTrain A100 fit"
    else:
        constants, fit = simt_constants, "SIMT tiles on the FP32 lanes, kernels.FITTED (NeuSight's five GPUs)"
    where = (f"kernel_ops.op_seconds on the catalog device {device.name}" if device is not None else
             "kernels.path_gemm_seconds on the chip's datasheet path (no catalog board, or overridden figures)")
    timing = (f"each kernel timed alone (launch {simt_constants.launch_s * 1e6:.1f} µs, kernel_ops.timed_alone); conv G "
              "split-K, δ of < 32 channels by col2im" + (", 3×3 stride-1 δ by Winograd F(2×2, 3×3)" if not tensor else ""))
    return KernelTimer(spec, name, device, constants, f"{name}: {fit}; {where}; {timing}", simt_constants)


def _chip_seconds(ops: Sequence[TrainingOp], path: GemmPath, constants: KernelConstants, size: int,
                  hbm_bytes_per_s: float) -> np.ndarray:
    """Seconds of each op on a chip with no ``Device``: its GEMMs on ``path``
    (:func:`~archsim.devices.kernel_ops.path_op_seconds`) plus one elementwise kernel streaming its
    ``vector_elements`` at the elementwise HBM fraction (:func:`~archsim.devices.kernels.stream_seconds`,
    as ``op_seconds`` streams them); a fused op or a softmax/layer-norm kernel is refused."""
    if any(op.fused or op.kernel for op in ops):
        raise InputError("a measured kernel lowered to a fused or softmax/layer-norm kernel; only conv/fc kernels "
                         "are timed here", field="op")
    elements = np.fromiter((op.vector_elements for op in ops), dtype=np.float64, count=len(ops))
    streamed = np.where(elements > 0, stream_seconds(elements * size, hbm_bytes_per_s, constants), 0.0)
    return path_op_seconds(ops, path, constants, size) + streamed


def ops_seconds(ops: Sequence[TrainingOp], timer: KernelTimer, on_lanes: Sequence[bool], size: int) -> np.ndarray:
    """Seconds of each op; ``on_lanes`` marks the fp16 ops that run on the FP32 lanes, ``size`` is the
    CSV's bytes per element."""
    lanes = np.asarray(on_lanes, dtype=bool) if len(on_lanes) else np.zeros(len(ops), dtype=bool)
    seconds = np.zeros(len(ops))
    rest = np.flatnonzero(~lanes)
    if rest.size:
        chosen = [ops[i] for i in rest]
        if timer.device is not None:
            families = kernel_families(timer.device, timer.dtype, timer.constants, timer.simt_constants,
                                      alone=True)
            seconds[rest] = op_seconds(chosen, timer.device, families, timer.dtype)
        else:
            path = spec_path(timer.spec, timer.constants, timer.dtype)
            seconds[rest] = _chip_seconds(chosen, path, timed_alone(timer.constants, timer.simt_constants), size,
                                          timer.spec.memory_bytes_per_s)
    moved = np.flatnonzero(lanes)
    if moved.size:
        seconds[moved] = _chip_seconds([ops[i] for i in moved], simt_path(timer.spec, timer.simt_constants),
                                       timer.simt_constants, size,
                                       timer.spec.memory_bytes_per_s)
    return seconds


__all__ = ["CSV_DTYPES", "KernelTimer", "TensorConstants", "kernel_timer", "ops_seconds"]
