"""The per-class split of a pass's GPU time and the probe matching behind
``benchmarks/bench_hopper_breakdown.py`` (archsim.training.op_classes).

References: closed forms worked by hand on tiny cases — one GEMM whose fastest tile (64 × 64, L2-fed
at 47.4 bytes per clock per SM: 0.740 of an A100 SM's 1,024.4 MACs per clock) fills one wave, a
memory-bound op's bytes at HBM bandwidth × efficiency, one launch per kernel — and probe rows whose
seconds are given."""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim.devices.device import catalog_device
from archsim.devices.device_file import load_device
from archsim.devices.kernel_constants import KernelConstants, one_fraction
from archsim.devices.kernel_ops import op_parts, op_seconds
from archsim.lowering import Gemm, TrainingOp
from archsim.training.calibrate import ProbeRow
from archsim.training.op_classes import achieved_fraction, class_seconds, match_probe_gemms, memory_at_fractions

A100 = catalog_device("a100-80gb")
EFF = one_fraction(gemm=0.9, memory=0.8, launch_s=10e-6, host_s=50e-6)


def _one_wave_gemm_seconds() -> float:
    """256 × 64 × 128: the 64 × 64 tile makes 8 tiles (one wave of 108 SMs), each 2·64·64·64 FLOPs at
    an SM's share of the peak × gemm × its L2-fed fraction (5,120 / 108 B/clock × 64·64 / (128·2) MACs
    per clock ÷ (312e12 / (2 · 1.41e9 · 108)) MACs per clock); its HBM traffic is far shorter."""
    per_sm = 312e12 * 0.9 / 108
    fed = (5120 / 108) * 64 * 64 / (128 * 2) / (312e12 / (2 * 1.41e9 * 108))
    return 2 * 64**3 / (per_sm * fed)


def test_class_seconds_closed_form() -> None:
    ops = [TrainingOp("fc", "F", (Gemm(256, 64, 128),)), TrainingOp("norm", "F", (), vector_elements=1_000_000)]
    parts = class_seconds(ops, A100, EFF)
    assert parts.gemm == pytest.approx(_one_wave_gemm_seconds(), rel=1e-9)
    assert parts.memory == pytest.approx(1_000_000 * 2 / (2039e9 * 0.8), rel=1e-9)
    assert parts.launch == pytest.approx(2 * 10e-6)  # one GEMM kernel, one memory-bound kernel
    assert parts.total == pytest.approx(parts.gemm + parts.memory + parts.launch)


def test_class_seconds_fused_op_is_one_kernel_of_its_larger_part() -> None:
    # a fused op whose HBM traffic (10^9 elements: ~1.2 ms) dwarfs its GEMM's compute
    fused = TrainingOp("flash", "F", (Gemm(256, 64, 128),), vector_elements=10**9, fused=True)
    parts = class_seconds([fused], A100, EFF)
    assert parts.gemm == pytest.approx(10**9 * 2 / (2039e9 * 0.8), rel=1e-9)
    assert parts.memory == 0.0 and parts.launch == pytest.approx(10e-6)


def _row(section: str, name: str, seconds: float, m=0, k=0, n=0, count=0, moved=0.0) -> ProbeRow:
    return ProbeRow(section, name, m, k, n, count, moved, 0, seconds)


def test_match_probe_gemms_sums_only_the_probed_shapes() -> None:
    ops = [TrainingOp("fc", "F", (Gemm(256, 64, 128), Gemm(512, 512, 512)))]
    rows = [_row("gemm", "fc.F", 1e-6, 256, 64, 128, 1), _row("gemm", "fc.F", 3e-6, 256, 64, 128, 1),
            _row("memory", "x", 1.0, moved=1.0)]
    match = match_probe_gemms(ops, rows, A100, EFF)
    assert (match.matched, match.unmatched) == (1, 1)
    assert match.measured == pytest.approx(2e-6)  # the median of the two rows of that shape
    assert match.predicted == pytest.approx(_one_wave_gemm_seconds(), rel=1e-9)  # launch excluded


def test_achieved_fraction_is_the_median_per_kernel() -> None:
    peak = 1e12
    rows = [_row("memory", "ln.F", 1e-6, moved=0.5e6), _row("memory", "ln.F", 1e-6, moved=0.7e6),
            _row("memory", "ln.F", 1e-6, moved=0.9e6), _row("memory", "add.F", 2e-6, moved=1e6),
            _row("gemm", "fc.F", 1e-6, 1, 1, 1, 1, moved=5e6)]
    assert achieved_fraction(rows, peak) == pytest.approx({"add.F": 0.5, "ln.F": 0.7})


def test_memory_at_fractions_closed_form() -> None:
    ops = [TrainingOp("norm1", "F", (), vector_elements=100), TrainingOp("norm1", "D", (), vector_elements=300),
           TrainingOp("residual", "D", (), vector_elements=50), TrainingOp("other", "F", (), vector_elements=7)]
    fractions = {"layernorm.F": 0.5, "layernorm.D": 0.25, "add.F": 0.8}
    seconds, moved = memory_at_fractions(ops, fractions, {"norm1": "layernorm", "residual": "add"}, 1000.0)
    # 200 B at 500 B/s + 600 B at 250 B/s + 100 B at 800 B/s (D falls back to F); "other" unmapped
    assert seconds == pytest.approx(200 / 500 + 600 / 250 + 100 / 800)
    assert moved == 900


def test_class_seconds_fused_op_on_arrays_is_one_kernel_too() -> None:
    # the same fused op on a device whose GEMMs run on its arrays: still one kernel of its larger part,
    # and the classes add up to op_seconds' time, as ClassSeconds says
    tpu = load_device(Path(__file__).resolve().parents[1] / "configs" / "devices" / "tpu_v4_like.toml")
    assert tpu.gemm == "arrays"
    fused = TrainingOp("flash", "F", (Gemm(256, 64, 128),), vector_elements=10**9, fused=True)
    parts = class_seconds([fused], tpu, EFF)
    assert parts.gemm == pytest.approx(10**9 * 2 / (tpu.hbm_bytes_per_s * 0.8), rel=1e-9)
    assert parts.memory == 0.0 and parts.launch == pytest.approx(10e-6)
    assert parts.total == pytest.approx(float(op_seconds([fused], tpu, EFF).sum()), rel=1e-12)


def test_op_parts_price_a_softmax_at_its_own_fraction_and_add_up_to_op_seconds() -> None:
    # constants whose softmax fraction differs from the elementwise one: a named softmax kernel streams
    # its bytes at 0.5 of HBM, a plain op at 0.8; each a kernel of its own, as is the GEMM
    constants = KernelConstants(gemm=0.9, feed=45.1, memory=0.8, softmax=0.5, layernorm=0.7, launch_s=10e-6)
    ops = [TrainingOp("fc", "F", (Gemm(256, 64, 128),)),
           TrainingOp("softmax", "F", (), vector_elements=1_000_000, kernel=("softmax", 1000, 1000)),
           TrainingOp("add", "F", (), vector_elements=3_000_000)]
    parts = op_parts(ops, A100, constants)
    assert list(parts.kernels) == [1, 1, 1]
    assert parts.gemm[0] == pytest.approx(_one_wave_gemm_seconds(), rel=1e-9)
    assert parts.memory[1:] == pytest.approx([2e6 / (2039e9 * 0.5), 6e6 / (2039e9 * 0.8)], rel=1e-9)
    whole = parts.gemm + parts.memory + parts.kernels * constants.launch_s
    assert whole == pytest.approx(op_seconds(ops, A100, constants), rel=1e-12)
