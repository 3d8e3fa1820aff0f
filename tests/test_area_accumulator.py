"""The area model sizes each PE's partial-sum register at the accumulator's 32 bits, as the energy model moves partial
sums (``psum_register_pj``). References: hand counts from the default table's published figures
(configs/energy/horowitz45.toml): MACs = Horowitz ISSCC 2014's multiplier + accumulating adder (int8: 282 + 137 µm²,
fp16/bf16: 1640 + 4184 µm², fp32: 7700 + 4184 µm²); a register bit = Aladdin's 5.98 µm²; three registers a PE, two
operand words and the partial sum (ws, is: passed down the column; os: held in place)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from archsim.array.config import ArrayConfig
from archsim.cli import main
from archsim.energy import array_area, load_table

BIT_UM2 = 5.98


@pytest.mark.parametrize("dataflow", ["ws", "os", "is"])
@pytest.mark.parametrize(("element_bytes", "mac_um2"), [(1, 282 + 137), (2, 1640 + 4184), (4, 7700 + 4184)])
def test_the_partial_sum_register_is_32_bits_wide(dataflow, element_bytes, mac_um2):
    """Defect: all three registers were sized at the operand's width (int8: 3 × 8 bits, bf16: 3 × 16), the partial sum
    too. Now 2 operand words + a 32-bit accumulator: int8 419 + 48 × 5.98 = 706.04 µm², bf16 5824 + 64 × 5.98 =
    6206.72 µm²; fp32 already 3 × 32 bits."""
    array = ArrayConfig(4, 8, dataflow, ifmap_sram_kb=1, filter_sram_kb=1, ofmap_sram_kb=1, element_bytes=element_bytes)
    pe = mac_um2 + (2 * 8 * element_bytes + 32) * BIT_UM2
    assert array_area(array).pe_array_mm2 == pytest.approx(32 * pe / 1e6, rel=1e-12)


def test_the_pinned_pe_figures():
    """The two PEs the docs quote, as plain numbers."""
    int8 = array_area(ArrayConfig(1, 1, ifmap_sram_kb=1, filter_sram_kb=1, ofmap_sram_kb=1)).pe_array_mm2
    bf16 = array_area(ArrayConfig(1, 1, ifmap_sram_kb=1, filter_sram_kb=1, ofmap_sram_kb=1, element_bytes=2))
    assert int8 * 1e6 == pytest.approx(706.04, rel=1e-12)
    assert bf16.pe_array_mm2 * 1e6 == pytest.approx(6206.72, rel=1e-12)


@pytest.mark.parametrize(("per_pe", "bits"), [(0, 0), (1, 32), (5, 4 * 16 + 32)])
def test_a_table_of_other_register_counts_has_one_accumulator(per_pe, bits):
    """A table's per_pe: one of its registers (if it has any) the 32-bit accumulator, the rest 16-bit bf16 words."""
    table = replace(load_table(), registers_per_pe=per_pe)
    array = ArrayConfig(2, 2, ifmap_sram_kb=1, filter_sram_kb=1, ofmap_sram_kb=1, element_bytes=2)
    assert array_area(array, table).pe_array_mm2 == pytest.approx(4 * (5824 + bits * BIT_UM2) / 1e6, rel=1e-12)


def test_energy_prints_the_32_bit_accumulator_area(capsys):
    """`archsim energy`'s meta: a 32 × 32 int8 array is 1024 PEs of 706.04 µm²."""
    assert main(["energy", "layerpipe_sample", "--array", "32x32", "--batch", "8", "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert meta["pe_array_mm2"] == pytest.approx(1024 * 706.04 / 1e6, rel=1e-12)
