"""Per-access energy tables: read a documented table file, resolve it for one array.

A table (``configs/energy/*.toml``, shipped as ``archsim.configs``) gives per-operation energies
and areas with their published sources. :func:`access_energies` turns it into the flat per-event
figures one :class:`~archsim.array.config.ArrayConfig` costs with — MAC and register energy at its
element width, SRAM access energy at each operand's capacity — and a ``.cfg``'s ``[energy]``
section (or a device TOML's) can override any of those figures by name
(:func:`archsim.energy.file_energy.read_cfg_energy`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from archsim.array.config import ArrayConfig
from archsim.errors import InputError
from archsim.toml_errors import located, parse_toml
from archsim.validate import (
    MAX_FIGURE,
    check_name,
    is_file,
    read_text,
    resolve_name,
    shipped_configs,
    shown,
)
from archsim.value_parsers import parse_float, parse_int

DEFAULT_TABLE = "horowitz45"


def _energy_dir():
    """``configs/energy/``, where the shipped tables are."""
    return shipped_configs("energy")


@dataclass(frozen=True)
class EnergyTable:
    """One table file's figures (pJ, µm², mW), keyed by element bytes where they depend on width."""

    name: str
    source: str
    mac_pj: dict[int, float]
    mac_um2: dict[int, float]
    vector_pj: dict[int, float]
    register_pj_per_bit: float
    register_um2_per_bit: float
    registers_per_pe: int
    sram_access_bits: int
    sram_capacity_kib: tuple[float, ...]
    sram_read_pj: tuple[float, ...]
    sram_write_factor: float
    sram_cell_um2: float
    sram_area_efficiency: float
    dram_pj_per_bit: float
    pe_leakage_mw: float
    sram_leakage_mw_per_kib: float
    fused: tuple[float, ...]  # [fused] by FUSED_KEYS: a fused kernel's FP32 lane op, exp, int ops (pJ; lane ops)

    def sram_access_pj(self, capacity_kib: float) -> float:
        """Energy (pJ) of one ``sram_access_bits`` read of an SRAM of ``capacity_kib``: log-log
        interpolation between the table's points, extrapolated along the end segments."""
        xs = [math.log(x) for x in self.sram_capacity_kib]
        ys = [math.log(y) for y in self.sram_read_pj]
        x = math.log(capacity_kib)
        if len(xs) == 1:
            return self.sram_read_pj[0] * math.sqrt(capacity_kib / self.sram_capacity_kib[0])
        segment = 0
        while segment < len(xs) - 2 and x > xs[segment + 1]:
            segment += 1
        x0, x1, y0, y1 = xs[segment], xs[segment + 1], ys[segment], ys[segment + 1]
        return math.exp(y0 + (y1 - y0) * (x - x0) / (x1 - x0))

    def at_width(self, element_bytes: int, what: str) -> tuple[float, float, float]:
        """(MAC pJ, MAC µm², vector pJ) at ``element_bytes``; an error names the missing width."""
        if element_bytes not in self.mac_pj or element_bytes not in self.vector_pj:
            widths = ", ".join(str(w) for w in sorted(self.mac_pj))
            raise InputError(f"energy table {self.name!r} has no {element_bytes}-byte figures (it has {widths}); "
                             f"needed for {what}", field="element_bytes")
        return self.mac_pj[element_bytes], self.mac_um2[element_bytes], self.vector_pj[element_bytes]


@dataclass(frozen=True)
class AccessEnergies:
    """Energy per event for one array (pJ per word of its element size; leakage in mW).

    ``ifmap/filter/ofmap`` name the SRAM operands as SCALE-Sim does (A, B and out of the GEMM).
    """

    table: str
    mac_pj: float
    vector_pj: float
    register_pj: float  # an operand word's move through a PE register, at the element width
    psum_register_pj: float  # a partial sum's, at the accumulator's width (:func:`accumulator_bits`)
    ifmap_read_pj: float
    filter_read_pj: float
    ofmap_read_pj: float
    ifmap_write_pj: float
    filter_write_pj: float
    ofmap_write_pj: float
    dram_read_pj: float
    dram_write_pj: float
    pe_leakage_mw: float
    sram_leakage_mw_per_kib: float
    lane_pj: float  # a fused kernel's FP32 lane operation, exponential, 32-bit integer instruction and integer
    exp_pj: float  # multiply: pJ each at every dtype (the table's [fused], :data:`FUSED_KEYS`)
    int_pj: float
    int_mult_pj: float


OVERRIDABLE = tuple(f.name for f in fields(AccessEnergies) if f.name != "table")
LEAKAGE_FIGURES = ("pe_leakage_mw", "sram_leakage_mw_per_kib")  # mW, of OVERRIDABLE: what train and search refuse


def figure_number(value: object, where: str, file: str) -> float:
    """A table figure (pJ, µm², mW, KiB): a finite number, 0 or at least 10⁻¹² (no subnormals), non-negative, and at
    most :data:`~archsim.validate.MAX_FIGURE`, so that a count below 2⁵³ times it stays a finite energy."""
    try:
        return parse_float(value, high=MAX_FIGURE, what="a non-negative number")
    except ValueError as exc:
        raise InputError(str(exc), file=file, field=where) from None


def _table_figure(value: object, where: str, file: str) -> float:
    """A table file's figure (:func:`figure_number`), refused in quotes: TOML types its numbers, and a device file's
    ``[energy]`` refuses ``"2.0"`` too, so the one format does not take what the other refuses."""
    if isinstance(value, str):
        raise InputError(f"expected a number without quotes, got {shown(value, 20)}", file=file, field=where)
    return figure_number(value, where, file)


def _known(section: object, keys: set[str], file: str, where: str) -> None:
    """Refuse a key the table layout does not have (a typo would otherwise be silently ignored)."""
    if isinstance(section, dict):
        unknown = sorted(set(section) - keys)
        if unknown:
            field = f"{where}.{unknown[0]}" if where else unknown[0]
            raise InputError(f"unknown key; expected one of {', '.join(sorted(keys))}", file=file, field=field)


FUSED_KEYS = ("lane_pj", "exp_lane_ops", "int_pj", "int_mult_pj")  # [fused], each optional (:func:`_fused`)
LAYOUT = {"": {"name", "node_nm", "source", "mac", "vector", "register", "sram", "dram", "leakage", "fused"},
          "register": {"pj_per_bit", "um2_per_bit", "per_pe"},
          "sram": {"access_bits", "capacity_kib", "read_pj", "write_factor", "cell_um2", "area_efficiency"},
          "dram": {"pj_per_bit"}, "leakage": {"pe_mw", "sram_mw_per_kib"}, "fused": set(FUSED_KEYS)}


def _widths(section: object, key: str, file: str) -> dict[int, float]:
    if not isinstance(section, dict) or not section:
        raise InputError("expected a table keyed by element bytes", file=file, field=key)
    out = {}
    for width, value in section.items():
        try:
            bytes_ = parse_int(width, low=1, high=64, what="element bytes")
        except ValueError as exc:
            raise InputError(f"{exc} as a key", file=file, field=f"{key}.{shown(width, 20)}") from None
        out[bytes_] = _table_figure(value, f"{key}.{width}", file)  # its own error: the figure's, at its line
    return out


def _count(value: object, where: str, file: str) -> int:
    if isinstance(value, str):
        raise InputError(f"expected an integer without quotes, got {shown(value, 20)}", file=file, field=where)
    try:
        return parse_int(value, low=0, what="a non-negative integer")
    except ValueError as exc:
        raise InputError(str(exc), file=file, field=where) from None


def _access_bits(value: object, file: str) -> int:
    """``[sram] access_bits``: bits one read moves, a whole number >= 1 (a word of w bits costs w / access_bits of a
    read); until 2026-12-05 a 0 was read as 64 without a word."""
    bits = _count(value, "sram.access_bits", file)
    if bits < 1:
        raise InputError(f"expected the bits one SRAM read moves, a whole number >= 1 (horowitz45: 64), got {bits}",
                         file=file, field="sram.access_bits")
    return bits


def _area_efficiency(value: object, file: str) -> float:
    """``[sram] area_efficiency``: the share of a macro its cells take, in (0, 1] (an SRAM's area is its cells' ÷ it);
    until 2026-12-05 a 0 was read as 1 and a figure above 1 (``7`` for 0.7) shrank the SRAM below its own cells."""
    share = _table_figure(value, "sram.area_efficiency", file)
    if not 0 < share <= 1:
        raise InputError(f"expected the cells' share of an SRAM macro, in (0, 1] (horowitz45: 0.7), got {share:g}",
                         file=file, field="sram.area_efficiency")
    return share


def _node_nm(data: dict, file: str) -> None:
    """``node_nm``, the process node the figures are for, nm: a label that scales nothing (a table for another node
    states that node's figures), checked as a positive number so that a slip (``"7nm"``, ``-7``) is not kept."""
    value = data.get("node_nm", 1)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1e6:
        raise InputError(f"expected the process node in nm, a positive number (a label: no figure is scaled by it), "
                         f"got {shown(value, 20)}", file=file, field="node_nm")


def shipped_table(name: str, *, field: str = "energy-table"):
    """The shipped table file a name (``horowitz45``) stands for, inside ``configs/energy/`` only."""
    shipped = resolve_name(_energy_dir(), name, ".toml", "energy table", field=field)
    if not is_file(shipped):
        raise InputError(f"unknown energy table {shown(name)} (give a shipped name such as {DEFAULT_TABLE} "
                         "or a .toml path)", field=field)
    return shipped


def load_table(name_or_path: str | Path = DEFAULT_TABLE, *, shipped_only: bool = False) -> EnergyTable:
    """A shipped table by name (``horowitz45``) or a ``.toml`` file of the same layout; with
    ``shipped_only`` (a sweep spec's names) a name never reads a file of the working folder."""
    text_path = str(name_or_path)
    if text_path.endswith(".toml") or (not shipped_only and is_file(text_path)):  # a path: the user's choice
        file = text_path
        raw_text = read_text(text_path, "energy table")
    else:  # a name: one of the shipped tables, never a file outside their folder
        raw_text, file = read_text(shipped_table(text_path), "energy table"), f"{text_path}.toml"
    data = parse_toml(raw_text, file)
    with located(data, file):  # a key's error names its line
        return _table(data, file)


def _table(data: dict, file: str) -> EnergyTable:
    """A parsed energy table's figures, checked (:func:`load_table`)."""
    for where, keys in LAYOUT.items():
        _known(data.get(where) if where else data, keys, file, where)
    for key in ("name", "source"):
        if key in data and not isinstance(data[key], str):
            raise InputError(f"expected a string, got {shown(data[key])}", file=file, field=key)
    if "name" in data:
        check_name(data["name"], "name", file=file)
    _node_nm(data, file)
    try:
        mac = data["mac"]
        sram, register, leakage = data["sram"], data["register"], data.get("leakage", {})
        capacity = tuple(_table_figure(x, "sram.capacity_kib", file) for x in sram["capacity_kib"])
        read = tuple(_table_figure(x, "sram.read_pj", file) for x in sram["read_pj"])
        if not capacity or len(capacity) != len(read) or list(capacity) != sorted(set(capacity)) or min(capacity) <= 0 \
                or min(read) <= 0:
            raise InputError("capacity_kib and read_pj need equal lengths, increasing positive capacities and "
                             "positive energies", file=file, field="sram")
        if not isinstance(mac, dict):
            raise InputError("expected a table keyed by element bytes", file=file, field="mac")
        for width, entry in mac.items():
            _known(entry, {"pj", "um2"}, file, f"mac.{width}")
        return EnergyTable(
            name=data.get("name", Path(file).stem), source=data.get("source", ""),
            mac_pj=_widths({w: v["pj"] for w, v in mac.items()}, "mac", file),
            mac_um2=_widths({w: v["um2"] for w, v in mac.items()}, "mac", file),
            vector_pj=_widths(data["vector"], "vector", file),
            register_pj_per_bit=_table_figure(register["pj_per_bit"], "register.pj_per_bit", file),
            register_um2_per_bit=_table_figure(register["um2_per_bit"], "register.um2_per_bit", file),
            registers_per_pe=_count(register["per_pe"], "register.per_pe", file),
            sram_access_bits=_access_bits(sram["access_bits"], file),
            sram_capacity_kib=capacity, sram_read_pj=read,
            sram_write_factor=_table_figure(sram["write_factor"], "sram.write_factor", file),
            sram_cell_um2=_table_figure(sram["cell_um2"], "sram.cell_um2", file),
            sram_area_efficiency=_area_efficiency(sram["area_efficiency"], file),
            dram_pj_per_bit=_table_figure(data["dram"]["pj_per_bit"], "dram.pj_per_bit", file),
            pe_leakage_mw=_table_figure(leakage.get("pe_mw", 0.0), "leakage.pe_mw", file),
            sram_leakage_mw_per_kib=_table_figure(leakage.get("sram_mw_per_kib", 0.0), "leakage.sram_mw_per_kib", file),
            fused=_fused(data.get("fused", {}), file),
        )
    except KeyError as exc:
        raise InputError("missing key", file=file, field=str(exc.args[0]), missing=True) from None
    except (TypeError, AttributeError):
        raise InputError("malformed table (see configs/energy/horowitz45.toml for the layout)", file=file) from None


def _fused(section: dict, file: str) -> tuple[float, ...]:
    """A table's ``[fused]`` figures by :data:`FUSED_KEYS`, each the shipped table's where it leaves one out, so
    tables written before the section price a fused kernel's non-matmul work as the default table does."""
    if not isinstance(section, dict):
        raise InputError("expected a table of figures", file=file, field="fused")
    if set(FUSED_KEYS) <= set(section):
        return tuple(_table_figure(section[key], f"fused.{key}", file) for key in FUSED_KEYS)
    shipped = dict(zip(FUSED_KEYS, load_table(DEFAULT_TABLE).fused, strict=True))  # the shipped table states all
    return tuple(_table_figure(section[key], f"fused.{key}", file) if key in section else shipped[key] for key in FUSED_KEYS)


ACCUMULATOR_BITS = 32  # int8 products accumulate in int32, 16-bit floats' in fp32 (module accumulator_bits)


def accumulator_bits(element_bytes: int) -> int:
    """Bits of a systolic array's partial sums for operands of ``element_bytes``: 32 for 1-, 2- and 4-byte words, the
    width of the accumulating adder the table's MAC already prices (``configs/energy/horowitz45.toml`` ``[mac]``: int8 ×
    int8 + a 32-bit integer add, fp16 × fp16 + a 32-bit FP add, fp32 + fp32; bf16 MXUs likewise sum in fp32), so the
    register a partial sum passes through is as wide as the adder that wrote it; the operand's own where wider."""
    return max(ACCUMULATOR_BITS, 8 * element_bytes)


def access_energies(array: ArrayConfig, table: EnergyTable | None = None,
                    overrides: dict[str, float] | None = None, *, fp8: bool = False) -> AccessEnergies:
    """Per-event energies of ``array`` from ``table`` (default :data:`DEFAULT_TABLE`), then ``overrides``. ``fp8``:
    the array's GEMMs run fp8 (the array commands' ``--dtype fp8``): each MAC at :func:`fp8_mac_pj`, the lookup
    train's fp8 GEMMs take (:func:`fp8_gemm_energies`), the words at the array's width (1 byte); refused in one line
    where the table has no fp8 MAC figure and ``overrides`` states no ``mac_pj``."""
    table = table or load_table()
    mac_pj, _, vector_pj = table.at_width(array.element_bytes, "the energy model")
    if fp8:
        mac_pj = fp8_mac_figure(table, overrides)
    bits = 8 * array.element_bytes

    def sram(kib: int) -> float:
        return table.sram_access_pj(kib) * bits / table.sram_access_bits

    reads = [sram(kb) for kb in (array.ifmap_sram_kb, array.filter_sram_kb, array.ofmap_sram_kb)]
    lane_pj, exp_lane_ops, int_pj, int_mult_pj = table.fused
    energies = AccessEnergies(
        table=table.name, mac_pj=mac_pj, vector_pj=vector_pj, register_pj=table.register_pj_per_bit * bits,
        psum_register_pj=table.register_pj_per_bit * accumulator_bits(array.element_bytes),
        ifmap_read_pj=reads[0], filter_read_pj=reads[1], ofmap_read_pj=reads[2],
        ifmap_write_pj=reads[0] * table.sram_write_factor, filter_write_pj=reads[1] * table.sram_write_factor,
        ofmap_write_pj=reads[2] * table.sram_write_factor,
        dram_read_pj=table.dram_pj_per_bit * bits, dram_write_pj=table.dram_pj_per_bit * bits,
        pe_leakage_mw=table.pe_leakage_mw, sram_leakage_mw_per_kib=table.sram_leakage_mw_per_kib,
        lane_pj=lane_pj, exp_pj=exp_lane_ops * lane_pj, int_pj=int_pj, int_mult_pj=int_mult_pj,  # an exp: its lane ops
    )
    return with_overrides(energies, overrides or {})


OPERAND_FIGURES = ("register_pj", "ifmap_read_pj", "filter_read_pj", "ifmap_write_pj", "filter_write_pj",
                   "dram_read_pj")


def fp8_mac_pj(table: EnergyTable) -> float | None:
    """One fp8 GEMM MAC (pJ): an 8-bit multiply accumulated in fp32, Transformer Engine's GEMM (fp8 operands, an fp32
    accumulator): the table's 1-byte MAC (8-bit multiply + 32-bit integer add) with its accumulating add at fp32 —
    less the 32-bit integer add (``[fused] int_pj``), plus the 32-bit FP add (``[vector] "4"``), each of the default
    table a Horowitz ISSCC 2014 figure: 0.3 − 0.1 + 0.9 = 1.1 pJ. The 8-bit integer multiplier stands for the fp8 one
    (an e4m3 or e5m2 significand product is 4 × 4 or 3 × 3 bits and an exponent add, no more than 8 × 8 bits: an
    upper figure; the source gives no fp8 one). None where the table has no 1-byte MAC or 4-byte vector figure."""
    if 1 not in table.mac_pj or 4 not in table.vector_pj:
        return None
    int_add_pj = table.fused[FUSED_KEYS.index("int_pj")]
    return max(table.mac_pj[1] - int_add_pj, 0.0) + table.vector_pj[4]


def fp8_mac_figure(table: EnergyTable, overrides: Mapping[str, float] | None = None) -> float:
    """An fp8 MAC's pJ for the array commands' ``--dtype fp8``: :func:`fp8_mac_pj` (``overrides``' ``mac_pj``, a
    file's ``[energy]``, replaces it after, as at every width), or InputError naming what the table lacks."""
    mac = fp8_mac_pj(table)
    if mac is None and "mac_pj" not in (overrides or {}):
        raise InputError(f"energy table {table.name!r} has no fp8 MAC figure (an fp8 MAC is its 1-byte MAC with a "
                         "4-byte [vector] add: it needs both); give a table with them, or state mac_pj in the "
                         "file's [energy]", field="dtype")
    return 0.0 if mac is None else mac


def fp8_gemm_energies(energies: AccessEnergies, element_bytes: int, table: EnergyTable,
                      overrides: Mapping[str, float] | None = None) -> AccessEnergies | None:
    """Per-event energies of a GEMM whose operands A and B are fp8 (1 byte) and whose result is ``energies``' word of
    ``element_bytes`` (Transformer Engine writes the higher precision): the operands' register moves, SRAM reads and
    writes and DRAM reads at 8 bits — the word's figure × 1 / ``element_bytes``, the model's own rule (a register,
    SRAM or DRAM word costs its bits: :func:`access_energies`) — and the MAC at :func:`fp8_mac_pj`, unless
    ``overrides`` (a device file's ``[energy]``, pJ) states ``mac_pj``, the chip's own figure then at every width;
    the partial sums' register moves stay at the fp32 accumulator's width (``psum_register_pj``), the result's SRAM
    and DRAM words and the vector unit at ``element_bytes``. None where the table has no fp8 MAC figure
    (:func:`fp8_mac_pj`)."""
    mac = (overrides or {}).get("mac_pj", fp8_mac_pj(table))
    if mac is None:
        return None
    scaled = {name: getattr(energies, name) / element_bytes for name in OPERAND_FIGURES}
    return replace(energies, mac_pj=float(mac), **scaled)


def with_overrides(energies: AccessEnergies, overrides: Mapping[str, float | str],
                   file: str | None = None) -> AccessEnergies:
    """``energies`` with the named figures replaced; an unknown name is an error naming it."""
    for key, value in overrides.items():
        if key not in OVERRIDABLE:
            raise InputError(f"unknown energy figure; choose from {', '.join(OVERRIDABLE)}", file=file, field=key)
        figure_number(value, key, file or "")
    figures: dict[str, Any] = {k: float(v) for k, v in overrides.items()}  # AccessEnergies' float fields
    return replace(energies, **figures)
