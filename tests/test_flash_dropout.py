"""FlashAttention-2's attention dropout: the integer work of drawing its mask in the kernel (Philox), counted by
hand from the Philox definition (Salmon et al. 2011), priced at the CUDA guide's 32-bit integer rate."""

from dataclasses import replace

import pytest

from archsim.devices.catalog import GPUS, chip_of
from archsim.devices.kernel_ops import op_seconds
from archsim.devices.nonmatmul import int_per_sm, int_rate, nonmatmul_rates, nonmatmul_seconds
from archsim.training.fitted import A100_KERNELS
from archsim.training.flash_blocks import (
    PHILOX_CALL_OPS,
    PHILOX_ROUNDS,
    dropout_int_mults,
    dropout_int_ops,
    flash_nonmatmul,
    flash_tiles,
)
from archsim.training.layer_ops import flash_attention_ops

MASK32 = 0xFFFFFFFF
# Salmon et al. 2011 ("Parallel random numbers: as easy as 1, 2, 3", SC'11), §3.3 and Random123's Philox4x32:
# multipliers M0, M1 and Weyl key increments W0, W1
M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85


def philox4x32(ctr: tuple[int, ...], key: tuple[int, int], rounds: int) -> tuple[tuple[int, ...], dict[str, int]]:
    """Philox4x32-``rounds`` from the paper's definition, counting its lane instructions: each round two 32 × 32 →
    64-bit multiplies (hi and lo of one wide product) and two three-input xors; the key bump between rounds."""
    counts = {"wide multiplies": 0, "three-way xors": 0, "key bumps": 0}
    x0, x1, x2, x3 = ctr
    k0, k1 = key
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + W0) & MASK32, (k1 + W1) & MASK32
            counts["key bumps"] += 2
        p0, p1 = M0 * x0, M1 * x2
        counts["wide multiplies"] += 2
        x0, x1, x2, x3 = (p1 >> 32) ^ x1 ^ k0, p1 & MASK32, (p0 >> 32) ^ x3 ^ k1, p0 & MASK32
        counts["three-way xors"] += 2
    return (x0, x1, x2, x3), counts


def test_the_python_philox_meets_the_published_known_answer():
    # Random123's kat_vectors: philox4x32 10, counter and key 0 → 6627e8d5 e169c58d bc57ac4c 9b00dbd8
    out, _ = philox4x32((0, 0, 0, 0), (0, 0), 10)
    assert out == (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)


def test_instructions_per_philox_call_counted_from_the_definition():
    # The kernel runs 7 rounds (philox.cuh: 6 in the loop, one after); its key bumps depend on the seed alone, so
    # they run once per warp off the lanes; its counter's column is one add a call. 16 bytes: 16 elements of P.
    _, counts = philox4x32((1, 2, 3, 4), (5, 6), PHILOX_ROUNDS)
    assert PHILOX_ROUNDS == 7 and counts["key bumps"] == 12
    assert PHILOX_CALL_OPS == counts["wide multiplies"] + counts["three-way xors"] + 1 == 29
    # Per element: forward (29 + 16 widen + 8 compare + 8 AND) / 16, backward (29 + 16 · 3) / 16 + 2
    assert dropout_int_ops(16, backward=False) == 61
    assert dropout_int_ops(16, backward=True) == 77 + 32
    assert dropout_int_ops(17, backward=False) == 2 * 61  # a second call for the 17th element
    # of them multiplies (priced apart by the energy model): the call's wide multiplies, either way
    assert dropout_int_mults(16) == counts["wide multiplies"] == 14 and dropout_int_mults(17) == 28


def test_dropout_term_of_a_tiny_shape_by_hand():
    # s = 64, head dim 128, one head, causal. Forward with dropout in 128 × 32 tiles: one query block (rows
    # 0–63) meets key blocks 0 and 1 (32 · 1 ≤ 63): 2 · 128 · 32 = 8,192 elements, 512 calls · 61 = 31,232.
    # Backward in 64 × 128: one block, 8,192 elements: 512 · 77 + 2 · 8,192 = 55,808.
    forward, backward = flash_nonmatmul(64, 128, 1, flash_tiles(128, dropout=True), dropout=True)
    assert (forward.int_ops, backward.int_ops) == (31_232, 55_808)
    # On an H200 (132 SMs, 64 integer results an SM a clock: the CUDA guide's row for 9.0) those add
    # 31,232 / (132 · 64 · clock) seconds to the forward kernel, serial with the rest of its body.
    device = GPUS["h200-141gb"]
    assert int_per_sm((9, 0), 128) == 64
    assert int_rate(device) == pytest.approx(132 * 64 * device.clock_hz)
    f, _ = flash_attention_ops(64, 128, 1, 1, dtype="bf16", dropout=True)
    with_mask, without = (op_seconds([op], device, A100_KERNELS, "bf16")[0] for op in (f, replace(f, int_ops=0)))
    assert with_mask - without == pytest.approx(31_232 / (132 * 64 * device.clock_hz), rel=1e-9)


def test_integer_rate_against_the_fp32_lanes():
    # A100 (8.0): 64 FP32 lanes and 64 integer results an SM; H100 (9.0): 128 and 64 — half
    a100, h100 = GPUS["a100-80gb"], GPUS["h100-80gb-sxm"]
    assert int_rate(a100) == pytest.approx(nonmatmul_rates(a100)[1])
    assert int_rate(h100) == pytest.approx(nonmatmul_rates(h100)[1] / 2)
    assert chip_of(h100).compute_capability == (9, 0)


def test_no_dropout_is_bit_identical():
    # Without dropout no integer work is counted and the priced body is the old sum, to the bit.
    for causal in (True, False):
        f, b = flash_attention_ops(4096, 128, 16, 16, dtype="bf16", causal=causal)
        assert f.int_ops == b.int_ops == 0
    device = GPUS["h200-141gb"]
    exp_rate, lane_rate = nonmatmul_rates(device)
    assert nonmatmul_seconds(1e9, 3e9, device) == 1e9 / exp_rate + 3e9 / lane_rate
    assert nonmatmul_seconds(1e9, 3e9, device, 0) == nonmatmul_seconds(1e9, 3e9, device)
