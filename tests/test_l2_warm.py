"""A GEMM timed alone in a loop finds its operands in the L2 as far as they fit
(archsim.devices.kernels.hbm_fraction, GemmPath.warm_l2_bytes); inside a training step it does not.

References: fractions and seconds worked by hand (MiB footprints against the L2, bytes at a round
bandwidth), and the A100 40GB's datasheet L2 (40 MB)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from archsim.devices.catalog import GPUS, chip_of
from archsim.devices.kernel_ops import gemm_path
from archsim.devices.kernels import FITTED, GemmPath, compute_seconds, gemm_seconds, hbm_fraction, path_gemm_seconds

MIB = 2**20


def test_the_bytes_beyond_the_l2_cross_hbm_by_hand():
    # 10 MiB of operands against a 4 MiB L2: 6 MiB (0.6) from HBM; 3 MiB: none; no L2 stated: all
    assert hbm_fraction(10 * MIB, 4 * MIB) == pytest.approx(0.6)
    assert hbm_fraction(3 * MIB, 4 * MIB) == 0.0
    assert hbm_fraction(10 * MIB, 0.0) == 1.0


def test_a_traffic_bound_gemm_pays_only_what_the_l2_misses_by_hand():
    # 1,024³ fp32: A, B and C 4 MiB each (12 MiB); a 6 MiB warm L2 leaves 6 MiB at 1 GB/s × gemm_memory 1;
    # one SM of 1e30 FLOP/s makes the main loop nothing, so reads + the epilogue's write + one launch
    path = GemmPath(1, 1e30, ((128, 128),), 128 * 128, 0.0, (1,), True, 1e9, warm_l2_bytes=6 * MIB)
    constants = replace(FITTED, gemm_memory=1.0, launch_s=1e-5)
    seconds = float(path_gemm_seconds(1, 1024, 1024, 1024, path, constants))
    assert seconds == pytest.approx(6 * MIB / 1e9 + 1e-5, rel=1e-9)


def test_a_gemm_held_in_the_a100s_l2_is_its_main_loop_alone():
    # 2,048 × 2,048 by 2,048 × 8 in fp32: (4,194,304 + 16,384 + 16,384) × 4 B ≈ 16.1 MiB < 40 MiB: no HBM term
    a100 = GPUS["a100-40gb"]
    spec = chip_of(a100)
    assert spec is not None and spec.l2_bytes == 40 * MIB
    loop = float(compute_seconds(1, 2048, 8, 2048, gemm_path(a100, "fp32", FITTED), FITTED))
    assert float(gemm_seconds(1, 2048, 8, 2048, spec)) == pytest.approx(loop + FITTED.launch_s, rel=1e-12)


def test_inside_a_training_step_every_gemm_byte_crosses_hbm():
    # the op-list path (training steps, kernel_ops.queued) keeps no warm L2
    for device in ("a100-40gb", "v100-32gb", "t4-16gb"):
        path = gemm_path(GPUS[device], "fp32", FITTED)
        assert path is not None and path.warm_l2_bytes == 0.0
