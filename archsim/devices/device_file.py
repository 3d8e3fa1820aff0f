"""Device files: an accelerator (or a GPU written as arrays) for ``archsim train`` and ``archsim search``.

Two forms, both documented in docs/formats.md ("Device files"):

* a TOML with ``[device]``, ``[compute]`` (and an optional ``[compute.peak_tflops]``), ``[memory]`` and ``[links]``;
* a SCALE-Sim ``.cfg`` (read by :func:`archsim.array.config.read_scalesim_cfg`: one array's shape,
  dataflow, SRAM and ``[archsim] ClockGHz``) plus ``[device]``, ``[memory]`` and ``[links]`` sections
  whose keys are the TOML's.

Unknown sections and keys are refused (:mod:`archsim.array.device_sections`, the one check); every number is range-checked as :mod:`archsim.validate`
checks flags (finite, positive where it must be); errors name the file and the key.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from archsim.array.cfg_lines import cfg_located
from archsim.array.config import read_scalesim_cfg
from archsim.array.device_sections import (
    DEVICE_WORD_BYTES,
    LINKS_ON_TILES,
    STATIC_ON_TILES,
    cfg_device_sections,
    checked_sections,
    is_device_toml,
    words_gbps,
)
from archsim.array.device_values import comm_sms, link_seconds
from archsim.array.mac_rates import array_rates, rate_hint, rate_words
from archsim.array.sram_sizes import (
    MAX_PLAUSIBLE_SRAM_KIB,
    MIN_SRAM_KIB,
    cfg_sram_fix,
    cfg_sram_keys,
    cfg_sram_slip,
    short_sram,
    sram_in_bytes,
)
from archsim.choices.devices import DTYPES, FP8, NCCL_FIT
from archsim.clock import clock_hz
from archsim.devices.device import Arrays, Device, VectorUnit
from archsim.devices.device_figures import check_static_below_board, hbm_per_flop_line, link_pj_line, static_watts_line
from archsim.devices.kernel_constants import one_fraction
from archsim.errors import InputError
from archsim.toml_errors import located, parse_toml
from archsim.units import GIB
from archsim.validate import check_file_ending, check_name, read_text

PEAK_TOLERANCE = 0.01  # a stated arrays peak may differ from 2 · PEs · clock by a datasheet's rounding
# GB/s of the memories chips train from: one LPDDR4 channel (12.8) … B200's HBM3e (8,000), with headroom. A figure
# outside is possible, only implausible: a GB/s figure typed in TB/s (1.6) or MB/s (1,600,000) is 1000× off.
HBM_GBPS_PLAUSIBLE = (10.0, 20_000.0)
# PEs per chip: 64 arrays of 1024 × 1024, each array at the array commands' limit
# (:data:`archsim.array.options.MAX_PLAUSIBLE_PES`); 10^8 arrays typed for 16 is far above it.
MAX_PLAUSIBLE_CHIP_PES = 2**26
# GB/s per direction of the in-server fabrics chips train over: 10 GbE (1.25) … NVLink 5 (900), with headroom. As for
# HBM, a figure outside is only implausible: 200 GB/s typed in TB/s (0.2) or MB/s (200,000) is 1000× off.
INTRA_GBPS_PLAUSIBLE = (1.0, 10_000.0)
# GB/s per direction of one chip-to-chip link (NVLink 5's 50, NVLink-C2C's 450), with headroom: 6 links of 100 GB/s
MAX_PLAUSIBLE_LINK_GBPS = 500.0  # written in Gbit/s, intra_gbps = 4800, is 800 a link
MAX_PLAUSIBLE_HBM_GIB = 4096  # GiB per chip: 14× B300's 288; 48 GiB typed in MiB (49,152) is above it


def _key_of(field: str | None) -> str:
    """The device file's key for an :class:`Arrays` field (an error names the key the user wrote)."""
    return {"count": "arrays", "per_core": "arrays_per_core", "clock_hz": "clock_mhz"}.get(field or "", field or "")


def _check_array_peaks(given: dict[str, float], arrays: Arrays, lanes: Arrays | None, rates: dict[str, float],
                       file: str) -> None:
    """With ``gemm = "arrays"`` a GEMM runs at the arrays' own rate (the lanes' for fp32 where given) × the dtype's
    MACs per PE per cycle (``rates``, ``[compute] macs_per_pe``; 1 unstated), so a stated peak of a dtype archsim's
    GEMMs run in is only MFU's denominator: one that is not that rate (within 1%, a datasheet's rounding) would put
    MFU off by its ratio, above 1 when it is lower. An fp8 peak (what train's ``--fp8`` needs) is held to the arrays'
    rate too: their fp8 GEMMs run there, at 1 byte an operand. A peak at a whole multiple (or unit fraction) of the
    one-MAC rate, the key unstated, is told the ``macs_per_pe`` that states it."""
    for dtype, tflops in given.items():
        if dtype not in DTYPES and dtype != FP8:  # fp8: train's --fp8 GEMMs, on the arrays too
            continue  # tf32, fp64: datasheet figures no GEMM of archsim runs in
        units = lanes if dtype == "fp32" and lanes is not None else arrays
        rate = rates.get(dtype, 1.0)
        own = units.peak_flops * rate / 1e12
        if abs(tflops - own) <= PEAK_TOLERANCE * own:
            continue
        hint = ("" if units is not arrays or dtype in rates else
                rate_hint(dtype, tflops / (units.peak_flops / 1e12), PEAK_TOLERANCE))
        at = f" × {rate_words(dtype, rate)}" if rate != 1 else ""
        raise InputError(f"{tflops:g} TFLOP/s is not what the arrays compute: with gemm = \"arrays\" a GEMM runs "
                         f"at 2 · {units.count} · {units.rows} · {units.cols} · {units.clock_hz / 1e9:g} GHz{at} = "
                         f"{own:.4g} TFLOP/s; " + (f"drop the {dtype} peak (it defaults to that)" if dtype in DTYPES
                                                    or dtype in rates else f"state the {dtype} peak as that")
                         + f"{hint} or use gemm = \"tiles\"",
                         file=file, field=f"compute.peak_tflops.{dtype}")


# a TOML's three SRAMs (sram_kib_per_array = [ifmap, filter, ofmap]), named as its warnings name them
TOML_SRAM_KEYS = ("sram_kib_per_array[0]", "sram_kib_per_array[1]", "sram_kib_per_array[2]")


def _device(values: dict[str, dict[str, Any]], arrays: Arrays, file: str,
            sram_keys: tuple[tuple[str, int], ...] = ()) -> Device:
    """The device of a file's checked ``values``; ``sram_keys``: a ``.cfg``'s SRAM keys (its SRAM, in place of
    ``[memory] sram_kib_per_array``), or a TOML's three values of it (:data:`TOML_SRAM_KEYS`)."""
    dev, comp, mem, links = values["device"], values["compute"], values["memory"], values["links"]
    if isinstance(mem.get("sram_kib_per_array"), tuple):
        sram_keys = tuple(zip(TOML_SRAM_KEYS, mem["sram_kib_per_array"], strict=True))
    sram_bytes = sum(kib for _, kib in sram_keys) * 1024.0 if sram_keys else None
    gemm = dev.get("gemm", "arrays")  # one of GEMM_MODELS: checked_sections checked it
    if gemm == "arrays" and sram_bytes is None and "sram_kib_per_array" not in mem:
        # the energy model splits it in three operand buffers: unstated, it priced them as 1 KiB SRAMs
        raise InputError(f"missing key in [memory] (sram_kib_per_array = KiB of SRAM beside each array, {MIN_SRAM_KIB} "
                         "or more): a gemm = \"arrays\" device's energy model prices its operand buffers", file=file,
                         field="memory.sram_kib_per_array", missing=True)
    if gemm == "arrays" and sram_bytes is None and (short := short_sram(mem["sram_kib_per_array"])):
        raise InputError(short, file=file, field="memory.sram_kib_per_array")  # priced as 3 KiB, said as 0.5
    if dev.get("split_k") and gemm != "arrays":
        raise InputError("split_k is a mechanism of gemm = \"arrays\" (tiles split the reduction by their own rule)",
                         file=file, field="device.split_k")
    if dev.get("static_watts") and gemm != "arrays":  # as a device sweep's spec refuses it
        raise InputError(STATIC_ON_TILES.format(gemm=gemm), file=file, field="device.static_watts")
    if links.get("pj_per_bit") and gemm != "arrays":  # as static power: board power × time counts it
        raise InputError(LINKS_ON_TILES.format(gemm=gemm), file=file, field="links.pj_per_bit")
    check_static_below_board(dev.get("static_watts", 0.0), dev.get("board_watts"), file)  # a part above its whole
    lanes = None
    if "lanes" in comp:
        try:
            lanes = Arrays(comp["lanes"], comp.get("lane_rows", 1), comp.get("lane_cols", 1), "os",
                           arrays.clock_hz)
        except InputError as exc:
            raise exc.at(file=file, field=f"compute.{exc.where.field}") from None
    elif "lane_rows" in comp or "lane_cols" in comp:  # named as the key written, at its line
        raise InputError("lane_rows / lane_cols need lanes (the count of lane arrays)", file=file,
                         field=f"compute.{'lane_rows' if 'lane_rows' in comp else 'lane_cols'}")
    vector = _vector_unit(values.get("vector", {}), file)
    given = comp.get("peak_tflops")
    rates = array_rates(comp.get("macs_per_pe", {}), gemm, lanes is not None, file)
    # every dtype on the arrays, fp32 on the lanes where the device has them: an array device's own rates, which a
    # stated table of other dtypes (fp8 = 65.5) keeps, as a stated one of these must equal them (_check_array_peaks);
    # each × its MACs per PE per cycle, fp8's own peak where macs_per_pe states its rate
    own = {dtype: (lanes if dtype == "fp32" and lanes is not None else arrays).peak_flops * rates.get(dtype, 1.0)
           for dtype in (*DTYPES, *((FP8,) if FP8 in rates else ()))}
    if given is not None:
        if gemm == "arrays":
            _check_array_peaks(given, arrays, lanes, rates, file)
        stated = {dtype: tflops * 1e12 for dtype, tflops in given.items()}
        peaks = tuple((own | stated).items()) if gemm == "arrays" else tuple(stated.items())
    else:
        peaks = tuple(own.items())
    efficiency = one_fraction(gemm=comp.get("gemm_efficiency", 1.0), memory=mem.get("memory_efficiency", 1.0),
                              launch_s=comp.get("launch_s", 0.0), host_s=comp.get("host_s", 0.0))
    intra = links["intra_gbps"] * 1e9
    sram = sram_bytes if sram_bytes is not None else mem.get("sram_kib_per_array", 0.0) * 1024
    return Device(check_name(dev["name"], "device.name", file=file), arrays, lanes, gemm, peaks, mem["hbm_gib"] * GIB,
                  mem["hbm_gbps"] * 1e9, sram_bytes_per_array=sram, l2_bytes=mem.get("l2_mib", 0.0) * 2**20,
                  l2_bytes_per_clock=mem.get("l2_bytes_per_clock", 0.0), efficiency=efficiency,
                  nvlink_bytes_per_s=intra, nvlinks=links.get("links", 1), nvswitch=True,
                  pcie_bytes_per_s=links.get("host_gbps", links["intra_gbps"]) * 1e9,
                  inter_node_gbps=links.get("inter_node_gbps", 0.0),
                  intra_latency_s=link_seconds(links, "intra_latency_us"),
                  inter_node_latency_s=link_seconds(links, "inter_node_latency_us"),
                  link_efficiency=_link_efficiency(links), board_watts=dev.get("board_watts"),
                  split_k=dev.get("split_k", False), static_watts=dev.get("static_watts", 0.0),
                  sram_keys=sram_keys, vector=vector, smem_bytes_per_clock=mem.get("smem_bytes_per_clock", 0.0),
                  fused_gemm_fraction=comp.get("fused_gemm_fraction", 1.0),
                  comm_sms=comm_sms(links, arrays.cores, file), dram_traffic=mem.get("dram_traffic", "compulsory"),
                  link_pj_per_bit=links.get("pj_per_bit", 0.0), macs_per_pe=tuple(rates.items()))


def _vector_unit(vec: dict[str, Any], file: str) -> VectorUnit | None:
    """A file's ``[vector]`` (checked: lanes given, counts positive integers, figures positive) as a
    :class:`VectorUnit` (cores and clock unstated: the arrays'); None when not written."""
    if not vec:
        return None
    clock = None
    if "clock_mhz" in vec:
        try:
            clock = clock_hz(vec["clock_mhz"], "MHz")
        except ValueError as exc:
            raise InputError(str(exc), file=file, field="vector.clock_mhz") from None
    return VectorUnit(vec["lanes"], vec.get("sublanes", 1), vec.get("cores"), clock, vec.get("fp32_per_clock", 1.0),
                      vec.get("exp_per_clock", 1.0))


def _link_efficiency(links: dict[str, Any]) -> float | None:
    """``[links] efficiency`` as :attr:`Device.link_efficiency`: the stated fraction (default 1: the stated link
    runs at its bandwidth, a designer's ideal ring), or None for ``"nccl"`` (NVIDIA's NCCL fit)."""
    stated = links.get("efficiency", 1.0)
    return None if stated == NCCL_FIT else float(stated)


def _toml_device(path: Path) -> Device:
    file = str(path)
    document = parse_toml(read_text(path, "device file"), file)
    with located(document, file):  # a key's error names its line
        return _checked_device(document, file)


def _checked_device(document: dict, file: str) -> Device:
    """A parsed device file's device, checked (:func:`_toml_device`)."""
    # [energy] is the energy model's, read by load_priced_device as a .cfg's is
    values = checked_sections(document, file, ("device", "compute", "memory", "links"), apart=("energy",))
    comp = values["compute"]
    try:
        clock = clock_hz(comp["clock_mhz"], "MHz")
    except ValueError as exc:
        raise InputError(str(exc), file=file, field="compute.clock_mhz") from None
    try:
        arrays = Arrays(comp["arrays"], comp["rows"], comp["cols"], comp.get("dataflow", "ws"),
                        clock, comp.get("arrays_per_core", 1))
    except InputError as exc:
        raise exc.at(file=file, field=f"compute.{_key_of(exc.where.field)}") from None
    return _device(values, arrays, file)


def _cfg_device(path: Path) -> Device:
    """A SCALE-Sim .cfg's array plus the device file's own sections (module docstring); ``[device]``
    may carry ``arrays`` too (the array count, default 1), read here beside the TOML keys."""
    file = str(path)
    text = read_text(path, "device file", encoding="utf-8-sig")
    # the SCALE-Sim reader first: it names a misspelt section ([Memory], [link]) as unknown, where the
    # missing-section check below would only say that [memory] is missing
    array = read_scalesim_cfg(path, element_bytes=DEVICE_WORD_BYTES)
    try:
        checked = cfg_device_sections(text, file, required=True)
    except InputError as exc:
        raise _bandwidth_hint(exc, text, array.clock_hz) from None
    assert checked is not None  # required: never None
    values, count, per_core = checked
    if array.clock_hz is None:
        raise InputError("a device file's array needs its clock: [archsim] ClockGHz", file=file, field="ClockGHz")
    try:
        arrays = Arrays(count, array.rows, array.cols, array.dataflow, float(array.clock_hz), per_core)
    except InputError as exc:
        raise exc.at(file=file, field=f"device.{_key_of(exc.where.field)}") from None
    values.setdefault("compute", {})  # a .cfg's [compute] is its [macs_per_pe] alone (cfg_device_sections)
    try:
        return _device(values, arrays, file, sram_keys=cfg_sram_keys(array))
    except InputError as exc:  # a key's error at its line, as the sections' own checks name it
        raise cfg_located(exc, text) from None


def _bandwidth_hint(exc: InputError, text: str, clock: float | None) -> InputError:
    """``exc``, a missing ``[memory] hbm_gbps`` in a .cfg that states SCALE-Sim's ``Bandwidth`` (words/cycle, which
    train never reads), with the GB/s that figure is at the file's clock and 2-byte words: the key to write."""
    stated = re.search(r"^\s*Bandwidth\s*[:=]\s*([0-9]+)\s*$", text, flags=re.MULTILINE | re.IGNORECASE)
    if not (exc.missing and exc.where.field == "memory.hbm_gbps" and stated and clock):
        return exc
    gbps = words_gbps(int(stated[1]), clock)
    return InputError(f"{exc.message}; [architecture_presets] Bandwidth = {stated[1]} words/cycle is {gbps:g} GB/s "
                      f"at {DEVICE_WORD_BYTES}-byte words and {clock / 1e9:g} GHz, which only cost --engine cycle "
                      f"reads: write hbm_gbps = {gbps:g}", file=exc.where.file, field=exc.where.field, missing=True)


# where a device file states its SRAM per array, as implausible_figures names it (a device sweep's axis renames it)
SRAM_FILE_KEYS = "[memory] sram_kib_per_array; a .cfg's three SramSzkB together"


def implausible_figures(device: Device, dtype: str | None = None) -> tuple[str, ...]:
    """Warnings, one line each, for a device file's figures outside what chips have (a unit slipped): HBM
    bandwidth (GB/s; per FLOP of its peak, :mod:`archsim.devices.device_figures`, as is static power) and capacity (GiB), the in-server link (GB/s per direction, and a link's share of it where the
    file states several), and on an array device the SRAM beside each array (KiB) when one of the
    energy model's operand buffers (:attr:`~archsim.devices.device.Device.operand_buffers_kib`: a third of one
    figure, or each of three stated sizes) cannot hold one fold's rows × cols words at the device's 2 bytes, or
    when it looks like bytes (:func:`~archsim.array.sram_sizes.sram_in_bytes`). Not refusals: the
    figures are possible, only implausible, and a slip otherwise goes unseen (a 256 × 256 array's 32 MiB written as 32 KiB prices cheaper joules, no word said).
    Empty for every catalog GPU. ``dtype``: the run's GEMMs', whose peak the HBM is judged by where faster."""
    per_flop = hbm_per_flop_line(device, dtype)  # a Gbit/s figure, said in place of the bounds' line (its MB/s)
    lines = [line for section, key, gbps, bounds, what in (
        ("memory", "hbm_gbps", device.hbm_bytes_per_s / 1e9, HBM_GBPS_PLAUSIBLE, "memory"),
        ("links", "intra_gbps", device.fabric_bytes_per_s / 1e9, INTRA_GBPS_PLAUSIBLE, "in-server link"))
        for line in ([per_flop] if per_flop and section == "memory" else
                     _gbps_slip(device.name, section, key, gbps, bounds, what))]
    intra, link = device.fabric_bytes_per_s / 1e9, device.nvlink_link_bytes_per_s / 1e9  # GB/s per direction
    if device.nvlinks > 1 and link > MAX_PLAUSIBLE_LINK_GBPS and intra <= INTRA_GBPS_PLAUSIBLE[1]:  # not said above
        lines.append(f"{device.name}: [links] intra_gbps = {intra:g} GB/s over links = {device.nvlinks} is {link:g} GB/s "
                     f"a link per direction, above any chip's link (≤ {MAX_PLAUSIBLE_LINK_GBPS:g} GB/s): if it is in Gbit/s, "
                     f"write intra_gbps = {intra / 8:g}")
    gib = device.memory_bytes / GIB
    if gib > MAX_PLAUSIBLE_HBM_GIB:
        lines.append(f"{device.name}: [memory] hbm_gib = {gib:g} GiB per chip is above any chip's memory "
                     f"(≤ {MAX_PLAUSIBLE_HBM_GIB} GiB){_hbm_gib_fix(gib)}")
    if device.gemm == "arrays" and device.sram_bytes_per_array > 0:
        kib, arrays = device.sram_bytes_per_array / 1024, device.arrays
        fold_kib = arrays.rows * arrays.cols * DEVICE_WORD_BYTES / 1024
        sram = f"{device.name}: {kib:.12g} KiB of SRAM beside each array ({SRAM_FILE_KEYS})"
        smallest = min(device.operand_buffers_kib)  # the buffer the energy model prices, each stated one's own
        if smallest < fold_kib:
            lines.append(_short_buffer_line(device, sram, kib, smallest, fold_kib))
        elif slip := (cfg_sram_slip(device.name, device.sram_keys) if device.sram_keys else  # per key: no sum key
                      sram_in_bytes(sram, kib, f"{kib / 1024:g} KiB")):
            lines.append(slip)
    shape_named = any("check [compute] rows and cols" in line for line in lines)  # the SRAM line names the shape
    return (*_pe_lines(device, shape_named), *lines, *filter(None, (static_watts_line(device), link_pj_line(device))))  # W, mW's slip; pJ/bit


def _hbm_gib_fix(gib: float) -> str:
    """The unit an ``hbm_gib`` above any chip's was likely written in — MiB, KiB or bytes, the first that gives a
    chip's memory (32 GiB in bytes, 34359738368, read as MiB is 33554432 GiB: no chip's) — as the figure to write;
    else nothing."""
    for unit, per_gib in (("MiB", 1024), ("KiB", 1024**2), ("bytes", GIB)):
        if gib / per_gib <= MAX_PLAUSIBLE_HBM_GIB:
            return f": if it is in {unit}, write hbm_gib = {gib / per_gib:g}"
    return ""


def _gbps_slip(name: str, section: str, key: str, gbps: float, bounds: tuple[float, float], what: str) -> list[str]:
    """The warning for a bandwidth in GB/s outside ``bounds`` (a TB/s or MB/s slip), or none. The figure to write
    is named only where it lies within ``bounds`` (1e-12 GB/s read as TB/s is still no chip's): else the line
    says that no such slip explains it."""
    low, high = bounds
    per = " per direction" if section == "links" else ""

    def fix(unit: str, figure: float) -> str:
        return (f"if it is in {unit}, write {key} = {figure:g}" if low <= figure <= high else
                f"no TB/s or MB/s slip explains it: check the figure, GB/s{per}")
    if gbps < low:
        return [(f"{name}: [{section}] {key} = {gbps:g} GB/s is below any chip's {what} "
                 f"(≥ {low:g} GB/s{per}): {fix('TB/s', gbps * 1000)}")]
    if gbps > high:
        return [(f"{name}: [{section}] {key} = {gbps:g} GB/s is above any chip's {what} "
                 f"(≤ {high:g} GB/s{per}): {fix('MB/s', gbps / 1000)}")]
    return []


def _short_buffer_line(device: Device, sram: str, kib: float, smallest: int, fold_kib: float) -> str:
    """:func:`implausible_figures`' line for an operand buffer (``smallest`` KiB, the least of
    :attr:`~archsim.devices.device.Device.operand_buffers_kib`) below one fold of the array (``fold_kib``); ``sram``
    names the device and its ``kib`` of SRAM per array. Its fix: the figures in MiB where × 1024 is a real SRAM
    that holds a fold, else the SRAM such an array needs and the keys to check."""
    arrays, stated = device.arrays, device.sram_keys
    short = [key for key, k in stated if k < fold_kib]  # the stated buffers that fall short
    if smallest * 1024 >= fold_kib and kib * 1024 <= MAX_PLAUSIBLE_SRAM_KIB:  # × 1024 is a real SRAM
        fix = (f"if they are in MiB, write {cfg_sram_fix(stated, lambda k: k * 1024)}" if stated  # per key
               else f"if it is in MiB, write {kib * 1024:g} KiB")
    elif stated:
        fix = (f"such an array needs {fold_kib:g} KiB or more in each buffer: raise {', '.join(short)} or check "
               "[compute] rows and cols (a .cfg's ArrayHeight and ArrayWidth)")
    else:
        fix = (f"such an array needs {3 * fold_kib:g} KiB or more: check [compute] rows and cols (a .cfg's "
               "ArrayHeight and ArrayWidth)")
    buffer = (f"{', '.join(f'{key} = {k} KiB' for key, k in stated if key in short)}, an operand buffer as stated,"
              if stated else f"a third of it in whole KiB, an operand buffer ({smallest} KiB),")
    return (f"{sram}: {buffer} holds less than one fold of a {arrays.rows} × {arrays.cols} array ({fold_kib:g} KiB "
            f"at {DEVICE_WORD_BYTES} bytes), so the energy model's compulsory DRAM traffic is out of its reach: {fix}")


def _pe_lines(device: Device, shape_named: bool) -> tuple[str, ...]:
    """:func:`implausible_figures`' line for a chip of more PEs than any: one array above the array commands' limit
    (:data:`archsim.array.options.MAX_PLAUSIBLE_PES`; none where ``shape_named``: the SRAM line already says to
    check rows and cols), else the chip's arrays above :data:`MAX_PLAUSIBLE_CHIP_PES`."""
    from archsim.array.options import MAX_PLAUSIBLE_PES, PES_LIMIT

    count, rows, cols = device.arrays.count, device.arrays.rows, device.arrays.cols
    if rows * cols > MAX_PLAUSIBLE_PES:
        line = (f"{device.name}: [compute] rows × cols = {rows} × {cols} is {rows * cols:,} PEs in one array, above "
                f"any chip's one array ({PES_LIMIT}): check [compute] rows and cols (a .cfg's ArrayHeight and "
                "ArrayWidth)")
        return () if shape_named else (line,)
    if count * rows * cols > MAX_PLAUSIBLE_CHIP_PES:
        line = (f"{device.name}: [compute] arrays × rows × cols = {count} × {rows} × {cols} is {count * rows * cols:,} "
                f"PEs per chip, above any chip's (≤ {MAX_PLAUSIBLE_CHIP_PES:,}: "
                f"{MAX_PLAUSIBLE_CHIP_PES // MAX_PLAUSIBLE_PES} arrays of 1024 × 1024): check [compute] arrays (a "
                ".cfg's [device] arrays)")
        return (line,)
    return ()


# the keys a device file may state that its kind of device (gemm) is not priced by, and why
def devices_implausible_figures(devices: Iterable[Device], dtype: str | None = None) -> tuple[str, ...]:
    """:func:`implausible_figures` of several devices (a cluster's servers', a sweep's points), each line once."""
    return tuple(dict.fromkeys(line for device in devices for line in implausible_figures(device, dtype)))


def load_device(path: str | Path) -> Device:
    """The device a ``.toml`` or SCALE-Sim ``.cfg`` device file describes, without its ``[energy]`` section (the
    energy model's figures, read apart: :func:`archsim.training.energy.load_priced_device` reads the chip with them,
    as ``train`` and ``search`` do)."""
    check_file_ending(path, "device file")  # before Path drops a trailing "/"
    path = Path(path)
    if path.suffix.lower() == ".cfg":
        return _cfg_device(path)
    if is_device_toml(path):
        return _toml_device(path)
    raise InputError("a device file is a .toml or a SCALE-Sim .cfg", file=str(path))


__all__ = ["SRAM_FILE_KEYS", "devices_implausible_figures", "implausible_figures", "load_device"]
