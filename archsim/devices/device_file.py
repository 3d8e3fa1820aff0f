"""Device files: an accelerator (or a GPU written as arrays) for ``archsim train`` and ``archsim search``.

Two forms, both documented in docs/formats.md ("Device files"):

* a TOML with ``[device]``, ``[compute]`` (and an optional ``[compute.peak_tflops]``), ``[memory]``
  and ``[links]``;
* a SCALE-Sim ``.cfg`` (read by :func:`archsim.array.config.read_scalesim_cfg`: one array's shape,
  dataflow, SRAM and ``[archsim] ClockGHz``) plus ``[device]``, ``[memory]`` and ``[links]`` sections
  whose keys are the TOML's.

Unknown sections and keys are refused; every number is range-checked as :mod:`archsim.validate`
checks flags (finite, positive where it must be); errors name the file and the key.
"""

from __future__ import annotations

import configparser
from pathlib import Path
from typing import Any

from archsim.array.config import read_scalesim_cfg
from archsim.devices.device import DTYPES, GEMM_MODELS, Arrays, Device
from archsim.devices.kernels import one_fraction
from archsim.errors import InputError
from archsim.validate import INT32_MAX, check_name, parse_float, parse_int, parse_toml, read_text

GIB = 2**30
PEAK_DTYPES = (*DTYPES, "tf32", "fp64", "fp8")  # what [compute.peak_tflops] may name
MAX_CLOCK_MHZ = 1e6  # 1 THz

# section → key → (kind, required); kinds: int, float (positive), fraction (0, 1], seconds [0, 1), str, bool
_KEYS: dict[str, dict[str, tuple[str, bool]]] = {
    "device": {"name": ("str", True), "gemm": ("str", False), "split_k": ("bool", False),
               "board_watts": ("float", False)},
    "compute": {"arrays": ("int", True), "arrays_per_core": ("int", False), "rows": ("int", True),
                "cols": ("int", True), "dataflow": ("str", False), "clock_mhz": ("float", True),
                "lanes": ("int", False), "lane_rows": ("int", False), "lane_cols": ("int", False),
                "gemm_efficiency": ("fraction", False), "launch_s": ("seconds", False),
                "host_s": ("seconds", False), "peak_tflops": ("table", False)},
    "memory": {"sram_kib_per_array": ("float0", False), "l2_mib": ("float0", False),
               "l2_bytes_per_clock": ("float0", False), "hbm_gib": ("float", True), "hbm_gbps": ("float", True),
               "memory_efficiency": ("fraction", False)},
    "links": {"intra_gbps": ("float", True), "links": ("int", False), "host_gbps": ("float", False),
              "inter_node_gbps": ("float0", False)},
}
_CFG_SECTIONS = ("device", "memory", "links")  # what a .cfg device file adds to SCALE-Sim's sections


def _check(section: str, key: str, value: object, file: str) -> Any:
    """``value`` of ``[section] key`` checked for its kind, or InputError naming file and key."""
    kind = _KEYS[section][key][0]
    if kind == "bool":  # a TOML boolean, or a .cfg's text
        text = str(value).strip().lower() if not isinstance(value, bool) else ("true" if value else "false")
        if text not in ("true", "false"):
            raise InputError(f"expected true or false, got {value!r}", file=file, field=f"{section}.{key}")
        return text == "true"
    try:
        if kind == "int":
            return parse_int(value, high=INT32_MAX, what="a positive integer")
        if kind == "float":
            return parse_float(value, low_open=True, what="a positive number")
        if kind == "float0":
            return parse_float(value, what="a non-negative number")
        if kind == "fraction":
            return parse_float(value, low_open=True, high=1.0, what="a fraction")
        if kind == "seconds":
            out = parse_float(value, what="a number of seconds")
            if out >= 1:
                raise ValueError(f"expected seconds in [0, 1), got {value!r}")
            return out
    except ValueError as exc:
        raise InputError(str(exc), file=file, field=f"{section}.{key}") from None
    if kind == "table":
        if not isinstance(value, dict):
            raise InputError("expected a table of dtype = TFLOP/s", file=file, field=f"{section}.{key}")
        peaks = {}
        for dtype, tflops in value.items():
            if dtype not in PEAK_DTYPES:
                raise InputError(f"unknown dtype {dtype!r}; expected {', '.join(PEAK_DTYPES)}", file=file,
                                 field=f"{section}.{key}")
            try:
                peaks[dtype] = parse_float(tflops, low_open=True, what="a positive number")
            except ValueError as exc:
                raise InputError(str(exc), file=file, field=f"{section}.{key}.{dtype}") from None
        return peaks
    if not isinstance(value, str):
        raise InputError(f"expected text, got {value!r}", file=file, field=f"{section}.{key}")
    return value.strip()


def _sections(spec: dict, file: str, required: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """Each known section's checked values; unknown sections or keys and missing ones refused."""
    for section in spec:
        if section not in _KEYS:
            raise InputError(f"unknown section [{section}]; expected {', '.join(f'[{s}]' for s in _KEYS)}",
                             file=file)
    out: dict[str, dict[str, Any]] = {}
    for section, keys in _KEYS.items():
        given = spec.get(section, {})
        if section in required and section not in spec:
            raise InputError(f"missing section [{section}]", file=file)
        if not isinstance(given, dict):
            raise InputError(f"[{section}] must be a table", file=file)
        for key in given:
            if key not in keys:
                raise InputError(f"unknown key; [{section}] takes {', '.join(keys)}", file=file,
                                 field=f"{section}.{key}")
        for key, (_, needed) in keys.items():
            if needed and key not in given and (section in required):
                raise InputError(f"missing key in [{section}]", file=file, field=f"{section}.{key}")
        out[section] = {key: _check(section, key, value, file) for key, value in given.items()}
    return out


def _device(values: dict[str, dict[str, Any]], arrays: Arrays, file: str, sram_bytes: float | None = None) -> Device:
    dev, comp, mem, links = values["device"], values["compute"], values["memory"], values["links"]
    gemm = dev.get("gemm", "arrays")
    if gemm not in GEMM_MODELS:
        raise InputError(f"unknown GEMM model {gemm!r}; choose one of {', '.join(GEMM_MODELS)}", file=file,
                         field="device.gemm")
    if dev.get("split_k") and gemm != "arrays":
        raise InputError("split_k is a mechanism of gemm = \"arrays\" (tiles split the reduction by their own rule)",
                         file=file, field="device.split_k")
    lanes = None
    if "lanes" in comp:
        try:
            lanes = Arrays(comp["lanes"], comp.get("lane_rows", 1), comp.get("lane_cols", 1), "os",
                           arrays.clock_hz)
        except InputError as exc:
            raise InputError(exc.message, file=file, field=f"compute.{exc.where.field}") from None
    elif "lane_rows" in comp or "lane_cols" in comp:
        raise InputError("lane_rows / lane_cols need lanes (the count of lane arrays)", file=file,
                         field="compute.lanes")
    given = comp.get("peak_tflops")
    if given is not None:
        peaks = tuple((dtype, tflops * 1e12) for dtype, tflops in given.items())
    else:  # every dtype on the arrays, fp32 on the lanes where the device has them
        peaks = tuple((dtype, (lanes if dtype == "fp32" and lanes is not None else arrays).peak_flops)
                      for dtype in DTYPES)
    efficiency = one_fraction(gemm=comp.get("gemm_efficiency", 1.0), memory=mem.get("memory_efficiency", 1.0),
                              launch_s=comp.get("launch_s", 0.0), host_s=comp.get("host_s", 0.0))
    intra = links["intra_gbps"] * 1e9
    sram = sram_bytes if sram_bytes is not None else mem.get("sram_kib_per_array", 0.0) * 1024
    return Device(check_name(dev["name"], "name", file=file), arrays, lanes, gemm, peaks, mem["hbm_gib"] * GIB,
                  mem["hbm_gbps"] * 1e9, sram_bytes_per_array=sram, l2_bytes=mem.get("l2_mib", 0.0) * 2**20,
                  l2_bytes_per_clock=mem.get("l2_bytes_per_clock", 0.0), efficiency=efficiency,
                  nvlink_bytes_per_s=intra, nvlinks=links.get("links", 1), nvswitch=True,
                  pcie_bytes_per_s=links.get("host_gbps", links["intra_gbps"]) * 1e9,
                  inter_node_gbps=links.get("inter_node_gbps", 0.0), board_watts=dev.get("board_watts"),
                  split_k=dev.get("split_k", False))


def _toml_device(path: Path) -> Device:
    file = str(path)
    values = _sections(parse_toml(read_text(path, "device file"), file), file,
                       ("device", "compute", "memory", "links"))
    comp = values["compute"]
    if comp["clock_mhz"] > MAX_CLOCK_MHZ:
        raise InputError(f"expected a clock of at most {MAX_CLOCK_MHZ:g} MHz", file=file, field="compute.clock_mhz")
    try:
        arrays = Arrays(comp["arrays"], comp["rows"], comp["cols"], comp.get("dataflow", "ws"),
                        comp["clock_mhz"] * 1e6, comp.get("arrays_per_core", 1))
    except InputError as exc:
        raise InputError(exc.message, file=file, field=f"compute.{exc.where.field}") from None
    return _device(values, arrays, file)


def _cfg_device(path: Path) -> Device:
    """A SCALE-Sim .cfg's array plus the device file's own sections (module docstring); ``[device]``
    may carry ``arrays`` too (the array count, default 1), read here beside the TOML keys."""
    file = str(path)
    text = read_text(path, "device file")
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys keep their case
    try:
        parser.read_string(text, source=file)
    except (configparser.Error, UnicodeDecodeError) as exc:
        raise InputError(f"not a readable .cfg file ({exc.__class__.__name__})", file=file) from None
    own = {s: dict(parser[s]) for s in _CFG_SECTIONS if parser.has_section(s)}
    count = own.get("device", {}).pop("arrays", "1")
    per_core = own.get("device", {}).pop("arrays_per_core", "1")
    if "memory" not in own or "links" not in own or "device" not in own:
        missing = next(s for s in _CFG_SECTIONS if s not in own)
        raise InputError(f"a .cfg device file needs a [{missing}] section (docs/formats.md, Device files)", file=file)
    values = _sections(own, file, ("device", "memory", "links"))
    array = read_scalesim_cfg(path, element_bytes=2)
    if array.clock_hz is None:
        raise InputError("a device file's array needs its clock: [archsim] ClockGHz", file=file, field="ClockGHz")
    try:
        arrays = Arrays(parse_int(count, what="a positive integer"), array.rows, array.cols, array.dataflow,
                        float(array.clock_hz), parse_int(per_core, what="a positive integer"))
    except ValueError as exc:
        raise InputError(str(exc), file=file, field="device.arrays") from None
    except InputError as exc:
        raise InputError(exc.message, file=file, field=f"device.{exc.where.field}") from None
    values["compute"] = {}
    sram = float(array.ifmap_sram_kb + array.filter_sram_kb + array.ofmap_sram_kb) * 1024
    return _device(values, arrays, file, sram_bytes=sram)


def load_device(path: str | Path) -> Device:
    """The device a ``.toml`` or SCALE-Sim ``.cfg`` device file describes."""
    path = Path(path)
    if path.suffix.lower() == ".cfg":
        return _cfg_device(path)
    if path.suffix.lower() == ".toml":
        return _toml_device(path)
    raise InputError("a device file is a .toml or a SCALE-Sim .cfg", file=str(path))


__all__ = ["load_device"]
