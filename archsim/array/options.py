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
from typing import TYPE_CHECKING, Any, cast

from archsim.array.config import ArrayConfig, parse_array_shape, read_scalesim_cfg
from archsim.array.sram_sizes import sram_in_bytes
from archsim.choices.devices import ARRAY_ELEMENT_BYTES, FP8_ARRAY_DTYPES, SCALESIM_DTYPE
from archsim.clock import checked_clock, clock_hz
from archsim.console import setting
from archsim.errors import InputError
from archsim.validate import INT32_MAX, flag_text, shown
from archsim.value_parsers import comma_items, parse_int, whole_number

if TYPE_CHECKING:
    from archsim.count_types import Counts


def array_from_flags(array: str | None = None, config: str | Path | None = None, dataflow: str | None = None,
                     element_bytes: int = 1, dtype: str | None = None) -> ArrayConfig:
    """``--config`` (a SCALE-Sim ``.cfg``) reshaped by ``--array`` when both are given, else
    ``--array`` (``"ROWSxCOLS"``, default 32x32); ``--dataflow`` overrides the file's or the default ws. ``dtype``
    (``--dtype``, where the caller reads the rate): the ``.cfg``'s GEMMs at its ``[macs_per_pe]`` rate of that dtype
    (:func:`cfg_mac_rate`), as a device TOML's ``[compute] macs_per_pe`` (:func:`archsim.device_toml.device_toml_array`)."""
    if config:
        found = reshaped(read_scalesim_cfg(config, element_bytes=element_bytes, dtype_flag=True), array, dataflow)
        rate = cfg_mac_rate(config, dtype)
        return found if rate == 1 else replace(found, mac_rate=rate)
    rows, cols = parse_array_shape(array or "32x32")
    return ArrayConfig(rows=rows, cols=cols, dataflow=dataflow or "ws", element_bytes=element_bytes)


def cfg_mac_rate(config: str | Path, dtype: str | None) -> float:
    """MACs per PE per cycle of a ``dtype`` GEMM on a ``.cfg``'s array: its ``[macs_per_pe]`` figure
    (:func:`archsim.array.mac_rates.cfg_rates`, checked as :func:`read_scalesim_cfg` checked it), 1 where the file
    states none for ``dtype`` or ``dtype`` is None (SCALE-Sim's 1-byte word; ``--dtype int8`` reads int8's rate). fp8 on a ``.cfg``
    device file stating no fp8 rate is refused in one line, as ``train --fp8`` refuses the file (a plain SCALE-Sim
    ``.cfg`` runs it at 1)."""
    from archsim.array.mac_rates import MAC_DTYPES
    from archsim.choices.devices import FP8

    if dtype not in MAC_DTYPES:
        return 1.0
    rates = cfg_rate_table(config)
    if dtype == FP8 and FP8 not in rates:
        from archsim.array.device_notes import device_array_count

        if device_array_count(config) is not None:
            raise InputError(f"{setting('dtype', FP8)} needs the device's fp8 rate, as train --fp8 does: {config} "
                             "states none (add a [macs_per_pe] section, fp8 = N, its arrays' fp8 MACs per PE per "
                             "cycle)", field="dtype")
    return rates.get(str(dtype), 1.0)


def cfg_rate_table(config: str | Path) -> dict[str, float]:
    """A ``.cfg``'s ``[macs_per_pe]`` by dtype (:func:`archsim.array.mac_rates.cfg_rates`, a bad figure refused at its
    line as :func:`read_scalesim_cfg` refuses it); {} where the file states none."""
    from archsim.array.cfg_lines import cfg_located, cfg_parser
    from archsim.array.mac_rates import CFG_SECTION, cfg_rates
    from archsim.validate import read_text

    text = read_text(config, "config file", encoding="utf-8-sig")
    parser = cfg_parser(text, str(config))
    try:
        return cfg_rates(dict(parser[CFG_SECTION]) if parser.has_section(CFG_SECTION) else None, str(config))
    except InputError as exc:
        raise cfg_located(exc, text) from None


def check_rate_dtype(array: ArrayConfig, dtype: str | None, element_bytes: int | None) -> None:
    """Refuse, in one line, costing at ``dtype`` (or re-making at ``element_bytes``) an ``ArrayConfig`` whose MACs per
    PE per cycle are another dtype's (``mac_dtype``: its device file's rate of the dtype it was read at; only the
    file states the new one's), or a rate given by hand that names no dtype at an explicit one. A one-MAC array
    naming no dtype is costed at any, as SCALE-Sim's."""
    width = array.element_bytes if element_bytes is None else element_bytes
    if array.mac_dtype is not None:
        if dtype == array.mac_dtype or (dtype is None and width == array.element_bytes):
            return
        asked, named = (dtype, shown(dtype)) if dtype is not None else (f"{width}-byte words", "…")
        raise InputError(f"this ArrayConfig runs {array.mac_rate:g} MACs per PE per cycle, the rate of "
                         f"{array.mac_dtype} (its mac_dtype, as its device file states it), not of {asked}: give the "
                         f"file as config= with dtype={named} (or archsim.array_config(config=FILE, dtype={named}) for "
                         "an ArrayConfig), which reads that dtype's rate", field="dtype")
    if array.mac_rate != 1 and (dtype is not None or width != array.element_bytes):
        raise InputError(f"this ArrayConfig runs {array.mac_rate:g} MACs per PE per cycle (its mac_rate) and names no "
                         "dtype it is the rate of: give mac_dtype= beside mac_rate, or the device file as config= "
                         "with dtype=, which reads that dtype's rate", field="dtype")


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
    """Bytes per element that ``--dtype`` (a name of :data:`~archsim.choices.devices.FP8_ARRAY_DTYPES`: fp8 is
    1 byte; a caller that cannot price fp8 refuses it first) and ``--element-bytes`` (any width) state, or None when
    neither is given (the array's own, else 1). Both given must agree: a width the other flag contradicts is
    refused, never silently dropped."""
    if dtype is None:
        return element_bytes
    if dtype not in FP8_ARRAY_DTYPES:
        raise InputError(f"expected one of {', '.join(FP8_ARRAY_DTYPES)}, got {shown(dtype)}", field="dtype")
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
                sram_kb: Counts | None = None) -> ArrayConfig:
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


def sram_kb_warning(sram_kb: Counts | None) -> str | None:
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


def _sram_text(sram_kb: Counts) -> str:
    """``--sram-kb``'s value as typed (a sequence written with commas)."""
    return flag_text(sram_kb)


def _sram_sizes(sram_kb: Counts) -> list[int]:
    """The (ifmap, filter, ofmap) KiB ``--sram-kb`` names (InputError naming the flag); a whole float (``64.0``, a
    pandas float column's) is its count, as every count keyword reads one (:func:`~archsim.value_parsers.whole_number`)."""
    given: object = sram_kb
    if isinstance(sram_kb, (list, tuple)) or type(sram_kb).__name__ == "ndarray":  # flag_text's lists
        given = [whole_number(v) for v in cast("Sequence[object]", sram_kb)]
    elif not isinstance(sram_kb, str):
        given = whole_number(sram_kb)
    parts = comma_items(given, "sram-kb")
    try:
        if isinstance(given, bool) or len(parts) not in (1, 3) or not all(p.isdigit() for p in parts):
            raise ValueError(f"expected one or three positive integers, got {shown(given)}")
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
                       sram_kb: Counts | None = None,
                       clock: float | None = None, dtype: str | None = None) -> ArrayConfig:
    """:func:`array_from_flags` (``dtype``: its GEMMs at a ``.cfg``'s rate of it), then :func:`with_memory`, then
    :func:`with_clock` (``clock`` in GHz): the array every array command costs on."""
    return with_clock(with_memory(array_from_flags(array, config, dataflow, element_bytes, dtype), bandwidth, sram_kb),
                      clock)


def calc_mode_note(config: str | Path) -> str | None:
    """What the cycle engine says of a ``--config`` that names SCALE-Sim's CALC bandwidth mode: SCALE-Sim never
    stalls there, the engine simulates the DRAM at ``Bandwidth`` words/cycle all the same (SCALE-Sim's USER mode),
    so its stalls are not what SCALE-Sim would report for that file. None for a USER file or one naming no mode
    (which SCALE-Sim would not read)."""
    from archsim.array.cfg_lines import cfg_stated
    from archsim.array.device_sections import is_device_toml

    if is_device_toml(config) or cfg_stated(config).interface != "CALC":  # read once already: no error here
        return None
    return (f"{config} names InterfaceBandwidth: CALC, where SCALE-Sim never stalls; the cycle engine simulates "
            "its DRAM at the Bandwidth words/cycle all the same (SCALE-Sim's USER mode): set InterfaceBandwidth: "
            "USER to compare stalls with SCALE-Sim, or cost without the cycle engine for CALC's stall-free cycles")
