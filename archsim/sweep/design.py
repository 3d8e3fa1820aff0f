"""Design-space sweep rows: time, energy per iteration and area beside a partition's cycles.

One unit = one network × array × dataflow × batch × :class:`~archsim.sweep.spec.Design` (SRAM size,
DRAM bandwidth, element size, micro-batches, energy table; clocks only rescale time). Per
(processors, method, clock) a row carries:

* ``iteration_cycles``: M × the partition's slowest stage at micro-batch size batch / M — the
  steady-state time of one iteration of M micro-batches (pipeline fill and drain excluded), and
  ``single_processor_cycles`` M × the one-processor cycles; ``iteration_seconds`` at the clock.
* ``energy_pj``: :func:`archsim.energy.iteration_energy` of the M micro-batches (dynamic energy
  does not depend on the partition: the same ops run somewhere), by part, plus leakage of all P
  arrays over ``iteration_seconds`` when the table has leakage.
* ``area_mm2``: P × one array's PEs and SRAMs (:func:`archsim.energy.array_area`).
"""

from __future__ import annotations

from pathlib import Path

from archsim.array.config import ArrayConfig
from archsim.energy import access_energies, array_area, iteration_energy, load_table
from archsim.energy.model import static_power_mw
from archsim.errors import InputError
from archsim.partition import build_profile
from archsim.planners import partition
from archsim.workload.layer import Network

DESIGN_COLUMNS = ["sram_kb", "bandwidth_words_per_cycle", "element_bytes", "microbatches", "energy_table", "clock_ghz",
                  "iteration_seconds", "energy_pj", "mac_pj", "register_pj", "sram_pj", "dram_pj", "vector_pj",
                  "leakage_pj", "area_mm2", "pe_array_mm2", "sram_mm2", "dtype"]  # dtype: a dtypes sweep's


def design_rows(unit, network: Network, base_row) -> list[dict[str, object]]:
    """All (processors, method, clock) rows of a design unit; ``base_row(processors, method, plan,
    single, cycles)`` gives the plain sweep's columns."""
    design = unit.design
    array = ArrayConfig(rows=unit.rows, cols=unit.cols, dataflow=unit.dataflow, ifmap_sram_kb=design.sram_kb,
                        filter_sram_kb=design.sram_kb, ofmap_sram_kb=design.sram_kb, bandwidth=(design.bandwidth,),
                        user_bandwidth=True, element_bytes=design.element_bytes)
    table = load_table(design.energy_table, shipped_only=True)  # a spec's name: a shipped table only
    energies = access_energies(array, table)
    m = design.microbatches
    profile = build_profile(network, array, unit.batch // m, unit.mode, unit.engine)
    dynamic = iteration_energy(network, array, unit.batch, unit.mode, unit.engine,
                               energies=_without_leakage(energies), microbatches=m).set_index("op").loc["TOTAL"]
    parts = {"mac_pj": dynamic["mac_pj"], "register_pj": dynamic["register_pj"],
             "sram_pj": sum(dynamic[c] for c in dynamic.index if "_sram_" in c and c.endswith("_pj")),
             "dram_pj": dynamic["dram_read_pj"] + dynamic["dram_write_pj"], "vector_pj": dynamic["vector_pj"]}
    area = array_area(array, table)
    if static_power_mw(energies, array) > 0 and not design.clocks_ghz:
        raise InputError(f"energy table {table.name!r} has leakage: give clocks_ghz", field="clocks_ghz")
    single = m * float(profile.total.sum())
    rows = []
    for processors in unit.processors:
        for method in unit.methods:
            options = {"alpha": unit.alpha} if method == "layerpipe" else {}
            plan = partition(profile, processors, method, **options)
            cycles = m * plan.max_stage_cost
            for clock in design.clocks_ghz or (None,):
                seconds = cycles / (clock * 1e9) if clock else float("nan")
                leakage = static_power_mw(energies, array) * plan.processors * seconds * 1e9 if clock else 0.0
                rows.append({
                    **base_row(processors, method, plan, single, cycles),
                    "sram_kb": design.sram_kb, "bandwidth_words_per_cycle": design.bandwidth, "element_bytes": design.element_bytes,
                    "microbatches": m, "energy_table": Path(design.energy_table).stem,
                    "clock_ghz": clock if clock else float("nan"), "iteration_seconds": seconds,
                    "energy_pj": float(sum(parts.values())) + leakage, **{k: float(v) for k, v in parts.items()},
                    "leakage_pj": leakage, "area_mm2": plan.processors * area.total_mm2,
                    "pe_array_mm2": plan.processors * area.pe_array_mm2, "sram_mm2": plan.processors * area.sram_mm2,
                    **({"dtype": design.dtype} if design.dtype else {}),
                })
    return rows


def _without_leakage(energies):
    from dataclasses import replace

    return replace(energies, pe_leakage_mw=0.0, sram_leakage_mw_per_kib=0.0)
