"""FlashAttention-2's non-matmul work: counted by hand from its Algorithms 1 and 2, priced at the CUDA guide's
special-function rate and the FP32 lanes, checked against the papers' published device rates."""

from dataclasses import replace
from pathlib import Path

import pytest

from archsim.devices.catalog import GPUS, chip_of
from archsim.devices.device import Arrays, Device
from archsim.devices.device_file import load_device
from archsim.devices.kernel_ops import op_seconds
from archsim.devices.nonmatmul import (
    fused_matmul_fraction,
    mma_sync_fraction,
    mufu_per_sm,
    nonmatmul_rates,
    nonmatmul_seconds,
)
from archsim.errors import InputError
from archsim.training.fitted import A100_KERNELS
from archsim.training.flash_blocks import flash_nonmatmul, flash_tiles
from archsim.training.layer_ops import flash_attention_ops

ROOT = Path(__file__).resolve().parents[1]


def test_causal_256_at_head_dim_64_counted_by_hand():
    # tiles 128 × 128 both ways at head dim 64. Query block 0 (rows 0–127) meets key block 0 only; query
    # block 1 (rows 128–255) key blocks 0 and 1: 3 blocks of 128 · 128 = 16,384 elements, 49,152 in all.
    # Forward, per head: 49,152 exps of P̃, 3 · 128 = 384 row rescales, 2 · 256 for 1/ℓ and log ℓ = 50,048;
    # FP32: 3 · 49,152 = 147,456, (64 + 1) · 384 = 24,960 per block row, (64 + 1) · 256 = 16,640 at the end.
    # Backward: one exp and 3 FP32 operations per element: 49,152 and 147,456. Two heads double all.
    forward, backward = flash_nonmatmul(256, 64, 2, flash_tiles(64))
    assert (forward.exps, forward.lane_ops) == (2 * 50_048, 2 * (147_456 + 24_960 + 16_640))
    assert (backward.exps, backward.lane_ops) == (2 * 49_152, 2 * 147_456)


def test_not_causal_counts_the_whole_grid_of_tiles():
    # s = 300 at head dim 128, forward 128 × 64, backward 64 × 128: ⌈300/128⌉ · ⌈300/64⌉ = 3 · 5 = 15
    # forward blocks, ⌈300/64⌉ · ⌈300/128⌉ = 5 · 3 = 15 backward ones, each a whole 8,192-element tile.
    forward, backward = flash_nonmatmul(300, 128, 1, flash_tiles(128), causal=False)
    assert forward.exps == 15 * 8192 + 15 * 128 + 2 * 384
    assert backward.exps == 15 * 8192 and backward.lane_ops == 3 * 15 * 8192


def test_the_flash_ops_carry_the_counts():
    forward, backward = flash_attention_ops(256, 64, 2, 2)
    assert (forward.exps, backward.exps) == (2 * 50_048, 2 * 49_152)
    assert forward.lane_ops > 0 and backward.lane_ops > 0


# NVIDIA's "Throughput of Native Arithmetic Instructions (Number of Results per Clock Cycle per Multiprocessor)",
# the row "32-bit [approximate] floating-point reciprocal, reciprocal square root, base-2 logarithm, base 2
# exponential, sine, cosine", typed from the two tables (not from archsim):
# the CUDA C Programming Guide's "Arithmetic Instructions" table before Ampere (columns 3.0 … 7.x) ...
PROGRAMMING_GUIDE_PRE_AMPERE = {(5, 0): 32, (5, 2): 32, (5, 3): 32, (6, 0): 16, (6, 1): 32, (6, 2): 32,
                                (7, 0): 16, (7, 2): 16, (7, 5): 16}
# ... and the CUDA C++ Best Practices Guide (CUDA 13.1), §12.1.1, Table 5 (columns 7.5 … 12.1, one value, 16)
BEST_PRACTICES_13 = {(7, 5): 16, (8, 0): 16, (8, 6): 16, (8, 9): 16, (9, 0): 16}
NVIDIA_TABLES = PROGRAMMING_GUIDE_PRE_AMPERE | BEST_PRACTICES_13  # both say 16 for 7.5, where they overlap


@pytest.mark.parametrize(("cc", "rate"), sorted(NVIDIA_TABLES.items()))
def test_special_function_rate_is_nvidias_table(cc, rate):
    assert mufu_per_sm(cc) == rate


@pytest.mark.parametrize("gpu", sorted(GPUS))
def test_every_catalog_gpu_has_its_rate_from_the_tables(gpu):
    # a chip added with a compute capability neither table lists fails here, not silently at a neighbour's rate
    cc = chip_of(GPUS[gpu]).compute_capability
    assert cc in NVIDIA_TABLES and mufu_per_sm(cc) == NVIDIA_TABLES[cc]


def test_an_unlisted_compute_capability_is_refused():
    with pytest.raises(InputError, match="compute capability 4.0"):
        mufu_per_sm((4, 0))


def test_rates_give_the_papers_figures():
    # FlashAttention-3 §3.1, note 5: 16 · 132 SMs · 1830 MHz = 3.9 TFLOPS of special functions on H100 SXM5;
    # FlashAttention-2 §3.1: the A100's 19.5 TFLOP/s of non-matmul FP32 (an FMA two FLOPs).
    exps, _ = nonmatmul_rates(GPUS["h100-80gb-sxm"])
    assert exps / 1e12 == pytest.approx(3.9, abs=0.05)
    _, lanes = nonmatmul_rates(GPUS["a100-80gb"])
    assert 2 * lanes / 1e12 == pytest.approx(19.5, abs=0.05)


def test_mma_sync_reaches_two_thirds_on_hopper_only():
    assert mma_sync_fraction((9, 0)) == pytest.approx(2 / 3)
    assert mma_sync_fraction((8, 0)) == 1.0
    assert fused_matmul_fraction(GPUS["h100-80gb-sxm"]) == pytest.approx(2 / 3)
    assert fused_matmul_fraction(GPUS["a100-80gb"]) == 1.0


def test_a_device_file_without_lanes_uses_one_lane_per_array_row():
    # 8 arrays of 128 rows at 1050 MHz; its [vector] set aside (tests/test_vector_unit.py reads it)
    tpu = replace(load_device(ROOT / "configs" / "devices" / "tpu_v4_like.toml"), vector=None)
    assert nonmatmul_rates(tpu) == pytest.approx((8 * 128 * 1.05e9, 8 * 128 * 1.05e9))
    with_lanes = replace(tpu, lanes=Arrays(4, 8, 16, "os", 1.05e9))
    assert nonmatmul_rates(with_lanes) == pytest.approx((4 * 8 * 16 * 1.05e9,) * 2)
    assert fused_matmul_fraction(tpu) == 1.0


def _device(arrays: int) -> Device:
    return Device("lanes", Arrays(arrays, 16, 16, "os", 1e9), Arrays(arrays, 4, 8, "os", 1e9), "arrays",
                  (("fp16", 1e14),), 2**34, 1e12)


@pytest.mark.parametrize("exps", [0, 1, 10**6, 10**9])
def test_more_units_are_never_slower(exps):
    small, large = (nonmatmul_seconds(exps, 3 * exps, _device(n)) for n in (4, 8))
    assert large <= small


@pytest.mark.parametrize("gpu", ["a100-80gb", "h100-80gb-sxm"])
@pytest.mark.parametrize(("s", "hd", "causal"), [(512, 64, True), (2048, 128, False), (4096, 64, False)])
def test_the_non_matmul_work_never_shortens_the_kernel(gpu, s, hd, causal):
    ops = flash_attention_ops(s, hd, 32, 32, causal=causal)
    bare = tuple(replace(op, exps=0, lane_ops=0) for op in ops)
    device = GPUS[gpu]
    with_work, without = op_seconds(ops, device, A100_KERNELS), op_seconds(bare, device, A100_KERNELS)
    assert all(with_work >= without) and any(with_work > without)
