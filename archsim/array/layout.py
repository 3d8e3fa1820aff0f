"""SCALE-Sim 3.0.0's custom SRAM layouts and bank conflicts, for the cycle engine.

With ``[layout] IfmapCustomLayout`` / ``FilterCustomLayout`` on (USER bandwidth mode), SCALE-Sim
(``operand_matrix.get_*_prefetch_matrix_custom_layout``, ``read_buffer``) changes three things:

* **Prefetch order.** The operand is prefetched in the layout file's order instead of the fold
  order: the tensor (ifmap H×W×C; filter K×C×R×S, K the filters) is padded so each dimension
  divides its *intraline factor*, every dimension split into (tiles, factor), and the split axes
  read in the file's interline-then-intraline axis order (numpy ``transpose`` semantics: position
  i of the order names the source axis, 0…d−1 the tile axes, d…2d−1 the factor axes).
* **Lines.** An SRAM line holds exactly one bank-bandwidth of words (``…SRAMBankBandwidth``, not
  ⌈S/100⌉), filled with the layout's non-pad words in order.
* **Bank conflicts.** For every demand row, a word's bank is its *column* in its line divided by
  bandwidth/banks; the row costs ⌈(most distinct lines one bank serves)/ports⌉ − 1 extra cycles.
  SCALE-Sim's column is ``list(line_set).index(word)``: the word's place in the iteration order of
  the Python ``set`` holding the line, not its place in the layout. The words are numbers (numpy
  floats of integer value), whose hashes are their values and are never randomized, so that order
  is deterministic — the same under every ``PYTHONHASHSEED`` — but it is CPython's hash-table order:
  it depends on the address values (``FilterOffset`` included) and on the interpreter's set.
  :data:`BANK_RULES`: ``"set"`` reproduces it (by building the same sets in the same order);
  ``"line"`` is the interleaved mapping SCALE-Sim's comment describes (column = place in the line).

Quirks kept because SCALE-Sim has them: only the layout file's *first* row is used, for every layer
(the getters are called with their default layer id 0); the custom ifmap order carries no
``IfmapOffset`` (so a non-zero offset never hits — refused); a line's last field is dropped
(SCALE-Sim's ``split(',')[:-1]``: rows end with a comma); a ``DP`` row is repeated per channel with
its sixth field (the channel factor) set to 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from archsim.csv_lines import csv_rows
from archsim.errors import InputError
from archsim.validate import INT32_MAX, read_text, shown
from archsim.value_parsers import parse_int, parse_integer_cell

BANK_RULES = ("set", "line")
MAX_PADDED_WORDS = 2**30  # an operand padded to its intraline factors, in words
IFMAP_FIELDS = 13  # name, 6 factors, 3 intraline, 3 interline
FILTER_FIELDS = 21  # … 4 filter intraline, 4 filter interline


@dataclass(frozen=True)
class LayoutRow:
    """One row of a SCALE-Sim layout file (``layout_utils.layouts``): intraline factors and axis orders.

    ifmap_factors: (H, W, C); filter_factors: (K filters, C, R, S) — C is shared, as in SCALE-Sim.
    ifmap_order / filter_order: interline then intraline axis order (6 / 8 entries); empty when the
    row is too short to give it (SCALE-Sim can then only lay out the other operand)."""

    name: str
    ifmap_factors: tuple[int, int, int]
    filter_factors: tuple[int, int, int, int]
    ifmap_order: tuple[int, ...]
    filter_order: tuple[int, ...]


def parse_row(fields: list[str], *, file: str | None = None, line: int | None = None) -> LayoutRow:
    """A layout row from its fields (the name first, SCALE-Sim's dropped last field already gone)."""
    values = []
    for number, raw in enumerate(fields[1:], start=2):
        try:
            values.append(parse_integer_cell(raw, low=-INT32_MAX, what="an integer"))
        except ValueError:
            raise InputError(f"column {number} must be an integer, got {shown(raw.strip())}", file=file,
                             line=line) from None
    if len(fields) < IFMAP_FIELDS:
        raise InputError(f"a layout row needs at least {IFMAP_FIELDS} fields before its final comma "
                         f"(name, 6 factors, 6 ifmap orders), got {len(fields)}", file=file, line=line)
    if any(v < 1 for v in values[:6]):
        raise InputError("intraline factors must be positive", file=file, line=line)
    h, w, fh, fw, c, k = values[:6]
    ifmap_order = tuple(values[9:12] + values[6:9])  # SCALE-Sim: interline, then intraline
    filter_order = tuple(values[16:20] + values[12:16]) if len(fields) >= FILTER_FIELDS else ()
    return LayoutRow(fields[0].strip(), (h, w, c), (k, c, fh, fw), ifmap_order, filter_order)


def read_layout_file(path: str | Path) -> LayoutRow:
    """The row SCALE-Sim uses from a layout file (``layouts.load_arrays``): its first data row."""
    file = str(path)
    text = read_text(path, "layout file")
    for number, row in csv_rows(text, file)[1:]:  # the first row: the header
        if not any(f.strip() for f in row):
            continue
        fields = row[:-1]  # SCALE-Sim drops the field after the last comma
        if fields and "DP" in fields[0]:
            try:
                channels = parse_integer_cell(fields[5] if len(fields) >= 6 else "", low=0, what="a count")
            except ValueError:
                raise InputError("a DP row needs its channel count in column 6", file=file, line=number) from None
            if channels == 0:
                continue  # SCALE-Sim adds no row for zero channels
            fields = fields[:5] + ["1"] + fields[6:]
            fields[0] = fields[0].strip() + "Channel_0"
        return parse_row(fields, file=file, line=number)
    raise InputError("no layout rows after the header", file=file)


def layout_order(dims: tuple[int, ...], factors: tuple[int, ...], order: tuple[int, ...], offset: int = 0,
                 what: str = "layout") -> tuple[np.ndarray, int]:
    """(addresses in prefetch order without pads, padded length) of a tensor of ``dims`` numbered in
    C order from ``offset``, split by ``factors`` and read in axis ``order`` (see the module docstring)."""
    d = len(dims)
    order = tuple(axis % (2 * d) if -2 * d <= axis < 2 * d else axis for axis in order)  # numpy's negative axes
    if sorted(order) != list(range(2 * d)):
        raise InputError(f"the {what} axis order {list(order)} must be a permutation of 0…{2 * d - 1}",
                         field=f"{what} order")
    tiles = [-(-size // f) for size, f in zip(dims, factors)]
    padded = int(np.prod([t * f for t, f in zip(tiles, factors)], dtype=object))
    if padded > MAX_PADDED_WORDS:
        raise InputError(f"the {what} factors {list(factors)} pad the operand to {padded:,} words "
                         f"(at most {MAX_PADDED_WORDS:,})", field=f"{what} factors")
    data = np.full([t * f for t, f in zip(tiles, factors)], -1, dtype=np.int64)
    data[tuple(slice(0, size) for size in dims)] = np.arange(int(np.prod(dims)), dtype=np.int64).reshape(dims) + offset
    split = data.reshape([x for t, f in zip(tiles, factors) for x in (t, f)])
    source = [2 * i for i in range(d)] + [2 * i + 1 for i in range(d)]  # tiles first, then factors
    flat = split.transpose([source[axis] for axis in order]).reshape(-1)
    return flat[flat != -1], int(flat.size)


def columns(words: np.ndarray, per_line: int, rule: str) -> np.ndarray:
    """Each word's column in its SRAM line of ``per_line`` words (lines cut in order), by ``rule``."""
    if rule == "line":
        return np.arange(words.size, dtype=np.int64) % per_line
    out = np.empty(words.size, dtype=np.int64)
    values = words.tolist()
    for start in range(0, len(values), per_line):
        line = values[start:start + per_line]
        place = {word: i for i, word in enumerate(set(line))}  # CPython's iteration order, as SCALE-Sim's list(set)
        out[start:start + len(line)] = [place[word] for word in line]
    return out


@dataclass(frozen=True)
class Banks:
    """One read SRAM's banks and ports per bank (its bandwidth, words/cycle, is the operand's DRAM
    read bandwidth: SCALE-Sim's ``…SRAMBankBandwidth`` is both)."""

    banks: int
    ports: int

    def __post_init__(self) -> None:
        for name in ("banks", "ports"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= INT32_MAX:
                raise InputError(f"must be a positive integer, got {value!r}", field=name)


@dataclass(frozen=True)
class GemmLayout:
    """Custom layouts of a GEMM's operands as SCALE-Sim's GEMM mode runs them (ifmap M×K as an
    M×K×1 map, filter N×1×1×K): the row, which operands use it, each one's banking, the filter's
    address offset (its words' hashes) and the bank rule."""

    row: LayoutRow
    ifmap: Banks | None = None
    filter: Banks | None = None
    filter_offset: int = 10_000_000
    rule: str = "set"

    def __post_init__(self) -> None:
        if self.rule not in BANK_RULES:
            raise InputError(f"unknown bank rule {self.rule!r}; choose one of {', '.join(BANK_RULES)}",
                             field="bank rule")


def _check(row: LayoutRow, layout: GemmLayout, bandwidths: tuple[int, int]) -> None:
    """SCALE-Sim's asserts on factors and banks, as one line each."""
    for banks, bandwidth, name in zip((layout.ifmap, layout.filter), bandwidths, ("Ifmap", "Filter")):
        if banks is not None and bandwidth % banks.banks:
            raise InputError(f"{banks.banks} banks do not divide the {bandwidth} words/cycle of "
                             f"{name}SRAMBankBandwidth (SCALE-Sim asserts it)", field=f"{name}SRAMBankNum")
    if layout.ifmap is not None and int(np.prod(row.ifmap_factors)) > bandwidths[0]:
        raise InputError(f"ifmap intraline factors {row.ifmap_factors} hold more than the "
                         f"{bandwidths[0]} words of IfmapSRAMBankBandwidth (SCALE-Sim asserts ≤)",
                         field="IfmapSRAMBankBandwidth")
    if layout.filter is not None:
        if not row.filter_order:
            raise InputError(f"a filter layout needs {FILTER_FIELDS} fields before the row's final comma",
                             field="FilterCustomLayout")
        if int(np.prod(row.filter_factors)) != bandwidths[1]:
            raise InputError(f"filter intraline factors {row.filter_factors} must multiply to the "
                             f"{bandwidths[1]} words of FilterSRAMBankBandwidth (SCALE-Sim asserts =)",
                             field="FilterSRAMBankBandwidth")


def gemm_tables(m: int, k: int, n: int, layout: GemmLayout,
                bandwidths: tuple[int, int]) -> list[tuple[np.ndarray, np.ndarray, int] | None]:
    """For A (index i·K + j) and B (index i·N + j), read at ``bandwidths`` (ifmap, filter) words/cycle:
    (line of each word, bank of each word, padded prefetch length), or None where that operand keeps
    SCALE-Sim's default layout."""
    row = layout.row
    _check(row, layout, bandwidths)
    out: list[tuple[np.ndarray, np.ndarray, int] | None] = [None, None]
    if layout.ifmap is not None:
        words, padded = layout_order((m, k, 1), row.ifmap_factors, row.ifmap_order, what="ifmap")
        out[0] = _tables(words, words, m * k, bandwidths[0], layout.ifmap.banks, layout.rule, padded)
    if layout.filter is not None:
        words, padded = layout_order((n, 1, 1, k), row.filter_factors, row.filter_order, layout.filter_offset,
                                     what="filter")
        plain = words - layout.filter_offset  # = j·K + i for filter j, tap i: B's index is i·N + j
        out[1] = _tables(words, (plain % k) * n + plain // k, k * n, bandwidths[1], layout.filter.banks, layout.rule,
                         padded)
    return out


def _tables(words: np.ndarray, index: np.ndarray, size: int, bandwidth: int, banks: int, rule: str,
            padded: int) -> tuple[np.ndarray, np.ndarray, int]:
    line = np.empty(size, dtype=np.int64)
    bank = np.empty(size, dtype=np.int64)
    line[index] = np.arange(words.size, dtype=np.int64) // bandwidth
    bank[index] = columns(words, bandwidth, rule) // (bandwidth // banks)
    return line, bank, padded


_ON, _OFF = ("1", "yes", "true", "on"), ("0", "no", "false", "off")  # configparser's getboolean words


def layout_from_cfg(cfg_path: str | Path, layout_path: str | Path | None, rule: str = "set") -> GemmLayout | None:
    """The custom layouts a SCALE-Sim ``.cfg`` switches on, with the layout file (SCALE-Sim's ``-l``):
    which operands, their banks and ports, the filter offset; None when both are off (then a layout
    file changes nothing, and giving one is refused so that it is not taken for having an effect)."""
    from archsim.array.cfg_lines import cfg_parser

    file = str(cfg_path)
    text = read_text(cfg_path, "config file", encoding="utf-8-sig")
    parser = cfg_parser(text, file)

    def get(section: str, key: str, default: str) -> str:
        return parser.get(section, key, fallback=default).strip()

    def number(section: str, key: str, default: str, low: int = 1) -> int:
        raw = get(section, key, default)
        try:
            return parse_int(raw, low=low, what="an integer")
        except ValueError:
            raise InputError(f"must be an integer ≥ {low}, got {shown(raw)}", file=file, field=key) from None

    banks: list[Banks | None] = []
    for name in ("Ifmap", "Filter"):
        flag = get("layout", f"{name}CustomLayout", "False").lower()
        if flag not in _ON + _OFF:
            raise InputError(f"expected True or False, got {flag!r}", file=file, field=f"{name}CustomLayout")
        on = flag in _ON
        banks.append(Banks(number("layout", f"{name}SRAMBankNum", "1"), number("layout", f"{name}SRAMBankPort", "2"))
                     if on else None)
    if banks == [None, None]:
        if layout_path is not None:
            raise InputError("a layout file changes nothing here: IfmapCustomLayout and FilterCustomLayout are off",
                             file=file, field="layout")
        return None
    if layout_path is None:
        raise InputError("a custom layout is on: give its layout file (--layout, SCALE-Sim's -l)", file=file,
                         field="IfmapCustomLayout" if banks[0] else "FilterCustomLayout")
    if get("run_presets", "InterfaceBandwidth", "CALC").upper() != "USER":
        raise InputError("custom layouts act only in USER bandwidth mode (SCALE-Sim lays out nothing in CALC)",
                         file=file, field="InterfaceBandwidth")
    if banks[0] is not None and number("architecture_presets", "IfmapOffset", "0", low=0) != 0:
        raise InputError("SCALE-Sim's custom ifmap layout has no IfmapOffset, so its reads would never hit "
                         "(it loops for ever); set IfmapOffset to 0", file=file, field="IfmapOffset")
    return GemmLayout(read_layout_file(layout_path), banks[0], banks[1],
                      number("architecture_presets", "FilterOffset", "10000000", low=0), rule)
