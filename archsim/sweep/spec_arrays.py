"""A sweep spec's ``arrays`` entries: a ``ROWSxCOLS`` shape, or a SCALE-Sim ``.cfg`` read by ``archsim cost
--config``'s reader, with the design axes such a file forbids (:func:`check_cfg_axes`). Split from
:mod:`archsim.sweep.spec`, which reads the rest of the spec."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from archsim.array.config import ArrayConfig, parse_array_shape
from archsim.errors import InputError
from archsim.validate import read_text, resolve_name, shown, spec_folder_file

if TYPE_CHECKING:
    from archsim.sweep.spec import SweepSpec


@dataclass(frozen=True)
class ArrayFile:
    """A spec's array read from a SCALE-Sim ``.cfg`` (``path``: absolute, inside the spec's folder) by the
    reader ``archsim cost --config`` uses: its shape, dataflow (unless the spec gives ``dataflows``), SRAMs,
    DRAM bandwidths and clock, so a unit costs what ``cost --config`` costs. A design sweep varies only what
    the file leaves unset (:data:`CFG_AXES`)."""

    path: str
    array: ArrayConfig
    sets: tuple[str, ...] = ()  # the design axes (spec keys) whose values the file states: refused beside it
    # its [energy] section, read as archsim energy --config reads it: the table it names (None: the spec's) and
    # its per-event figures (name, pJ), which price the file's rows
    energy_table: str | None = None
    energy_figures: tuple[tuple[str, float], ...] = ()
    # its [macs_per_pe] (dtype, MACs per PE per cycle), read by the TOML's rule: a dtypes axis's rows run at their
    # dtype's rate (:func:`rated`), as ``archsim cost --config FILE --dtype D`` does; empty where it states none
    rates: tuple[tuple[str, float], ...] = ()



def rated(array: ArrayConfig, file: ArrayFile, dtype: str | None) -> ArrayConfig:
    """``array`` (``file``'s, at a design's width) timed at ``dtype``'s MACs per PE per cycle where ``file`` states
    one (:attr:`ArrayConfig.mac_rate`, the rule of :mod:`archsim.array.mac_rates`); as it is without a dtype (an
    ``element_bytes`` or plain sweep: SCALE-Sim's one MAC per PE per cycle) or a rate for it."""
    from dataclasses import replace

    rate = dict(file.rates).get(dtype, 1.0) if dtype is not None else 1.0
    return array if rate == 1 else replace(array, mac_rate=rate)


def check_fp8_arrays(arrays: list[tuple[int, int] | ArrayFile], tables: tuple[str, ...], file: str) -> None:
    """Refuse an fp8 ``dtypes`` axis where ``archsim cost --dtype fp8`` refuses it, in its one line, before any row
    is written: a device ``.cfg`` stating no fp8 rate (:func:`archsim.array.options.cfg_mac_rate`, naming the
    file), or an energy table (the spec's ``energy_tables``, a .cfg's own ``[energy]`` table and figures) with no
    fp8 MAC figure (:func:`archsim.energy.table.fp8_mac_figure`)."""
    from archsim.array.options import cfg_mac_rate
    from archsim.choices.devices import FP8
    from archsim.energy import load_table
    from archsim.energy.file_energy import cfg_table
    from archsim.energy.table import fp8_mac_figure
    from archsim.sweep.spec_files import spec_named

    for path in (array.path for array in arrays if isinstance(array, ArrayFile)):
        try:
            cfg_mac_rate(path, FP8)
        except InputError as exc:  # the .cfg as the spec names it
            raise InputError(exc.message.replace(path, spec_named(file, path)), file=file, field="dtypes") from None
    try:
        priced = [(cfg_table(a.energy_table), dict(a.energy_figures)) for a in arrays
                  if isinstance(a, ArrayFile) and a.energy_table is not None]
        figures = [dict(a.energy_figures) if isinstance(a, ArrayFile) else {} for a in arrays
                   if not isinstance(a, ArrayFile) or a.energy_table is None]
        priced += [(load_table(t, shipped_only=True), f) for t in tables for f in figures]
        for table, overrides in priced:
            fp8_mac_figure(table, overrides)
    except InputError as exc:
        raise exc.at(file=file, field="dtypes") from None


def at_device_rate(file: ArrayFile) -> ArrayFile:
    """``file`` with its array at the DRAM rate its ``[memory] hbm_gbps`` states (no SCALE-Sim ``Bandwidth``), as
    ``archsim cost --config FILE --engine cycle`` reads it (:func:`archsim.array.device_rate.with_device_bandwidth`): the
    words/cycle of the file's element size, carried as GB/s and clock so a design's element size re-derives them; as
    it is where the file states none. For a cycle-engine spec without ``bandwidths`` (which wins, as ``--bandwidth``)."""
    from dataclasses import replace

    from archsim.array.device_rate import with_device_bandwidth

    array = with_device_bandwidth(file.array, file.path, file.array.element_bytes)[0]
    return file if array is file.array else replace(file, array=array)


ARRAY_SUFFIX = ".cfg"  # an arrays entry naming a SCALE-Sim config file, not a ROWSxCOLS shape


def resolve_array_file(name: str, spec_dir: Path, file: str) -> Path:
    """A spec's ``.cfg`` array entry as the file inside the spec's folder it names (as a network file's:
    an absolute path, ``..`` or a symlink out of the folder refused), or an error naming ``arrays``."""
    try:
        return spec_folder_file(resolve_name(spec_dir, name, "", "array file", field="arrays"), name, "array file")
    except InputError as exc:
        raise exc.at(file=file, field="arrays") from None


def read_array(text: str, spec_dir: Path, file: str) -> tuple[int, int] | ArrayFile:
    """One ``arrays`` entry: ``"ROWSxCOLS"``, or a ``.cfg`` path read by ``archsim cost --config``'s reader
    (:func:`archsim.array.options.array_from_flags`), whose errors name the .cfg's line and key."""
    if not text.lower().endswith(ARRAY_SUFFIX):
        try:
            return parse_array_shape(text, files="a SCALE-Sim .cfg file is named with its .cfg suffix")
        except InputError as exc:
            raise exc.at(file=file, field="arrays") from None
    from archsim.array.options import array_from_flags
    from archsim.energy.file_energy import read_cfg_energy

    path = resolve_array_file(text, spec_dir, file)
    array = array_from_flags(config=path)
    energy = read_cfg_energy(path)
    if energy.table is not None:  # a shipped name or a file beside the .cfg: checked before anything is written
        from archsim.energy.file_energy import cfg_table

        cfg_table(energy.table)
    return ArrayFile(str(path), array, _axes_set(path, array), energy.table, tuple(sorted(energy.overrides.items())),
                     _cfg_rates(path))


def _cfg_rates(path: Path) -> tuple[tuple[str, float], ...]:
    """A (read and checked) .cfg's ``[macs_per_pe]`` as (dtype, rate) pairs in its order; () where it has none."""
    from archsim.array.cfg_lines import cfg_parser
    from archsim.array.mac_rates import CFG_SECTION, cfg_rates

    parser = cfg_parser(read_text(path, "config file", encoding="utf-8-sig"), str(path))
    return tuple(cfg_rates(dict(parser[CFG_SECTION]) if parser.has_section(CFG_SECTION) else None, str(path)).items())


# A design axis that would override what a .cfg states: (what it sweeps, the .cfg keys it would override).
CFG_AXES = {"sram_kb": ("SRAM size", "IfmapSramSzkB, FilterSramSzkB and OfmapSramSzkB"),
            "bandwidths": ("DRAM bandwidth", "Bandwidth"), "clocks_ghz": ("clock", "[archsim] ClockGHz"),
            "energy_tables": ("energy table", "[energy] table")}


def _axes_set(path: Path, array: ArrayConfig) -> tuple[str, ...]:
    """The design axes whose values a (read and checked) .cfg states: its SRAMs always (SCALE-Sim requires
    them), its DRAM bandwidth where it writes ``Bandwidth`` (else the reader's default 10, no statement, as
    ``--bandwidth`` may set), its clock where it writes ``[archsim] ClockGHz``, its energy table where its
    ``[energy]`` names one."""
    from archsim.array.cfg_lines import cfg_parser, cfg_stated

    text = read_text(path, "config file", encoding="utf-8-sig")
    stated = {"sram_kb": True, "bandwidths": cfg_stated(path).bandwidth, "clocks_ghz": array.clock_hz is not None,
              "energy_tables": cfg_parser(text, str(path)).has_option("energy", "table")}
    return tuple(key for key in CFG_AXES if stated[key])


def check_cfg_axes(table: dict, texts: tuple[str, ...], arrays: list[tuple[int, int] | ArrayFile], file: str) -> None:
    """Refuse a design axis that would override a value a spec's .cfg array states (its SRAMs, bandwidth or
    clock would be silently replaced, so its rows would not be the file's chip), naming the axis, its key
    and the file; an axis the file leaves unset (element size, micro-batches, energy table, a bandwidth or
    clock it does not write) runs."""
    for key, (what, cfg_keys) in CFG_AXES.items():
        for text, array in zip(texts, arrays):
            if key in table and isinstance(array, ArrayFile) and key in array.sets:
                raise InputError(f"the {what} axis ({key}) would override {cfg_keys} of the .cfg array {shown(text)}: "
                                 f"a design sweep keeps a .cfg's own values; sweep {key} on a ROWSxCOLS array, or "
                                 f"name one .cfg per {what}", file=file, field=key)


def array_file_notes(spec: SweepSpec) -> tuple[str, ...]:
    """What ``archsim sweep`` says on stderr and :func:`archsim.api.run_sweep` warns as UserWarnings of a spec's
    ``.cfg`` arrays, once per file: a device of several arrays is swept as one array, as ``archsim cost --config``
    costs it and says (:func:`archsim.array.device_notes.device_arrays_note`); its array count and static power,
    which price nothing in a design sweep's energy and area: one array a processor
    (:func:`~archsim.array.device_notes.sweep_unused_device_note`, the sweep's numbers as they are); keys an array
    device does not read (:func:`archsim.devices.unread_keys.config_unread_keys_note`); and on the cycle engine without
    ``bandwidths``, the DRAM rate its ``[memory] hbm_gbps`` set in each of the spec's element sizes
    (:func:`archsim.array.device_rate.sweep_rate_note`), or, on an array that does not carry that rate (a spec built by
    hand), that it ran at SCALE-Sim's default (:func:`archsim.array.device_rate.hbm_unread_note`, in words of the spec's
    first element size), or that a file stating no clock had its GB/s not applied
    (:func:`archsim.array.device_rate.unclocked_hbm_note`). Each file is named as the spec names it
    (:func:`.spec_files.spec_named`)."""
    from archsim.array.device_notes import device_arrays_note, sweep_unused_device_note
    from archsim.devices.unread_keys import config_unread_keys_note
    from archsim.sweep.spec_files import spec_named

    files = {array.path: array.array for array in spec.arrays if isinstance(array, ArrayFile)}
    unread = spec.engine == "cycle" and not spec.bandwidths_given
    rates_read = any(design.dtype for design in spec.designs)  # a dtypes axis: its rows at the file's rates (rated)
    return tuple(note for path, array in files.items() for name in (spec_named(spec.source, path),) for note in (
        device_arrays_note(path, name=name), sweep_unused_device_note(path, name=name) if spec.designs else None,
        config_unread_keys_note(path, name=name, rates_read=rates_read),
        _rate_note(spec, path, array, name) if unread else None) if note)


def _rate_note(spec: SweepSpec, path: str, array: ArrayConfig, name: str) -> str | None:
    """The cycle engine's note of a ``.cfg`` array's DRAM rate in a spec without ``bandwidths``
    (:func:`array_file_notes`): the file's hbm_gbps in each design's words where the array carries it, else (a
    hand-built spec's array at SCALE-Sim's default words) that the file's GB/s was not read."""
    from archsim.array.device_rate import hbm_unread_note, sweep_rate_note, unclocked_hbm_note

    widths = [design.element_bytes for design in spec.designs] or [array.element_bytes]
    if array.dram_rate is not None:
        return sweep_rate_note(name, array.dram_rate, widths)
    if array.user_bandwidth or array.read_bandwidth is not None or array.bandwidth != ArrayConfig().bandwidth:
        return None  # words of its own: no default to speak of
    return (hbm_unread_note(path, widths[0], "bandwidths", spec_key=True, name=name)
            or unclocked_hbm_note(path, "bandwidths", spec_key=True, name=name))  # GB/s with no clock to read it at


def array_spec_warnings(spec: SweepSpec) -> tuple[str, ...]:
    """What ``archsim sweep`` warns on stderr and :func:`archsim.api.run_sweep` as UserWarnings of a spec's arrays
    of implausibly many PEs and ``sram_kb`` values that look like bytes, once each: the lines ``archsim cost``
    warns of ``--array`` (or ``--config``) and ``--sram-kb`` (:func:`archsim.array.options.array_size_warning`,
    :func:`archsim.array.sram_sizes.sram_in_bytes`: the three buffers together), naming the spec's entries."""
    from archsim.array.options import array_size_warning
    from archsim.array.sram_sizes import sram_in_bytes
    from archsim.sweep.spec_files import spec_named

    lines = []
    for array in dict.fromkeys(spec.arrays):
        if isinstance(array, ArrayFile):
            lines.append(array_size_warning(array.array.rows, array.array.cols,
                                            f"{spec_named(spec.source, array.path)}: ArrayHeight and ArrayWidth"))
        else:
            lines.append(array_size_warning(*array, f"{spec.source}: arrays '{array[0]}x{array[1]}'"))
    for kib in dict.fromkeys(design.sram_kb for design in spec.designs):
        lines.append(sram_in_bytes(f"{spec.source}: sram_kb = {kib}: {3 * kib} KiB of SRAM beside the array (ifmap, "
                                   "filter and ofmap together)", 3 * kib, f"sram_kb = {max(round(kib / 1024), 1)}"))
    return tuple(line for line in lines if line)
