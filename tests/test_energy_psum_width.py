"""Register energy of partial sums at the accumulator's width. A systolic array multiplying 16-bit (or 8-bit) operands
accumulates in fp32 (or int32): the table's own MACs are "fp16 × fp16 accumulated in fp32" and "int8 × int8
accumulated in int32" (configs/energy/horowitz45.toml [mac]), as bf16 MXUs sum in fp32. So the partial sums a weight- or
input-stationary array passes down (one a MAC) and the outputs an output-stationary one drains (M·N) cost 32 bits of
register each, the operand words their own width. References: hand counts of register words × bits × 0.009 pJ/bit
(Aladdin's register, configs/energy/horowitz45.toml)."""

from __future__ import annotations

import pytest

from archsim.array.config import ArrayConfig
from archsim.energy import op_energy
from archsim.lowering import Gemm, TrainingOp

PJ_PER_BIT = 0.009
M, K, N = 4, 8, 6  # one GEMM of 192 MACs on a 4 × 4 array
MACS = M * K * N


@pytest.mark.parametrize(("dataflow", "stationary", "psums"), [
    ("ws", K * N, MACS),  # the filter loaded; every MAC passes its partial sum down
    ("is", M * K, MACS),  # the ifmap loaded; every MAC passes its partial sum on
    ("os", M * N, M * N),  # both operands move every MAC; the M·N accumulated outputs drain
])
@pytest.mark.parametrize("element_bytes", [1, 2, 4])
def test_partial_sums_move_at_32_bits_operands_at_their_width(dataflow, stationary, psums, element_bytes):
    """Defect: every register word was priced at the operand's width, an int8 partial sum at 8 bits and a bf16 one
    at 16, though the accumulator is 32 bits wide."""
    array = ArrayConfig(rows=4, cols=4, dataflow=dataflow, ifmap_sram_kb=64, filter_sram_kb=64, ofmap_sram_kb=64,
                        element_bytes=element_bytes)
    row = op_energy([TrainingOp("fc", "F", (Gemm(M, K, N),))], array).iloc[0]
    words = 2 * MACS + stationary
    assert (row["register_words"], row["psum_register_words"]) == (words, psums)
    operand_bits = 8 * element_bytes
    expected = (words - psums) * operand_bits * PJ_PER_BIT + psums * 32 * PJ_PER_BIT
    assert row["register_pj"] == pytest.approx(expected, rel=1e-12)


def test_an_fp8_gemms_operand_moves_are_8_bit_and_its_partial_sums_32():
    """Under train --fp8 a GEMM's A and B are 8-bit words in the array's registers too; its partial sums stay at
    the fp32 accumulator's width (until 2026-12-05 every register move at the training dtype's 16 bits)."""
    from archsim.energy.table import access_energies, fp8_gemm_energies, load_table

    array = ArrayConfig(rows=4, cols=4, dataflow="ws", ifmap_sram_kb=64, filter_sram_kb=64, ofmap_sram_kb=64,
                        element_bytes=2)
    energies = fp8_gemm_energies(access_energies(array), 2, load_table())
    assert energies is not None
    assert energies.register_pj == pytest.approx(8 * PJ_PER_BIT, rel=1e-12)
    assert energies.psum_register_pj == pytest.approx(32 * PJ_PER_BIT, rel=1e-12)
