"""GPUs as archsim sees them: each one's SM count, tensor cores, MMA shape, boost clock and memory
bandwidth (:data:`KNOWN_GPUS`, from vendor datasheets), found by name and overridden field by field."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any

from archsim.errors import InputError
from archsim.validate import MIN_MAGNITUDE, shown

MAX_GPU_UNITS = 2**20  # SMs, tensor cores per SM, MMA rows or columns: far above any GPU, far below overflow


@dataclass(frozen=True)
class GpuSpec:
    """What archsim needs to know about a GPU.

    mma_rows × mma_cols: one tensor core as a PE array (dense FP16 MACs per clock = their product).
    array_unit: what one array stands for — a tensor core, or on GPUs without tensor cores (Maxwell,
    Pascal, AMD Vega) one SIMD partition of FP32 lanes, whose lanes are the PEs.
    cuda_cores: a tensor-core GPU's FP32 lanes as (partitions per SM, rows, cols), for the layers
    its fp16 tensor-core kernels cannot take (None: not described, no fallback).
    clock_hz: the tensor cores' clock (cycles → seconds). memory_bytes_per_s: DRAM bandwidth,
    only for the separate memory floor. l2_bytes: the L2 cache's capacity (0: not described).
    fp32_lanes: FP32 lanes per SM where ``cuda_cores`` does not list them (that also turns on the
    fp16 fallback of :mod:`archsim.validation.gpu_algorithms`; this does not).
    tdp_w, process_nm: board power (W) and the process node's nominal feature size (nm) from the
    datasheet, for the kernel model's power cap (0: not described, no cap).
    """

    name: str
    sm_count: int
    tensor_cores_per_sm: int
    mma_rows: int
    mma_cols: int
    clock_hz: float
    memory_bytes_per_s: float
    array_unit: str = "tensor core"
    cuda_cores: tuple[int, int, int] | None = None
    l2_bytes: float = 0.0
    fp32_lanes: int = 0
    tdp_w: float = 0.0
    process_nm: float = 0.0

    def __post_init__(self) -> None:
        for name in ("sm_count", "tensor_cores_per_sm", "mma_rows", "mma_cols"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= MAX_GPU_UNITS:
                raise InputError(f"must be an integer in 1…{MAX_GPU_UNITS}, got {shown(value)}", field=name)
        for name in ("clock_hz", "memory_bytes_per_s"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and MIN_MAGNITUDE <= value < math.inf):
                raise InputError(f"must be a finite number of at least {MIN_MAGNITUDE:g}, got {shown(value)}",
                                 field=name)

    @property
    def arrays(self) -> int:
        """Tensor cores on the GPU: the number of arrays a GEMM is split across."""
        return self.sm_count * self.tensor_cores_per_sm

    @property
    def fp32_lanes_per_sm(self) -> int:
        """FP32 lanes of one SM: ``fp32_lanes``, else ``cuda_cores``' product, else the FP32 partitions'
        lanes on GPUs without tensor cores (0: not described)."""
        if self.fp32_lanes:
            return self.fp32_lanes
        if self.cuda_cores is not None:
            return math.prod(self.cuda_cores)
        if self.array_unit == FP32_PARTITION:
            return self.tensor_cores_per_sm * self.mma_rows * self.mma_cols
        return 0

    @property
    def peak_flops(self) -> float:
        """Dense FLOP/s (2 per MAC) the spec implies; checked against vendor datasheets in the tests."""
        return 2.0 * self.arrays * self.mma_rows * self.mma_cols * self.clock_hz


FP32_PARTITION = "FP32 SIMD partition"
MB = 2**20  # L2 capacities are given in MiB ("6 MB L2" = 6,144 KB in the whitepapers)


def _gpu(name: str, sms: int, tcs: int, mma: tuple[int, int], mhz: float, gbps: float,
         unit: str = "tensor core", cuda_cores: tuple[int, int, int] | None = None, l2_mb: float = 0.0,
         lanes: int = 0, tdp: float = 0.0, nm: float = 0.0) -> GpuSpec:
    return GpuSpec(name, sms, tcs, mma[0], mma[1], mhz * 1e6, gbps * 1e9, unit, cuda_cores, l2_mb * MB, lanes,
                   tdp, nm)


KNOWN_GPUS: dict[str, GpuSpec] = {
    # slug: SMs, tensor cores/SM, MACs/clock per tensor core as R×C, clock (MHz) giving the datasheet's
    # dense FP16 tensor peak, DRAM GB/s.  Peaks: V100 125, T4 65, A100 312, A10 125, L4 121,
    # H100 SXM 989, H100 PCIe 756, H200 989 TFLOP/s.
    # V100 and T4 also list their 64 FP32 lanes per SM as 4 partitions of 4×4 (15.7 and 8.1 TFLOP/s
    # FP32 at the same clock), where fp16 layers of other shapes run. tdp: board power (W), nm: process
    # node, from the datasheets (docs/citations.md), for the kernel model's power cap.
    "v100": _gpu("NVIDIA V100 (SXM2)", 80, 8, (8, 8), 1530, 900, cuda_cores=(4, 4, 4)),
    "v100-pcie": _gpu("NVIDIA V100 PCIe 32GB", 80, 8, (8, 8), 1380, 900, cuda_cores=(4, 4, 4), l2_mb=6,
                      tdp=250, nm=12),
    "t4": _gpu("NVIDIA T4", 40, 8, (8, 8), 1590, 320, cuda_cores=(4, 4, 4), l2_mb=4, tdp=70, nm=12),
    "a100-40gb": _gpu("NVIDIA A100 40GB", 108, 4, (16, 16), 1410, 1555, l2_mb=40, lanes=64, tdp=250, nm=7),
    "a100-80gb-pcie": _gpu("NVIDIA A100 80GB PCIe", 108, 4, (16, 16), 1410, 1935, l2_mb=40, lanes=64, tdp=300, nm=7),
    "a100-80gb": _gpu("NVIDIA A100 80GB", 108, 4, (16, 16), 1410, 2039),
    "a10": _gpu("NVIDIA A10", 72, 4, (8, 16), 1695, 600),
    "l4": _gpu("NVIDIA L4", 58, 4, (8, 16), 2040, 300, l2_mb=48, lanes=128, tdp=72, nm=4),
    "h100-sxm": _gpu("NVIDIA H100 SXM", 132, 4, (16, 32), 1830, 3350, l2_mb=50, lanes=128, tdp=700, nm=4),
    "h100-pcie": _gpu("NVIDIA H100 PCIe", 114, 4, (16, 32), 1620, 2000),
    "h200": _gpu("NVIDIA H200", 132, 4, (16, 32), 1830, 4800),
    # GPUs without tensor cores, timed by DeepBench in FP32 (docs/citations.md): each SM (AMD: compute
    # unit) is its SIMD partitions of FP32 lanes, one array each — NVIDIA 32 lanes → 4×8, AMD SIMD16 → 4×4;
    # the clock is the boost clock giving the datasheet's FP32 peak: P100 PCIe 9.3, GTX 1080 Ti 11.3,
    # Titan Xp 12.1, Titan X (Pascal) 11.0, GTX Titan X (Maxwell) 6.6, Tesla M40 6.8, MI25 12.3,
    # Vega Frontier Edition 13.1 TFLOP/s.
    "p100-pcie": _gpu("NVIDIA Tesla P100 PCIe", 56, 2, (4, 8), 1303, 732, FP32_PARTITION, l2_mb=4, tdp=250, nm=16),
    "p4": _gpu("NVIDIA Tesla P4", 20, 4, (4, 8), 1063, 192, FP32_PARTITION, l2_mb=2, tdp=75, nm=16),
    "gtx-1080-ti": _gpu("NVIDIA GTX 1080 Ti", 28, 4, (4, 8), 1582, 484, FP32_PARTITION),
    "titan-xp": _gpu("NVIDIA Titan Xp", 30, 4, (4, 8), 1582, 547.7, FP32_PARTITION),
    "titan-x-pascal": _gpu("NVIDIA Titan X (Pascal)", 28, 4, (4, 8), 1531, 480, FP32_PARTITION),
    "titan-x-maxwell": _gpu("NVIDIA GTX Titan X (Maxwell)", 24, 4, (4, 8), 1075, 336.5, FP32_PARTITION),
    "m40": _gpu("NVIDIA Tesla M40", 24, 4, (4, 8), 1114, 288, FP32_PARTITION),
    "mi25": _gpu("AMD Radeon Instinct MI25", 64, 4, (4, 4), 1500, 484, FP32_PARTITION),
    "vega-fe": _gpu("AMD Radeon Vega Frontier Edition", 64, 4, (4, 4), 1600, 483, FP32_PARTITION),
}

_NAME_PATTERNS = ((r"p100", "p100-pcie"), (r"1080\s*ti", "gtx-1080-ti"), (r"titan\s*xp", "titan-xp"),
                  (r"titan\s*x.*pascal", "titan-x-pascal"), (r"titan\s*x.*maxwell", "titan-x-maxwell"),
                  (r"\bm40\b", "m40"), (r"mi25", "mi25"), (r"vega.*(frontier|\bfe\b)", "vega-fe"),
                  (r"h200", "h200"), (r"h100.*pcie", "h100-pcie"), (r"h100", "h100-sxm"),
                  (r"a100.*40\s*gb", "a100-40gb"), (r"a100.*80\s*gb.*pcie", "a100-80gb-pcie"),
                  (r"a100", "a100-80gb"), (r"\ba10\b", "a10"),
                  (r"\bl4\b", "l4"), (r"v100.*pcie", "v100-pcie"), (r"v100", "v100"), (r"\bt4\b", "t4"),
                  (r"\bp4\b", "p4"))


def find_gpu(name: str) -> str | None:
    """The :data:`KNOWN_GPUS` slug for a device name such as ``"NVIDIA H100 80GB HBM3"`` (None if unknown)."""
    text = name.strip().lower()
    if text in KNOWN_GPUS:
        return text
    return next((slug for pattern, slug in _NAME_PATTERNS if re.search(pattern, text)), None)


def resolve_gpu(name: str, *, like: str | None = None, sm_count: int | None = None,
                tensor_cores_per_sm: int | None = None, mma: tuple[int, int] | None = None,
                clock_hz: float | None = None, memory_bytes_per_s: float | None = None) -> GpuSpec:
    """The known GPU ``name`` matches (or ``like``, for one not in the table), with overrides applied.

    A measured SM count (MIG slices, a cut-down part) should be passed as ``sm_count``.
    """
    slug = find_gpu(like) if like else find_gpu(name)
    if slug is None:
        field = "like" if like else "gpu"
        raise InputError(f"unknown GPU {(like or name)!r}; name a similar known one with --like "
                         f"({', '.join(KNOWN_GPUS)}) and override what differs", field=field)
    base = KNOWN_GPUS[slug]
    changes: dict[str, Any] = {"name": name or base.name}
    for key, value in (("sm_count", sm_count), ("tensor_cores_per_sm", tensor_cores_per_sm),
                       ("clock_hz", clock_hz), ("memory_bytes_per_s", memory_bytes_per_s)):
        if value is not None:
            changes[key] = value
    if mma is not None:
        changes["mma_rows"], changes["mma_cols"] = mma
    return replace(base, **changes)
