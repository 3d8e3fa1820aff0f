"""Systolic-array hardware description, and a reader for SCALE-Sim ``.cfg`` files.

The fields mirror SCALE-Sim 3.0.0's ``[architecture_presets]`` and ``[run_presets]`` sections so a
SCALE-Sim config loads unchanged; archsim adds the element size (bytes) and the clock.
"""

from __future__ import annotations

import configparser
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from archsim.array.cfg_lines import (
    cfg_clock_ghz,
    cfg_interface_mode,
    cfg_key_line,
    cfg_located,
    cfg_parser,
    cfg_section_line,
)
from archsim.array.cfg_refusals import archsim_key_error, toml_refusal
from archsim.array.device_sections import (
    cfg_device_sections,
    cfg_home,
    check_bandwidth_once,
    is_device_toml,
)
from archsim.array.mac_rates import CFG_SECTION, cfg_rates
from archsim.clock import UNIT_HZ
from archsim.errors import InputError
from archsim.validate import INT32_MAX, check_name, did_you_mean, read_text, shown
from archsim.value_parsers import check_choice, parse_int

DATAFLOWS = ("ws", "os", "is")
DEFAULT_CLOCK_HZ = 1.0e9  # where seconds are needed and the array has no clock of its own


@dataclass(frozen=True)
class ArrayConfig:
    """One systolic array and its on-chip memories.

    rows/cols: PE grid (SCALE-Sim ArrayHeight/ArrayWidth). dataflow: ws, os or is.
    SRAM sizes in KiB per operand (double buffered, as SCALE-Sim models them).
    bandwidth: DRAM interface words/cycle per operand when ``user_bandwidth`` (SCALE-Sim USER mode).
    read_bandwidth: (ifmap, filter) DRAM words/cycle where they differ from ``bandwidth[0]``, else None.
    SCALE-Sim 3.0.0's USER mode reads ifmap and filter at the ``[layout]`` bank bandwidths and writes
    the ofmap at ``Bandwidth``; :func:`read_scalesim_cfg` keeps that so a .cfg costs as it does there.
    element_bytes: bytes per tensor element (the LayerPipe paper uses 1).
    clock_hz: the array clock (Hz), to give seconds beside cycles; None when unknown (cycles only).
    A SCALE-Sim ``.cfg`` may carry it as ``[archsim] ClockGHz`` (SCALE-Sim ignores that section).
    dram_rate: (GB/s, GHz) of a device file's ``[memory] hbm_gbps`` at its own clock, where that set ``bandwidth``
    (the cycle engine run on the file without a bandwidth given), else None; ``bandwidth`` is then derived, every
    operand's (:func:`dram_words` at ``element_bytes``), so an array re-made at another element size reads the
    chip's GB/s in its new words, not the old width's. A bandwidth given in words
    (:func:`archsim.array.options.with_memory`) clears it.
    mac_rate: MACs per PE per cycle of the GEMMs costed on it (a device file's ``[compute] macs_per_pe`` for the
    run's dtype, :mod:`archsim.array.mac_rates`): their cycles are those of the reduction packed to
    :func:`~archsim.array.mac_rates.packed_k`, their MACs and SRAM words the real GEMM's; 1 is SCALE-Sim's array.
    mac_dtype: the dtype ``mac_rate`` is the rate of (a name of ``element_bytes``' width), where the array was read
    from a device file stating rates (``archsim.array_config``) or its rate given by hand; None: one MAC per PE per
    cycle at every dtype. Costed at another dtype it is refused (:func:`archsim.array.options.check_rate_dtype`).
    """

    rows: int = 32
    cols: int = 32
    dataflow: str = "ws"
    ifmap_sram_kb: int = 64
    filter_sram_kb: int = 64
    ofmap_sram_kb: int = 64
    bandwidth: tuple[int, ...] = (10,)
    user_bandwidth: bool = False
    read_bandwidth: tuple[int, int] | None = None
    element_bytes: int = 1
    clock_hz: float | None = None
    name: str = field(default="array", compare=False)
    dram_rate: tuple[float, float] | None = None
    mac_rate: float = 1.0
    mac_dtype: str | None = None

    def __post_init__(self) -> None:
        for name in ("rows", "cols", "ifmap_sram_kb", "filter_sram_kb", "ofmap_sram_kb", "element_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= INT32_MAX:
                raise InputError(f"must be an integer in 1…{INT32_MAX}, got {value!r}", field=name)
        if self.mac_rate != 1.0:
            from archsim.array.mac_rates import mac_rate  # the one reading of a rate

            try:
                object.__setattr__(self, "mac_rate", mac_rate(self.mac_rate))
            except ValueError as exc:
                raise InputError(str(exc), field="mac_rate") from None
        if self.mac_dtype is not None:  # a name of the array's width: a rate re-made at another width is refused
            from archsim.choices.devices import ARRAY_ELEMENT_BYTES, FP8_ARRAY_DTYPES

            check_choice(self.mac_dtype, FP8_ARRAY_DTYPES, "mac_dtype")
            if ARRAY_ELEMENT_BYTES[self.mac_dtype] != self.element_bytes:
                raise InputError(f"{self.mac_dtype} is {ARRAY_ELEMENT_BYTES[self.mac_dtype]}-byte elements, "
                                 f"element_bytes {self.element_bytes}: the rate is of a dtype of the array's width",
                                 field="mac_dtype")
        if self.dram_rate is not None:  # the words follow the element size (a width changed by replace() too)
            self._derive_bandwidth(self.dram_rate)
        check_choice(self.dataflow, DATAFLOWS, "dataflow")  # --dataflow's line
        if not self.bandwidth or any(not 0 < b <= INT32_MAX for b in self.bandwidth):
            raise InputError(f"bandwidths must be positive, got {self.bandwidth!r}", field="bandwidth")
        if self.read_bandwidth is not None and (
                len(self.read_bandwidth) != 2 or not all(_positive_int(b) for b in self.read_bandwidth)):
            raise InputError(f"expected (ifmap, filter) positive integers, got {self.read_bandwidth!r}",
                             field="read_bandwidth")
        if self.clock_hz is not None and not (isinstance(self.clock_hz, (int, float)) and 0 < self.clock_hz < float("inf")):
            raise InputError(f"must be a positive number of Hz, got {self.clock_hz!r}", field="clock_hz")

    def _derive_bandwidth(self, rate: object) -> None:
        """Set ``bandwidth`` (every operand, USER mode) from ``dram_rate``, checked: two positive finite numbers."""
        if not (isinstance(rate, tuple) and len(rate) == 2 and all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and 0 < x < float("inf") for x in rate)):
            raise InputError(f"expected (GB/s, GHz), two positive numbers, got {rate!r}", field="dram_rate")
        words = rate[0] / (self.element_bytes * rate[1])  # inf where the quotient overflows: refused, not raised
        if not words < INT32_MAX:
            raise InputError(f"{rate[0]:g} GB/s at {rate[1]:g} GHz is {words:.3g} DRAM words/cycle of {self.element_bytes}"
                             f" bytes, above the {INT32_MAX} an array's bandwidth takes: give a lower rate",
                             field="dram_rate")
        if self.read_bandwidth is not None:
            raise InputError("a device's DRAM rate sets every operand's words/cycle: give no read_bandwidth beside it",
                             field="read_bandwidth")
        object.__setattr__(self, "bandwidth", (dram_words(rate[0], rate[1], self.element_bytes),))
        object.__setattr__(self, "user_bandwidth", True)

    @property
    def pes(self) -> int:
        """Number of processing elements (MAC units)."""
        return self.rows * self.cols

    @property
    def dram_bandwidths(self) -> tuple[int, int, int]:
        """(ifmap, filter, ofmap) DRAM words/cycle, as the cycle engine takes them."""
        ifmap, filter_ = self.read_bandwidth or (self.bandwidth[0], self.bandwidth[0])
        return ifmap, filter_, self.bandwidth[0]

    def seconds(self, cycles: float) -> float | None:
        """``cycles`` at this array's clock, in seconds; None when the clock is unknown."""
        return None if self.clock_hz is None else float(cycles) / self.clock_hz

    def with_shape(self, rows: int, cols: int) -> ArrayConfig:
        return replace(self, rows=rows, cols=cols)


def dram_words(gbps: float, ghz: float, element_bytes: int) -> int:
    """DRAM words/cycle of ``element_bytes`` each that ``gbps`` GB/s gives at ``ghz`` GHz: gbps / (element_bytes ×
    ghz) to the nearest whole number, a half up (not to even), at least 1."""
    return max(1, math.floor(gbps / (element_bytes * ghz) + 0.5))


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


SHAPE_FORMS = "ROWSxCOLS such as 32x32, or N for an N×N array (32 is 32x32)"  # the two forms of an array's shape


def parse_array_shape(text: str, *, field_name: str = "array", files: str | None = None) -> tuple[int, int]:
    """Parse ``"32x32"`` (or ``"32"`` for square) into (rows, cols), both positive. Any other text is refused in
    one line naming every form the field takes: both shapes, then ``files``, where a file goes instead (None: the
    array flags', a device file as ``--config FILE`` or ``config=FILE``; "": none)."""
    match = re.fullmatch(r"\s*([0-9]{1,40})\s*(?:[xX×]\s*([0-9]{1,40}))?\s*", str(text))
    if not match:
        if files is None:
            from archsim.console import setting

            files = f"a device file (a SCALE-Sim .cfg or a device TOML) is {setting('config', placeholder='FILE')}"
        raise InputError(f"expected {SHAPE_FORMS}, got {text!r}{'; ' + files if files else ''}", field=field_name)
    rows = int(match.group(1))
    cols = int(match.group(2)) if match.group(2) is not None else rows
    if not (0 < rows <= INT32_MAX and 0 < cols <= INT32_MAX):
        raise InputError(f"array dimensions must be in 1…{INT32_MAX}, got {shown(text)}", field=field_name)
    return rows, cols


# SCALE-Sim's own sections (any of its versions) and archsim's two; any other is a typo, refused.
_SECTIONS = {"general", "architecture_presets", "network_presets", "layout", "sparsity", "run_presets", "memory",
             "archsim", "energy"}
# A device file's own three (docs/formats.md, Device files): checked by archsim.array.device_sections;
# the array commands cost one of its arrays (SCALE-Sim's reader, too, skips sections it does not read).
_DEVICE_SECTIONS = {"device", "links", "vector", "macs_per_pe"}  # macs_per_pe: a TOML's [compute] macs_per_pe

# Every key a SCALE-Sim version's reader reads in its own sections (docs/scalesim.md), as SCALE-Sim spells them
# (configparser reads them in any case), with the ones its shipped configs carry unread (``MemoryBanks``) and the
# ``TopologyCsvLoc`` its 2.x/3.x readers look up in [architecture_presets]: any other is a typo
# (``Bandwith``), refused, since SCALE-Sim would run it at the default and so would archsim, silently.
_KEYS = {
    "general": ("run_name",),
    "architecture_presets": ("ArrayHeight", "ArrayWidth", "IfmapSramSzkB", "FilterSramSzkB", "OfmapSramSzkB",
                             "IfmapOffset", "FilterOffset", "OfmapOffset", "Dataflow", "Bandwidth", "MemoryBanks",
                             "ReadRequestBuffer", "WriteRequestBuffer", "TopologyCsvLoc"),
    "network_presets": ("TopologyCsvLoc",),
    "run_presets": ("InterfaceBandwidth", "UseRamulatorTrace"),
    "layout": ("IfmapCustomLayout", "FilterCustomLayout", "IfmapSRAMBankBandwidth", "FilterSRAMBankBandwidth",
               "IfmapSRAMBankNum", "FilterSRAMBankNum", "IfmapSRAMBankPort", "FilterSRAMBankPort"),
    "sparsity": ("SparsitySupport", "SparseRep", "OptimizedMapping", "BlockSize", "RandomNumberGeneratorSeed",
                 "MemoryBanks"),
}

_REQUIRED = {
    "architecture_presets": ("ArrayHeight", "ArrayWidth", "IfmapSramSzkB", "FilterSramSzkB",
                             "OfmapSramSzkB", "Dataflow"),
}


_BOOLEAN_WORDS = ("true", "false", "1", "0", "yes", "no", "on", "off")  # configparser's; anything else is refused
_LAYOUTS = "custom SRAM layouts here (`archsim gemm --engine cycle --layout FILE` runs them on GEMMs)"
# (section, key, SCALE-Sim's test for "on", what archsim would have to model)
_UNMODELLED = (
    ("sparsity", "SparsitySupport", lambda v: v.lower() == "true",
     "SCALE-Sim's N:M sparse compute in training costs (`archsim sparse` costs it)"),
    ("run_presets", "UseRamulatorTrace", lambda v: v == "True", "Ramulator's DRAM timing"),
    ("layout", "IfmapCustomLayout", lambda v: v.lower() in ("1", "yes", "true", "on"), _LAYOUTS),
    ("layout", "FilterCustomLayout", lambda v: v.lower() in ("1", "yes", "true", "on"), _LAYOUTS),
)


def _refuse_unmodelled(parser: configparser.ConfigParser, file: str, line_of, sparsity: bool = False,
                       layouts: bool = False) -> None:
    """One line for the first switched-on SCALE-Sim feature archsim does not model (tested as
    SCALE-Sim 3.0.0's ``scale_config`` tests it), instead of costing the array as if it were off.
    ``sparsity``: the caller reads the ``[sparsity]`` section itself (:mod:`archsim.array.sparse_input`);
    ``layouts``: the caller reads the custom layouts (:func:`archsim.array.layout.layout_from_cfg`)."""
    for section, key, is_on, what in _UNMODELLED:
        if (sparsity and section == "sparsity") or (layouts and section == "layout"):
            continue
        if parser.has_option(section, key) and parser.get(section, key).strip().lower() not in _BOOLEAN_WORDS:
            raise InputError(f"expected true or false, got {shown(parser.get(section, key).strip())}", file=file,
                             line=line_of(key), field=key)
        if parser.has_option(section, key) and is_on(parser.get(section, key).strip()):
            raise InputError(f"{key} is on: archsim does not model {what}, so its cycles would differ from "
                             f"SCALE-Sim's; set it off to cost the array without it", file=file, line=line_of(key),
                             field=key)


def read_scalesim_cfg(path: str | Path, *, element_bytes: int = 1, clock_hz: float | None = None,
                     sparsity: bool = False, layouts: bool = False, dtype_flag: bool = False) -> ArrayConfig:
    """Read a SCALE-Sim 3.0.0 ``.cfg`` file into an :class:`ArrayConfig`.

    Keys SCALE-Sim reads that do not change its cycle counts (offsets, request buffers, bank counts
    and ports, the sparsity keys while sparsity is off) are accepted and ignored, so a SCALE-Sim
    config loads unchanged; a key no SCALE-Sim version reads (``_KEYS``) is refused as the typo it is.
    Features that would change SCALE-Sim's numbers and that archsim does not
    model — ``SparsitySupport`` (N:M sparse compute), ``UseRamulatorTrace`` (Ramulator's DRAM
    timing), ``IfmapCustomLayout``/``FilterCustomLayout`` (banked SRAM layouts) — are refused when
    switched on (:func:`_refuse_unmodelled`), never costed as something else. In USER mode
    the ``[layout]`` ``IfmapSRAMBankBandwidth``/``FilterSRAMBankBandwidth`` become ``read_bandwidth``,
    since SCALE-Sim reads ifmap and filter from DRAM at those rates (``single_layer_sim.run``).
    An optional ``[archsim]`` section (which SCALE-Sim never reads) gives ``ClockGHz``; the
    ``clock_hz`` argument, when given, wins over it. ``sparsity=True`` (``archsim sparse``) lets
    ``SparsitySupport`` be on: that caller reads the section with :mod:`archsim.array.sparse_input`;
    ``layouts=True`` (``archsim gemm --layout``) lets the custom layouts be on, read by
    :func:`archsim.array.layout.layout_from_cfg`. A device file's ``[device]`` and
    ``[links]`` sections stand (one of its arrays is read); their keys and values, and then ``[memory]``'s, are
    checked as every device-file reader checks them (:mod:`archsim.array.device_sections`). ``dtype_flag``: the
    caller takes ``--dtype``, so a device TOML's refusal names train's among its array's flags.
    """
    if not isinstance(path, (str, Path)):  # one line naming it, not open()'s TypeError
        raise InputError(f"expected a .cfg path (str or Path), got {type(path).__name__}", field="path")
    text = read_text(path, "config file", encoding="utf-8-sig")  # as written: Path drops a trailing "/"
    path = Path(path)
    file = str(path)
    if is_device_toml(path):
        raise toml_refusal(text, file, dtype_flag)
    parser = cfg_parser(text, file)

    def line_of(key: str) -> int | None:
        return cfg_key_line(text, key)

    for section in parser.sections():
        if section not in _SECTIONS | _DEVICE_SECTIONS:
            toml = ("; [compute] is a device TOML's: a .cfg states its array as [architecture_presets] ArrayHeight, "
                    "ArrayWidth and Dataflow, [archsim] ClockGHz and [device] arrays (or name a TOML file .toml)"
                    if section == "compute" else "")
            hint = "" if toml else did_you_mean(f"[{section}]", [f"[{s}]" for s in _SECTIONS | _DEVICE_SECTIONS])
            raise InputError(f"unknown section [{shown(section)[1:-1]}]{hint}; expected "
                             f"{', '.join(sorted(_SECTIONS | _DEVICE_SECTIONS))}{toml}",
                             file=file, line=cfg_section_line(text, section))
    for section, keys in _KEYS.items():
        for key in parser.options(section) if parser.has_section(section) else ():
            if key not in {known.lower() for known in keys}:
                line = line_of(key)
                written = text.splitlines()[line - 1].split(":")[0].split("=")[0].strip() if line else key
                hint = did_you_mean(key, keys)
                home = cfg_home(key)  # an archsim key (ClockGHz, hbm_gbps) under SCALE-Sim's section: say where it goes
                raise InputError(f"unknown key in [{section}] (no SCALE-Sim version reads it: "
                                 f"{home or (hint[2:-1] if hint else 'a typo?')})", file=file, line=line, field=written)
    device = cfg_device_sections(text, file, required=False)  # a device file's [device]/[links]: checked as train checks them
    if device is None and parser.has_section(CFG_SECTION):  # a plain .cfg's MAC rates: checked as a device file's
        try:
            cfg_rates(dict(parser[CFG_SECTION]), file)
        except InputError as exc:
            raise cfg_located(exc, text) from None
    for key in parser.options("archsim") if parser.has_section("archsim") else ():
        if key != "clockghz":
            raise archsim_key_error(key, parser["archsim"][key], text, file)
    for section, keys in _REQUIRED.items():
        if not parser.has_section(section):
            raise InputError(f"missing section [{section}]", file=file, missing=True)
        for key in keys:
            if not parser.has_option(section, key):
                raise InputError(f"missing key in [{section}]", file=file, field=key, missing=True)

    _refuse_unmodelled(parser, file, line_of, sparsity, layouts)
    arch = parser["architecture_presets"]

    def as_int(key: str) -> int:
        raw = arch.get(key, "").strip()
        try:
            return parse_int(raw, what="a positive integer")
        except ValueError as exc:
            raise InputError(str(exc), file=file, line=line_of(key), field=key) from None

    mode = cfg_interface_mode(parser, text, file) or "CALC"  # SCALE-Sim's default
    bandwidth: tuple[int, ...] = (10,)
    if arch.get("Bandwidth") is not None:
        raw = arch.get("Bandwidth", "")
        try:
            bandwidth = tuple(parse_int(x, what="positive integers") for x in raw.split(",") if x.strip())
        except ValueError as exc:
            raise InputError(str(exc), file=file, line=line_of("Bandwidth"), field="Bandwidth") from None
        if not bandwidth:
            raise InputError("empty; expected positive integers (words/cycle)", file=file, line=line_of("Bandwidth"),
                             field="Bandwidth")
    elif mode == "USER":
        raise InputError("USER bandwidth mode needs a Bandwidth key", file=file, field="Bandwidth")
    read_bandwidth = None
    if mode == "USER" and parser.has_section("layout"):
        layout = parser["layout"]
        rates = []
        for key in ("IfmapSRAMBankBandwidth", "FilterSRAMBankBandwidth"):
            raw = layout.get(key, str(bandwidth[0])).strip()
            try:
                rates.append(parse_int(raw, what="a positive integer"))
            except ValueError as exc:
                raise InputError(str(exc), file=file, line=line_of(key), field=key) from None
        if rates != [bandwidth[0]] * 2:
            read_bandwidth = (rates[0], rates[1])
        for prefix, rate in zip(("Ifmap", "Filter"), rates):  # SCALE-Sim's read_buffer asserts this
            key = f"{prefix}SRAMBankNum"
            raw = layout.get(key, "1").strip()
            try:
                banks = parse_int(raw, what="a bank count")
            except ValueError:
                banks = 0
            if not banks or rate % banks:
                raise InputError(f"USER mode splits the {rate} words/cycle of {prefix}SRAMBankBandwidth evenly over "
                                 f"the banks; {raw!r} banks do not divide it", file=file, line=line_of(key), field=key)

    if clock_hz is None and (ghz := cfg_clock_ghz(parser, text, file)) is not None:
        clock_hz = ghz * UNIT_HZ["GHz"]

    if device is not None and arch.get("Bandwidth") is not None:  # the default 10 is no statement
        try:
            check_bandwidth_once(device[0].get("memory", {}), bandwidth, clock_hz, file)
        except InputError as exc:
            raise cfg_located(exc, text) from None

    fields: dict[str, Any] = {  # ArrayConfig's fields, checked by it
        "rows": as_int("ArrayHeight"),
        "cols": as_int("ArrayWidth"),
        "dataflow": arch.get("Dataflow", "").strip().lower(),
        "ifmap_sram_kb": as_int("IfmapSramSzkB"),
        "filter_sram_kb": as_int("FilterSramSzkB"),
        "ofmap_sram_kb": as_int("OfmapSramSzkB"),
        "bandwidth": bandwidth,
        "user_bandwidth": (mode == "USER"),
        "read_bandwidth": read_bandwidth,
        "element_bytes": element_bytes,
        "clock_hz": clock_hz,
        "name": check_name(parser.get("general", "run_name", fallback=path.stem).strip(), "run_name", file=file,
                           line=line_of("run_name")),
    }
    key_of = {"rows": "ArrayHeight", "cols": "ArrayWidth", "dataflow": "Dataflow",
              "ifmap_sram_kb": "IfmapSramSzkB", "filter_sram_kb": "FilterSramSzkB",
              "ofmap_sram_kb": "OfmapSramSzkB", "bandwidth": "Bandwidth"}
    try:
        return ArrayConfig(**fields)
    except InputError as exc:
        named = key_of.get(exc.where.field or "", exc.where.field)
        raise InputError(exc.message, file=file, line=line_of(named) if named else None, field=named) from None
