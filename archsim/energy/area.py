"""Silicon area of one array and its SRAMs, from an energy table's area figures (µm² → mm²).

PE = one MAC (multiplier + accumulating adder at the element width) + ``registers_per_pe`` words of
pipeline register. SRAM = capacity bits × bit-cell area / array efficiency, per operand as
configured (SCALE-Sim's KiB include both halves of the double buffer). Control, the vector unit,
wiring between PEs and the DRAM interface are not counted: the figure is the array's datapath and
storage, a lower bound on a die.
"""

from __future__ import annotations

from dataclasses import dataclass

from archsim.array.config import ArrayConfig
from archsim.energy.table import EnergyTable, load_table


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


def array_area(array: ArrayConfig, table: EnergyTable | None = None) -> Area:
    """Area of ``array``'s PEs and SRAMs from ``table`` (default: the shipped default table)."""
    table = table or load_table()
    _, mac_um2, _ = table.at_width(array.element_bytes, "the area model")
    pe_um2 = mac_um2 + table.registers_per_pe * 8 * array.element_bytes * table.register_um2_per_bit

    def sram(kib: int) -> float:
        return kib * 1024 * 8 * table.sram_cell_um2 / table.sram_area_efficiency / 1e6

    return Area(pe_array_mm2=array.pes * pe_um2 / 1e6, ifmap_sram_mm2=sram(array.ifmap_sram_kb),
                filter_sram_mm2=sram(array.filter_sram_kb), ofmap_sram_mm2=sram(array.ofmap_sram_kb))
