"""GPUs by catalog name, with their datasheet figures (docs/citations.md, "GPU datasheets").

The tensor-core geometry, boost clock and HBM bandwidth are :data:`archsim.validation.gpu_catalog.KNOWN_GPUS`'
(one table for both the kernel validation and training); this module adds what training needs
beside them: memory capacity, peak per precision, and the GPU's links.

Figures (dense, no sparsity), from NVIDIA's datasheets and architecture whitepapers:

* V100 SXM2 32 GB (Tesla V100 datasheet; Volta whitepaper): 80 SMs, 640 tensor cores, 1530 MHz,
  125 TFLOP/s FP16 tensor, 15.7 FP32, 7.8 FP64; HBM2 900 GB/s; NVLink 2: 6 links, 300 GB/s total
  (150 GB/s each way); PCIe 3.0 ×16 32 GB/s total. Its servers (DGX-1) wire the GPUs directly in a
  hybrid cube-mesh, no NVSwitch (:mod:`archsim.training.nvlink_rings`).
* A100 SXM4 40 / 80 GB (A100 datasheet; Ampere GA100 whitepaper): 108 SMs, 432 tensor cores,
  1410 MHz, 312 TFLOP/s FP16/BF16 tensor, 156 TF32, 19.5 FP32, 19.5 FP64 tensor; HBM2 1555 GB/s
  (40 GB), HBM2e 2039 GB/s (80 GB); NVLink 3: 12 links, 600 GB/s total; PCIe 4.0 64 GB/s total.
* H100 SXM5 80 GB (H100 datasheet; Hopper whitepaper): 132 SMs, 528 tensor cores, 989 TFLOP/s
  FP16/BF16 tensor, 1979 FP8, 495 TF32, 67 FP32; HBM3 3350 GB/s; NVLink 4: 18 links, 900 GB/s
  total; PCIe 5.0 128 GB/s total.
* H200 SXM 141 GB (H200 datasheet): the H100 SXM's processor (same SMs, clock and peaks), HBM3e
  4800 GB/s, NVLink 4 900 GB/s total, PCIe 5.0 128 GB/s total. Its "141 GB" are not GiB: the GPU
  reports 143,771 MiB, the capacity used here.

L2 read bandwidth (what feeds a GEMM tile's operands to the SMs): the Volta and Ampere whitepapers
give 2,048 and 5,120 bytes per clock (A100: "2.3× V100's"). The Hopper whitepaper gives no figure;
archsim assumes the A100's per SM, doubled as H100's per-SM tensor rate is (an assumption, not a
datasheet value).

Link figures here are per direction (half the datasheets' bidirectional totals): what one GPU can
send while it receives as much.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from archsim.errors import InputError
from archsim.validation.gpu_catalog import KNOWN_GPUS, GpuSpec

GIB = 2**30


@dataclass(frozen=True)
class Gpu:
    """One GPU model. ``spec``: tensor cores, clock, HBM bandwidth (shared with GPU validation);
    ``memory_bytes``: HBM capacity (the datasheets' "GB" are GiB: an A100 80GB reports 81,920 MiB); ``peak_flops``: dense tensor/vector peaks per precision (FLOP/s);
    ``nvlink_bytes_per_s`` / ``pcie_bytes_per_s``: one GPU's bandwidth per direction (bytes/s)."""

    name: str
    spec: GpuSpec
    memory_bytes: float
    peak_flops: dict[str, float] = field(hash=False)
    nvlink_bytes_per_s: float
    pcie_bytes_per_s: float
    l2_bytes_per_clock: float = 0.0  # L2 → SM read bandwidth, bytes per clock for the whole GPU (0: unlimited)
    nvlinks: int = 12  # NVLinks per GPU
    nvswitch: bool = True  # servers join all GPUs through NVSwitches (False: DGX-1's direct hybrid cube-mesh)

    @property
    def nvlink_link_bytes_per_s(self) -> float:
        """One NVLink's bandwidth per direction."""
        return self.nvlink_bytes_per_s / self.nvlinks

    @property
    def sms(self) -> int:
        return self.spec.sm_count

    @property
    def tensor_cores(self) -> int:
        return self.spec.arrays

    @property
    def clock_hz(self) -> float:
        return self.spec.clock_hz

    @property
    def hbm_bytes_per_s(self) -> float:
        return self.spec.memory_bytes_per_s

    def peak(self, precision: str = "fp16") -> float:
        """Dense peak FLOP/s at ``precision`` (fp16, bf16, tf32, fp32, fp64, fp8 where the GPU has it)."""
        if precision not in self.peak_flops:
            raise InputError(f"{self.name} has no {precision} peak; it has {', '.join(self.peak_flops)}",
                             field="precision")
        return self.peak_flops[precision]


def _gpu(name: str, slug: str, memory_gb: float, peaks_tflops: dict[str, float], nvlink_gbs: float,
         pcie_gbs: float, l2_bytes_per_clock: float, nvlinks: int, nvswitch: bool = True) -> Gpu:
    return Gpu(name, KNOWN_GPUS[slug], memory_gb * GIB, {k: v * 1e12 for k, v in peaks_tflops.items()},
               nvlink_gbs * 1e9, pcie_gbs * 1e9, l2_bytes_per_clock, nvlinks, nvswitch)


GPUS: dict[str, Gpu] = {
    "v100-32gb": _gpu("NVIDIA V100 SXM2 32GB", "v100", 32, {"fp16": 125, "fp32": 15.7, "fp64": 7.8}, 150, 16, 2048, 6,
                      nvswitch=False),
    "a100-40gb": _gpu("NVIDIA A100 SXM4 40GB", "a100-40gb", 40,
                      {"fp16": 312, "bf16": 312, "tf32": 156, "fp32": 19.5, "fp64": 19.5}, 300, 32, 5120, 12),
    "a100-80gb": _gpu("NVIDIA A100 SXM4 80GB", "a100-80gb", 80,
                      {"fp16": 312, "bf16": 312, "tf32": 156, "fp32": 19.5, "fp64": 19.5}, 300, 32, 5120, 12),
    "h100-80gb-sxm": _gpu("NVIDIA H100 SXM5 80GB", "h100-sxm", 80,
                          {"fp16": 989.4, "bf16": 989.4, "fp8": 1978.9, "tf32": 494.7, "fp32": 66.9, "fp64": 66.9},
                          450, 64, 5120 * 132 / 108 * 2, 18),
    "h200-141gb": _gpu("NVIDIA H200 SXM 141GB", "h200", 143771 / 1024,
                       {"fp16": 989.4, "bf16": 989.4, "fp8": 1978.9, "tf32": 494.7, "fp32": 66.9, "fp64": 66.9},
                       450, 64, 5120 * 132 / 108 * 2, 18),
}
ALIASES = {"v100": "v100-32gb", "a100": "a100-80gb", "h100": "h100-80gb-sxm", "h100-sxm": "h100-80gb-sxm",
           "h200": "h200-141gb"}


def gpu(name: str) -> Gpu:
    """The catalog GPU called ``name`` (a key of :data:`GPUS` or an alias such as ``a100``)."""
    key = ALIASES.get(str(name).lower(), str(name).lower())
    if key not in GPUS:
        raise InputError(f"unknown GPU {name!r}; the catalog has {', '.join(GPUS)}", field="gpu")
    return GPUS[key]


__all__ = ["GIB", "GPUS", "Gpu", "gpu"]
