"""The kernel model's constants and the board's power cap: what :mod:`archsim.devices.kernels`'
timers take besides the op, its shape and the GPU's datasheet.

**Power cap** (every GEMM path): the SMs together run at most ``TDP / energy per FLOP`` FLOP/s
(:func:`sustained_flops`), the clock a board's power allows under sustained load; the energy per
FLOP is one fitted constant per path — ``energy_pj`` on the FP32 lanes, ``tensor_energy_pj`` on the
tensor cores (:func:`on_tensor_cores`) — scaled by the GPU's process node and rated boost clock
(:func:`energy_per_flop`). A 70 W T4 cannot hold its boost clock in an sgemm nor in a tensor-core
GEMM (40 of its 65 TFLOP/s); a 250 W V100 can in both. A GPU without a TDP or process node in the
catalog, and a device file (it states board watts, no process node), is not capped. The cap bounds a
kernel's *average* power, not each SM's: a board's limiter acts over milliseconds, longer than a wave,
so a GEMM's main loop is the longer of its waves at the SMs' fed rate and all its FLOPs at the sustained
rate — with full waves only the even split over the SMs, one wave on k SMs at min(fed rate, sustained / k)
each, never slower with more SMs. Until 2026-12-05 the cap was split evenly over all the SMs (a GEMM of
few tiles capped as if every SM were busy). The constants below stay those fitted under that rule: on
them the new rule moves only the T4 (2026-12-05, no refit): NeuSight's five-GPU per-class MAPE sum
67.4267 → 67.4282 (T4 linear 8.61 → 8.73, bmm 22.25 → 22.13), DeepBench's fp16 GEMMs loss 0.4905 → 0.4727
(T4 seconds MAPE 0.173 → 0.155), the refitted ``tensor_energy_pj`` still 1.122 pJ, vTrain's runs and the
published throughputs unchanged. A refit of the fp32 constants under the new rule moved the simplex far
and was not adopted.

The constants (:class:`KernelConstants`, one type for every dtype) are architecture-independent
fractions of datasheet peaks, one launch time, one host time per op and one energy per FLOP per path.
Two fits of them exist, each on the kernels it times, and the tensor cores' energy per FLOP is fitted
apart, on the only kernels that tell it: the tensor-core one on vTrain's A100 runs
(:data:`archsim.training.fitted.A100_KERNELS`, one HBM fraction for every class: :func:`one_fraction`)
and the fp32 one, :data:`FITTED`, fitted by :func:`archsim.validation.neusight.fit_constants` on NeuSight's kernel measurements of five GPUs
(``../shared/gpu_kernels/``: P100-PCIE-16GB, P4, T4, V100-PCIE-32GB, A100-PCIE-40GB; every row of
linear.csv, bmm.csv, elem.csv, softmax.csv, ln.csv, train_elem.csv, train_softmax.csv and
train_ln.csv): Nelder–Mead on the logarithms of the constants (restarted from its own result, so
that a simplex collapsed early does not stop the fit near its start), minimizing the sum over the
five op classes of each class's mean absolute percentage error; then the energy per FLOP, the largest whose
error ties the best (below the energy at which a fitted GPU is capped the error is flat). ``benchmarks/bench_neusight_kernels.py``
refits them (and the leave-one-GPU-out fits) and prints the figures in docs/gpu-validation.md.
The tensor cores' energy per FLOP, :data:`TENSOR_ENERGY_PJ` (carried by both sets), is fitted by
:func:`archsim.validation.tensor_power.fit_tensor_energy` on DeepBench's fp16 GEMMs of the T4 and V100
by the same rule (the largest grid energy whose error — the two GPUs' seconds MAPE summed — ties the
best; the T4's capped GEMMs bound it), every other constant the vTrain fit's;
``benchmarks/bench_tensor_power.py`` refits it. It caps the T4, L4 and H100 PCIe; the A100, H100 SXM, H200 and V100
stay under their boards' caps.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass, replace

import numpy as np

from archsim.choices.devices import ELEMENT_BYTES, FP8
from archsim.devices.catalog import GpuSpec
from archsim.errors import InputError

TENSOR_DTYPES = ("fp16", "bf16")
FP8_PER_FP16 = 2
"""Hopper's tensor cores run fp8 MMAs at twice their fp16 rate (H100 SXM5 datasheet, dense: 1,979 against 989
TFLOP/s; the catalog's ``HOPPER_PEAKS``) at one board power; their energy per clock is taken as the same in both,
so an fp8 FLOP costs 1/2 an fp16 one in the power cap (:func:`energy_per_flop`): an assumption, fitted on nothing
(DeepBench's GEMMs, which fit the tensor energy, are fp16)."""


@dataclass(frozen=True)
class KernelConstants:
    """The model's fitted constants. gemm: fraction of the SMs' peak a well-fed tile reaches;
    feed: operand reuse tm·tn/(tm+tn) (elements) at which a tile is fully fed; memory: achieved
    fraction of HBM bandwidth of elementwise kernels; softmax / layernorm: the same for those kernels; launch_s: seconds per kernel launch; energy_pj: board energy per FP32
    FLOP (pJ) of a 12 nm GPU rated at a 1 GHz boost clock, scaled by :func:`energy_per_flop` (the power
    cap); gemm_memory: achieved fraction of HBM bandwidth of a GEMM's traffic (reads of A and B, the
    epilogue's write of C, split-K's reduction); host_s: seconds the host (Python, PyTorch's
    dispatcher) spends issuing one op — when a pass's ops are issued slower than the GPU runs them,
    the GPU waits (:mod:`archsim.training.iteration`); tensor_energy_pj: the same board energy per
    FLOP for fp16/bf16 on the tensor cores (its power cap; the default, 1e-9 pJ, caps nothing).
    Fractions are positive; seconds are ≥ 0 (a device file may state no overheads)."""

    gemm: float
    feed: float
    memory: float
    softmax: float
    layernorm: float
    launch_s: float
    energy_pj: float = 1e-9
    gemm_memory: float = 1.0
    host_s: float = 0.0
    tensor_energy_pj: float = 1e-9

    def __post_init__(self) -> None:
        values = astuple(self)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < np.inf for v in values):
            raise InputError(f"kernel constants must be finite numbers ≥ 0, got {self}", field="constants")
        if not all(v > 0 for v in (self.gemm, self.feed, self.memory, self.softmax, self.layernorm,
                                   self.energy_pj, self.gemm_memory, self.tensor_energy_pj)):
            raise InputError(f"kernel fractions must be positive, got {self}", field="constants")


TENSOR_ENERGY_PJ = 1.122
"""Board energy per fp16/bf16 tensor-core FLOP (pJ) of a 12 nm GPU rated at 1 GHz, fitted by
:func:`archsim.validation.tensor_power.fit_tensor_energy` on DeepBench's fp16 GEMMs of the T4 and
V100 alone (refit by benchmarks/bench_tensor_power.py)."""

FITTED = KernelConstants(gemm=0.860, feed=32.2, memory=0.769, softmax=0.646, layernorm=0.791, launch_s=16.0e-6,
                         energy_pj=11.22, gemm_memory=2.11, tensor_energy_pj=TENSOR_ENERGY_PJ)
"""Fitted on all five GPUs' files from :data:`archsim.validation.neusight.FIT_START` (see the module
docstring; refit by benchmarks/bench_neusight_kernels.py), but for ``tensor_energy_pj``
(:data:`TENSOR_ENERGY_PJ`, DeepBench's fp16 GEMMs). ``gemm_memory`` above 1 says that part of
the GEMM traffic counted at HBM (C's write-back, re-read tiles) is served by the L2 instead."""


def one_fraction(gemm: float, memory: float, launch_s: float, host_s: float = 0.0,
                 base: KernelConstants = FITTED) -> KernelConstants:
    """Constants with one achieved HBM fraction ``memory`` for every memory-bound class and a GEMM's
    traffic: what the vTrain fit (:mod:`archsim.training.fitted`) and a device file state. ``feed``,
    ``energy_pj`` and ``tensor_energy_pj`` stay ``base``'s: the SIMT tiles' feed and the power cap's
    energies per FLOP (fp32 on the lanes, fp16/bf16 on the tensor cores), fitted on single kernels."""
    return replace(base, gemm=gemm, memory=memory, softmax=memory, layernorm=memory, gemm_memory=memory,
                   launch_s=launch_s, host_s=host_s)


def element_bytes(dtype: str) -> int:
    """Bytes per element of ``dtype`` (fp32, tf32, fp16, bf16)."""
    if dtype not in ELEMENT_BYTES:
        raise InputError(f"unknown dtype {dtype!r}; choose one of {', '.join(ELEMENT_BYTES)}", field="dtype")
    return ELEMENT_BYTES[dtype]


def sm_flops(spec: GpuSpec, dtype: str = "fp32") -> float:
    """Peak FLOP/s of one SM at ``dtype``: fp32 on the FP32 lanes (lanes × 2 × clock), fp16/bf16 on
    the tensor cores (their MACs per clock × 2 × clock). A datasheet figure, never a fitted one."""
    element_bytes(dtype)
    if dtype in ("fp32", "tf32") or spec.array_unit != "tensor core":
        lanes = spec.fp32_lanes_per_sm
        if not lanes:
            raise InputError(f"{spec.name}: FP32 lanes per SM not in the catalog", field="gpu")
        return 2.0 * lanes * spec.clock_hz
    return 2.0 * spec.tensor_cores_per_sm * spec.mma_rows * spec.mma_cols * spec.clock_hz


def on_tensor_cores(spec: GpuSpec, dtype: str) -> bool:
    """Whether ``dtype`` GEMMs on ``spec`` run on its tensor cores (fp16/bf16, and fp8's operands, on a chip that
    has them)."""
    return (dtype in TENSOR_DTYPES or dtype == FP8) and spec.array_unit == "tensor core"


def energy_per_flop(spec: GpuSpec, constants: KernelConstants = FITTED, dtype: str = "fp32") -> float:
    """Joules per FLOP of ``dtype`` on ``spec`` at its rated boost clock: the path's energy constant
    (``tensor_energy_pj`` on the tensor cores, half of it for fp8's operands: :data:`FP8_PER_FP16`; else
    ``energy_pj``) × (process nm / 12) × (boost GHz).
    Why: switching energy is C·V² per op; C shrinks with the feature size, and a part rated for a
    higher clock runs at a higher voltage (taken as V² ∝ rated clock)."""
    pj = constants.tensor_energy_pj if on_tensor_cores(spec, dtype) else constants.energy_pj
    if dtype == FP8:  # twice the MMAs a clock at one energy a clock (FP8_PER_FP16)
        pj /= FP8_PER_FP16
    return pj * 1e-12 * spec.process_nm / 12.0 * spec.clock_hz / 1e9


def sustained_flops(spec: GpuSpec, constants: KernelConstants = FITTED, dtype: str = "fp32",
                    watts: float | None = None) -> float:
    """FLOP/s of ``dtype`` the board power allows the whole GPU to sustain: ``watts`` (default the
    chip's reference board, ``spec.tdp_w``) / :func:`energy_per_flop`; inf where there is no power
    figure or process node."""
    power = spec.tdp_w if watts is None else watts
    if not (power and spec.process_nm):
        return float("inf")
    return power / energy_per_flop(spec, constants, dtype)


__all__ = ["FITTED", "FP8_PER_FP16", "TENSOR_DTYPES", "TENSOR_ENERGY_PJ", "KernelConstants", "element_bytes",
           "energy_per_flop",
           "on_tensor_cores", "one_fraction", "sm_flops", "sustained_flops"]
