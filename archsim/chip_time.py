"""A chip's time for each layer's F, G and δ in ``archsim cost``: where ``--config`` is a device file of several
arrays (with ``--energy``, or in ``archsim energy``, one of one array stating ``static_watts`` too), the network's
lowered ops timed on the whole chip by the op timing ``train`` uses for device files
(:func:`archsim.devices.kernel_ops.op_seconds`: each GEMM's folds dealt to the arrays in ⌈folds · count / arrays⌉
waves of one fold's cycles at the arrays' clock, against its operands' and result's HBM bytes at the file's
bandwidth (with ``[memory] dram_traffic = "scalesim"`` SCALE-Sim's counted DRAM words instead), whichever is longer — :mod:`archsim.devices.array_waves` — plus a memory-bound op's elements streamed at
that bandwidth, the file's ``gemm_efficiency``, ``memory_efficiency`` and ``launch_s`` as train reads them).

Cost's other columns price one array (SCALE-Sim's count); these price the chip the file states, its arrays of the
shape, dataflow and clock that array was costed at (``--array``, ``--dataflow`` and ``--clock-ghz`` override the
file's for both). Under the ``cycle`` engine the chip is timed by that engine's own cycles instead
(:func:`priced_chip_seconds`, the one rule): a chip of one array (``--energy``) by its cycles of each op, one of
several by the busiest array's share of each GEMM's folds, dealt as train deals them and stepped at the chip's
``hbm_gbps`` ÷ the arrays running at once (:mod:`archsim.chip_cycles`), so the stalls of arrays sharing one HBM
show. Seconds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from archsim.array.config import ArrayConfig
    from archsim.devices.array_dram import DramWords
    from archsim.devices.device import Device
    from archsim.lowering import TrainingOp

CHIP_COLUMNS = ("F_chip_seconds", "G_chip_seconds", "D_chip_seconds", "chip_seconds")


class LayerOps(Protocol):
    """What the chip columns read of a lowered layer (:class:`~archsim.lowering.LoweredLayer`): its ops."""

    @property
    def ops(self) -> tuple[TrainingOp, ...]: ...


def several_array_chip(config: str | Path | None, array: ArrayConfig) -> Device | None:
    """The chip ``config`` states as ``train`` reads it (:func:`~archsim.devices.device_file.load_device`), its
    arrays of ``array``'s shape, dataflow and clock; None for no file, a plain SCALE-Sim ``.cfg``, a device of one
    array (cost's columns are then its time) and a ``.cfg`` device file ``train`` refuses (without ``[memory]``:
    no HBM bandwidth to time it by; ``cost`` reads its array all the same)."""
    from archsim.array.device_notes import device_arrays_note

    if config is None or device_arrays_note(config) is None:  # no device file, or one of one array
        return None
    return _read_chip(config, array)


def one_array_chip(config: str | Path | None, array: ArrayConfig) -> Device | None:
    """The chip ``config`` states where it is a device file of one array that ``train`` reads stating ``[device]
    static_watts``, its array of ``array``'s shape, dataflow and clock as :func:`several_array_chip` gives a chip of
    several: ``energy`` and ``cost --energy`` price its static power over its seconds (:func:`priced_chip_seconds`:
    train's op timing, under the ``cycle`` engine that engine's cycles) as they price a chip of several arrays
    (:func:`archsim.energy_run.chip_priced_pj`). None for no file, a plain SCALE-Sim ``.cfg``, a device of several
    arrays (:func:`several_array_chip`), one stating no static power (its leakage the energy table's alone, over the
    array's cycles, the model's own: nothing to reprice) and a ``.cfg`` device file ``train`` refuses."""
    from archsim.array.device_notes import device_array_count

    if config is None or device_array_count(config) != 1:
        return None
    chip = _read_chip(config, array)
    return chip if chip is not None and chip.static_watts > 0 else None


def timed_chip(config: str | Path | None, array: ArrayConfig, *, static_power: bool) -> Device | None:
    """The chip a run on ``config`` is timed on, its arrays of ``array``'s shape, dataflow and clock: a device file of
    several arrays (:func:`several_array_chip`: ``cost``'s chip columns) and, where the run prices the chip's
    ``static_power`` over its seconds (``energy``, ``cost --energy``), one of one array stating ``static_watts``
    (:func:`one_array_chip`); None otherwise. The one rule ``energy`` and ``cost`` take."""
    return several_array_chip(config, array) or (one_array_chip(config, array) if static_power else None)


def _read_chip(config: str | Path, array: ArrayConfig) -> Device | None:
    """The device file ``config`` as ``train`` reads it, its arrays reshaped to ``array`` (its clock where it has
    one) and its operand buffers ``array``'s (KiB; the file's unless ``--sram-kb`` replaced them: what a
    ``dram_traffic = "scalesim"`` count reads); None for a ``.cfg`` device file ``train`` refuses."""
    from archsim.array.device_sections import is_device_toml
    from archsim.array.sram_sizes import cfg_sram_keys
    from archsim.devices.device_file import load_device
    from archsim.errors import InputError

    try:
        device = load_device(config)
    except InputError:
        if is_device_toml(config):  # read by the same reader already: never here
            raise
        return None
    arrays = replace(device.arrays, rows=array.rows, cols=array.cols, dataflow=array.dataflow,
                     clock_hz=array.clock_hz or device.arrays.clock_hz)
    buffers = (array.ifmap_sram_kb, array.filter_sram_kb, array.ofmap_sram_kb)
    if buffers != device.operand_buffers_kib:  # --sram-kb: the chip's buffers the array's, as energy prices them
        device = replace(device, sram_keys=cfg_sram_keys(array), sram_bytes_per_array=sum(buffers) * 1024.0)
    return replace(device, arrays=arrays)


def file_dram_words(config: str | Path | None, array: ArrayConfig, engine: str, dtype: str) -> DramWords | None:
    """The DRAM count ``energy`` and ``cost --energy`` price ``dtype`` GEMMs by where ``config`` is a device file
    ``train`` reads stating ``[memory] dram_traffic = "scalesim"``, of any number of arrays: the words train's op
    timing and energy charge (:func:`archsim.devices.array_dram.device_dram_words`), its arrays of ``array``'s
    shape, dataflow and clock (the chip the columns are timed on), in words of ``array``'s element size. None under
    the ``cycle`` engine (its own simulated counts), for no file, a plain SCALE-Sim ``.cfg``, a ``.cfg`` train
    refuses and a file counting compulsory traffic (the energy model's default: each operand once)."""
    from archsim.devices.array_dram import device_dram_words

    if engine == "cycle" or config is None:
        return None
    chip = _read_chip(config, array)
    return None if chip is None else device_dram_words(chip, dtype, array.element_bytes)


def dram_counts(dram: DramWords | None, engine: str) -> str:
    """The meta's ``dram_counts``: which DRAM words the energy was priced by (:func:`file_dram_words`)."""
    if engine == "cycle":
        return "cycle engine"
    if dram is not None:
        return ("SCALE-Sim's memory model's count for the device file's SRAMs and hbm_gbps ([memory] dram_traffic = "
                "\"scalesim\"), each array's dealt sub-GEMM's: the words train's op timing and energy charge")
    return "compulsory (each operand once per GEMM)"


def layer_chip_seconds(lowered: Sequence[LayerOps], chip: Device, dtype: str,
                       element_bytes: int) -> list[dict[str, float]]:
    """Each layer's F, G and δ seconds on ``chip`` and their sum (:data:`CHIP_COLUMNS`), its elements
    ``element_bytes`` bytes (cost's width; ``dtype`` names it: fp32 runs on a chip's fp32 lanes where it has them)."""
    from archsim.devices.kernel_ops import op_seconds

    assert chip.efficiency is not None  # a device file states its own (1.0 and no launch unstated)
    ops = [op for item in lowered for op in item.ops]
    seconds = op_seconds(ops, chip, chip.efficiency, dtype, element_bytes).tolist() if ops else []
    rows, position = [], 0
    for item in lowered:
        row = dict.fromkeys(CHIP_COLUMNS, 0.0)
        for op in item.ops:
            row[f"{op.kind}_chip_seconds"] += seconds[position]
            position += 1
        row["chip_seconds"] = row["F_chip_seconds"] + row["G_chip_seconds"] + row["D_chip_seconds"]
        rows.append(row)
    return rows


def times_by_cycle_engine(chip: Device, engine: str) -> bool:
    """Whether ``chip``'s seconds are the cycle engine's own (:func:`priced_chip_seconds`): under the ``cycle``
    engine, on a chip of one array or several."""
    return engine == "cycle"


def priced_chip_seconds(lowered: Sequence[LayerOps], chip: Device, array: ArrayConfig, engine: str, dtype: str,
                        element_bytes: int) -> list[dict[str, float]]:
    """Each layer's F, G and δ seconds on ``chip`` and their sum (:data:`CHIP_COLUMNS`), the time ``energy`` and
    ``cost --energy`` price the chip's static power over and name as its seconds. The one rule: train's op timing
    (:func:`layer_chip_seconds`) under the analytic engine; under the ``cycle`` engine the cycle engine's own cycles
    at the chip's clock, so the leakage is spent over the time the engine's dynamic energy and DRAM counts took: on
    a chip of one array each op's cycles (stalls at its DRAM rate included, ``array`` as that engine ran it:
    :func:`engine_chip_seconds`), on several the busiest array's share of each GEMM's folds, dealt as train deals
    them, stepped at its share of the chip's ``hbm_gbps`` (:func:`shared_chip_seconds`)."""
    if times_by_cycle_engine(chip, engine):
        if chip.arrays.count == 1:
            return engine_chip_seconds(lowered, array, chip.arrays.clock_hz)
        return shared_chip_seconds(lowered, array, chip)
    return layer_chip_seconds(lowered, chip, dtype, element_bytes)


def engine_chip_seconds(lowered: Sequence[LayerOps], array: ArrayConfig, clock_hz: float) -> list[dict[str, float]]:
    """Each layer's F, G and δ seconds (:data:`CHIP_COLUMNS`): the cycle engine's cycles of its ops on ``array``
    (cost's ``F/G/D_cycles``: SCALE-Sim's count, stalls and the vector unit's cycles included) ÷ ``clock_hz``."""
    from archsim.array.costing import op_cycles

    ops = [op for item in lowered for op in item.ops]
    return _kind_seconds(lowered, op_cycles(ops, array, "cycle").tolist() if ops else [], clock_hz)


def shared_chip_seconds(lowered: Sequence[LayerOps], array: ArrayConfig, chip: Device) -> list[dict[str, float]]:
    """Each layer's F, G and δ seconds (:data:`CHIP_COLUMNS`) on ``chip``'s several arrays under the cycle engine:
    its ops' cycles by :func:`archsim.chip_cycles.chip_op_cycles` (the busiest array's share of each GEMM's folds,
    dealt as train deals them, stepped at hbm_gbps ÷ the arrays running at once; a vector op's elements dealt to the arrays) ÷
    the chip's clock."""
    from archsim.chip_cycles import chip_op_cycles

    ops = [op for item in lowered for op in item.ops]
    return _kind_seconds(lowered, chip_op_cycles(ops, array, chip).tolist() if ops else [], chip.arrays.clock_hz)


def _kind_seconds(lowered: Sequence[LayerOps], cycles: Sequence[int], clock_hz: float) -> list[dict[str, float]]:
    """Each layer's F, G and δ seconds (:data:`CHIP_COLUMNS`): ``cycles``, one per op in order, summed by kind
    ÷ ``clock_hz``."""
    rows, position = [], 0
    for item in lowered:
        kinds = {"F": 0, "G": 0, "D": 0}
        for op in item.ops:
            kinds[op.kind[0]] += int(cycles[position])
            position += 1
        row = {f"{kind}_chip_seconds": count / clock_hz for kind, count in kinds.items()}
        row["chip_seconds"] = row["F_chip_seconds"] + row["G_chip_seconds"] + row["D_chip_seconds"]
        rows.append(row)
    return rows


def gemm_chip_seconds(shapes: Sequence[tuple[int, int, int, int, int, str]], chip: Device, array: ArrayConfig,
                      engine: str, dtype: str, element_bytes: int) -> list[float]:
    """Seconds of each GEMM ``(m, k, n, rows, cols, dataflow)`` on the whole ``chip`` (``archsim gemm``'s
    ``chip_seconds``), its arrays and ``array`` (the one ``gemm`` costed: SRAMs, width) of that row's shape and
    dataflow: the GEMM as one op timed by :func:`priced_chip_seconds`, the rule ``cost`` and ``energy`` take (train's
    op timing; under the ``cycle`` engine that engine's cycles, on several arrays the busiest array's share at
    ``hbm_gbps`` ÷ the arrays running at once, :func:`archsim.chip_cycles.chip_op_cycles`)."""
    from archsim.lowering import Gemm, TrainingOp

    seconds = []
    for m, k, n, rows, cols, dataflow in shapes:
        rows, cols, dataflow = int(rows), int(cols), str(dataflow)
        shaped = replace(chip, arrays=replace(chip.arrays, rows=rows, cols=cols, dataflow=dataflow))
        op = TrainingOp(layer="gemm", kind="F", gemms=(Gemm(int(m), int(k), int(n)),))
        [row] = priced_chip_seconds([_OneOp((op,))], shaped, replace(array, rows=rows, cols=cols, dataflow=dataflow),
                                    engine, dtype, element_bytes)
        seconds.append(row["chip_seconds"])
    return seconds


@dataclass(frozen=True)
class _OneOp:
    """A layer of ``ops`` alone (``gemm``'s GEMM), all :func:`priced_chip_seconds` reads of a lowered layer."""

    ops: tuple[TrainingOp, ...]


def chip_meta(chip: Device, engine: str = "analytic") -> dict[str, object]:
    """What the chip columns were timed on: its name, arrays and their shape, clock (GHz) and HBM (GB/s), and how
    (:func:`priced_chip_seconds`'s rule under ``engine``); a file's ``[compute] host_s`` named as left out: train
    floors a pass (a layer's forward, its backward) at the ops it issues × host_s, a floor over Megatron's op list
    that a layer's own columns have no pass to apply to."""
    arrays = chip.arrays
    assert chip.efficiency is not None  # a device file states its own (no host time unstated)
    host = chip.efficiency.host_s
    if times_by_cycle_engine(chip, engine) and arrays.count == 1:
        by = "the cycle engine's cycles of each op (its stalls at its DRAM rate included) at the chip's clock"
    elif times_by_cycle_engine(chip, engine):
        by = ("the cycle engine's cycles of the busiest array's share of each GEMM's folds, dealt in waves over the "
              "arrays as train deals them, its stalls at hbm_gbps ÷ the arrays running at once on each operand buffer "
              "(a vector op's elements dealt to the arrays, the busiest one's ÷ its columns), at the chip's clock")
    else:
        by = "train's op timing: each GEMM's folds in waves over the arrays vs its HBM bytes" + (
            " (SCALE-Sim's memory model's count of DRAM words for the file's SRAMs: [memory] dram_traffic = "
            "\"scalesim\")" if chip.gemm == "arrays" and chip.dram_traffic == "scalesim" else " (compulsory: each operand and result once)")
    return {"chip_name": chip.name, "chip_arrays": arrays.count, "chip_array": f"{arrays.rows}x{arrays.cols}",
            "chip_clock_ghz": arrays.clock_hz / 1e9, "chip_hbm_gbps": chip.hbm_bytes_per_s / 1e9,
            "chip_seconds_by": by
            + (f"; the device's time alone, without [compute] host_s = {host:g} s (train's floor on a pass: its "
               "ops × host_s)" if host else "")}


__all__ = ["CHIP_COLUMNS", "chip_meta", "dram_counts", "engine_chip_seconds", "file_dram_words", "gemm_chip_seconds",
           "layer_chip_seconds", "one_array_chip", "priced_chip_seconds", "several_array_chip", "shared_chip_seconds",
           "timed_chip", "times_by_cycle_engine"]
