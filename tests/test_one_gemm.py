"""One GEMM function for every dtype (archsim.devices.kernels.path_gemm_seconds through
archsim.devices.kernel_ops.op_seconds): fp16 on a GPU's tensor-core tiles, fp32 on its SIMT tiles.

References: closed forms worked by hand from the datasheet figures (a V100 SXM2: 80 SMs, 125 TFLOP/s
fp16 tensor, 64 FP32 lanes per SM at 1,530 MHz, 900 GB/s, 2,048 L2 bytes per clock), and a property
that holds for the shared mechanism: with the same constants, on a GPU whose tensor cores give an SM
at least 4× the FLOP/s of its FP32 lanes, a GEMM too shallow for split-K (k < 2 × SPLIT_MIN_K) is never
slower in fp16 than in fp32 — a tensor tile is at most 4× smaller than the SIMT reference area, its
operands are half the bytes, and C's write is inside the roofline rather than after it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from archsim.devices.catalog import GPUS, chip_of
from archsim.devices.kernel_constants import FITTED, one_fraction, sm_flops
from archsim.devices.kernel_ops import device_gemm_seconds, op_seconds
from archsim.devices.kernels import SPLIT_MIN_K
from archsim.lowering import Gemm, TrainingOp

V100 = GPUS["v100-32gb"]
CONSTANTS = one_fraction(gemm=0.9, memory=0.8, launch_s=5e-6, base=FITTED)  # one set for both dtypes


def test_fp16_runs_one_wave_of_tensor_tiles_and_fp32_one_of_simt_tiles_by_hand():
    launch = CONSTANTS.launch_s
    # fp16: 80 tiles of 256 × 128 (m 256, n 128·80) fill the 80 SMs once; a 256×128 tile reuses
    # 256·128/384 = 85.3 operands per load, above the 510.6 MACs/clock/SM × 2 bytes / (2,048 / 80)
    # L2 bytes/clock/SM = 39.9 a tile needs to be fed, so it runs at the SM's share of 125 TFLOP/s × gemm;
    # its operands and C through HBM, (256·4096 + 4096·10240 + 256·10240) · 2 bytes, take less
    k, n = 4096, 128 * 80
    compute = 2 * 256 * 128 * k / (125e12 / 80 * 0.9)
    assert (256 * k + k * n + 256 * n) * 2 / (900e9 * 0.8) < compute
    op = [TrainingOp("gemm", "F", (Gemm(256, k, n),))]
    assert op_seconds(op, V100, CONSTANTS, "fp16")[0] == pytest.approx(compute + launch, rel=1e-12)
    # fp32: 80 SIMT tiles of 128 × 128 (one per SM: 128·128 outputs are the SM's whole reference area),
    # reuse 64 ≥ feed 45.1: fed; 64 lanes × 2 × 1.53 GHz per SM × gemm; not power-capped (300 W /
    # 17.2 pJ per FLOP > 15.7 TFLOP/s); reads of A and B hidden under the loop, then C's write in the
    # epilogue at gemm_memory (0.8 here) × 900 GB/s
    n = 128 * 80
    loop = 2 * 128 * 128 * k / (64 * 2 * 1.53e9 * 0.9)
    assert (128 * k + k * n) * 4 / (900e9 * 0.8) < loop
    write = 128 * n * 4 / (900e9 * 0.8)
    op = [TrainingOp("gemm", "F", (Gemm(128, k, n),))]
    assert op_seconds(op, V100, CONSTANTS, "fp32")[0] == pytest.approx(loop + write + launch, rel=1e-12)


# catalog GPUs with tensor cores and described FP32 lanes, whose SM gets ≥ 4× the FLOP/s on tensor cores
FAST_TENSOR = [name for name, device in GPUS.items() if (chip := chip_of(device)) is not None
               and chip.array_unit == "tensor core" and chip.fp32_lanes_per_sm
               and sm_flops(chip, "fp16") >= 4 * sm_flops(chip, "fp32") and "fp16" in dict(device.peaks)]


def test_the_property_has_gpus_to_run_on():
    assert {"v100-32gb", "t4-16gb", "l4-24gb", "h100-80gb-sxm"} <= set(FAST_TENSOR)


@given(name=st.sampled_from(FAST_TENSOR), m=st.integers(1, 8192), n=st.integers(1, 8192),
       k=st.integers(1, 2 * SPLIT_MIN_K - 1), count=st.integers(1, 64))
def test_a_shallow_gemm_is_never_slower_in_fp16_than_in_fp32(name, m, n, k, count):
    device = GPUS[name]
    half = float(device_gemm_seconds(m, k, n, count, device, CONSTANTS, "fp16"))
    single = float(device_gemm_seconds(m, k, n, count, device, CONSTANTS, "fp32"))
    assert half <= single * (1 + 1e-12)


@given(name=st.sampled_from(FAST_TENSOR), dtype=st.sampled_from(["fp16", "fp32"]), m=st.integers(1, 4096),
       n=st.integers(1, 4096), k=st.integers(1, 8192), count=st.integers(1, 16), grow=st.sampled_from(["m", "n", "count"]))
def test_more_rows_columns_or_batch_never_make_a_gemm_faster(name, dtype, m, n, k, count, grow):
    """Tiles and waves only grow with the output (and the batch), whatever the dtype's tiles."""
    device = GPUS[name]
    shape = {"m": m, "n": n, "count": count}
    bigger = {**shape, grow: shape[grow] + 1}
    before = float(device_gemm_seconds(shape["m"], k, shape["n"], shape["count"], device, CONSTANTS, dtype))
    after = float(device_gemm_seconds(bigger["m"], k, bigger["n"], bigger["count"], device, CONSTANTS, dtype))
    assert after >= before * (1 - 1e-12)


def test_a_chip_feeds_its_tensor_tiles_from_its_l2_as_its_training_device_does():
    """validate-gpu's entry (a chip, kernels.gemm_seconds) and training's (its Device) take one feed:
    on an A100 SXM4 (5,120 L2 bytes per clock over 108 SMs at 1.41 GHz; 4 tensor cores of 16×16 MACs
    per SM) a tile needs a reuse of 1,024 MACs/clock × 2 bytes / 47.4 bytes/clock = 43.2 operands; the
    256 × 64 × 128 GEMM's fastest tile, 64 × 64 (8 tiles, one wave; 2 of 128×128 or 4 of 128×64 do
    more work at a rate at most 1/0.74 higher), reuses 32, so its SM runs at the L2's rate: 47.4 / 2
    operands per clock × 32 MACs per operand × 1.41 GHz × gemm — the same whether the peak is the
    chip's 311.9 TFLOP/s (its MMA shape and clock) or the board's stated 312."""
    from archsim.devices.catalog import KNOWN_GPUS
    from archsim.devices.kernels import gemm_seconds as chip_gemm_seconds

    l2_macs_per_s = 5120 / 108 / 2 * (64 * 64 / 128) * 1.41e9 * 0.9
    expected = 64 * 64 * 64 / l2_macs_per_s + CONSTANTS.launch_s
    chip = KNOWN_GPUS["a100-80gb"]
    assert float(chip_gemm_seconds(1, 256, 128, 64, chip, CONSTANTS, "fp16")) == pytest.approx(expected, rel=1e-12)
    assert float(device_gemm_seconds(256, 64, 128, 1, GPUS["a100-80gb"], CONSTANTS, "fp16")) == pytest.approx(expected,
                                                                                                         rel=1e-12)


def test_one_path_chooser_for_a_board_and_a_bare_chip():
    """``kernels.spec_path`` decides for both (``kernel_ops.gemm_path`` passes the board's tiles): the
    V100 board's fp16 tiles run at its datasheet's 125 TFLOP/s over 80 SMs, the bare chip's at its MMA
    shape × clock (8 tensor cores × 64 FMAs per clock per SM × 2 × 1,530 MHz); fp32 takes the same SIMT
    path on either; a P100 board, which states no fp16 peak, refuses fp16, while the bare P100 chip runs
    fp16 storage on its FP32 lanes (3,584 lanes × 2 × 1,303 MHz over 56 SMs)."""
    from archsim.devices.kernel_ops import gemm_path
    from archsim.devices.kernels import spec_path
    from archsim.errors import InputError

    board = gemm_path(V100, "fp16", CONSTANTS)
    chip = spec_path(chip_of(V100), CONSTANTS, "fp16")
    assert board is not None and board.core_flops == pytest.approx(125e12 / 80, rel=1e-12)
    assert chip.core_flops == pytest.approx(8 * 64 * 2 * 1.53e9, rel=1e-12)
    assert board.splits == chip.splits == (1,)
    assert gemm_path(V100, "fp32", CONSTANTS) == spec_path(chip_of(V100), CONSTANTS, "fp32")
    p100 = GPUS["p100-pcie-16gb"]
    with pytest.raises(InputError, match="no fp16 peak"):
        gemm_path(p100, "fp16", CONSTANTS)
    lanes = spec_path(chip_of(p100), CONSTANTS, "fp16")
    assert lanes.needed_reuse is None and lanes.core_flops == pytest.approx(3584 * 2 * 1.303e9 / 56, rel=1e-12)
