"""Device sweep points: a transformer trained on a device file whose fields are swept (array shape ×
SRAM × clock × HBM bandwidth × chips × TP × PP, :mod:`archsim.sweep.device_spec`), each point timed and priced as
``archsim train`` times and prices it, and the time/energy front over them.

Each point is the device with those fields replaced (every other field as the file states it: the
SRAM per array and the clock unless swept, the links; a .cfg's SCALE-Sim ``Bandwidth``, where it states one,
restated as the whole words/cycle nearest ``hbm_gbps``, :func:`~archsim.sweep.device_files.cfg_words`), ``chips``
of it in one server as a cluster file ``[[servers]] gpus = chips, device = …, intra_server_gbps`` gives
them (the in-server link the device's own ``[links] intra_gbps``, :func:`in_server_gbps`), and TP × PP × DP
(TP and PP 1 unless swept, DP = chips / (TP · PP)): seconds, memory and ``energy_j`` are :func:`archsim.train`'s on
the device with the spec's ``static_watts`` (else the device file's): the energy model's dynamic joules plus
static_watts × chips × seconds, train's one formula (:func:`archsim.training.energy.static_joules`). The energy
model prices accesses, not cycles (a device's leakage is refused: static power is ``static_watts``), so a clock
changes the dynamic joules not at all (no voltage is modelled) and the static ones with the seconds. The front
(``pareto_optimal``) is the points no fitting point beats in both seconds and joules
(:func:`archsim.pareto_rule.pareto_mask`, equal points both kept); a point whose memory does not fit its chip is kept,
``fits_memory`` false, never on the front.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from archsim.units import GIB

if TYPE_CHECKING:
    import pandas as pd

    from archsim.devices.device import Device
    from archsim.sweep.device_spec import DevicePoint, DeviceSweepSpec

# results.csv: train's names where train prints the quantity (gpu, gpus, iteration_seconds, energy_j,
# fits_memory, …), the device file's where it states it (rows, cols, hbm_gbps)
COLUMNS = ["model", "gpu", "arrays", "rows", "cols", "hbm_gbps", "gpus", "global_batch", "micro_batch", "recompute",
           "dtype", "attention", "static_watts", "iteration_seconds", "energy_j", "peak_memory_gib",
           "memory_capacity_gib", "fits_memory", "pareto_optimal", "model_sha256", "device_sha256"]
SRAM_COLUMN = "sram_kib_per_array"  # after cols, only in a sweep of it: other sweeps' results.csv as before
CLOCK_COLUMN = "clock_ghz"  # after SRAM, only in a sweep of clocks_ghz (the array sweep's name for a clock column)
LAYOUT_COLUMNS = ["tp", "pp", "dp"]  # after gpus, only in a sweep of tp or pp (train's flags)
FP8_COLUMN = "fp8"  # after dtype, only in a sweep stating fp8 (train's --fp8 recipe): other sweeps' results.csv as before
AREA_COLUMN = "area_mm2"  # after energy_j, on a gemm = "arrays" device: the chip's arrays and SRAMs (not cached)


def with_fields(device: Device, arrays: tuple[int, int, int] | None, hbm_gbps: float | None,
                sram_kib_per_array: int | None = None, clock_ghz: float | None = None) -> Device:
    """``device`` with its arrays (count, rows, cols: dealt over the file's cores where their count divides the
    arrays, so a point of the file's own shape is the file, else one array per core), HBM bandwidth (GB/s), SRAM
    per array (KiB) and clock (GHz: its arrays' and fp32 lanes', and its vector unit's unless that states its own)
    replaced, every other field kept; the peaks of the dtypes its arrays run scale with their PEs and clock, as a
    device file's derived peaks would."""
    from archsim.choices.devices import DTYPES

    if arrays is not None:
        count, rows, cols = arrays
        cores = device.arrays.cores  # a [vector] unit without its own cores is repeated in them
        new = replace(device.arrays, count=count, rows=rows, cols=cols,
                      per_core=count // cores if count % cores == 0 else 1)
        old = device.arrays.peak_flops
        ratio = new.peak_flops / old
        peaks = tuple((dtype, new.peak_flops if peak == old else peak * ratio)
                      if device.gemm_units(dtype) is device.arrays else (dtype, peak) for dtype, peak in device.peaks)
        device = replace(device, arrays=new, peaks=peaks)
    if clock_ghz is not None:
        ratio = clock_ghz * 1e9 / device.arrays.clock_hz
        lanes = None if device.lanes is None else replace(device.lanes, clock_hz=clock_ghz * 1e9)
        peaks = tuple((dtype, peak * ratio if dtype in DTYPES else peak) for dtype, peak in device.peaks)
        device = replace(device, arrays=replace(device.arrays, clock_hz=clock_ghz * 1e9), lanes=lanes, peaks=peaks)
    if hbm_gbps is not None:
        device = replace(device, hbm_bytes_per_s=hbm_gbps * 1e9)
    if sram_kib_per_array is not None:
        device = replace(device, sram_bytes_per_array=sram_kib_per_array * 1024.0, sram_keys=())  # no .cfg's keys
    return device


def implausible_points(spec: DeviceSweepSpec) -> tuple[str, ...]:
    """The device figures of ``spec``'s points that no chip has (a unit slipped: an ``hbm_gbps`` axis value in
    TB/s, the file's SRAM in MiB written as KiB), each line once: what ``archsim train`` warns of on the
    device file written with a point's fields (:func:`archsim.devices.device_file.implausible_figures`), its HBM
    judged by the peak of the dtype the sweep's GEMMs run in (``fp8`` set: fp8's, where faster than the 16-bit)."""
    from archsim.choices.devices import FP8
    from archsim.devices.device_file import SRAM_FILE_KEYS, devices_implausible_figures, load_device

    device = load_device(spec.setup.device_path)
    lines = devices_implausible_figures(dict.fromkeys(
        with_fields(device, point.arrays, point.hbm_gbps, point.sram_kib_per_array, point.clock_ghz)
        for point in spec.units()), FP8 if spec.setup.fp8 else spec.setup.dtype)
    for gbps in dict.fromkeys(g for g in spec.hbm_gbps if g is not None):  # a figure the spec gave, not the file
        said = f"[memory] hbm_gbps = {gbps:g} GB/s "
        lines = tuple(line.replace(said, f"{said[:-1]} (the spec's hbm_gbps axis) ") for line in lines)
    for kib in dict.fromkeys(k for k in spec.sram_kib_per_array if k is not None):  # the spec's, as hbm_gbps's
        said = f" {kib:.12g} KiB of SRAM beside each array ({SRAM_FILE_KEYS})"
        lines = tuple(line.replace(said, f" {kib:.12g} KiB of SRAM beside each array (the spec's sram_kib_per_array "
                                         "axis)") for line in lines)
    return lines


def spec_warnings(spec: DeviceSweepSpec) -> tuple[str, ...]:
    """The lines ``archsim sweep`` warns on stderr and :func:`archsim.api.run_sweep` warns as UserWarnings,
    one list for both: each ``array_sides`` side that leaves PEs unused, then each implausible figure, then a
    spec's ``static_watts`` overriding the device file's, then the keys the file states that an array device does
    not read (:func:`archsim.devices.unread_keys.unread_keys_note`, train's note)."""
    from archsim.devices.device_file import load_device
    from archsim.devices.unread_keys import unread_keys_note
    from archsim.sweep.device_arrays import unused_pe_lines

    device = load_device(spec.setup.device_path)
    unread = unread_keys_note(device, str(spec.setup.device_path))  # board_watts, the L2's rate on an array device
    return (*unused_pe_lines(device, spec.array_sides), *implausible_points(spec), *static_override(device, spec),
            *((unread,) if unread else ()))


def spec_notes(spec: DeviceSweepSpec) -> tuple[str, ...]:
    """The notes ``archsim train`` says of a run its points are (``archsim sweep`` on stderr, :func:`archsim.api.run_sweep`
    as UserWarnings): a rotary config.json's sequence read from its ``max_position_embeddings`` (its longest context,
    not a training length: the spec's ``seq`` sets it); fp32 GEMMs on a device without fp32 lanes run on its arrays at
    their fp16 rate; then the
    layouts (chips × tp × pp) skipped as train refuses them, counted (:func:`~archsim.sweep.device_layouts.skipped_line`)."""
    from archsim.devices.device_file import load_device
    from archsim.sweep.device_layouts import skipped_line
    from archsim.training.cluster_file import fp32_on_arrays_note
    from archsim.workload.model_files import default_seq_note, load_transformer

    line = fp32_on_arrays_note(load_device(spec.setup.device_path)) if spec.setup.dtype == "fp32" else None
    config = load_transformer(spec.setup.model_path, seq=spec.setup.seq)
    seq = default_seq_note(config, spec.setup.model_path, spec.setup.seq, spec_key="seq")  # train's note, the spec's key
    per_layout = len(spec.arrays) * len(spec.sram_kib_per_array) * len(spec.clocks_ghz) * len(spec.hbm_gbps)
    skipped = skipped_line(spec.skipped, len(spec.chips) * len(spec.tp) * len(spec.pp), per_layout)
    return tuple(text for text in (seq, line, skipped) if text)


def static_override(device: Device, spec: DeviceSweepSpec) -> tuple[str, ...]:
    """The line saying the spec's ``static_watts`` (a what-if across the sweep) overrides the one the device file
    states, when the two differ; none otherwise."""
    if not device.static_watts or device.static_watts == spec.setup.static_watts:
        return ()
    line = (f"the spec's static_watts = {spec.setup.static_watts:g} W per chip overrides the device file's "
            f"{device.static_watts:g} W")
    return (line,)


def unfit_points_line(frame) -> str | None:
    """The line ``archsim sweep`` warns on stderr and :func:`archsim.api.run_sweep` warns as a UserWarning, one
    text for both, when points of a device sweep's results (a DataFrame of :data:`COLUMNS`) do not fit their
    chip's memory: how many, and the worst one's need (GiB per chip) against its chip's capacity (GiB), as
    ``archsim train`` warns of one layout; None when every point fits (or there are none)."""
    if len(frame) == 0:
        return None
    fits = frame["fits_memory"].astype(bool)
    if fits.all():
        return None
    over = frame[~fits]
    worst = over.loc[over["peak_memory_gib"].idxmax()]
    return (f"{len(over)} of {len(frame)} points do not fit memory (up to {worst['peak_memory_gib']:.4g} GiB per "
            f"chip, its {worst['gpu']} has {worst['memory_capacity_gib']:g} GiB): their rows say fits_memory False; "
            "the report draws them hollow, never on the front")


def in_server_gbps(device: Device) -> float:
    """A cluster file's ``intra_server_gbps`` (Gbit/s, both directions) for the device's own chip-to-chip
    link (its ``[links] intra_gbps``, GB/s per direction), as the shipped device clusters state it."""
    return device.nvlink_bytes_per_s * 2 * 8 / 1e9


def point_rows(point: DevicePoint) -> list[dict[str, object]]:
    """The one row of ``point`` (module docstring). Pure: safe on any worker. Each point reads its model and device
    files again, on whichever process runs it, so each is checked once parsed to be still the one the spec hashed
    (:func:`~archsim.sweep.spec_files.check_unchanged`): an edit mid-run stops the sweep naming the file, never costing a
    point on the edited file under the row's (and cache entry's) first SHA-256."""
    from archsim.api import train
    from archsim.console import notes_kept
    from archsim.sweep.spec_files import check_unchanged
    from archsim.training.cluster_file import gpu_cluster
    from archsim.training.energy import load_priced_device
    from archsim.workload.model_files import load_transformer

    setup = point.setup
    device = replace(with_fields(load_priced_device(setup.device_path), point.arrays, point.hbm_gbps,
                                 point.sram_kib_per_array, point.clock_ghz),
                     static_watts=setup.static_watts)
    edited = "swept.toml"  # the edited device, which has no file: given to the cluster by this name
    cluster = gpu_cluster({"cluster": {"name": "device-sweep"},
                           "servers": [{"count": 1, "gpus": point.chips, "device": edited,
                                        "intra_server_gbps": in_server_gbps(device)}]},
                          Path(setup.device_path).parent, setup.device, setup.dtype, loaded={edited: device})
    with notes_kept():  # dropped: memory that does not fit is this row's ``fits_memory``, not a warning
        config = load_transformer(setup.model_path, seq=setup.seq)
        for what, path, sha256 in (("device", setup.device_path, setup.device_sha256),
                                   ("model", setup.model_path, setup.model_sha256)):
            # absolute: a hand-made setup's relative path (a benchmark's flag) is a file too, never a shipped name
            check_unchanged(os.path.abspath(path), sha256, "after the sweep started", what)
        result, _ = train(config, cluster=cluster, global_batch=setup.global_batch, tp=point.tp or 1,
                          pp=point.pp or 1, dp=point.dp, micro_batch=setup.micro_batch, recompute=setup.recompute,
                          attention=setup.attention, fp8=setup.fp8)
    arrays = device.arrays
    # whole KiB, as the spec states them (KiB of a float, 512.0, until 2026-12-05)
    sram = {} if point.sram_kib_per_array is None else {SRAM_COLUMN: int(point.sram_kib_per_array)}
    clock = {} if point.clock_ghz is None else {CLOCK_COLUMN: arrays.clock_hz / 1e9}
    layout = {} if point.tp is None and point.pp is None else dict(zip(LAYOUT_COLUMNS, (point.tp or 1, point.pp or 1,
                                                                                         point.dp), strict=True))
    return [{"model": config.name, "gpu": device.name, "arrays": f"{arrays.count}x{arrays.rows}x{arrays.cols}",
             "rows": arrays.rows, "cols": arrays.cols, **sram, **clock, "hbm_gbps": device.hbm_bytes_per_s / 1e9,
             "gpus": point.chips, **layout,
             "global_batch": setup.global_batch, "micro_batch": setup.micro_batch, "recompute": setup.recompute,
             "dtype": setup.dtype, **({} if setup.fp8 is None else {FP8_COLUMN: setup.fp8}),
             "attention": setup.attention, "static_watts": setup.static_watts,
             "iteration_seconds": result.iteration_seconds,
             "energy_j": result.energy_j if result.energy_j is not None else math.nan,
             "peak_memory_gib": result.peak_memory_gib, "memory_capacity_gib": device.memory_bytes / GIB,
             "fits_memory": all(result.fits), "model_sha256": setup.model_sha256,
             "device_sha256": setup.device_sha256}]


def chip_area_mm2(device: Device, dtype: str) -> float | None:
    """mm² of ``device``'s arrays with their SRAMs, ``cost --config``'s ``area_mm2`` for the chip: each array's PEs at
    ``dtype``'s width and its three operand SRAMs (:func:`archsim.energy.area.array_area`, from the device file's
    ``[energy]`` table where it names one, else the default), × the arrays; no vector unit, fp32 lanes, HBM or link
    PHYs, so a lower bound on the die. None for a ``gemm = "tiles"`` device, which states no arrays' SRAM."""
    from archsim.array.config import ArrayConfig
    from archsim.choices.devices import ELEMENT_BYTES
    from archsim.energy.area import array_area
    from archsim.energy.file_energy import cfg_table

    if device.gemm != "arrays":
        return None
    arrays = device.arrays
    ifmap, filt, ofmap = device.operand_buffers_kib
    array = ArrayConfig(rows=arrays.rows, cols=arrays.cols, dataflow=arrays.dataflow, ifmap_sram_kb=ifmap,
                        filter_sram_kb=filt, ofmap_sram_kb=ofmap, element_bytes=ELEMENT_BYTES[dtype])
    table = cfg_table(device.energy_table) if device.energy_table else None
    return array_area(array, table).total_mm2 * arrays.count


def with_area(points: list[DevicePoint], rows: list[dict]) -> list[dict]:
    """``rows`` (one a point, in ``points``' order) each with its chip's area (:func:`chip_area_mm2`, at the spec's
    dtype), computed here from the device file and the point's fields rather than cached: a results folder cached
    before the column gets it too. ``rows`` as they are on a ``gemm = "tiles"`` device."""
    from archsim.sweep.spec_files import check_unchanged
    from archsim.training.energy import load_priced_device

    if not points:
        return rows
    setup = points[0].setup
    device = load_priced_device(setup.device_path)
    check_unchanged(os.path.abspath(setup.device_path), setup.device_sha256, "after the sweep started", "device")
    out = []
    for point, row in zip(points, rows, strict=True):
        area = chip_area_mm2(with_fields(device, point.arrays, point.hbm_gbps, point.sram_kib_per_array,
                                         point.clock_ghz), point.setup.dtype)
        out.append(row if area is None else {**row, AREA_COLUMN: area})
    return out


def with_front(rows: list[dict]) -> list[dict]:
    """``rows`` each with ``pareto_optimal``: fits memory and no fitting row beats it in both seconds and
    joules (equal rows do not beat each other)."""
    import numpy as np

    from archsim.pareto_rule import pareto_mask

    fitting = [r for r in rows if r["fits_memory"]]
    mask = pareto_mask(np.array([[r["iteration_seconds"], r["energy_j"]] for r in fitting]).reshape(-1, 2), ties="all")
    front = {id(r) for r, keep in zip(fitting, mask, strict=True) if keep}
    return [{**r, "pareto_optimal": id(r) in front} for r in rows]


def frame(rows: list[dict]) -> pd.DataFrame:
    """Rows as results.csv holds them (the spec's order: arrays, then SRAM, then clock, then bandwidth, then chips,
    TP and PP), the front marked; the SRAM, clock and layout columns only where the spec sweeps them, the area where
    the rows have it (:func:`with_area`)."""
    import pandas as pd

    def present(names: list[str]) -> list[str]:
        return names if any(names[0] in r for r in rows) else []

    at, gpus, energy = COLUMNS.index("cols") + 1, COLUMNS.index("gpus") + 1, COLUMNS.index("energy_j") + 1
    dtype = COLUMNS.index("dtype") + 1
    columns = [*COLUMNS[:at], *present([SRAM_COLUMN]), *present([CLOCK_COLUMN]), *COLUMNS[at:gpus],
               *present(LAYOUT_COLUMNS), *COLUMNS[gpus:dtype], *present([FP8_COLUMN]), *COLUMNS[dtype:energy],
               *present([AREA_COLUMN]), *COLUMNS[energy:]]
    return pd.DataFrame(with_front(rows), columns=columns)


def sweep_rows(spec: DeviceSweepSpec) -> list[dict]:
    """Every point's row, computed here in order, the front marked (no folder, no cache: a benchmark's
    or a notebook's call; ``archsim sweep`` caches each point)."""
    points = spec.units()
    return with_front(with_area(points, [row for point in points for row in point_rows(point)]))


__all__ = ["AREA_COLUMN", "CLOCK_COLUMN", "COLUMNS", "LAYOUT_COLUMNS", "SRAM_COLUMN", "chip_area_mm2", "frame", "in_server_gbps", "point_rows", "spec_warnings", "sweep_rows", "with_area", "with_fields", "with_front"]
