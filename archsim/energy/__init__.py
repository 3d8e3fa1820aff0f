"""Energy and area of training on systolic arrays: per-access tables with published sources
(:mod:`.table`), event counts × energies per op and iteration (:mod:`.model`), PE and SRAM area
(:mod:`.area`)."""

from archsim.energy.area import Area, array_area
from archsim.energy.file_energy import read_cfg_energy
from archsim.energy.model import (
                                  COUNTS,
                                  ENERGY_COLUMNS,
                                  energy_of,
                                  gemm_counts,
                                  iteration_energy,
                                  layer_energy,
                                  op_counts,
                                  op_energy,
)
from archsim.energy.table import DEFAULT_TABLE, AccessEnergies, EnergyTable, access_energies, load_table, with_overrides

__all__ = [
                                  "COUNTS",
                                  "DEFAULT_TABLE",
                                  "ENERGY_COLUMNS",
                                  "AccessEnergies",
                                  "Area",
                                  "EnergyTable",
                                  "access_energies",
                                  "array_area",
                                  "energy_of",
                                  "gemm_counts",
                                  "iteration_energy",
                                  "layer_energy",
                                  "load_table",
                                  "op_counts",
                                  "op_energy",
                                  "read_cfg_energy",
                                  "with_overrides",
]
