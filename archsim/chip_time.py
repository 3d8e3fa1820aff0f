"""A chip's time for each layer's F, G and δ in ``archsim cost``: where ``--config`` is a device file of several
arrays (with ``--energy``, or in ``archsim energy``, one of one array stating ``static_watts`` too), the network's
lowered ops timed on the whole chip by the op timing ``train`` uses for device files
(:func:`archsim.devices.kernel_ops.op_seconds`: each GEMM's folds dealt to the arrays in ⌈folds · count / arrays⌉
waves of one fold's cycles at the arrays' clock, against its operands' and result's HBM bytes at the file's
bandwidth (with ``[memory] dram_traffic = "scalesim"`` SCALE-Sim's counted DRAM words instead), whichever is longer — :mod:`archsim.devices.array_waves` — plus a memory-bound op's reads and writes streamed
at that bandwidth (:func:`streamed_ops`, train's count), the file's ``gemm_efficiency``, ``memory_efficiency`` and ``launch_s`` as train reads them).

Cost's other columns price one array (SCALE-Sim's count); these price the chip the file states, its arrays of the
shape, dataflow and clock that array was costed at (``--array``, ``--dataflow`` and ``--clock-ghz`` override the
file's for both). Under the ``cycle`` engine the chip is timed by that engine's own cycles instead
(:func:`chip_seconds`, the one rule): a chip of one array (``--energy``) by its cycles of each op, one of
several by the busiest array's share of each GEMM's folds, dealt as train deals them and stepped at the chip's
``hbm_gbps`` ÷ the arrays running at once (:mod:`archsim.chip_cycles`), so the stalls of arrays sharing one HBM
show; each op's seconds floored at its HBM bytes (train's count) ÷ ``hbm_gbps``, as the engine, each operand
buffer drawing the whole rate, could otherwise move them faster than the chip's HBM (:func:`chip_seconds`).
Seconds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np

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
    several: ``energy`` and ``cost --energy`` price its static power over its seconds (:func:`chip_seconds`:
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
    return replace(device, arrays=arrays)  # its MACs per PE per cycle train's: cost's cycles are packed alike


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
    ops = streamed_ops([op for item in lowered for op in item.ops])
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


def streamed_ops(ops: Sequence[TrainingOp]) -> list[TrainingOp]:
    """``ops`` as a device's op timing streams them: a lowered non-GEMM op's ``vector_elements`` (the vector unit's
    element operations) replaced by the HBM elements its unfused kernel reads plus writes (``streamed_elements``,
    :func:`archsim.lowering.streamed.layer_streamed`), the count train's op lists stream, so an op takes the same
    seconds in ``cost``, ``energy`` and ``train``."""
    return [op if op.streamed_elements is None else replace(op, vector_elements=op.streamed_elements) for op in ops]


@dataclass(frozen=True)
class ChipSeconds:
    """A network's seconds on a chip (:func:`chip_seconds`): ``rows``, each layer's F, G and δ seconds and their sum
    (:data:`CHIP_COLUMNS`); ``floored``, how many of its ``ops`` the HBM floor bound (under the ``cycle`` engine: the
    op's HBM bytes ÷ the chip's ``hbm_gbps`` above the engine's cycles at the clock; 0 under the analytic engine,
    whose op timing is its own roofline)."""

    rows: list[dict[str, float]]
    floored: int
    ops: int
    unfloored: float = 0.0  # s, the cycle engine's seconds of every op before the floor (0 under the analytic engine)


def chip_seconds(lowered: Sequence[LayerOps], chip: Device, array: ArrayConfig, engine: str, dtype: str,
                 element_bytes: int) -> ChipSeconds:
    """The one rule for a chip's seconds (``rows``: each layer's F, G and δ and their sum), ``cost``'s and ``gemm``'s
    chip columns and the time ``energy`` and ``cost --energy`` price the chip's static power over: train's op timing
    (:func:`layer_chip_seconds`) under the analytic engine; under the ``cycle`` engine the cycle engine's own cycles at the chip's clock, so the
    leakage is spent over the time the engine's dynamic energy and DRAM counts took: on a chip of one array each op's
    cycles (stalls at its DRAM rate included, ``array`` as that engine ran it: :func:`engine_cycles`), on several the
    busiest array's share of each GEMM's folds, dealt as train deals them, stepped at its share of the chip's
    ``hbm_gbps`` (:func:`archsim.chip_cycles.chip_op_cycles`). Each op's seconds are floored at its HBM bytes as
    train's op timing counts them (:func:`archsim.devices.kernel_ops.array_op_hbm_bytes`, ``element_bytes`` each)
    ÷ the chip's ``hbm_gbps``: the engine gives each of its three operand buffers the whole DRAM rate (SCALE-Sim's
    memory model; on several arrays each array's share of it), so its cycles alone could move the bytes faster than
    the chip's HBM can. An op the floor does not bind keeps the engine's seconds exactly."""
    if engine != "cycle":
        return ChipSeconds(layer_chip_seconds(lowered, chip, dtype, element_bytes), 0,
                           sum(len(item.ops) for item in lowered))
    from archsim.devices.kernel_ops import array_op_hbm_bytes

    ops = [op for item in lowered for op in item.ops]
    clock_hz = chip.arrays.clock_hz
    if not ops:
        return ChipSeconds(_kind_seconds(lowered, [], [], clock_hz), 0, 0)
    cycles = (engine_cycles(ops, array) if chip.arrays.count == 1 else _shared_cycles(ops, array, chip)).tolist()
    bound: list[float | None] = [None] * len(ops)
    if chip.hbm_bytes_per_s > 0:  # a file that states its HBM rate (train's reader asks for one)
        floor = (array_op_hbm_bytes(streamed_ops(ops), chip, dtype, element_bytes) / chip.hbm_bytes_per_s).tolist()
        bound = [seconds if seconds > count / clock_hz else None for count, seconds in zip(cycles, floor, strict=True)]
    return ChipSeconds(_kind_seconds(lowered, cycles, bound, clock_hz), sum(seconds is not None for seconds in bound),
                       len(ops), sum(cycles) / clock_hz)


def engine_cycles(ops: Sequence[TrainingOp], array: ArrayConfig) -> np.ndarray:
    """Each op's cycles by the cycle engine on ``array`` (int64; cost's ``F/G/D_cycles``: SCALE-Sim's count, stalls
    and the vector unit's cycles included): a chip of one array's, before the HBM floor."""
    from archsim.array.costing import op_cycles

    return op_cycles(ops, array, "cycle")


def _shared_cycles(ops: Sequence[TrainingOp], array: ArrayConfig, chip: Device) -> np.ndarray:
    """:func:`archsim.chip_cycles.chip_op_cycles` of ``ops`` on ``chip`` (int64)."""
    from archsim.chip_cycles import chip_op_cycles

    return chip_op_cycles(ops, array, chip)


def _kind_seconds(lowered: Sequence[LayerOps], cycles: Sequence[int], floored: Sequence[float | None],
                  clock_hz: float) -> list[dict[str, float]]:
    """Each layer's F, G and δ seconds (:data:`CHIP_COLUMNS`): ``cycles``, one per op in order, summed by kind
    ÷ ``clock_hz``, but an op whose ``floored`` seconds are given (the HBM floor bound it) those seconds instead."""
    rows, position = [], 0
    for item in lowered:
        kinds = {"F": 0, "G": 0, "D": 0}
        floors = {"F": 0.0, "G": 0.0, "D": 0.0}
        for op in item.ops:
            kind, floor = op.kind[0], floored[position]
            if floor is None:
                kinds[kind] += int(cycles[position])
            else:
                floors[kind] += floor
            position += 1
        row = {f"{kind}_chip_seconds": count / clock_hz + floors[kind] for kind, count in kinds.items()}
        row["chip_seconds"] = row["F_chip_seconds"] + row["G_chip_seconds"] + row["D_chip_seconds"]
        rows.append(row)
    return rows


def gemm_chip_seconds(shapes: Sequence[tuple[int, int, int, int, int, str]], chip: Device, array: ArrayConfig,
                      engine: str, dtype: str, element_bytes: int) -> tuple[list[float], int]:
    """Seconds of each GEMM ``(m, k, n, rows, cols, dataflow)`` on the whole ``chip`` (``archsim gemm``'s
    ``chip_seconds``), its arrays and ``array`` (the one ``gemm`` costed: SRAMs, width) of that row's shape and
    dataflow: the GEMM as one op timed by :func:`chip_seconds`, the rule ``cost`` and ``energy`` take (train's
    op timing; under the ``cycle`` engine that engine's cycles, on several arrays the busiest array's share at
    ``hbm_gbps`` ÷ the arrays running at once, :func:`archsim.chip_cycles.chip_op_cycles`, floored at the GEMM's HBM
    bytes ÷ ``hbm_gbps``); and how many of them that floor bound."""
    from archsim.lowering import Gemm, TrainingOp

    seconds, floored = [], 0
    for m, k, n, rows, cols, dataflow in shapes:
        rows, cols, dataflow = int(rows), int(cols), str(dataflow)
        shaped = replace(chip, arrays=replace(chip.arrays, rows=rows, cols=cols, dataflow=dataflow))
        op = TrainingOp(layer="gemm", kind="F", gemms=(Gemm(int(m), int(k), int(n)),))
        timed = chip_seconds([_OneOp((op,))], shaped, replace(array, rows=rows, cols=cols, dataflow=dataflow), engine,
                             dtype, element_bytes)
        seconds.append(timed.rows[0]["chip_seconds"])
        floored += timed.floored
    return seconds, floored


@dataclass(frozen=True)
class _OneOp:
    """A layer of ``ops`` alone (``gemm``'s GEMM), all :func:`chip_seconds` reads of a lowered layer."""

    ops: tuple[TrainingOp, ...]


def chip_meta(chip: Device, engine: str = "analytic") -> dict[str, object]:
    """What the chip columns were timed on: its name, arrays and their shape, clock (GHz) and HBM (GB/s), and how
    (:func:`chip_seconds`'s rule under ``engine``); a file's ``[compute] host_s`` named as left out: train
    floors a pass (a layer's forward, its backward) at the ops it issues × host_s, a floor over Megatron's op list
    that a layer's own columns have no pass to apply to."""
    arrays = chip.arrays
    assert chip.efficiency is not None  # a device file states its own (no host time unstated)
    host = chip.efficiency.host_s
    if engine == "cycle" and arrays.count == 1:
        by = ("the cycle engine's cycles of each op (its stalls at its DRAM rate included) at the chip's clock"
              + _HBM_FLOOR)
    elif engine == "cycle":
        by = ("the cycle engine's cycles of the busiest array's share of each GEMM's folds, dealt in waves over the "
              "arrays as train deals them, its stalls at hbm_gbps ÷ the arrays running at once on each operand buffer "
              "(a vector op's elements dealt to the arrays, the busiest one's ÷ its columns), at the chip's clock"
              + _HBM_FLOOR)
    else:
        by = "train's op timing: each GEMM's folds in waves over the arrays vs its HBM bytes" + (
            " (SCALE-Sim's memory model's count of DRAM words for the file's SRAMs: [memory] dram_traffic = "
            "\"scalesim\")" if chip.gemm == "arrays" and chip.dram_traffic == "scalesim" else " (compulsory: each operand and result once)")
    return {"chip_name": chip.name, "chip_arrays": arrays.count, "chip_array": f"{arrays.rows}x{arrays.cols}",
            "chip_clock_ghz": arrays.clock_hz / 1e9, "chip_hbm_gbps": chip.hbm_bytes_per_s / 1e9,
            "chip_seconds_by": by
            + (f"; the device's time alone, without [compute] host_s = {host:g} s (train's floor on a pass: its "
               "ops × host_s)" if host else "")}


_HBM_FLOOR = ("; each op at least its HBM bytes (train's count: each GEMM's operands and result once, or SCALE-Sim's "
             "DRAM words with [memory] dram_traffic = \"scalesim\"; a vector op's reads and writes streamed) ÷ hbm_gbps, "
             "the engine giving each operand buffer the whole rate (chip_hbm_floor_ops: the ops it bound)")
"""What ``chip_seconds_by`` adds under the ``cycle`` engine: the HBM floor :func:`chip_seconds` sets."""


def floor_meta(floored: int, engine: str) -> dict[str, object]:
    """The meta's ``chip_hbm_floor_ops`` under the ``cycle`` engine: ``floored``, how many ops the HBM floor bound
    (:attr:`ChipSeconds.floored`; ``gemm``'s GEMMs, :func:`gemm_chip_seconds`); nothing under the analytic engine
    (train's op timing, its own roofline)."""
    return {"chip_hbm_floor_ops": floored} if engine == "cycle" else {}


def floor_note(timed: ChipSeconds, chip: Device, of: str = "") -> str | None:
    """The line ``cost`` and ``energy`` say after their table where the HBM floor bound an op under the ``cycle``
    engine (:func:`chip_seconds`): how many of how many, at which rate, and the chip seconds it moved (ms) of
    ``timed``'s ops (``of``: what they are, e.g. a micro-batch's); None where it bound none."""
    if not timed.floored:
        return None
    total = sum(row["chip_seconds"] for row in timed.rows)
    return (f"the HBM floor bound {timed.floored} of {timed.ops} ops{of}: their chip seconds are their HBM bytes "
            f"(train's count) ÷ hbm_gbps = {chip.hbm_bytes_per_s / 1e9:g} GB/s, above the cycle engine's cycles, "
            f"which give each operand buffer the whole DRAM rate; chip_seconds {timed.unfloored * 1e3:.4g} → "
            f"{total * 1e3:.4g} ms")


__all__ = [
    "CHIP_COLUMNS",
    "ChipSeconds",
    "chip_meta",
    "chip_seconds",
    "dram_counts",
    "engine_cycles",
    "file_dram_words",
    "floor_meta",
    "floor_note",
    "gemm_chip_seconds",
    "layer_chip_seconds",
    "one_array_chip",
    "several_array_chip",
    "streamed_ops",
    "timed_chip",
]
