"""Design-space sweep rows: time, energy per iteration and area beside a partition's cycles.

One unit = one network × array × dataflow × batch × :class:`~archsim.sweep.spec.Design` (SRAM size,
DRAM bandwidth, element size, micro-batches, energy table; clocks only rescale time). Per
(processors, method, clock) a row carries:

* ``iteration_cycles``: M × the partition's slowest stage at micro-batch size batch / M — the
  steady-state time of one iteration of M micro-batches (pipeline fill and drain excluded), and
  ``single_processor_cycles`` M × the one-processor cycles; ``iteration_seconds`` at the clock.
* ``mandatory_comm_bytes`` and ``additional_comm_bytes``: the iteration's too, as its cycles — M × one
  micro-batch's, but the weights a borrowed δ receives once (:func:`archsim.partition.comm.iteration_bytes`;
  until 2026-12-05 one micro-batch's bytes beside the iteration's cycles).
* ``energy_pj``: :func:`archsim.energy.iteration_energy` of the M micro-batches (dynamic energy
  does not depend on the partition: the same ops run somewhere), by part, plus leakage of all P
  arrays over ``iteration_seconds`` when the table has leakage.
* ``area_mm2``: P × one array's PEs and SRAMs (:func:`archsim.energy.array_area`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from archsim.array.config import ArrayConfig
from archsim.array.options import with_memory
from archsim.choices.devices import FP8
from archsim.energy import access_energies, array_area, iteration_energy, load_table
from archsim.energy.file_energy import cfg_table
from archsim.energy.model import static_power_mw
from archsim.errors import InputError
from archsim.partition import build_profile
from archsim.partition.comm import iteration_bytes
from archsim.partition.pipedream import layer_groups
from archsim.planners import partition
from archsim.sweep.spec_arrays import ArrayFile, rated
from archsim.workload.layer import Network

DESIGN_COLUMNS = ["sram_kb", "bandwidth_words_per_cycle", "element_bytes", "microbatches", "energy_table", "clock_ghz",
                  "iteration_seconds", "energy_pj", "mac_pj", "register_pj", "sram_pj", "dram_pj", "vector_pj",
                  "leakage_pj", "area_mm2", "pe_array_mm2", "sram_mm2", "dtype"]  # dtype: a dtypes sweep's


def design_rows(unit, network: Network, base_row) -> list[dict[str, object]]:
    """All (processors, method, clock) rows of a design unit; ``base_row(processors, method, plan,
    single, cycles)`` gives the plain sweep's columns."""
    from archsim.sweep.spec import method_runs
    from archsim.sweep.units import run_options

    design = unit.design
    array = design_array(unit)
    table, figures, table_name = _energy_of(unit)
    energies = access_energies(array, table, figures, fp8=design.dtype == FP8)  # fp8: cost --dtype fp8's MAC pJ
    m = design.microbatches
    profile = build_profile(network, array, unit.batch // m, unit.mode, unit.engine)
    dynamic = iteration_energy(network, array, unit.batch, unit.mode, unit.engine,
                               energies=_without_leakage(energies), microbatches=m).set_index("op").loc["TOTAL"]
    parts = {"mac_pj": dynamic["mac_pj"], "register_pj": dynamic["register_pj"],
             "sram_pj": sum(dynamic[c] for c in dynamic.index if "_sram_" in c and c.endswith("_pj")),
             "dram_pj": dynamic["dram_read_pj"] + dynamic["dram_write_pj"], "vector_pj": dynamic["vector_pj"]}
    area = array_area(array, table)
    # the axis's clocks, else a .cfg's own (its [archsim] ClockGHz: the axis is refused beside it), else none
    clocks = design.clocks_ghz or ((array.clock_hz / 1e9,) if array.clock_hz else (None,))
    if static_power_mw(energies, array) > 0 and clocks == (None,):
        raise InputError(f"energy table {table.name!r} has leakage: give clocks_ghz", field="clocks_ghz")
    single = m * float(profile.total.sum())
    sram_kb, bandwidth = _memory_columns(array)
    if unit.engine != "cycle":  # analytic cycles read no DRAM bandwidth: no figure, as energy prints none
        bandwidth = float("nan")
    rows = []
    groups = layer_groups(profile) if "pipedream" in unit.methods else 0  # more processors: skipped (pipedream_points)
    for processors in unit.processors:
        for method, borrow in method_runs(unit.methods, unit.borrow):
            if method == "pipedream" and processors > groups:
                continue
            plan = partition(profile, processors, method, **run_options(unit, method, borrow))
            cycles = m * plan.max_stage_cost
            traffic = iteration_bytes(profile, plan, m)  # the plan's are one micro-batch's, as its cycles
            for clock in clocks:
                seconds = cycles / (clock * 1e9) if clock else float("nan")
                leakage = static_power_mw(energies, array) * plan.processors * seconds * 1e9 if clock else 0.0
                rows.append({
                    **base_row(processors, method, plan, single, cycles, borrow),
                    "mandatory_comm_bytes": traffic.mandatory_bytes, "additional_comm_bytes": traffic.additional_bytes,
                    "sram_kb": sram_kb, "bandwidth_words_per_cycle": bandwidth, "element_bytes": design.element_bytes,
                    "microbatches": m, "energy_table": Path(table_name).stem,
                    "clock_ghz": clock if clock else float("nan"), "iteration_seconds": seconds,
                    "energy_pj": float(sum(parts.values())) + leakage, **{k: float(v) for k, v in parts.items()},
                    "leakage_pj": leakage, "area_mm2": plan.processors * area.total_mm2,
                    "pe_array_mm2": plan.processors * area.pe_array_mm2, "sram_mm2": plan.processors * area.sram_mm2,
                    **({"dtype": design.dtype} if design.dtype else {}),
                })
    return rows


def _energy_of(unit):
    """(table, figure overrides, the table's name) a design unit is priced with: the spec's ``energy_tables`` value,
    or a ``.cfg`` array's own ``[energy]`` table (the axis is refused beside it), then the file's per-event
    figures, as ``archsim energy --config`` prices that file."""
    file = unit.array_file
    if file is not None and file.energy_table is not None:  # a shipped name, or a path beside the .cfg
        return cfg_table(file.energy_table), dict(file.energy_figures), file.energy_table
    table = load_table(unit.design.energy_table, shipped_only=True)  # a spec's name: a shipped table only
    return table, dict(file.energy_figures) if file is not None else {}, unit.design.energy_table


def design_array(unit) -> ArrayConfig:
    """The array a design unit is costed on: a ROWSxCOLS shape at the design's SRAM size and bandwidth, or a
    .cfg's array as ``archsim cost --config`` reads it, at the design's element size and, where the file
    writes no ``Bandwidth``, the design's (as ``--bandwidth``), or under the cycle engine without ``bandwidths`` its
    ``[memory] hbm_gbps`` in the design's words (:func:`archsim.sweep.spec_arrays.at_device_rate`); the spec's
    reader refused any axis that would override what the file states
    (:func:`archsim.sweep.spec_arrays.check_cfg_axes`)."""
    return _array_at(unit.design, unit.array_file or (unit.rows, unit.cols), unit.dataflow)


def _array_at(design, entry: tuple[int, int] | ArrayFile, dataflow: str) -> ArrayConfig:
    """:func:`design_array` of a spec's ``arrays`` entry (a ROWSxCOLS shape or a .cfg's array) at ``dataflow``."""
    if not isinstance(entry, ArrayFile):
        return ArrayConfig(rows=entry[0], cols=entry[1], dataflow=dataflow, ifmap_sram_kb=design.sram_kb,
                           filter_sram_kb=design.sram_kb, ofmap_sram_kb=design.sram_kb, bandwidth=(design.bandwidth,),
                           user_bandwidth=True, element_bytes=design.element_bytes)
    array = replace(entry.array, dataflow=dataflow, element_bytes=design.element_bytes)  # a rate's words follow it
    array = rated(array, entry, design.dtype)  # a dtypes row at the file's [macs_per_pe] rate of its dtype
    if "bandwidths" in entry.sets or array.dram_rate is not None or array.bandwidth == (design.bandwidth,):
        return array  # the file's bandwidth or hbm_gbps rate, or the reader's default 10 that no axis changed
    return with_memory(array, bandwidth=design.bandwidth)


def design_words(design, arrays: tuple[tuple[int, int] | ArrayFile, ...]) -> int | None:
    """The DRAM words/cycle per operand ``design``'s rows ran at on a spec's ``arrays`` (their
    ``bandwidth_words_per_cycle``), what spec.json records as the design's ``bandwidth``: the design's own on a
    ROWSxCOLS shape, a .cfg's ``Bandwidth`` or its ``hbm_gbps`` rate in the design's words where the file sets it;
    None where the arrays ran at different rates, or a .cfg reads at rates of its own per operand."""
    words = [_memory_columns(_array_at(design, entry, "ws"))[1] for entry in arrays]
    return int(words[0]) if words and not any(map(math.isnan, words)) and len(set(words)) == 1 else None


def _memory_columns(array: ArrayConfig) -> tuple[float, float]:
    """The ``sram_kb`` and ``bandwidth_words_per_cycle`` columns of ``array``: KiB of each SRAM and DRAM
    words/cycle per operand, NaN where a .cfg gives its three SRAMs (or its read and write rates) apart."""
    sizes = {array.ifmap_sram_kb, array.filter_sram_kb, array.ofmap_sram_kb}
    sram = array.ifmap_sram_kb if len(sizes) == 1 else float("nan")
    return sram, array.bandwidth[0] if array.read_bandwidth is None else float("nan")


def _without_leakage(energies):
    return replace(energies, pe_leakage_mw=0.0, sram_leakage_mw_per_kib=0.0)
