"""Silicon area of one array and its SRAMs, from an energy table's area figures (µm² → mm²).

PE = one MAC (multiplier + accumulating adder at the element width) + ``registers_per_pe`` words of
pipeline register (:func:`pe_um2`): one of them the partial sum's, at the accumulator's width (32 bits for 1-, 2-
and 4-byte operands, :func:`~archsim.energy.table.accumulator_bits`, the width the energy model moves partial sums
at), the rest at the operand's (until 2026-12-05 all at the operand's). SRAM = capacity bits × bit-cell area / array efficiency, per operand as
configured (SCALE-Sim's KiB include both halves of the double buffer). Control, the vector unit,
wiring between PEs and the DRAM interface are not counted: the figure is the array's datapath and
storage, a lower bound on a die.
"""

from __future__ import annotations

from dataclasses import dataclass

from archsim.array.config import ArrayConfig
from archsim.energy.table import EnergyTable, accumulator_bits, load_table


@dataclass(frozen=True)
class Area:
    """Areas in mm²."""

    pe_array_mm2: float
    ifmap_sram_mm2: float
    filter_sram_mm2: float
    ofmap_sram_mm2: float

    @property
    def sram_mm2(self) -> float:
        return self.ifmap_sram_mm2 + self.filter_sram_mm2 + self.ofmap_sram_mm2

    @property
    def total_mm2(self) -> float:
        return self.pe_array_mm2 + self.sram_mm2

    def as_dict(self) -> dict[str, float]:
        return {"pe_array_mm2": self.pe_array_mm2, "sram_mm2": self.sram_mm2, "area_mm2": self.total_mm2}

    def chip_dict(self, arrays: int) -> dict[str, float]:
        """:meth:`as_dict` of a chip of ``arrays`` such arrays (each area × ``arrays``, mm²) and ``array_area_mm2``,
        one array's ``area_mm2``: the area keys ``energy`` and ``cost`` print on a device file of several arrays,
        one helper so that the two name the same areas alike."""
        return {**{name: value * arrays for name, value in self.as_dict().items()}, "array_area_mm2": self.total_mm2}


def pe_um2(table: EnergyTable, element_bytes: int) -> float:
    """µm² of one PE with operands of ``element_bytes``: ``table``'s MAC at that width (multiplier + accumulating adder)
    + its ``registers_per_pe`` registers at ``register_um2_per_bit`` a bit. One register (where it has any) holds the
    partial sum in every dataflow (ws and is pass it down the column, os keeps it in place), as wide as the adder that
    writes it (:func:`~archsim.energy.table.accumulator_bits`: 32 bits for int8, fp8, fp16 and bf16 operands); the
    others hold operand words. bf16 on the default table: 5824 + (2 × 16 + 32) × 5.98 = 6206.72 µm²."""
    _, mac_um2, _ = table.at_width(element_bytes, "the area model")
    accumulators = min(table.registers_per_pe, 1)
    bits = (table.registers_per_pe - accumulators) * 8 * element_bytes + accumulators * accumulator_bits(element_bytes)
    return mac_um2 + bits * table.register_um2_per_bit


def array_area(array: ArrayConfig, table: EnergyTable | None = None) -> Area:
    """Area of ``array``'s PEs and SRAMs from ``table`` (default: the shipped default table)."""
    table = table or load_table()
    pe = pe_um2(table, array.element_bytes)

    def sram(kib: int) -> float:
        return kib * 1024 * 8 * table.sram_cell_um2 / table.sram_area_efficiency / 1e6

    return Area(pe_array_mm2=array.pes * pe / 1e6, ifmap_sram_mm2=sram(array.ifmap_sram_kb),
                filter_sram_mm2=sram(array.filter_sram_kb), ofmap_sram_mm2=sram(array.ofmap_sram_kb))
