"""``archsim cost``'s JSON document, built once for the CLI and for :meth:`CostResult.to_dict`
(``archsim.cost``), so the two cannot drift apart, as :mod:`archsim.training.train_json` does for train.

Cycles are array clock cycles, sizes bytes (``element_bytes`` per element: the meta's ``dtype``),
energies pJ, seconds where the array has a clock. No pandas here: the CLI prints the rows as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from archsim.array.config import ArrayConfig
from archsim.table_result import TableResult
from archsim.workload.layer import Network

if TYPE_CHECKING:

    from archsim.lowering import Mode


def cost_document(network: Network, array: ArrayConfig, *, batch: int, mode: Mode, engine: str, geometry: str,
                  dtype: str | None = None, energy: bool = False, energy_table: str | Path | None = None,
                  config: str | Path | None = None) -> tuple[list[dict], dict, tuple[str, ...]]:
    """(per-layer rows, document, notes): :func:`~archsim.array.costing.layer_cost_rows` of ``network`` lowered at
    ``batch`` in ``mode`` on ``array`` (``energy``: with each layer's F/G/D pJ, priced by ``energy_table``,
    else ``config``'s ``[energy]`` table, else the default), and ``{"meta": …, "rows": […]}`` as ``archsim
    cost --format json`` prints it (before NaN becomes null): those rows, a TOTAL row, seconds beside cycles at
    the array's clock; where ``config`` is a device file of several arrays, each layer's F, G and δ seconds on the
    whole chip too (:mod:`archsim.chip_time`) and the meta's areas the chip's, as ``energy`` names them
    (:meth:`~archsim.energy.area.Area.chip_dict`). ``dtype`` is the ``--dtype`` given (None: the meta names the
    width's own). With ``energy`` on a device file of one array stating ``static_watts`` that array is a chip too
    (:func:`~archsim.chip_time.timed_chip`): its F/G/D chip seconds by the same op timing, train's (under the
    cycle engine that engine's cycles: :func:`~archsim.chip_time.chip_seconds`), and each
    layer's F/G/D pJ its static power over them, as ``energy`` prices it, so the TOTAL stays energy's. The notes,
    what ``archsim cost`` says after its table and ``archsim.cost`` warns: with ``energy``, a device file's
    ``static_watts`` left unread where ``energy`` leaves it unread too (a ``.cfg`` train refuses:
    :func:`~archsim.energy_run.device_static_note`); on the cycle engine, the op SCALE-Sim's refetch slows
    most (:func:`~archsim.array.costing.refetch_note`)."""
    from archsim.array.costing import layer_cost_rows
    from archsim.array.options import dtype_meta, memory_meta
    from archsim.chip_time import (
        chip_meta,
        chip_seconds,
        dram_counts,
        file_dram_words,
        floor_meta,
        floor_note,
        timed_chip,
    )
    from archsim.choices.devices import SCALESIM_DTYPE
    from archsim.energy import array_area
    from archsim.energy.file_energy import energies_for, figures_meta, table_for
    from archsim.lowering import lower_network
    from archsim.rows import Rows
    from archsim.seconds import add_seconds

    lowered = lower_network(network, batch, mode, array.element_bytes)
    rows = layer_cost_rows(lowered, array, engine)
    table, dram = None, None
    # a device file of several arrays: each layer's time on the whole chip; with --energy, one of one array stating
    # static_watts is timed too: its static power is priced over that time
    timed = timed_chip(config, array, static_power=energy)
    chip = timed if timed is not None and timed.arrays.count > 1 else None  # of several arrays: the chip's areas
    timing = None if timed is None else chip_seconds(
        lowered, timed, array, engine, dtype_meta(dtype, array) or SCALESIM_DTYPE, array.element_bytes)
    layer_seconds = None if timing is None else timing.rows
    if energy:
        from archsim.energy.model import with_layer_energy
        from archsim.energy_run import chip_layer_energy

        table, energies = energies_for(array, energy_table, config, dtype)
        # a device file's dram_traffic = "scalesim": the words train's energy counts (None: the engine's own)
        dram = file_dram_words(config, array, engine, dtype_meta(dtype, array) or SCALESIM_DTYPE)
        if timed is not None and layer_seconds is not None:  # the chip's leakage over its seconds, as energy's
            rows = chip_layer_energy(rows, lowered, array, energies, engine, layer_seconds, timed, dram)
        else:
            rows = with_layer_energy(rows, lowered, array, energies, engine, dram)
    if layer_seconds is not None:
        rows = [{**row, **seconds} for row, seconds in zip(rows, layer_seconds, strict=True)]
    meta: dict[str, object] = {
        "network": network.name, "array": f"{array.rows}x{array.cols}", "dataflow": array.dataflow, "batch": batch,
        "mode": mode, "engine": engine, "geometry": geometry, "dtype": dtype_meta(dtype, array),
        "element_bytes": array.element_bytes, **(memory_meta(array) if engine == "cycle" else {})}
    if table is None:
        table = table_for(energy_table, config)
    if array.element_bytes in table.mac_um2:  # area needs the table's figures at this width
        area = array_area(array, table)  # on a chip of several arrays all its arrays' and one's, as energy's
        meta.update(area.as_dict() if chip is None else area.chip_dict(chip.arrays.count), energy_table=table.name)
    if energy:  # the figures the file's [energy] states over that table, which priced the rows' pJ
        meta.update(figures_meta(config))
        if dram is not None:  # the DRAM words F/G/D_energy_pj priced, named where not the engine's own
            meta["dram_counts"] = dram_counts(dram, engine)
    if array.clock_hz is not None:
        meta["clock_ghz"] = array.clock_hz / 1e9
    if timed is not None and timing is not None:
        meta.update(chip_meta(timed, engine), **floor_meta(timing.floored, engine),
                    **({"per_array": COST_ARRAY_OR_CHIP_FIGURES} if chip is not None else {}),
                    **({"energy_leakage": energy_leakage(several=chip is not None)} if energy else {}))
    printed = add_seconds(Rows.of([*rows, total_row(rows)]), array.clock_hz)
    records = list(printed.records) if isinstance(printed, Rows) else printed.to_dict(orient="records")
    static = None
    if energy and config is not None and chip is None:
        from archsim.energy_run import device_static_note

        static = device_static_note(config, "cost")
    refetch = None
    if engine == "cycle":  # where an operand far outgrows its SRAM: SCALE-Sim's refetch, named
        from archsim.array.costing import refetch_note

        refetch = refetch_note([op for item in lowered for op in item.ops], array)
    floor = None if timed is None or timing is None else floor_note(timing, timed)  # the cycle engine's HBM floor
    return rows, {"meta": meta, "rows": records}, tuple(note for note in (static, refetch, floor) if note)


def energy_leakage(*, several: bool) -> str:
    """The meta's ``energy_leakage``: what F/G/D_energy_pj hold on a chip whose static power ``cost --energy`` prices
    over its chip seconds, of ``several`` arrays or of one stating ``static_watts`` (one wording for both)."""
    same, whose = (" (the same on one array or all)", "every array's") if several else ("", "its one array's")
    return (f"F/G/D_energy_pj: the layer's dynamic energy{same} plus the chip's static power (static_watts plus "
            f"{whose} leakage) over its F/G/D_chip_seconds, train's formula, as energy prices the chip")


# the meta's per_array on a chip of several arrays: which of cost's figures are one array's and which the chip's
COST_ARRAY_OR_CHIP_FIGURES = (
    "cycles, their seconds and utilizations: one array's (SCALE-Sim's count); the bytes: the layer's, the same on one "
    "array or all; F/G/D_chip_seconds, the areas (pe_array_mm2, sram_mm2, area_mm2) and, with --energy, "
    "F/G/D_energy_pj's static power (energy_leakage): the chip's; array_area_mm2: one array's")


def total_row(rows: list[dict]) -> dict:
    """The TOTAL row: sums of every ``_cycles``, ``_bytes``, ``_pj`` and chip seconds column (numpy's sums, as a
    DataFrame's), and each F/G/D utilization weighted by that op's cycles."""
    import numpy as np

    columns = {name: np.asarray([row[name] for row in rows]) for name in rows[0]}
    total: dict[str, object] = {"layer": "TOTAL", "type": ""}
    for name, values in columns.items():
        if name.endswith(("_cycles", "_bytes", "_pj", "chip_seconds")):
            total[name] = values.sum().item()
    for kind in ("F", "G", "D"):
        cycles = columns[f"{kind}_cycles"]
        weighted = (columns[f"{kind}_utilization"].astype(np.float64) * cycles).sum()
        total[f"{kind}_utilization"] = float(weighted / cycles.sum()) if cycles.sum() else 0.0
    return {name: total[name] for name in rows[0]}


@dataclass(frozen=True, eq=False, repr=False)  # TableResult's one-line repr, not the generated one
class CostResult(TableResult):
    """What :func:`archsim.cost` returns: ``table``, the per-layer DataFrame (``archsim cost``'s rows less
    TOTAL), and ``to_dict()``, the document ``archsim cost --format json`` prints (``meta``: what was
    costed, ``dtype`` and ``element_bytes`` among it; ``rows``: every layer, then TOTAL). The table's columns,
    indexing and methods answer on the result too (``result["F_cycles"]``, ``result.F_cycles.sum()``,
    ``len(result)``, ``result.equals(other)``), so code written for the DataFrame ``cost`` used to return
    keeps working; pass ``result.table`` where a real DataFrame is needed (``pd.concat``)."""

    def _headline(self) -> str:
        """The TOTAL row's cycles (and seconds at a clock), as ``archsim cost`` prints them last."""
        if not self.document["rows"]:
            return ""
        total = self.document["rows"][-1]
        seconds = "" if "total_seconds" not in total else f", {total['total_seconds']:.4g} s"
        return f", total {total['total_cycles']} cycles{seconds}"


__all__ = ["COST_ARRAY_OR_CHIP_FIGURES", "CostResult", "cost_document", "energy_leakage", "total_row"]
