"""The board-power cap bounds a GEMM's average power (archsim/devices/kernels.py): the main loop is the longer of
its waves at the SMs' fed rate and all its tiles' FLOPs at TDP / energy per FLOP. An idle SM draws no switching
power, so a GEMM of few tiles (or a partly filled last wave) runs its busy SMs faster, up to their own peak, and
more SMs at one board power never make a GEMM slower. Checked against hand counts on made-up chips and the T4."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

import numpy as np
import pytest

from archsim.devices.catalog import KNOWN_GPUS, GpuSpec
from archsim.devices.kernel_constants import FITTED, KernelConstants
from archsim.devices.kernels import gemm_seconds

LAUNCH = 3e-6
# every tile fully fed (feed 1), half the lanes' peak reached; 10 pJ per FLOP at 12 nm and 1 GHz
HAND = KernelConstants(gemm=0.5, feed=1.0, memory=1.0, softmax=1.0, layernorm=1.0, launch_s=LAUNCH, energy_pj=10.0)


def _chip(sms: int, tdp_w: float) -> GpuSpec:
    """sms SMs of 32 FP32 lanes at 1 GHz (32 GFLOP/s per SM at gemm 0.5), 12 nm, HBM free."""
    return replace(GpuSpec("hand", sms, 1, 4, 8, 1e9, 1e18, "FP32 SIMD partition", None, 0.0, 32),
                   tdp_w=tdp_w, process_nm=12)


def test_a_gemm_of_few_tiles_shares_the_cap_over_the_sms_it_keeps_busy():
    # 0.96 W / 10 pJ = 96 GFLOP/s over 8 SMs of 32 GFLOP/s each. A 256×256 output is 4 tiles of 128×128
    # (or the same work as more, smaller tiles, 4 SMs' worth); K = 128 allows no split (parts ≥ 128)
    work = 2 * 128 * 128 * 128  # FLOPs of one busy SM
    seconds = float(gemm_seconds(1, 256, 256, 128, _chip(8, 0.96), HAND)) - LAUNCH
    assert seconds == pytest.approx(work / min(32e9, 96e9 / 4))  # the 4 busy SMs share 96: 24 GFLOP/s each
    assert seconds < work / (96e9 / 8)  # the rule before: an eighth of the board power each
    # a board power that lets 4 busy SMs run at their peak
    assert float(gemm_seconds(1, 256, 256, 128, _chip(8, 1.6), HAND)) - LAUNCH == pytest.approx(work / 32e9)


def test_full_waves_keep_an_even_share_and_only_the_last_partial_wave_gains():
    chip = _chip(8, 0.96)
    work = 2 * 128 * 128 * 128
    full = work / min(32e9, 96e9 / 8)
    # 8 and 16 tiles of 128×128: one and two full waves, each SM at an eighth of the board power
    assert float(gemm_seconds(1, 1024, 128, 128, chip, HAND)) - LAUNCH == pytest.approx(full)
    assert float(gemm_seconds(1, 1024, 256, 128, chip, HAND)) - LAUNCH == pytest.approx(2 * full)
    # 12 tiles: one full wave, then 4 busy SMs at a quarter of it
    assert float(gemm_seconds(1, 512, 384, 128, chip, HAND)) - LAUNCH == pytest.approx(full + work / (96e9 / 4))


def test_the_t4_runs_a_gemm_of_32_tiles_at_its_board_power_over_32_sms():
    # NVIDIA T4 datasheet: 40 SMs × 64 FP32 lanes at 1,590 MHz boost, 70 W, 12 nm, 320 GB/s
    t4 = KNOWN_GPUS["t4"]
    assert (t4.sm_count, t4.fp32_lanes_per_sm, t4.clock_hz, t4.tdp_w, t4.process_nm) == (40, 64, 1.59e9, 70, 12)
    constants = replace(HAND, gemm=1.0, gemm_memory=1.0)
    rate = 64 * 2 * 1.59e9  # one SM's fed rate: 203.5 GFLOP/s
    sustained = 70 / (10e-12 * 12 / 12 * 1.59)  # 70 W / 15.9 pJ = 4.40 TFLOP/s
    m, n, k = 1024, 512, 128  # 32 tiles of 128×128 (or as much work in smaller ones) on 32 of the 40 SMs
    loop = 2 * 128 * 128 * k / min(rate, sustained / 32)  # 137.6 GFLOP/s each: capped, but not at /40
    reads, write = (m * k + k * n) * 4 / 320e9, m * n * 4 / 320e9
    expected = max(loop, reads) + write + LAUNCH  # the epilogue writes C after the main loop
    assert float(gemm_seconds(1, m, n, k, t4, constants)) == pytest.approx(expected)
    assert sustained / 40 < sustained / 32 < rate  # the case tells the busy SMs from all of them


@pytest.mark.parametrize(("slug", "dtype"), [("t4", "fp32"), ("t4", "fp16"), ("l4", "fp32"), ("p4", "fp32")])
def test_more_sms_at_one_board_power_never_make_a_gemm_slower(slug, dtype):
    chip = KNOWN_GPUS[slug]
    sms = np.arange(chip.sm_count // 2, 2 * chip.sm_count + 1, 3)
    for m, n, k in ((64, 64, 4096), (128, 256, 1024), (16, 1000, 512), (512, 512, 64)):
        seconds = [float(gemm_seconds(1, m, n, k, replace(chip, sm_count=int(s)), FITTED, dtype)) for s in sms]
        assert all(b <= a * (1 + 1e-12) for a, b in pairwise(seconds)), (m, n, k, seconds)
