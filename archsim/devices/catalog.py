"""The one table of GPU datasheet figures (docs/citations.md, "GPU training model"): every catalog GPU's
figures are stated here once, and everything else reads them — the training :class:`~archsim.devices.device.Device`
(:func:`device`), the kernel-time model of every dtype (:mod:`archsim.devices.kernels`) and
``validate-gpu``'s GPU-as-arrays model (:mod:`archsim.validation.gpu`).

A row is the chip (:class:`GpuSpec`: SMs, tensor cores and their MMA shape, clock, HBM bandwidth, L2 and
its read bandwidth, FP32 lanes) and, for the GPUs training runs on, its board (:class:`Board`: memory,
peaks per precision, links, board power). :data:`KNOWN_GPUS` (chips by slug) and :data:`GPUS` (the boards'
:class:`~archsim.devices.device.Device` by catalog name, :func:`device`) are two views of the one table
:data:`TABLE`.

Figures (dense, no sparsity), from NVIDIA's datasheets and architecture whitepapers:

* V100 SXM2 32 GB and 16 GB (Tesla V100 datasheet; Volta whitepaper): 80 SMs, 640 tensor cores, 1530 MHz,
  125 TFLOP/s FP16 tensor, 15.7 FP32, 7.8 FP64; HBM2 900 GB/s; NVLink 2: 6 links, 300 GB/s total
  (150 GB/s each way); PCIe 3.0 ×16 32 GB/s total; the two differ in memory alone. Its servers (DGX-1) wire
  the GPUs directly in a hybrid cube-mesh, no NVSwitch (:mod:`archsim.nvlink_rings`).
* A100 SXM4 40 / 80 GB (A100 datasheet; Ampere GA100 whitepaper): 108 SMs, 432 tensor cores,
  1410 MHz, 312 TFLOP/s FP16/BF16 tensor, 156 TF32, 19.5 FP32, 19.5 FP64 tensor; HBM2 1555 GB/s
  (40 GB), HBM2e 2039 GB/s (80 GB); NVLink 3: 12 links, 600 GB/s total; PCIe 4.0 64 GB/s total.
* H100 SXM5 80 GB (H100 datasheet; Hopper whitepaper): 132 SMs, 528 tensor cores, 989 TFLOP/s
  FP16/BF16 tensor, 1979 FP8, 495 TF32, 67 FP32; HBM3 3350 GB/s; NVLink 4: 18 links, 900 GB/s
  total; PCIe 5.0 128 GB/s total.
* H100 PCIe 80 GB (H100 datasheet; H100 PCIe product brief PB-11133-001): 114 SMs, 456 tensor cores,
  756 TFLOP/s FP16/BF16 tensor, 1513 FP8, 378 TF32 (the datasheet's sparse figures halved), 51 FP32,
  51 FP64 tensor; HBM2e 2000 GB/s, 50 MB L2; 350 W maximum TDP; PCIe 5.0 128 GB/s total; an optional
  NVLink bridge joins two cards (600 GB/s total), which the board here does not model: a PCIe card,
  as the A100 PCIe cards are. Its clock, 1620 MHz, is the one at which its tensor cores give the
  756 TFLOP/s (the H100 SXM's 1830 MHz gives its 989); its 51 FP32 TFLOP/s imply about 1750 MHz on its
  14,592 lanes, which at the one catalog clock give 47.3 (as the H100 SXM's give 61.8 of its 66.9).
* H200 SXM 141 GB (H200 datasheet): the H100 SXM's processor (same SMs, clock and peaks), HBM3e
  4800 GB/s, NVLink 4 900 GB/s total, PCIe 5.0 128 GB/s total. Its "141 GB" are not GiB (nvidia-smi reports
  143,771 MiB): the capacity is below.

Memory (what a job's states and activations are checked against): the total CUDA gives a program
(``cudaDeviceProp.totalGlobalMem``, PyTorch's ``total_memory``) where this project measured it, less than the
datasheet's "GB" and nvidia-smi's total: the H100 SXM5 80GB 79.2 GiB (``# gpu_memory_gib`` of
benchmarks/results/gpu_train_measured_h100-80gb-hbm3.csv, to 0.1 GiB; nvidia-smi 81,559 MiB), the H200
150,109,880,320 bytes, 139.80 GiB (``cuDeviceTotalMem`` on an H200, driver 580.159.04, 2026-12-04; the recorded
139.8). Elsewhere the datasheet's GB as GiB (an A100 80GB: nvidia-smi's 81,920 MiB; no CUDA total recorded).

L2 read bandwidth (what feeds a GEMM tile's operands to the SMs): the Volta and Ampere whitepapers
give 2,048 and 5,120 bytes per clock (A100: "2.3× V100's"). The Hopper whitepaper gives no figure;
archsim assumes the A100's per SM, doubled as H100's per-SM tensor rate is (an assumption, not a
datasheet value).

Link figures here are per direction (half the datasheets' bidirectional totals): what one GPU can
send while it receives as much.

L1 data cache per SM (the most an SM's unified L1/shared memory leaves to L1; the architecture
whitepapers and tuning guides): GP100 24 KB, GP102/GP104 48 KB, Volta 128 KB, Turing 64 KB (96 KB less 32 KB
of shared memory), GA100 192 KB, GA10x/AD10x 128 KB, Hopper 256 KB. Threads per SM (the CUDA
programming guide): 2,048, but Turing 1,024 and GA10x/AD10x 1,536.

Board power is the datasheets' maximum TDP: V100 SXM2 300 W, A100 SXM4 (40 and 80 GB) 400 W, A100 PCIe
250 W (40 GB) and 300 W (80 GB), H100 PCIe 350 W, H100 SXM5 and H200 SXM 700 W.

The PCIe cards NeuSight measured train too (one GPU; no NVLink, PCIe per direction), from their
datasheets: V100 PCIe 32 GB (112 TFLOP/s FP16 tensor, 14 FP32, 7 FP64; PCIe 3.0), T4 (16 GB; 65 FP16
tensor, 8.1 FP32; PCIe 3.0), A100 40GB PCIe and A100 80GB PCIe (the A100's peaks; PCIe 4.0), L4 (24 GB;
121 FP16/BF16 tensor dense, 30.3 FP32; PCIe 4.0), P100 PCIe 16 GB (9.3 FP32, 4.7 FP64; PCIe 3.0), P4
(8 GB; 5.5 FP32; PCIe 3.0). Each row is one real board: CUDA's "NVIDIA A100-PCIE-40GB" (NeuSight's card, whose kernels
the fp32 constants are fitted on) is ``a100-40gb-pcie``, "NVIDIA A100-SXM4-40GB" is ``a100-40gb``. A GPU is found by
the name a user or CUDA gives it ("Tesla V100-PCIE-32GB", "NVIDIA L4") in :mod:`archsim.devices.gpu_lookup`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from archsim.devices.device import Arrays, Device
from archsim.devices.nonmatmul import chip_kernel_figures
from archsim.errors import InputError
from archsim.units import GIB
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
    tdp_w, process_nm: the board's power (W) and the process node's nominal feature size (nm)
    from the datasheet, for the kernel model's power cap and board energy (0: not described, no cap).
    l1_bytes: the largest L1 data cache one SM can have (the unified L1/shared-memory capacity less the
    smallest shared-memory carve-out; 0: not described, nothing cached). threads_per_sm: the most
    threads resident on one SM (the CUDA programming guide's table per compute capability).
    l2_bytes_per_clock: L2 → SM read bytes per clock for the whole GPU, what feeds a tensor-core GEMM
    tile's operands (:func:`archsim.devices.kernels.tensor_path`; 0: not described, always fed).
    compute_capability: CUDA's (major, minor) for the chip (NVIDIA's CUDA GPUs list), which sets its
    special-function rate (:mod:`archsim.devices.nonmatmul`); (0, 0): not an NVIDIA chip, not described.
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
    l1_bytes: float = 0.0
    threads_per_sm: int = 2048
    l2_bytes_per_clock: float = 0.0
    compute_capability: tuple[int, int] = (0, 0)

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
KB = 2**10
MB = 2**20  # L2 capacities are given in MiB ("6 MB L2" = 6,144 KB in the whitepapers)


def _chip(name: str, sms: int, tcs: int, mma: tuple[int, int], mhz: float, gbps: float,
          unit: str = "tensor core", cuda_cores: tuple[int, int, int] | None = None, l2_mb: float = 0.0,
          lanes: int = 0, tdp: float = 0.0, nm: float = 0.0, l1_kb: float = 0.0, threads: int = 2048,
          l2_read: float = 0.0, cc: tuple[int, int] = (0, 0)) -> GpuSpec:
    return GpuSpec(name, sms, tcs, mma[0], mma[1], mhz * 1e6, gbps * 1e9, unit, cuda_cores, l2_mb * MB, lanes,
                   tdp, nm, l1_kb * KB, threads, l2_read, cc)


@dataclass(frozen=True)
class Board:
    """What training needs of a GPU beside its chip, in the table's units: HBM GiB (the total CUDA gives a
    program where measured, else the datasheets' "GB" as GiB: module docstring), dense TFLOP/s per precision,
    NVLink and PCIe GB/s per direction, NVLinks per GPU; ``nvswitch`` False: servers wire the GPUs directly (DGX-1's hybrid cube-mesh);
    ``nvls``: its NVSwitch reduces in the switch (NVLink SHARP, third-generation NVSwitch: Hopper's boards).
    Its watts are its chip's ``tdp_w``: each row of :data:`TABLE` is one real board (form factor, power, links)."""

    key: str  # the catalog name training knows it by
    memory_gb: float
    peaks_tflops: dict[str, float] = field(hash=False)
    nvlink_gbs: float = 0.0
    pcie_gbs: float = 0.0
    nvlinks: int = 12
    nvswitch: bool = True
    nvls: bool = False


@dataclass(frozen=True)
class Row:
    """One GPU of :data:`TABLE`: its chip, and its board where training runs on it."""

    slug: str
    chip: GpuSpec
    board: Board | None = None


AMPERE_PEAKS = {"fp16": 312, "bf16": 312, "tf32": 156, "fp32": 19.5, "fp64": 19.5}  # A100 SXM4, TFLOP/s
HOPPER_PEAKS = {"fp16": 989.4, "bf16": 989.4, "fp8": 1978.9, "tf32": 494.7, "fp32": 66.9, "fp64": 66.9}  # H100/H200 SXM
H100_PCIE_PEAKS = {"fp16": 756.5, "bf16": 756.5, "fp8": 1513, "tf32": 378, "fp32": 51, "fp64": 51}  # dense: sparse / 2
HOPPER_L2_BYTES_PER_CLOCK = 5120 * 132 / 108 * 2  # the A100's per SM, doubled (module docstring: an assumption)
PCIE_ONLY: dict[str, Any] = {"nvlinks": 1, "nvswitch": False}  # a PCIe card's board: no NVLink
H100_SXM_CUDA_GIB = 79.2  # the total memory CUDA gives a program on an H100 SXM5 80GB, as recorded (module docstring)
H200_CUDA_BYTES = 150_109_880_320  # the same on an H200, measured (module docstring)
V100 = (_chip("NVIDIA V100 SXM2 32GB", 80, 8, (8, 8), 1530, 900, cuda_cores=(4, 4, 4), tdp=300, nm=12,
              l1_kb=128, l2_read=2048, cc=(7, 0)),
        Board("v100-32gb", 32, {"fp16": 125, "fp32": 15.7, "fp64": 7.8}, 150, 16, 6, nvswitch=False))

TABLE: tuple[Row, ...] = (
    # chip: SMs, tensor cores/SM, MACs/clock per tensor core as R×C, clock (MHz) giving the datasheet's
    # dense FP16 tensor peak, DRAM GB/s.  Peaks: V100 125, T4 65, A100 312, A10 125, L4 121,
    # H100 SXM 989, H100 PCIe 756, H200 989 TFLOP/s.
    # V100 and T4 also list their 64 FP32 lanes per SM as 4 partitions of 4×4 (15.7 and 8.1 TFLOP/s
    # FP32 at the same clock), where fp16 layers of other shapes run.
    # chip tdp, nm: the board's watts and the process node (docs/citations.md), for the kernel model's power
    # cap and board energy (every row is one real board); l2_read: L2 read bytes/clock (tensor-core tiles'
    # feed). board: HBM GiB, dense TFLOP/s, NVLink and PCIe GB/s per direction, NVLinks.
    Row("v100", *V100),  # the 32 GB SXM2 module; the 16 GB one: its chip and board (figures, links), 16 GiB HBM2
    Row("v100-16gb", replace(V100[0], name="NVIDIA V100 SXM2 16GB"), replace(V100[1], key="v100-16gb", memory_gb=16)),
    Row("v100-pcie", _chip("NVIDIA V100 PCIe 32GB", 80, 8, (8, 8), 1380, 900, cuda_cores=(4, 4, 4), l2_mb=6,
                             tdp=250, nm=12, l1_kb=128, l2_read=2048, cc=(7, 0)),
        Board("v100-pcie-32gb", 32, {"fp16": 112, "fp32": 14, "fp64": 7}, 0, 16, **PCIE_ONLY)),
    Row("t4", _chip("NVIDIA T4", 40, 8, (8, 8), 1590, 320, cuda_cores=(4, 4, 4), l2_mb=4, tdp=70, nm=12, l1_kb=64,
                     threads=1024, cc=(7, 5)),
        Board("t4-16gb", 16, {"fp16": 65, "fp32": 8.1}, 0, 16, **PCIE_ONLY)),
    # the A100 40 GB as two boards: the SXM4 module (400 W, NVLink; training's) and the PCIe card (250 W;
    # NeuSight's kernels were timed on it, so the fp32 kernel fit reads this row)
    Row("a100-40gb", _chip("NVIDIA A100 SXM4 40GB", 108, 4, (16, 16), 1410, 1555, l2_mb=40, lanes=64, tdp=400, nm=7,
                            l1_kb=192, l2_read=5120, cc=(8, 0)),
        Board("a100-40gb", 40, AMPERE_PEAKS, 300, 32, 12)),
    Row("a100-40gb-pcie", _chip("NVIDIA A100 40GB PCIe", 108, 4, (16, 16), 1410, 1555, l2_mb=40, lanes=64, tdp=250,
                                  nm=7, l1_kb=192, l2_read=5120, cc=(8, 0)),
        Board("a100-40gb-pcie", 40, AMPERE_PEAKS, 0, 32, **PCIE_ONLY)),
    Row("a100-80gb-pcie", _chip("NVIDIA A100 80GB PCIe", 108, 4, (16, 16), 1410, 1935, l2_mb=40, lanes=64, tdp=300,
                                  nm=7, l1_kb=192, l2_read=5120, cc=(8, 0)),
        Board("a100-80gb-pcie", 80, AMPERE_PEAKS, 0, 32, **PCIE_ONLY)),
    Row("a100-80gb", _chip("NVIDIA A100 SXM4 80GB", 108, 4, (16, 16), 1410, 2039, lanes=64, tdp=400, nm=7,
                            l1_kb=192, l2_read=5120, cc=(8, 0)),
        Board("a100-80gb", 80, AMPERE_PEAKS, 300, 32, 12)),
    Row("a10", _chip("NVIDIA A10", 72, 4, (8, 16), 1695, 600, l1_kb=128, threads=1536, cc=(8, 6))),
    Row("l4", _chip("NVIDIA L4", 58, 4, (8, 16), 2040, 300, l2_mb=48, lanes=128, tdp=72, nm=4, l1_kb=128,
                     threads=1536, cc=(8, 9)),
        Board("l4-24gb", 24, {"fp16": 121, "bf16": 121, "fp32": 30.3}, 0, 32, **PCIE_ONLY)),
    Row("h100-sxm", _chip("NVIDIA H100 SXM5 80GB", 132, 4, (16, 32), 1830, 3350, l2_mb=50, lanes=128, tdp=700, nm=4,
                           l1_kb=256, l2_read=HOPPER_L2_BYTES_PER_CLOCK, cc=(9, 0)),
        Board("h100-80gb-sxm", H100_SXM_CUDA_GIB, HOPPER_PEAKS, 450, 64, 18, nvls=True)),
    # 114 SMs of the H100 SXM's; 1620 MHz gives the datasheet's 756 dense FP16 TFLOP/s on 456 tensor cores;
    # L2 feed: the H100 SXM's assumed bytes per clock per SM
    Row("h100-pcie", _chip("NVIDIA H100 PCIe", 114, 4, (16, 32), 1620, 2000, l2_mb=50, lanes=128, tdp=350, nm=4,
                            l1_kb=256, l2_read=HOPPER_L2_BYTES_PER_CLOCK * 114 / 132, cc=(9, 0)),
        Board("h100-80gb-pcie", 80, H100_PCIE_PEAKS, 0, 64, **PCIE_ONLY)),
    # the H100 SXM's processor (same SMs, clock and peaks) with HBM3e; the memory CUDA gives (module docstring)
    Row("h200", _chip("NVIDIA H200 SXM 141GB", 132, 4, (16, 32), 1830, 4800, lanes=128, tdp=700, nm=4, l1_kb=256,
                       l2_read=HOPPER_L2_BYTES_PER_CLOCK, cc=(9, 0)),
        Board("h200-141gb", H200_CUDA_BYTES / GIB, HOPPER_PEAKS, 450, 64, 18, nvls=True)),
    # GPUs without tensor cores, timed by DeepBench in FP32 (docs/citations.md): each SM (AMD: compute
    # unit) is its SIMD partitions of FP32 lanes, one array each — NVIDIA 32 lanes → 4×8, AMD SIMD16 → 4×4;
    # the clock is the boost clock giving the datasheet's FP32 peak: P100 PCIe 9.3, GTX 1080 Ti 11.3,
    # Titan Xp 12.1, Titan X (Pascal) 11.0, GTX Titan X (Maxwell) 6.6, Tesla M40 6.8, MI25 12.3,
    # Vega Frontier Edition 13.1 TFLOP/s.
    Row("p100-pcie", _chip("NVIDIA Tesla P100 PCIe", 56, 2, (4, 8), 1303, 732, FP32_PARTITION, l2_mb=4, tdp=250, nm=16,
                            l1_kb=24, cc=(6, 0)),
        Board("p100-pcie-16gb", 16, {"fp32": 9.3, "fp64": 4.7}, 0, 16, **PCIE_ONLY)),
    Row("p4", _chip("NVIDIA Tesla P4", 20, 4, (4, 8), 1063, 192, FP32_PARTITION, l2_mb=2, tdp=75, nm=16, l1_kb=48,
                     cc=(6, 1)),
        Board("p4-8gb", 8, {"fp32": 5.5}, 0, 16, **PCIE_ONLY)),
    # the GTX 1080 Ti as a board too (11 GiB GDDR5X, PCIe 3.0 ×16, no FP16 rate worth a peak: fp32 only), so
    # a cluster of them can price layers (the SPP paper's 1080Ti×8 testbed, docs/papers/spp.md)
    Row("gtx-1080-ti", _chip("NVIDIA GTX 1080 Ti", 28, 4, (4, 8), 1582, 484, FP32_PARTITION, l1_kb=48, cc=(6, 1)),
        Board("gtx-1080-ti-11gb", 11, {"fp32": 11.3}, 0, 16, **PCIE_ONLY)),
    Row("titan-xp", _chip("NVIDIA Titan Xp", 30, 4, (4, 8), 1582, 547.7, FP32_PARTITION, l1_kb=48, cc=(6, 1))),
    Row("titan-x-pascal", _chip("NVIDIA Titan X (Pascal)", 28, 4, (4, 8), 1531, 480, FP32_PARTITION, l1_kb=48,
                                 cc=(6, 1))),
    Row("titan-x-maxwell", _chip("NVIDIA GTX Titan X (Maxwell)", 24, 4, (4, 8), 1075, 336.5, FP32_PARTITION,
                                  cc=(5, 2))),
    Row("m40", _chip("NVIDIA Tesla M40", 24, 4, (4, 8), 1114, 288, FP32_PARTITION, cc=(5, 2))),
    Row("mi25", _chip("AMD Radeon Instinct MI25", 64, 4, (4, 4), 1500, 484, FP32_PARTITION)),
    Row("vega-fe", _chip("AMD Radeon Vega Frontier Edition", 64, 4, (4, 4), 1600, 483, FP32_PARTITION)),
)


NCCL_SMS = 16
"""SMs (CTAs, one per channel) NCCL runs a collective on beside compute on a catalog GPU: its maintainer's figure for a
DGX with 8 NICs (NVIDIA/nccl issue #689; :mod:`archsim.training.comm_sms`)."""


def device(chip: GpuSpec, board: Board) -> Device:
    """A GPU of the table as the training device: its tensor cores as arrays (SMs × tensor cores per
    SM of the MMA shape, output-stationary, at the chip's clock), its FP32 SIMD partitions as lanes
    where the chip lists them, GEMMs as library tiles at the board's datasheet peaks, and what a fused kernel reads
    of its SMs (:func:`archsim.devices.nonmatmul.chip_kernel_figures`, the figures a device file states)."""
    arrays = Arrays(chip.arrays, chip.mma_rows, chip.mma_cols, "os", chip.clock_hz, chip.tensor_cores_per_sm)
    lanes = None
    if chip.cuda_cores is not None:
        parts, rows, cols = chip.cuda_cores
        lanes = Arrays(chip.sm_count * parts, rows, cols, "os", chip.clock_hz, parts)
    vector, smem, fraction = chip_kernel_figures(chip.compute_capability, chip.fp32_lanes_per_sm)
    return Device(chip.name, arrays, lanes, "tiles", tuple((k, v * 1e12) for k, v in board.peaks_tflops.items()),
                  board.memory_gb * GIB, chip.memory_bytes_per_s, l2_bytes_per_clock=chip.l2_bytes_per_clock,
                  nvlink_bytes_per_s=board.nvlink_gbs * 1e9, nvlinks=board.nvlinks, nvswitch=board.nvswitch,
                  nvls=board.nvls, pcie_bytes_per_s=board.pcie_gbs * 1e9,
                  board_watts=chip.tdp_w or None, catalog=board.key, vector=vector, smem_bytes_per_clock=smem,
                  fused_gemm_fraction=fraction, comm_sms=NCCL_SMS)


KNOWN_GPUS: dict[str, GpuSpec] = {row.slug: row.chip for row in TABLE}  # chips by slug (validate-gpu, kernels)
GPUS: dict[str, Device] = {row.board.key: device(row.chip, row.board) for row in TABLE if row.board is not None}
_BOARD_CHIP: dict[str, GpuSpec] = {row.board.key: row.chip for row in TABLE if row.board is not None}


def chip_of(device: Device) -> GpuSpec | None:
    """The chip (:class:`GpuSpec`) of a catalog GPU's device, for the kernel model's chip-level mechanisms
    (the SIMT path, PyTorch's memory-bound kernels, the special-function rate, the link's name); None for a
    device file's. Found by the board the device was built from (``Device.catalog``), never by its value or
    name: a catalog GPU with a figure changed (``dataclasses.replace(gpu("h100"), hbm_bytes_per_s=…)``) is still
    that chip, and a device file named like one is not (tests/test_device_identity.py). The figures a ``Device``
    states are read from it, so a changed one takes effect in every mechanism: its arrays (SMs, tensor cores per
    SM, MMA shape, clock), HBM bandwidth, L2 feed and board power; the chip's own (compute capability, FP32
    lanes, L1, threads) stay the catalog's. A catalog GPU as built gives its table row's chip, unchanged."""
    return None if device.catalog is None else _chip_as_stated(device)


@lru_cache(maxsize=512)
def _chip_as_stated(device: Device) -> GpuSpec | None:
    """:func:`chip_of`'s chip, once per device (every op's timing asks)."""
    chip = _BOARD_CHIP.get(str(device.catalog))
    if chip is None:
        return None
    arrays = device.arrays
    return replace(chip, sm_count=arrays.cores, tensor_cores_per_sm=arrays.per_core, mma_rows=arrays.rows,
                   mma_cols=arrays.cols, clock_hz=arrays.clock_hz, memory_bytes_per_s=device.hbm_bytes_per_s,
                   l2_bytes_per_clock=device.l2_bytes_per_clock, tdp_w=device.board_watts or 0.0)


__all__ = ["FP32_PARTITION", "GPUS", "KNOWN_GPUS", "MAX_GPU_UNITS", "MB", "NCCL_SMS", "TABLE", "Board",
           "GpuSpec", "Row", "chip_of", "device"]
