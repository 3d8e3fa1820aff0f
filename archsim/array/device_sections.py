"""A device file's own sections and keys (docs/formats.md, "Device files"), checked in one place: every reader
of a device file or of a SCALE-Sim ``.cfg`` that carries ``[device]``/``[links]`` (the dense array commands read
one of its arrays) goes through :func:`checked_sections` or :func:`cfg_device_sections`, so an unknown key or a
bad value is the same one-line error everywhere. Units as the keys name them (GiB, Gb/s, MHz, s, µs, W)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from archsim.array.cfg_lines import cfg_located, cfg_parser, cfg_section_line, cfg_unquoted
from archsim.array.device_values import dram_traffic, fraction, gbps0, link_efficiency, static_watts
from archsim.array.mac_rates import CFG_SECTION, array_rates, cfg_rates
from archsim.array.sram_sizes import sram_figure
from archsim.choices.devices import DTYPES, GEMM_MODELS
from archsim.errors import InputError
from archsim.toml_errors import table_line
from archsim.validate import (
    INT32_MAX,
    MAX_FIGURE,
    did_you_mean,
    shown_boolean,
    shown_number,
)
from archsim.value_parsers import parse_float, parse_int

PEAK_DTYPES = (*DTYPES, "tf32", "fp64", "fp8")  # what [compute.peak_tflops] may name


def is_device_toml(config: str | Path | None) -> bool:
    """Whether the device file ``config`` is a TOML (train's device file: its one array kind read as train's energy
    model reads it), not a SCALE-Sim ``.cfg``: by its suffix, any case. The one rule every reader of a ``--config``
    or device file checks (a model file, a cluster file or an energy table is a TOML for reasons of its own)."""
    return config is not None and Path(config).suffix.lower() == ".toml"


# section → key → (kind, required); kinds: int, float (positive), float0 (≥ 0), sram (float0, or three positive
# integers: ifmap, filter, ofmap KiB, :func:`_sram`), fraction (0, 1], seconds [0, 1),
# latency_us [0, MAX_STEP_LATENCY_US], watts0 [0, MAX_STATIC_WATTS) (:func:`static_watts`), gbps0 (0: none, else a
# cluster file's Gbit/s figure, :func:`archsim.cluster_keys.is_gbps`: it stands in for inter_server_gbps), link_efficiency (a
# fraction, or the text NCCL_FIT, :func:`~archsim.array.device_values.link_efficiency`), dram_traffic (one of
# DRAM_TRAFFIC, :func:`dram_traffic`), str, bool
_KEYS: dict[str, dict[str, tuple[str, bool]]] = {
    "device": {"name": ("str", True), "gemm": ("str", False), "split_k": ("bool", False),
               "board_watts": ("float", False), "static_watts": ("watts0", False)},
    "compute": {"arrays": ("int", True), "arrays_per_core": ("int", False), "rows": ("int", True),
                "cols": ("int", True), "dataflow": ("str", False), "clock_mhz": ("float", True),
                "lanes": ("int", False), "lane_rows": ("int", False), "lane_cols": ("int", False),
                "gemm_efficiency": ("fraction", False), "launch_s": ("seconds", False),
                "host_s": ("seconds", False), "peak_tflops": ("table", False),
                "fused_gemm_fraction": ("fraction", False), "macs_per_pe": ("rates", False)},
    "memory": {"sram_kib_per_array": ("sram", False), "l2_mib": ("float0", False),
               "l2_bytes_per_clock": ("float0", False), "hbm_gib": ("float", True), "hbm_gbps": ("float", True),
               "memory_efficiency": ("fraction", False), "smem_bytes_per_clock": ("float0", False),
               "dram_traffic": ("dram_traffic", False)},
    "links": {"intra_gbps": ("float", True), "links": ("int", False), "host_gbps": ("float", False),
              "inter_node_gbps": ("gbps0", False), "intra_latency_us": ("latency_us", False),
              "inter_node_latency_us": ("latency_us", False), "efficiency": ("link_efficiency", False),
              "comm_sms": ("int0", False), "pj_per_bit": ("float0", False)},
    # the vector unit (a TPU's VPU), optional as a whole; lanes required once it is written (_WHOLE_OPTIONAL)
    "vector": {"lanes": ("int", True), "sublanes": ("int", False), "cores": ("int", False),
               "clock_mhz": ("float", False), "fp32_per_clock": ("float", False), "exp_per_clock": ("float", False)},
}
_WHOLE_OPTIONAL = ("vector",)  # sections a device file may leave out, whose required keys it must give if written
# A ring or tree step's latency above 1 ms is no fabric's (NVLink's fitted step is 3.15 µs, a NIC's a few µs; the
# nccl-tests fit bounds α there too): a larger figure is a unit slip (ns written as µs), refused.
MAX_STEP_LATENCY_US = 1000.0
_NUMBERS = ("int", "int0", "float", "float0", "sram", "fraction", "seconds", "latency_us", "watts0", "gbps0")
# W per chip: no chip leaks a megawatt; a figure at or above it is a unit slipped (mW written as W)
# why a tile-timed device takes no static power (a device file's [device] and a device sweep's spec refuse it alike)
STATIC_ON_TILES = ("a device with gemm = {gemm!r} is priced at its board power × time, which already counts static "
                   "power: static_watts is for array devices (the energy model's dynamic joules)")
# and why it takes no link energy: the board's power already draws its links' (archsim.training.link_energy)
LINKS_ON_TILES = ("a device with gemm = {gemm!r} is priced at its board power × time, which already counts its links' "
                  "power: pj_per_bit is for array devices (the energy model's dynamic joules)")
DEVICE_WORD_BYTES = 2  # a .cfg device file's word: fp16/bf16, what train and search read its arrays at
BANDWIDTH_TOLERANCE = 0.01  # words/cycle × bytes × clock may differ from hbm_gbps by a rounding
_CFG_SECTIONS = ("device", "memory", "links")  # what a .cfg device file adds to SCALE-Sim's sections
# each required key (_KEYS) → what to write, its unit first: a file lacking the key or its section is told it
_MEANS = {"device": {"name": "the chip's name"},
          "compute": {"arrays": "matrix units on the chip", "rows": "PEs down one array",
                      "cols": "PEs across one array", "clock_mhz": "the arrays' clock in MHz"},
          "memory": {"hbm_gib": "GiB of HBM", "hbm_gbps": "GB/s of HBM bandwidth"},
          "links": {"intra_gbps": "GB/s per direction over the chip's links"},
          "vector": {"lanes": "vector lanes per core"}}


def _needs(section: str, key: str | None = None) -> str:
    """``key = what it is`` for ``key``, or for each of ``section``'s required keys (:data:`_MEANS`)."""
    return ", ".join(f"{k} = {what}" for k, what in _MEANS[section].items() if key in (None, k))
_CFG_DEVICE_COUNTS = ("arrays", "arrays_per_core")  # a .cfg's [device] keys for what a TOML's [compute] says


def cfg_home(key: str) -> str:
    """Where a .cfg states ``key`` when it is written under one of SCALE-Sim's sections ("hbm_gbps is a [memory]
    key", "ClockGHz is an [archsim] key"), "" for a key no section of a .cfg device file reads: a designer adding
    the device sections puts ``ClockGHz`` or ``hbm_gbps`` beside ``ArrayHeight``, and the refusal should name
    the section that reads it, not call it a typo. Case is ignored, as configparser ignores it."""
    low = key.lower()
    if low == "clockghz":
        return "ClockGHz is an [archsim] key"
    if low in _CFG_ARRAY_KEYS:
        return f"a .cfg states {low} as {_CFG_ARRAY_KEYS[low]}"
    if low == CFG_SECTION:
        return CFG_RATES_HOME
    for section in _CFG_SECTIONS + ("vector",):
        if low in _KEYS[section] or (section == "device" and low in _CFG_DEVICE_COUNTS):
            return f"{low} is a [{section}] key"
    return ""


def _sram(value: object) -> int | tuple[int, int, int]:
    """``[memory] sram_kib_per_array``: KiB beside one array, one figure (whole KiB, :func:`sram_figure`'s rule, the
    device sweep's too; at least 3 on an array device, checked once its ``gemm`` is known) split in three equal
    operand buffers, or three positive integers, the ifmap, filter and ofmap SRAMs as a .cfg's SramSzkB keys state them."""
    if not isinstance(value, list):
        return sram_figure(value, priced=False)
    if len(value) != 3 or any(isinstance(kib, (bool, str)) for kib in value):
        raise ValueError(f"expected one number or three positive integers (ifmap, filter, ofmap KiB), got {value!r}")
    ifmap, filt, ofmap = (parse_int(kib, high=INT32_MAX, what="a positive integer") for kib in value)
    return ifmap, filt, ofmap


def _check(section: str, key: str, value: object, file: str, typed: bool = True) -> Any:
    """``value`` of ``[section] key`` checked for its kind, or InputError naming file and key. ``typed``: a TOML's
    value, where a number takes no quotes (a .cfg's values are all text), as a cluster file refuses one."""
    kind = _KEYS[section][key][0]
    if typed and kind in _NUMBERS and isinstance(value, str):
        raise InputError(f"expected a number, got {shown_number(value)}", file=file, field=f"{section}.{key}")
    if typed and kind == "bool" and isinstance(value, str):  # a boolean takes no quotes either
        raise InputError(f"expected true or false, got {shown_boolean(value)}", file=file, field=f"{section}.{key}")
    if kind == "bool":  # a TOML boolean, or a .cfg's text
        text = str(value).strip().lower() if not isinstance(value, bool) else ("true" if value else "false")
        if text not in ("true", "false"):
            raise InputError(f"expected true or false, got {value!r}", file=file, field=f"{section}.{key}")
        return text == "true"
    try:
        if kind == "int":
            return parse_int(value, high=INT32_MAX, what="a positive integer")
        if kind == "int0":
            return parse_int(value, low=0, high=INT32_MAX, what="a non-negative integer")
        high = math.inf if key == "clock_mhz" else MAX_FIGURE  # a clock has its own range (archsim.clock)
        if kind == "float":
            return parse_float(value, low_open=True, high=high, what="a positive number")
        if kind == "float0":
            return parse_float(value, high=high, what="a non-negative number")
        if kind == "sram":
            return _sram(value)
        if kind == "fraction":
            return fraction(value)
        if kind == "seconds":
            out = parse_float(value, what="a number of seconds")
            if out >= 1:
                raise ValueError(f"expected seconds in [0, 1), got {value!r}")
            return out
        if kind == "watts0":
            return static_watts(value)
        if kind == "latency_us":
            return parse_float(value, high=MAX_STEP_LATENCY_US, what="a non-negative number of µs")
        if kind == "gbps0":
            return gbps0(value)
        if kind == "link_efficiency":
            return link_efficiency(value, typed)
        if kind == "dram_traffic":
            return dram_traffic(value)
    except ValueError as exc:
        raise InputError(str(exc), file=file, field=f"{section}.{key}") from None
    if kind == "rates":  # [compute] macs_per_pe
        from archsim.array.mac_rates import rates_table

        return rates_table(value, file, f"{section}.{key}")
    if kind == "table":
        if not isinstance(value, dict):
            raise InputError("expected a table of dtype = TFLOP/s", file=file, field=f"{section}.{key}")
        peaks = {}
        for dtype, tflops in value.items():
            if dtype not in PEAK_DTYPES:
                raise InputError(f"unknown dtype {dtype!r}; expected {', '.join(PEAK_DTYPES)}", file=file,
                                 field=f"{section}.{key}")
            try:
                if isinstance(tflops, str):  # parse_float's ValueError: one handler
                    raise ValueError(f"expected a positive number, got {shown_number(tflops)}")  # noqa: TRY004
                peaks[dtype] = parse_float(tflops, low_open=True, high=MAX_FIGURE, what="a positive number")
            except ValueError as exc:
                raise InputError(str(exc), file=file, field=f"{section}.{key}.{dtype}") from None
        return peaks
    if not isinstance(value, str):
        raise InputError(f"expected text, got {value!r}", file=file, field=f"{section}.{key}")
    if (section, key) == ("device", "gemm") and value.strip() not in GEMM_MODELS:  # every reader: cost's too
        raise InputError(f"unknown GEMM model {value.strip()!r}; choose one of {', '.join(GEMM_MODELS)}", file=file,
                         field=f"{section}.{key}")
    return value.strip()


# where a .cfg states a TOML's [compute] macs_per_pe (a key of that name written in another section is told it)
CFG_RATES_HOME = f"a .cfg states macs_per_pe as its own section, [{CFG_SECTION}], one dtype a line (fp8 = 2)"
# a device TOML's [compute] keys as a .cfg states them (it has no [compute]: its array is SCALE-Sim's)
_CFG_ARRAY_KEYS = {"rows": "[architecture_presets] ArrayHeight", "cols": "[architecture_presets] ArrayWidth",
                   "dataflow": "[architecture_presets] Dataflow", "clock_mhz": "[archsim] ClockGHz, in GHz"}


# SCALE-Sim's .cfg keys as a device TOML states them (case ignored, as configparser reads them): a designer who
# writes a .cfg's array into a TOML is told the TOML's key and its unit, not "a typo?"
_TOML_OF_CFG_KEYS = {"arrayheight": "[compute] rows", "arraywidth": "[compute] cols",
                     "clockghz": "[compute] clock_mhz, in MHz (GHz × 1000)",
                     **{f"{buffer}sramszkb": "[memory] sram_kib_per_array, KiB beside each array (one figure, or "
                        "[ifmap, filter, ofmap])" for buffer in ("ifmap", "filter", "ofmap")},
                     "bandwidth": "[memory] hbm_gbps, GB/s (SCALE-Sim's Bandwidth is words per cycle)"}


# a chip's SRAM as a designer names it (MiB, the chip's): neither file has such a key, and difflib finds none near
_SRAM_WORDS = ("sram_mib", "sram_mb", "sram_gib", "shared_sram_mib", "sram_mib_per_array", "sram")
_SRAM_HOME = {False: "[memory] sram_kib_per_array, KiB beside each array (a shared SRAM: its KiB ÷ the arrays)",
              True: "[architecture_presets] IfmapSramSzkB, FilterSramSzkB and OfmapSramSzkB, KiB each beside each array"}


def _misplaced(key: str, read_apart: dict[str, tuple[str, ...]], cfg: bool) -> str:
    """Where an unknown key belongs when it is another section's (``[device] arrays`` in a TOML is ``[compute]``'s,
    ``[device] rows`` in a .cfg is its ``ArrayHeight``, ``ArrayHeight`` in a TOML is its ``[compute] rows``), as
    "; …" to end the error; "" for a plain typo."""
    if cfg and key in _CFG_ARRAY_KEYS:
        return f"; a .cfg states {key} as {_CFG_ARRAY_KEYS[key]}"
    if cfg and key == CFG_SECTION:
        return f"; {CFG_RATES_HOME}"
    if key.lower() in _SRAM_WORDS:
        return f"; a device file states its SRAM as {_SRAM_HOME[cfg]}"
    if not cfg and key.lower() in _TOML_OF_CFG_KEYS:
        return f"; {key} is a SCALE-Sim .cfg key: a device TOML states it as {_TOML_OF_CFG_KEYS[key.lower()]}"
    homes = [s for s, keys in _KEYS.items() if key in keys and not (cfg and s == "compute")]
    homes += [s for s, keys in read_apart.items() if key in keys]
    if homes:
        return f"; {key} is a [{homes[0]}] key"
    if cfg and key in _KEYS["compute"]:
        return f"; a .cfg has no [compute] for {key}: write the chip as a device TOML to state it"
    return ""


def _nearest_key(key: str, taken: tuple[str, ...], read_apart: dict[str, tuple[str, ...]], cfg: bool) -> tuple[str, str]:
    """(`` (did you mean 'X'?)``, where X belongs) for an unknown key: X the key nearest ``key`` (difflib's closeness, as
    :func:`~archsim.validate.did_you_mean`, case ignored) over every section's keys, not only its own section's
    (``taken``): ``[compute] sram_kib`` is ``[memory] sram_kib_per_array``'s near miss, whose section the second part
    names as :func:`_misplaced` names an exact key's ("" where X is the section's own); ("", "") where none is near."""
    from difflib import get_close_matches

    spelled = {k.lower(): k for k in (*taken, *(k for keys in (*_KEYS.values(), *read_apart.values()) for k in keys))}
    nearest = get_close_matches(key.lower(), list(spelled), n=1, cutoff=0.6)
    if not nearest:
        return "", ""
    name = spelled[nearest[0]]
    return f" (did you mean {name!r}?)", "" if name in taken else _misplaced(name, read_apart, cfg)


def checked_sections(spec: dict, file: str, required: tuple[str, ...],
                     read_apart: dict[str, tuple[str, ...]] | None = None,
                     typed: bool = True, apart: tuple[str, ...] = ()) -> dict[str, dict[str, Any]]:
    """Each known section's checked values; unknown sections or keys and missing ones refused.
    ``read_apart``: keys a section also takes that the caller read already (named in the error too);
    ``typed``: a TOML's values (a number in quotes refused), not a .cfg's text; ``apart``: sections another reader
    checks (a device TOML's ``[energy]``, :func:`archsim.energy.file_energy.read_cfg_energy`), skipped here."""
    cluster = [table for table in ("cluster", "servers") if table in spec]
    if typed and cluster and "device" not in spec:  # a cluster file given where its device file goes
        raise InputError("this is a cluster file, not a device file: give the device file its [[servers]] name "
                         "(device = \"FILE\")", file=file, line=table_line(spec, cluster[0]))
    for section, value in spec.items():
        if not isinstance(value, dict) and typed and section in (*_KEYS, *apart):  # [[memory]], or memory = 3 on top
            shape = f"[[{section}]], an array of tables" if isinstance(value, list) else f"a key, {section} = …"
            raise InputError(f"[{section}] is a section: one table, its header written [{section}], not {shape}",
                             file=file, field=section, line=table_line(spec, section))
        if not isinstance(value, dict) and typed:  # a key above the first header, not a section
            home = _misplaced(section, read_apart or {}, cfg=False)
            if not home:  # a near miss of a section's key: the same hint, for the key meant
                hint, where = _nearest_key(section, (), read_apart or {}, cfg=False)
                home = f"; {hint.strip()[1:-1]} {where[2:]}" if hint else ""  # "; did you mean 'X'? X is a [s] key"
            raise InputError(f"a key before the first section header; a device file's keys belong in its sections "
                             f"{', '.join(f'[{s}]' for s in (*_KEYS, *apart))}{home}", file=file, field=section,
                             line=table_line(spec, section))
        if section not in _KEYS and section not in apart:
            hint = did_you_mean(f"[{section}]", [f"[{s}]" for s in (*_KEYS, *apart)])
            raise InputError(f"unknown section [{section}]{hint}; expected "
                             f"{', '.join(f'[{s}]' for s in (*_KEYS, *apart))}", file=file,
                             line=table_line(spec, section))
    out: dict[str, dict[str, Any]] = {}
    for section, keys in _KEYS.items():
        given = spec.get(section, {})
        if section in required and section not in spec:
            raise InputError(f"missing section [{section}] ({_needs(section)})", file=file, missing=True)
        if not isinstance(given, dict):
            raise InputError(f"[{section}] must be a table", file=file)
        for key in given:
            if key not in keys:
                taken = (*keys, *(read_apart or {}).get(section, ()))
                home = _misplaced(key, read_apart or {}, cfg=not typed)
                hint = ""
                if not home:  # a typo of its own section's key, or a near miss of another's (named as an exact one)
                    hint, home = _nearest_key(key, taken, read_apart or {}, cfg=not typed)
                raise InputError(f"unknown key{hint}; [{section}] takes "
                                 f"{', '.join(taken)}{home}", file=file, field=f"{section}.{key}")
        for key, (_, needed) in keys.items():
            written = section in required or (section in _WHOLE_OPTIONAL and section in spec)
            if needed and key not in given and written:
                raise InputError(f"missing key in [{section}] ({_needs(section, key)})", file=file,
                                 field=f"{section}.{key}", missing=True)
        out[section] = {key: _check(section, key, value, file, typed) for key, value in given.items()}
    return out


def toml_sections(text: str, file: str, sections: tuple[str, ...]) -> dict[str, dict[str, Any]] | None:
    """A device TOML's ``sections`` as every device-file reader reads them: through the shared TOML reader
    (:func:`~archsim.toml_errors.parse_toml`) and :func:`checked_sections`, a bad value's error naming its line
    (``FILE, line N, field 'compute.rows'``); None where the text is no TOML or has none of them."""
    from archsim.toml_errors import located, parse_toml

    try:
        document = parse_toml(text, file)
    except InputError:  # not TOML at all: the caller says what the file should be
        return None
    if not any(section in document for section in sections):
        return None
    with located(document, file):
        return checked_sections({s: document[s] for s in sections if s in document}, file, ())


def cfg_device_sections(text: str, file: str, required: bool) -> tuple[dict[str, dict[str, Any]], int, int] | None:
    """A ``.cfg``'s device sections checked (``[device]`` may carry ``arrays`` and ``arrays_per_core``, positive
    integers), with those two counts; None when it has neither ``[device]`` nor ``[links]`` (a plain SCALE-Sim
    file, whose ``[memory]`` is its own). ``required``: a device file needs all three sections and their keys.
    An error names the key's line (:func:`~archsim.array.cfg_lines.cfg_located`)."""
    try:
        return _cfg_device_sections(text, file, required)
    except InputError as exc:
        raise cfg_located(exc, text) from None


def _cfg_device_sections(text: str, file: str,
                         required: bool) -> tuple[dict[str, dict[str, Any]], int, int] | None:
    # configparser's own rule for keys, as SCALE-Sim's sections and a .cfg's [energy] are read: case ignored, so
    # HBM_GIB is hbm_gib (and the two written in one section are one key twice); section names keep their case
    parser = cfg_parser(text, file)
    if not required and not (parser.has_section("device") or parser.has_section("links")):
        return None
    own = {s: dict(parser[s]) for s in (*_CFG_SECTIONS, *_WHOLE_OPTIONAL) if parser.has_section(s)}
    for section, keys in own.items():
        for key, value in keys.items():
            cfg_unquoted(value, file, f"{section}.{key}")
    counts = []
    for key in _CFG_DEVICE_COUNTS:
        try:
            counts.append(parse_int(own.get("device", {}).pop(key, "1"), what="a positive integer"))
        except ValueError as exc:
            raise InputError(str(exc), file=file, field=f"device.{key}") from None
    if required and ("memory" not in own or "links" not in own or "device" not in own):
        missing = " and ".join(f"[{s}] ({_needs(s)})" for s in _CFG_SECTIONS if s not in own)
        raise InputError(f"a .cfg device file needs {missing} (docs/formats.md, Device files)", file=file)
    if "sram_kib_per_array" in own.get("memory", {}):  # a second SRAM size, which one would be dropped
        raise InputError("a .cfg's SRAM per array is its IfmapSramSzkB + FilterSramSzkB + OfmapSramSzkB "
                         "([architecture_presets]): drop sram_kib_per_array", file=file,
                         field="memory.sram_kib_per_array")
    # every key checked before the two counts are compared: a misspelt `arrays` (`array = 8`) is named as the typo,
    # not as "2 arrays per core do not divide 1 arrays" from the count it left at its default
    sections = checked_sections(own, file, _CFG_SECTIONS if required else (), {"device": _CFG_DEVICE_COUNTS}, typed=False)
    rates = cfg_rates(dict(parser[CFG_SECTION]) if parser.has_section(CFG_SECTION) else None, file)
    try:  # a TOML's [compute] macs_per_pe, by its rule and refusals (a tile-timed device runs at its stated peaks)
        sections["compute"] = {"macs_per_pe": array_rates(rates, sections["device"].get("gemm", "arrays"), False,
                                                          file, CFG_SECTION)} if rates else {}
    except InputError as exc:  # the section's own line
        raise InputError(exc.message, file=file, line=cfg_section_line(text, CFG_SECTION), field=CFG_SECTION) from None
    if counts[0] % counts[1]:  # as Arrays refuses it, so that cost --config refuses what train does
        raise InputError(f"{counts[1]} arrays per core do not divide {counts[0]} arrays", file=file,
                         field="device.arrays_per_core")
    return sections, counts[0], counts[1]


def words_gbps(words: float, clock_hz: float) -> float:
    """SCALE-Sim's ``Bandwidth`` (words/cycle) in GB/s: words of :data:`DEVICE_WORD_BYTES` at the file's
    clock (Hz), the figure a .cfg device file's ``[memory] hbm_gbps`` must match."""
    return words * DEVICE_WORD_BYTES * clock_hz / 1e9


def check_bandwidth_once(memory: dict[str, Any], words_per_cycle: tuple[int, ...], clock_hz: float | None,
                         file: str) -> None:
    """A .cfg device file with both SCALE-Sim's ``Bandwidth`` (words/cycle, read by ``cost --engine cycle``)
    and ``[memory] hbm_gbps`` (GB/s, read by ``train``/``search``) refused unless they agree within 1%
    at :data:`DEVICE_WORD_BYTES` and the file's clock: two commands would model two memories."""
    if "hbm_gbps" not in memory or clock_hz is None:
        return
    hbm = memory["hbm_gbps"]
    for words in words_per_cycle:
        gbps = words_gbps(words, clock_hz)
        if abs(gbps - hbm) > BANDWIDTH_TOLERANCE * hbm:
            raise InputError(f"Bandwidth = {words} words/cycle × {DEVICE_WORD_BYTES} B × {clock_hz / 1e9:g} GHz = "
                             f"{gbps:g} GB/s but [memory] hbm_gbps = {hbm:g} GB/s: cost --engine cycle reads the "
                             f"first, train and search the second; drop one or make them agree (within 1%)",
                             file=file, field="memory.hbm_gbps")
