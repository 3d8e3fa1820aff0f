"""ZigZag's inputs written by ``benchmarks/bench_zigzag_energy.py`` (no ZigZag needed): partial sums at archsim's
32-bit accumulator width, like for like with archsim's register moves since 2026-12-05.

References: the int8 accumulator is 32 bits (int8 × int8 summed in int32); configs/energy/horowitz45.toml's
register figure, 0.009 pJ per bit, so one 256-bit port access of any register level costs 0.009 × 256 pJ.
"""

from __future__ import annotations

import re

import pytest
from benchmark_scripts import load_benchmark

from archsim.array.config import ArrayConfig

ARRAY = ArrayConfig(32, 32, "ws")



def test_partial_sums_are_32_bits_in_zigzag_workload() -> None:
    bench = load_benchmark("bench_zigzag_energy")
    (layer,) = bench.gemm_workload(64, 75, 32, ARRAY)
    assert layer["operand_precision"] == {"W": 8, "I": 8, "O": 32, "O_final": 8}
    assert layer["loop_sizes"] == [64, 75, 32]


def test_output_register_holds_a_32_bit_partial_sum_at_the_register_figure() -> None:
    yaml = load_benchmark("bench_zigzag_energy").accelerator_yaml(ARRAY)
    out = yaml.split("  reg_O:\n", 1)[1].split("  sram_I:\n", 1)[0]
    assert re.search(r"^    size: (\d+)$", out, re.MULTILINE).group(1) == "32"
    per_access = 0.009 * 256  # pJ of one 256-bit access: the table's register pJ per bit × bits
    assert float(re.search(r"r_cost: ([\d.e-]+)", out).group(1)) == pytest.approx(per_access, rel=1e-9)
    assert float(re.search(r"w_cost: ([\d.e-]+)", out).group(1)) == pytest.approx(per_access, rel=1e-9)
    operand = yaml.split("  reg_I:\n", 1)[1].split("  reg_W:\n", 1)[0]
    assert re.search(r"^    size: (\d+)$", operand, re.MULTILINE).group(1) == "8"
