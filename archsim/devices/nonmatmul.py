"""A fused attention kernel's non-matmul work: its exponentials and its FP32 row-wise arithmetic, in seconds.

Why: FlashAttention-2 spends time beside its matmuls on the softmax, and does not overlap the two. Dao
2023 ("FlashAttention-2", §3.1): "the A100 GPU has a max theoretical throughput of 312 TFLOPs/s of
FP16/BF16 matmul, but only 19.5 TFLOPs/s of non-matmul FP32. Another way to think about this is that each
non-matmul FLOP is 16× more expensive than a matmul FLOP". Its exponentials run on the SM's
special-function unit (the multi-function unit, MUFU), slower still: Shah et al. 2024 ("FlashAttention-3",
§3.1, "Pingpong scheduling", and its footnote 5) — "the H100 SXM5 GPU has 989 TFLOPS of FP16 matmul but
only 3.9 TFLOPS of special functions such as exponential"; "The CUDA programming guide specifies that 16
operations of special functions can be performed per streaming multiprocessor (SM) per clock cycle. We
multiply 16 by 132 SMs and 1830 MHz clock speed". FlashAttention-3 overlaps them with its asynchronous
WGMMA; FlashAttention-2's synchronous kernel runs them in turn (FlashAttention-3 §3.1–3.2: "the wait
statements ... serialize the execution of softmax and GEMMs").

Rates (results per second), one rule for every device: its vector unit's (``Device.vector``,
:class:`~archsim.devices.device.VectorUnit`: cores × lanes × sublanes × clock, times its results per lane per
clock). A catalog GPU's is built by :func:`chip_kernel_figures` from its chip (its compute capability), as a device
file states its own (``[vector]``, docs/formats.md "Device files"):

* exponentials at :func:`mufu_per_sm` results per SM per
  clock, NVIDIA's table "Throughput of Native Arithmetic Instructions (Number of Results per Clock Cycle per
  Multiprocessor)", row "32-bit [approximate] floating-point reciprocal, reciprocal square root, base-2
  logarithm, base 2 exponential, sine, cosine": 32 on compute capability 5.x, 6.1 and 6.2, 16 on 6.0 and
  7.x (the CUDA C Programming Guide's "Arithmetic Instructions" table before Ampere, columns 3.0 to 7.x); 16
  on 7.5, 8.0, 8.6, 8.9 and 9.0 (the CUDA C++ Best Practices Guide, CUDA 13.1, §12.1.1, Table 5, where the
  table has moved: one value across all its columns, 7.5 to 12.1; FlashAttention-3's note 5 says 16 for the
  H100 too) — a vector unit of the SM's FP32 lanes giving ``mufu ÷ lanes`` exponentials per lane per clock;
* the FP32 operations at one per FP32 lane per clock (an FMA is one operation: 2 FLOPs, as the 19.5 TFLOP/s
  above count it);
* 32-bit integer instructions (multiply IMAD, logic LOP3, shifts, byte permutes, compares: a dropout mask's
  random numbers, :func:`~archsim.training.flash_blocks.dropout_int_ops`) at :func:`int_per_sm` results per SM per
  clock, the same table's rows "32-bit integer add/subtract/extended-precision add", "multiply/multiply-add/
  multiply-high", "shift", "compare/minimum/maximum" and "bitwise AND/OR/XOR": 64 on 7.x, 8.x and 9.0 (half
  the 128 FP32 lanes of an sm_86/89/90 SM, all 64 of an A100's); before 7.0 archsim prices them on the FP32
  lanes (an assumption: FlashAttention-2 runs on sm80 and later only);
* a device without a vector unit (a file with no ``[vector]``, a catalog chip not described: no compute
  capability or FP32 lanes): both on its ``lanes``, one result per lane per clock; else on one lane per row of
  each array (the vector unit that feeds an array is as wide as its rows) — an assumption, stated, not a
  described unit. The TPU-v4-like file states its VPU as JAX's ``tpu_info`` gives TPU v4: 2 TensorCores of 128
  lanes × 8 sublanes, 2,048 a chip (docs/training.md, "FlashAttention's non-matmul work").

The kernel's instruction path: FlashAttention-2 compiles sm80's ``mma.sync`` on Hopper too (FlashAttention-3
§1: "not using Hopper-specific instructions in place of Ampere ones when targeting the Tensor Cores"), and
"Without the wgmma instruction, the older mma.sync instruction can only reach about ⅔ the peak
throughput of Hopper Tensor Cores" (FlashAttention-3's authors, PyTorch blog, 2024-07-11, note 1, citing
Luo et al. 2024, arXiv:2402.13499): :func:`mma_sync_fraction`, a catalog GPU's ``Device.fused_gemm_fraction``
(a device file's ``[compute] fused_gemm_fraction``, 1 unless stated).

Shared memory: 32 banks, each serving one 4-byte word per clock (the CUDA C++ Programming Guide's
"Shared Memory" sections for compute capability 5.x onward), 128 bytes per SM per clock (P100: 56 SMs × 128 B ×
1.328 GHz = 9.5 TB/s, the peak gpumembench's authors state, ekondis/gpumembench issue #2). A fused kernel's
GEMMs (FlashAttention-2's ``utils.h`` ``gemm``) copy the next k-slice from shared memory while the tensor cores
run this one, on separate pipes: its GEMM time is the longer of the two (:func:`smem_seconds`, at
``Device.smem_bytes_per_clock`` per core: a catalog GPU's 128 on compute capability 5.x–9.x, a device file's
``[memory] smem_bytes_per_clock``; 0, not described: no bound), a lower bound —
the stores of P and dS before a ``__syncthreads`` are not hidden when one CTA fills the SM (not modelled).
"""

from __future__ import annotations

from archsim.devices.device import Device, VectorUnit
from archsim.errors import InputError

# compute capability major (minor where it matters) → special-function results per SM per clock (module docstring)
SMEM_BYTES_PER_CLOCK = 128  # per SM: 32 banks × 4 bytes a clock (module docstring)
_MUFU_PER_SM = {(5, None): 32, (6, 0): 16, (6, 1): 32, (6, 2): 32, (7, None): 16, (8, None): 16, (9, 0): 16}
# compute capability major → 32-bit integer results per SM per clock (module docstring; earlier chips: FP32 lanes)
_INT_PER_SM = {7: 64, 8: 64, 9: 64}


def mufu_per_sm(cc: tuple[int, int]) -> int:
    """Special-function (exp2, log2, reciprocal) results per SM per clock of compute capability ``cc``
    (module docstring: the CUDA C Programming Guide's throughput table)."""
    rate = _MUFU_PER_SM.get(cc, _MUFU_PER_SM.get((cc[0], None)))
    if rate is None:
        raise InputError(f"no special-function rate for compute capability {cc[0]}.{cc[1]}", field="gpu")
    return rate


def int_per_sm(cc: tuple[int, int], fp32_lanes_per_sm: int) -> int:
    """32-bit integer results per SM per clock of compute capability ``cc`` (module docstring): the table's 64
    on 7.x–9.x, else the SM's ``fp32_lanes_per_sm``."""
    return _INT_PER_SM.get(cc[0], fp32_lanes_per_sm)


def mma_sync_fraction(cc: tuple[int, int]) -> float:
    """The fraction of the tensor peak a kernel built on sm80's ``mma.sync`` reaches on compute capability
    ``cc``: about ⅔ on Hopper (9.x, which has ``wgmma``), all of it where ``mma.sync`` is the native
    instruction (module docstring)."""
    return 2 / 3 if cc[0] == 9 else 1.0


def chip_kernel_figures(cc: tuple[int, int], fp32_lanes_per_sm: int) -> tuple[VectorUnit | None, float, float]:
    """What a fused kernel reads of a GPU of compute capability ``cc`` with ``fp32_lanes_per_sm`` FP32 lanes per
    SM: (its SM's vector unit, shared-memory bytes per SM per clock, :func:`mma_sync_fraction`) — the figures a
    device file states as ``[vector]``, ``[memory] smem_bytes_per_clock`` and ``[compute] fused_gemm_fraction``
    (cores and clock left to the device's arrays). Not described (``cc`` (0, 0) or no lanes): no vector unit, no
    shared-memory bound, all of the peak."""
    if cc == (0, 0) or not fp32_lanes_per_sm:
        return None, 0.0, 1.0
    vector = VectorUnit(fp32_lanes_per_sm, exp_per_clock=mufu_per_sm(cc) / fp32_lanes_per_sm,
                        int_per_clock=int_per_sm(cc, fp32_lanes_per_sm) / fp32_lanes_per_sm)
    smem = float(SMEM_BYTES_PER_CLOCK) if 5 <= cc[0] <= 9 else 0.0
    return vector, smem, mma_sync_fraction(cc)


def nonmatmul_rates(device: Device) -> tuple[float, float]:
    """(exponentials per second, FP32 operations per second) of ``device`` (module docstring's rule): its vector
    unit's; else one per lane per clock (half its lanes' ``peak_flops``, which counts an FMA as 2), else one lane
    per array row, for both."""
    if device.vector is not None:
        return device.vector.rates(device.arrays)
    if device.lanes is not None:
        rate = device.lanes.peak_flops / 2
    else:
        rate = device.arrays.count * device.arrays.rows * device.arrays.clock_hz
    return rate, rate


def assumed_lanes(device: Device) -> int | None:
    """The lanes :func:`nonmatmul_rates` assumes for ``device``'s non-matmul work where its file states none (no
    ``[vector]``, no ``[compute] lanes``): one per array row, arrays × rows, one result a lane and clock. None where
    the file states the unit or the lanes, and for a catalog GPU (its SM's own lanes, :func:`chip_kernel_figures`)."""
    if device.catalog is not None or device.vector is not None or device.lanes is not None:
        return None
    return device.arrays.count * device.arrays.rows


def assumed_lanes_note(device: Device) -> str | None:
    """The note that ``device``'s FlashAttention exponentials and FP32 row work run on :func:`assumed_lanes`, naming
    the count and the key that states the unit: a silent figure that moves a fused kernel's time (a 4 × 128 × 128
    chip's 512 lanes at 1 GHz against a 4,096-lane unit: GPT-2's fused forward 0.160 against 0.051 ms). None
    otherwise."""
    lanes = assumed_lanes(device)
    if lanes is None:
        return None
    arrays = device.arrays
    return (f"{device.name} states no [vector] unit: FlashAttention's exponentials and FP32 row work run on an "
            f"assumed {lanes:,} lanes, one per array row ({arrays.count} arrays × {arrays.rows} rows, one result a "
            "lane and clock); state the chip's vector unit as [vector] lanes (docs/formats.md, Device files)")


def int_rate(device: Device) -> float:
    """32-bit integer results per second of ``device``: its vector unit's; else its FP32 operation rate
    (:func:`nonmatmul_rates`)."""
    if device.vector is not None:
        return device.vector.int_rate(device.arrays)
    return nonmatmul_rates(device)[1]


def nonmatmul_seconds(exps: float, lane_ops: float, device: Device, int_ops: float = 0) -> float:
    """Seconds of ``exps`` special-function results, ``lane_ops`` FP32 operations and ``int_ops`` 32-bit integer
    instructions on ``device``, run one after the other and after the matmuls, as FlashAttention-2's
    synchronous kernel runs them (an assumption: warps of other CTAs on the SM may hide some of it)."""
    exp_rate, lane_rate = nonmatmul_rates(device)
    seconds = exps / exp_rate + lane_ops / lane_rate
    return seconds + int_ops / int_rate(device) if int_ops else seconds


def fused_matmul_fraction(device: Device) -> float:
    """The fraction of its GEMM rate a fused FlashAttention-2 kernel reaches on ``device``: its
    ``fused_gemm_fraction`` (a catalog GPU's :func:`mma_sync_fraction`; a device file's, 1 unless stated)."""
    return device.fused_gemm_fraction


def smem_seconds(smem_bytes: float, device: Device) -> float:
    """Seconds ``smem_bytes`` of shared-memory traffic take on ``device``'s cores at its ``smem_bytes_per_clock``
    each (a catalog GPU of compute capability 5.x–9.x: :data:`SMEM_BYTES_PER_CLOCK`); 0 where it states none."""
    if not device.smem_bytes_per_clock:
        return 0.0
    return smem_bytes / (device.smem_bytes_per_clock * device.sms * device.clock_hz)


__all__ = ["SMEM_BYTES_PER_CLOCK", "assumed_lanes", "assumed_lanes_note", "chip_kernel_figures", "fused_matmul_fraction", "int_per_sm", "int_rate", "mma_sync_fraction",
           "mufu_per_sm", "nonmatmul_rates",
           "nonmatmul_seconds", "smem_seconds"]
