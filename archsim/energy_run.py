"""``archsim energy``'s run, once for the command and :func:`archsim.energy`: the energy of one training iteration
by part (MACs, array registers, SRAM reads and writes per operand, DRAM, vector unit, leakage) and op kind, and the
array's area. Energies pJ, areas mm², cycles array clock cycles, seconds and watts where the array has a clock."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from archsim.array.config import ArrayConfig
    from archsim.devices.array_dram import DramWords
    from archsim.devices.device import Device
    from archsim.lowering import Mode
    from archsim.workload.layer import Network


def energy_document(network: Network, array: ArrayConfig, *, batch: int, microbatches: int, mode: Mode, engine: str,
                    dtype: str | None, energy_table: str | Path | None, config: str | Path | None
                    ) -> tuple[list[dict], dict, tuple[str, ...]]:
    """(rows, meta, notes): the per-part rows ``archsim energy`` prints (TOTAL last), its meta (what was
    priced, the table, the area; seconds and average watts at a clock) and its notes: on a device file's static
    power where it is left unread (a ``.cfg`` train refuses). On a device file of several arrays the chip is priced
    (:func:`_chip_priced`): its seconds, its static energy and its area; ``cycles`` stay one array's. On one of one
    array stating ``static_watts`` that array is the chip, priced alike, its area the array's. The chip's seconds
    are train's op timing, under the ``cycle`` engine that engine's own cycles at the clock (one rule:
    :func:`~archsim.chip_time.chip_seconds`)."""
    from archsim.array.options import dtype_meta
    from archsim.chip_time import dram_counts, file_dram_words
    from archsim.choices.devices import SCALESIM_DTYPE
    from archsim.energy import array_area
    from archsim.energy.file_energy import energies_for, figures_meta
    from archsim.energy.model import iteration_energy_rows, static_power_mw

    table, energies = energies_for(array, energy_table, None if config is None else str(config), dtype)
    dram = file_dram_words(config, array, engine, dtype_meta(dtype, array) or SCALESIM_DTYPE)  # train's, or None
    rows = iteration_energy_rows(network, array, batch, mode, engine, energies, microbatches, dram)
    area = array_area(array, table)
    meta: dict[str, object] = {
        "network": network.name, "array": f"{array.rows}x{array.cols}", "dataflow": array.dataflow,
        "batch": batch, "microbatches": microbatches, "mode": mode, "engine": engine,
        "dtype": dtype_meta(dtype, array), "element_bytes": array.element_bytes, "energy_table": table.name,
        **figures_meta(config),
        "dram_counts": dram_counts(dram, engine),
        **_memory_meta(array, engine), **area.as_dict(),
    }
    iteration = None
    if array.clock_hz is not None:
        meta["clock_ghz"] = array.clock_hz / 1e9
        seconds = float(rows[-1]["cycles"]) / array.clock_hz
        iteration = _chip_iteration(network, array, batch=batch, microbatches=microbatches, mode=mode, engine=engine,
                                    dtype=dtype, config=config)
        if iteration is not None:  # a device file train reads: the chip's time and static energy (of several: its area)
            rows = _chip_priced(rows, iteration.kind_seconds, iteration.chip, static_power_mw(energies, array))
            seconds = float(rows[-1]["chip_seconds"])
            count = iteration.chip.arrays.count
            chip_areas = {} if count == 1 else {**area.chip_dict(count),
                                                "per_array": ENERGY_ARRAY_OR_CHIP_FIGURES}
            meta.update(chip_areas, **iteration.meta)
        meta["iteration_seconds"] = seconds
        meta["average_power_w"] = float(rows[-1]["energy_pj"]) * 1e-12 / seconds
    static = device_static_note(str(config)) if config and iteration is None else None
    floor = None if iteration is None else iteration.note  # the cycle engine's HBM floor, where it bound
    return rows, meta, tuple(note for note in (static, floor) if note)


# the meta's per_array on a chip of several arrays: which of energy's figures are one array's and which the chip's
ENERGY_ARRAY_OR_CHIP_FIGURES = (
    "cycles: one array's (SCALE-Sim's count); the counts and dynamic joules: the iteration's, the same on one array "
    "or all; chip_seconds, leakage_pj (the chip's static_watts plus every array's leakage, over chip_seconds, "
    "train's formula) and the areas: the chip's; array_area_mm2: one array's")


# what each command that prices energy names as one array's leakage where it leaves static_watts unread
_LEAKAGE_OF = {"energy": "energy prices one array, its leakage_pj the energy table's leakage",
               "cost": "cost --energy prices one array, its F/G/D_energy_pj's leakage the energy table's"}


def device_static_note(config: str | Path, command: str = "energy") -> str | None:
    """What ``archsim energy`` (and ``archsim cost --energy``, ``command="cost"``) says of a ``--config`` device file
    that states ``[device] static_watts`` (W per chip) where ``train`` refuses the file (a ``.cfg`` without
    ``[memory]`` or a clock): no chip is read, so one array is priced with the energy table's leakage and the figure
    is named as unread, with train's reason. None for a plain SCALE-Sim file, one stating none, and one ``train``
    reads: its chip, of one array or several, is priced with it (:func:`energy_document`)."""
    from archsim.array.device_notes import device_static_watts
    from archsim.devices.device_file import load_device
    from archsim.errors import InputError

    watts = device_static_watts(config)
    if not watts:
        return None
    try:
        load_device(config)
    except InputError as exc:
        return (f"{config} states [device] static_watts = {watts:g} W per chip, unread: train refuses the file "
                f"({exc.message}); {_LEAKAGE_OF[command]}")
    return None


def _chip_priced(rows: list[dict], kind_seconds: dict[str, float], device, array_leakage_mw: float) -> list[dict]:
    """``rows`` (F, G, D, then TOTAL) priced on the chip (of several arrays, or of one stating ``static_watts``): each
    with its kind's ``chip_seconds`` after ``cycles`` and its ``leakage_pj`` the chip's static power × those seconds
    (:func:`chip_priced_pj`, train's formula: ``static_watts`` plus every array's leakage) in ``energy_pj`` for the
    model's own; TOTAL their sums."""
    priced = []
    for row in rows[:-1]:
        chip_seconds = kind_seconds.get(row["op"], 0.0)
        leakage, energy = chip_priced_pj(row["energy_pj"], row["leakage_pj"], chip_seconds, device, array_leakage_mw)
        priced.append(_after_cycles({**row, "leakage_pj": leakage, "energy_pj": energy}, chip_seconds))
    total = dict(rows[-1])
    for name in ("leakage_pj", "energy_pj"):
        total[name] = sum(float(row[name]) for row in priced)
    return [*priced, _after_cycles(total, sum(kind_seconds.get(row["op"], 0.0) for row in rows[:-1]))]


def chip_priced_pj(energy_pj: float, leakage_pj: float, chip_seconds: float, device: Device,
                   array_leakage_mw: float) -> tuple[float, float]:
    """(leakage, energy) in pJ of work the energy model priced on one array (``energy_pj``, of which ``leakage_pj``
    is one array's leakage over one array's cycles) priced on ``device``, a chip of several arrays or of one stating
    ``static_watts`` (``chip_seconds`` its time by :func:`~archsim.chip_time.chip_seconds`): its leakage the
    chip's static power ×
    ``chip_seconds`` (:func:`~archsim.training.energy.static_joules`, train's formula: ``static_watts`` plus every
    array's ``array_leakage_mw``), its dynamic part as priced (the same accesses run on one array or all). The one
    repricing of ``energy`` on a chip and of ``cost --energy``'s layers there."""
    from archsim.training.energy import static_joules

    leakage = static_joules(device, 1, chip_seconds, array_leakage_mw) * 1e12
    return leakage, energy_pj - leakage_pj + leakage  # the model's dynamic sum, to the last bit


def chip_layer_energy(rows: list[dict], lowered, array: ArrayConfig, energies, engine: str,
                      layer_seconds: list[dict[str, float]], device: Device, dram: DramWords | None = None
                      ) -> list[dict]:
    """``rows`` (``cost``'s per-layer rows of ``lowered``) each with its layer's F/G/D energy and total (pJ) as
    :func:`~archsim.energy.model.with_layer_energy` gives them, each kind's leakage the chip's over that kind's
    seconds in ``layer_seconds`` (each layer's ``F/G/D_chip_seconds``, s:
    :func:`~archsim.chip_time.chip_seconds`, on a chip of one array as of several; :func:`chip_priced_pj`):
    ``cost --energy`` on a device file of several arrays, or of one stating ``static_watts``, priced as ``energy``
    prices it; ``dram``: the DRAM count the dynamic part is priced by (:func:`~archsim.chip_time.file_dram_words`)."""
    from archsim.energy.model import layer_kind_energy, static_power_mw

    leakage_mw = static_power_mw(energies, array)
    priced = []
    for row, kinds, seconds in zip(rows, layer_kind_energy(lowered, array, energies, engine, dram), layer_seconds,
                                    strict=True):
        energy = {f"{kind}_energy_pj": chip_priced_pj(pj, leak, seconds[f"{kind}_chip_seconds"], device, leakage_mw)[1]
                  for kind, (pj, leak) in kinds.items()}
        priced.append({**row, **energy, "energy_pj": sum(energy.values())})
    return priced


def _after_cycles(row: dict, chip_seconds: float) -> dict:
    """``row`` with ``chip_seconds`` (s) placed after its ``cycles``."""
    from archsim.training.table_lines import inserted_after

    return inserted_after(row, "cycles", "chip_seconds", chip_seconds)


@dataclass(frozen=True)
class ChipIteration:
    """One training iteration timed on a chip (a device file train reads): what ``energy`` prices its static power
    over and names in its meta."""

    kind_seconds: dict[str, float]  # s by op kind ("F", "G", "D") on the whole chip, over the layers × micro-batches
    meta: dict[str, object]  # what it was timed on (chip_meta: name, arrays, clock GHz, HBM GB/s, the timing's rule)
    chip: Device  # the chip timed
    note: str | None = None  # where the cycle engine's HBM floor bound an op (chip_time.floor_note), of a micro-batch


def _chip_iteration(network: Network, array: ArrayConfig, *, batch: int, microbatches: int, mode: Mode, engine: str,
                    dtype: str | None, config: str | Path | None) -> ChipIteration | None:
    """The iteration on the chip where ``config`` is a device file train reads of several arrays or of one stating
    ``static_watts`` (:func:`~archsim.chip_time.timed_chip`): ``cost``'s ``F/G/D_chip_seconds`` of the batch / M
    micro-batch (:func:`~archsim.chip_time.chip_seconds`: the op timing train uses; on one array under the
    cycle engine that engine's own cycles at the clock) summed over the layers × M, what it was timed on
    (:func:`~archsim.chip_time.chip_meta`) and the chip; None otherwise (one array's cycles are then the chip's
    time). The dynamic energy is the same on one array or many: the chip runs the same accesses."""
    from archsim.array.options import dtype_meta
    from archsim.chip_time import chip_meta, chip_seconds, floor_meta, floor_note, timed_chip
    from archsim.choices.devices import SCALESIM_DTYPE
    from archsim.lowering import lower_network

    chip = timed_chip(config, array, static_power=True)
    if chip is None:
        return None
    lowered = lower_network(network, batch // microbatches, mode, array.element_bytes)
    timing = chip_seconds(lowered, chip, array, engine, dtype_meta(dtype, array) or SCALESIM_DTYPE, array.element_bytes)
    kinds = {kind: sum(row[f"{kind}_chip_seconds"] for row in timing.rows) * microbatches for kind in ("F", "G", "D")}
    return ChipIteration(kinds, {**chip_meta(chip, engine), **floor_meta(timing.floored, engine)}, chip,
                         floor_note(timing, chip, " of a micro-batch" if microbatches > 1 else ""))


def _memory_meta(array: ArrayConfig, engine: str) -> dict[str, object]:
    """The SRAM sizes the energy is priced at (KiB, both engines: each access's energy and the area follow them) and,
    under the cycle engine, the DRAM words/cycle its stalls ran at; the analytic engine's DRAM words are compulsory,
    each operand once, so no bandwidth figure is said (a device file's 10 words/cycle beside its 800 GB/s misled)."""
    from archsim.array.options import memory_meta

    memory = memory_meta(array)
    return memory if engine == "cycle" else {"sram_kb": memory["sram_kb"]}


__all__ = ["chip_layer_energy", "chip_priced_pj", "device_static_note", "energy_document"]
