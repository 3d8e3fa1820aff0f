"""An array as the array commands' flags describe it: ``--array``, ``--config``, ``--dataflow``,
``--element-bytes`` (or ``--dtype``, its name), the cycle engine's ``--bandwidth`` and ``--sram-kb``, and
``--clock-ghz``.

One implementation for the commands (``archsim cost``, ``energy``, ``gemm``, ``pipeline``, ``schedule``)
and the library (``archsim.cost``): the same defaults, checks and error messages, each error naming
its flag. Bandwidths are DRAM words per cycle per operand, SRAM sizes KiB, the clock GHz.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from archsim.array.config import ArrayConfig, dram_words, parse_array_shape, read_scalesim_cfg
from archsim.array.device_sections import is_device_toml
from archsim.array.sram_sizes import sram_in_bytes
from archsim.choices.devices import ARRAY_DTYPES, ARRAY_ELEMENT_BYTES, SCALESIM_DTYPE
from archsim.clock import checked_clock, clock_hz
from archsim.console import setting
from archsim.errors import InputError
from archsim.validate import INT32_MAX, flag_text, shown
from archsim.value_parsers import comma_items, parse_int


def array_from_flags(array: str | None = None, config: str | Path | None = None, dataflow: str | None = None,
                     element_bytes: int = 1) -> ArrayConfig:
    """``--config`` (a SCALE-Sim ``.cfg``) reshaped by ``--array`` when both are given, else
    ``--array`` (``"ROWSxCOLS"``, default 32x32); ``--dataflow`` overrides the file's or the default ws."""
    if config:
        return reshaped(read_scalesim_cfg(config, element_bytes=element_bytes, dtype_flag=True), array, dataflow)
    rows, cols = parse_array_shape(array or "32x32")
    return ArrayConfig(rows=rows, cols=cols, dataflow=dataflow or "ws", element_bytes=element_bytes)


def reshaped(found: ArrayConfig, array: str | None = None, dataflow: str | None = None) -> ArrayConfig:
    """A ``--config`` file's array (a .cfg's, or a device TOML's) reshaped by ``--array`` and given ``--dataflow``
    where the user gave them: one rule for both kinds of file."""
    if array is not None:
        rows, cols = parse_array_shape(array)
        found = found.with_shape(rows, cols)
    return replace(found, dataflow=dataflow) if dataflow else found


# PEs in one array: 1024 × 1024, 16 times the largest systolic array built as one, the TPU v1's 256 × 256 MACs
# (Jouppi et al., ISCA 2017). A larger array is most likely a slipped digit (100000x100000: 10^10 PEs, 7.1 m² of
# int8 PEs by the energy table's 706.0 µm² each), costed as given but warned.
MAX_PLAUSIBLE_PES = 2**20
# The limit as the warnings state it, in parentheses after "above any chip's one array".
PES_LIMIT = f"≤ {MAX_PLAUSIBLE_PES:,}: 1024 × 1024, 16 times the TPU v1's 256 × 256"


def array_size_warning(rows: int, cols: int, source: str) -> str | None:
    """The warning, one line, for an array of more PEs than :data:`MAX_PLAUSIBLE_PES`, ``source`` naming where
    its shape was written (``--array 100000x100000``, a ``.cfg``'s keys); None otherwise. A warning, not a
    refusal: such an array is possible to cost, only implausible as one chip's."""
    if rows * cols <= MAX_PLAUSIBLE_PES:
        return None
    return (f"{source}: a {rows} × {cols} array is {rows * cols:,} PEs, above any chip's one array ({PES_LIMIT}); "
            "costed as given: check the shape")


def array_source(array: object, config: object) -> str:
    """Where an array command's shape was written, as :func:`array_size_warning` names it: ``--array`` as given
    (the library's ``array='…'``), else the ``.cfg``'s ArrayHeight and ArrayWidth, else ``array`` (an
    :class:`ArrayConfig` given to the library)."""
    if isinstance(array, str) and not array.endswith(".cfg"):
        return setting("array", array)
    return f"{config}: ArrayHeight and ArrayWidth" if config is not None else setting("array")


def element_width(dtype: str | None = None, element_bytes: int | None = None) -> int | None:
    """Bytes per element that ``--dtype`` (a name of :data:`~archsim.choices.devices.ARRAY_DTYPES`) and
    ``--element-bytes`` (any width) state, or None when neither is given (the array's own, else 1). Both
    given must agree: a width the other flag contradicts is refused, never silently dropped."""
    if dtype is None:
        return element_bytes
    if dtype not in ARRAY_DTYPES:
        raise InputError(f"expected one of {', '.join(ARRAY_DTYPES)}, got {shown(dtype)}", field="dtype")
    width = ARRAY_ELEMENT_BYTES[dtype]
    if element_bytes is not None and element_bytes != width:
        raise InputError(f"{setting('dtype', dtype)} is {width}-byte elements, {setting('element-bytes')} says "
                         f"{element_bytes!r}: "
                         "give one of them", field="element-bytes")
    return width


def dtype_meta(dtype: str | None, array: ArrayConfig) -> str | None:
    """The element type a table states beside ``element_bytes``: ``--dtype`` as given, else int8 for the
    default 1-byte word (SCALE-Sim's), else None (a width given only as ``--element-bytes``)."""
    if dtype is not None:
        return dtype
    return SCALESIM_DTYPE if array.element_bytes == ARRAY_ELEMENT_BYTES[SCALESIM_DTYPE] else None


def check_bandwidth_engine(bandwidth: object, engine: str, flag: str = "--bandwidth") -> None:
    """Refuse a DRAM bandwidth the analytic engine would drop (it has no memory stalls); ``--sram-kb``
    stays allowed: it sizes the SRAMs' area and energy too. ``flag`` is the option's name where it is
    called otherwise (``schedule``'s ``--dram-bandwidth``)."""
    if bandwidth is not None and engine != "cycle":
        raise InputError(f"{setting(flag.lstrip('-'))} is the cycle engine's DRAM words/cycle: add "
                         f"{setting('engine', 'cycle')} "
                         "(analytic cycles have no memory stalls)", field=flag.lstrip("-"))


def sram_unused_warning(sram_kb: object, engine: str, figures: str) -> str | None:
    """The line said where SRAM sizes change none of a job's ``figures`` (its analytic cycles): ``gemm`` and
    ``pipeline`` without the cycle engine, and ``archsim.profile``; a warning, not a refusal, as cost and energy
    take ``--sram-kb`` without it (the SRAMs' area and energy). None where the sizes are used or not given."""
    if sram_kb is None or engine == "cycle":
        return None
    return (f"{setting('sram-kb')} is not used without {setting('engine', 'cycle')}: {figures} do not depend on the "
            f"SRAM sizes ({setting('engine', 'cycle')} adds the stalls and DRAM traffic they set)")


def memory_meta(array: ArrayConfig) -> dict[str, object]:
    """What a ``cycle``-engine table depends on beyond the array shape."""
    meta: dict[str, object] = {"sram_kb": f"{array.ifmap_sram_kb},{array.filter_sram_kb},{array.ofmap_sram_kb}",
                                "bandwidth_words_per_cycle": array.bandwidth[0]}
    if array.read_bandwidth is not None:
        meta["bandwidth_words_per_cycle"] = ",".join(map(str, array.dram_bandwidths))
        meta["bandwidth_order"] = "ifmap,filter,ofmap (the .cfg's [layout] read rates, then Bandwidth)"
    return meta


def with_memory(array: ArrayConfig, bandwidth: int | None = None,
                sram_kb: str | int | Sequence[int] | None = None) -> ArrayConfig:
    """``array`` with ``--bandwidth`` (DRAM words/cycle, every operand) and ``--sram-kb`` (one KiB size
    for all three SRAMs, or ifmap,filter,ofmap as ``"64,64,32"`` or a sequence of three) where given."""
    changes: dict[str, Any] = {}  # ArrayConfig's fields, checked by it
    if bandwidth is not None:
        try:
            words = parse_int(bandwidth, low=1, high=INT32_MAX, what="a positive integer")
        except ValueError as exc:
            raise InputError(str(exc), field="bandwidth") from None
        # all three operands, in words: a device rate the array carried no longer sets them
        changes.update(bandwidth=(words,), read_bandwidth=None, user_bandwidth=True, dram_rate=None)
    if sram_kb is not None:
        sizes = _sram_sizes(sram_kb)
        changes.update(ifmap_sram_kb=sizes[0], filter_sram_kb=sizes[1], ofmap_sram_kb=sizes[2])
    return replace(array, **changes) if changes else array


def sram_kb_warning(sram_kb: str | int | Sequence[int] | None) -> str | None:
    """The warning ``--sram-kb`` gets when its sizes look like bytes, the rule a device file's SRAM is judged by
    (:func:`~archsim.array.sram_sizes.sram_in_bytes`: the three buffers together above 256 MiB), with the sizes
    to write in whole KiB; None otherwise. The run proceeds at the sizes given."""
    if sram_kb is None:
        return None
    sizes = _sram_sizes(sram_kb)
    given = sizes if "," in _sram_text(sram_kb) else sizes[:1]  # as it was typed: one size, or three
    fix = ",".join(str(max(round(kib / 1024), 1)) for kib in given)
    typed = ",".join(map(str, given))  # a text where three were typed, as the keyword then takes them
    return sram_in_bytes(f"{setting('sram-kb', typed if ',' in typed else given[0])}: {sum(sizes)} KiB of SRAM "
                         "beside the array (ifmap, filter and ofmap together)", sum(sizes),
                         setting("sram-kb", fix if "," in fix else int(fix)))


def _sram_text(sram_kb: str | int | Sequence[int]) -> str:
    """``--sram-kb``'s value as typed (a sequence written with commas)."""
    return flag_text(sram_kb)


def _sram_sizes(sram_kb: str | int | Sequence[int]) -> list[int]:
    """The (ifmap, filter, ofmap) KiB ``--sram-kb`` names (InputError naming the flag)."""
    parts = comma_items(sram_kb, "sram-kb")
    try:
        if isinstance(sram_kb, bool) or len(parts) not in (1, 3) or not all(p.isdigit() for p in parts):
            raise ValueError(f"expected one or three positive integers, got {shown(sram_kb)}")
        return [parse_int(p, what="SRAM KiB") for p in parts] * (3 if len(parts) == 1 else 1)
    except ValueError as exc:
        raise InputError(str(exc), field="sram-kb") from None


def clock_ghz(value: object) -> float:
    """``--clock-ghz``'s value checked as the flag checks it (:func:`archsim.clock.clock_hz`), in GHz."""
    return checked_clock(value, "GHz")


def with_clock(array: ArrayConfig, ghz: float | None = None) -> ArrayConfig:
    """``array`` at ``--clock-ghz`` where given, else at its own clock (possibly none)."""
    if ghz is None:
        return array
    try:
        hz = clock_hz(ghz, "GHz")
    except ValueError as exc:
        raise InputError(str(exc), field="clock-ghz") from None
    return replace(array, clock_hz=hz)


def array_from_options(array: str | None = None, config: str | Path | None = None, dataflow: str | None = None,
                       element_bytes: int = 1, bandwidth: int | None = None,
                       sram_kb: str | int | Sequence[int] | None = None,
                       clock: float | None = None) -> ArrayConfig:
    """:func:`array_from_flags`, then :func:`with_memory`, then :func:`with_clock` (``clock`` in GHz):
    the array every array command costs on."""
    return with_clock(with_memory(array_from_flags(array, config, dataflow, element_bytes), bandwidth, sram_kb),
                      clock)


def calc_mode_note(config: str | Path) -> str | None:
    """What the cycle engine says of a ``--config`` that names SCALE-Sim's CALC bandwidth mode: SCALE-Sim never
    stalls there, the engine simulates the DRAM at ``Bandwidth`` words/cycle all the same (SCALE-Sim's USER mode),
    so its stalls are not what SCALE-Sim would report for that file. None for a USER file or one naming no mode
    (which SCALE-Sim would not read)."""
    import configparser

    from archsim.validate import read_text

    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(read_text(config, "config file", encoding="utf-8-sig"), source=str(config))  # read once already: no error here
    if parser.get("run_presets", "InterfaceBandwidth", fallback="").strip().upper() != "CALC":
        return None
    return (f"{config} names InterfaceBandwidth: CALC, where SCALE-Sim never stalls; the cycle engine simulates "
            "its DRAM at the Bandwidth words/cycle all the same (SCALE-Sim's USER mode): set InterfaceBandwidth: "
            "USER to compare stalls with SCALE-Sim, or cost without the cycle engine for CALC's stall-free cycles")


def device_dram_rate(config: str | Path, element_bytes: int) -> tuple[int, float, float] | None:
    """(words/cycle, GB/s, GHz): the DRAM rate a ``--config`` device file states as ``[memory] hbm_gbps`` at its own
    clock (a TOML's ``[compute] clock_mhz``, a ``.cfg``'s ``[archsim] ClockGHz``), in words of ``element_bytes``:
    hbm_gbps / (element_bytes × GHz) to the nearest whole
    number (a half up), at least 1. None for a plain SCALE-Sim file, one stating
    ``Bandwidth`` (checked against ``hbm_gbps`` on reading: that rate is the file's) or one without a clock.

    The rule is per operand: SCALE-Sim's ``Bandwidth`` is each buffer's own DRAM port, not a share (USER mode
    passes it as ``ifmap_backing_buf_bw``, ``filter_backing_buf_bw`` and ``ofmap_backing_buf_bw`` alike, in
    ``scalesim/single_layer_sim.py`` to ``memory/double_buffered_scratchpad_mem.py``'s ``set_params``), and a
    ``.cfg`` device file's ``Bandwidth`` already must equal its ``hbm_gbps`` (:func:`~archsim.array.device_sections.
    check_bandwidth_once`): so each of the ifmap, filter and ofmap buffers reads (or writes) at the chip's whole
    rate, the chip's total not divided among them (three buffers streaming at once draw up to 3 × hbm_gbps)."""
    import configparser

    from archsim.array.device_sections import cfg_device_sections, toml_sections
    from archsim.validate import read_text

    text = read_text(config, "config file", encoding="utf-8-sig")  # read once already: no error here
    if is_device_toml(config):  # read as every device-file reader reads it: the shared TOML reader, its keys checked
        values = toml_sections(text, str(config), ("compute", "memory")) or {}
        hbm, mhz = values.get("memory", {}).get("hbm_gbps"), values.get("compute", {}).get("clock_mhz")
        ghz = None if mhz is None else mhz / 1e3
    else:
        checked = cfg_device_sections(text, str(config), required=False)
        hbm = None if checked is None else checked[0].get("memory", {}).get("hbm_gbps")
        parser = configparser.ConfigParser(interpolation=None)
        parser.read_string(text, source=str(config))
        clock = parser.get("archsim", "ClockGHz", fallback=None)
        ghz = None if clock is None or parser.has_option("architecture_presets", "Bandwidth") else float(clock)
    if not hbm or ghz is None:
        return None
    return dram_words(hbm, ghz, element_bytes), float(hbm), ghz  # a half up, not to even


def with_device_bandwidth(array: ArrayConfig, config: str | Path | None, element_bytes: int, flag: str = "bandwidth",
                          *, name: str | None = None) -> tuple[ArrayConfig, str | None]:
    """(array, note): ``array`` in ``element_bytes``-byte words at the DRAM words/cycle its ``--config`` device file's
    ``[memory] hbm_gbps`` states (:func:`device_dram_rate`, every operand), carried as the file's GB/s and clock
    (:attr:`ArrayConfig.dram_rate`) so the words follow a later element size, and the note the cycle engine says of
    it, naming ``flag`` (its DRAM words/cycle, as the caller spells it) that overrides it; ``array`` and None where the
    file states no such rate. Callers run it only under the cycle engine with ``flag`` not given: the flag wins, the
    analytic engine reads no bandwidth."""
    rate = None if config is None else device_dram_rate(config, element_bytes)
    if rate is None:
        return array, None
    words, hbm, ghz = rate
    return replace(array, element_bytes=element_bytes, read_bandwidth=None, dram_rate=(hbm, ghz)), (
        f"{config if name is None else name}: the cycle engine ran at {words} words/cycle per operand buffer, "
        f"[memory] hbm_gbps = {hbm:g} GB/s in {element_bytes}-byte words at the file's {ghz:g} GHz "
        f"({words * element_bytes * ghz:g} GB/s; {PER_BUFFER}); {setting(flag, placeholder='WORDS')} overrides it")


# Why each operand buffer reads at the chip's whole GB/s (device_dram_rate's rule), as the notes say it.
PER_BUFFER = "each of ifmap, filter and ofmap at the chip's whole rate, as SCALE-Sim's Bandwidth is per buffer"


def sweep_rate_note(name: str, rate: tuple[float, float], widths: Sequence[int]) -> str:
    """What a sweep's cycle engine says, run without a spec's ``bandwidths``, of the device ``.cfg`` ``name`` (as the
    spec names it) whose ``[memory] hbm_gbps`` set its DRAM rate, ``rate`` (GB/s, GHz: :attr:`ArrayConfig.dram_rate`):
    the words/cycle in each of the sweep's element sizes ``widths`` (bytes), as :func:`with_device_bandwidth` says it
    for one."""
    hbm, ghz = rate
    said = [(width, dram_words(hbm, ghz, width)) for width in dict.fromkeys(widths)]
    words = " and ".join(f"{count}{' words/cycle per operand buffer' if i == 0 else ''} in {width}-byte words "
                         f"({count * width * ghz:g} GB/s)" for i, (width, count) in enumerate(said))
    return (f"{name}: the cycle engine ran at {words}, [memory] hbm_gbps = {hbm:g} GB/s at the file's {ghz:g} GHz "
            f"({PER_BUFFER}); a spec's bandwidths = [WORDS] overrides it")


def hbm_unread_note(config: str | Path, element_bytes: int, flag: str = "bandwidth", *,
                    spec_key: bool = False, name: str | None = None) -> str | None:
    """What a sweep's cycle engine says, run without ``flag`` (its DRAM words/cycle, named as the caller spells it),
    of a device ``.cfg`` that states ``[memory] hbm_gbps`` but no SCALE-Sim ``Bandwidth`` on an array that does not
    carry that rate (a :class:`~archsim.sweep.spec.SweepSpec` built by hand from the file's array: a spec file read
    by :func:`~archsim.sweep.spec.load_spec` runs at the file's rate): it ran at the array's words/cycle, SCALE-Sim's
    default; the flag's value nearest the file's GB/s (:func:`device_dram_rate`) is named. None where the file states
    no such rate. ``spec_key``: ``flag`` is a sweep spec's list key, named as ``bandwidths = [N]``; ``name``: the file
    as the user named it (default ``config``)."""
    rate = device_dram_rate(config, element_bytes)
    if rate is None:
        return None
    (words, hbm, ghz), default = rate, ArrayConfig().bandwidth[0]
    named = f"{flag} = [{words}]" if spec_key else setting(flag, words)
    return (f"{config if name is None else name} states [memory] hbm_gbps = {hbm:g} GB/s, which the spec's array does not "
            f"carry (a spec read from its file does, as cost --config reads it): it ran at {default} words/cycle per operand, SCALE-Sim's default ({default * element_bytes * ghz:g} "
            f"GB/s of {element_bytes}-byte words at {ghz:g} GHz); {named} is {words * element_bytes * ghz:g} GB/s")
