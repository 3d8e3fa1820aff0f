"""An fp8 GEMM (train's --fp8 linear layers, an op's ``gemm_dtype``) on the one tile model: the board's fp8 peak,
1-byte operands, C in the training dtype. The expected seconds are worked by hand from the H100 SXM's datasheet
figures (132 SMs, 1,978.9 dense fp8 TFLOP/s, 3,350 GB/s) and the tensor-core fit's constants."""

from __future__ import annotations

import math

import pytest

from archsim.devices.catalog import KNOWN_GPUS
from archsim.devices.gpu_lookup import gpu
from archsim.devices.kernel_constants import energy_per_flop, sustained_flops
from archsim.devices.kernel_ops import gemm_path, op_seconds
from archsim.lowering import Gemm, TrainingOp
from archsim.training.fitted import A100_KERNELS

H100 = gpu("h100-80gb-sxm")
K = A100_KERNELS
# the reuse a tile needs to be fed from the L2: MACs a clock an SM (989.4 TFLOP/s / 2 / 132 SMs / 1.83 GHz) × 2 bytes
# over the L2's bytes a clock an SM (the A100's 5,120 / 108, doubled: the catalog's assumption for Hopper)
NEEDED = 989.4e12 / 2 / 132 / 1.83e9 * 2 / (5120 / 108 * 2)


def hand_seconds(m: int, k: int, n: int, tflops: float, operand: int, out: int) -> float:
    """Seconds of out[m×n] = A[m×k]·B[k×n]: the best tile's ⌈tiles / 132⌉ waves, each one tile's 2·tm·tn·k FLOPs at an
    SM's share of the peak × the fitted efficiency × its feed (its reuse tm·tn/(tm + tn) over the 43.2 the L2 feed
    needs, at most 1: 64 × 64 is fed 32/43.2, 128 × 64 42.7/43.2, the rest fully), against the reads and C's write at
    the fitted HBM fraction, plus one launch."""
    sm = tflops * 1e12 / 132 * K.gemm
    best = min(math.ceil(math.ceil(m / tm) * math.ceil(n / tn) / 132) * 2 * tm * tn * k
               / (sm * min(1.0, tm * tn / (tm + tn) / NEEDED))
               for tm, tn in ((256, 128), (128, 256), (128, 128), (256, 64), (64, 256), (128, 64), (64, 128), (64, 64)))
    traffic = ((m * k + k * n) * operand + m * n * out) / (3350e9 * K.gemm_memory)
    return max(best, traffic) + K.launch_s


def test_the_fp8_path_is_the_tensor_tiles_at_the_fp8_peak():
    bf16, fp8 = (gemm_path(H100, dtype, K) for dtype in ("bf16", "fp8"))
    assert fp8.core_flops * fp8.cores == pytest.approx(1978.9e12)  # the datasheet's dense fp8 (bf16: 989.4)
    assert bf16.core_flops * bf16.cores == pytest.approx(989.4e12)
    assert fp8.tiles == bf16.tiles and fp8.splits == (1,) and not fp8.epilogue
    # twice the MACs a clock at half the bytes an operand: the same reuse a tile needs from the L2
    assert fp8.needed_reuse == pytest.approx(bf16.needed_reuse, rel=1e-3) == pytest.approx(NEEDED, rel=1e-3)


@pytest.mark.parametrize("shape", [(8192, 4096, 4096), (8192, 4096, 14336), (8192, 14336, 4096)])
def test_an_fp8_gemm_takes_the_hand_counted_seconds(shape):
    m, k, n = shape
    op = TrainingOp("fc", "F", (Gemm(m, k, n),), gemm_dtype="fp8")
    plain = TrainingOp("fc", "F", (Gemm(m, k, n),))
    fp8, bf16 = op_seconds([op, plain], H100, K, "bf16")
    assert fp8 == pytest.approx(hand_seconds(m, k, n, 1978.9, 1, 2), rel=1e-12)
    assert bf16 == pytest.approx(hand_seconds(m, k, n, 989.4, 2, 2), rel=1e-12)
    # compute-bound: the same tiles and waves at twice the rate (1,978.9 against 989.4 TFLOP/s)
    assert bf16 - K.launch_s == pytest.approx(2 * (fp8 - K.launch_s), rel=2e-4)


def test_a_memory_bound_fp8_gemm_reads_one_byte_and_writes_two():
    m, k, n = 256, 256, 65536  # 512 tiles of 256 × 128, 4 waves of little work against 50 MB of traffic
    op = TrainingOp("fc", "F", (Gemm(m, k, n),), gemm_dtype="fp8")
    traffic = ((m * k + k * n) * 1 + m * n * 2) / (3350e9 * K.gemm_memory)
    assert traffic > math.ceil(512 / 132) * 2 * 256 * 128 * k / (1978.9e12 / 132 * K.gemm)
    assert op_seconds([op], H100, K, "bf16")[0] == pytest.approx(traffic + K.launch_s, rel=1e-12)
    assert hand_seconds(m, k, n, 1978.9, 1, 2) == pytest.approx(traffic + K.launch_s, rel=1e-12)


def test_an_fp8_flop_costs_half_an_fp16_one_in_the_power_cap():
    chip = KNOWN_GPUS["h100-pcie"]  # 350 W: its fp16 GEMMs are capped (docs/training.md), so are its fp8 ones
    assert energy_per_flop(chip, K, "fp8") == pytest.approx(energy_per_flop(chip, K, "fp16") / 2)
    fp16_cap, fp8_cap = (sustained_flops(chip, K, dtype, 350) for dtype in ("fp16", "fp8"))
    assert fp8_cap == pytest.approx(2 * fp16_cap)
    assert fp16_cap < 756.5e12 and fp8_cap < 1513e12  # below both datasheet peaks: capped alike
    assert gemm_path(gpu("h100-80gb-pcie"), "fp8", K).sustained_flops == pytest.approx(fp8_cap)


def test_a_board_without_an_fp8_peak_has_no_fp8_path():
    from archsim.errors import InputError

    with pytest.raises(InputError, match="has no fp8 peak"):
        gemm_path(gpu("a100-80gb"), "fp8", K)
