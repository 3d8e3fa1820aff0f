"""Topology CSV → :class:`Network`: validator and factory in one pass, errors located.

The format is a superset of SCALE-Sim's topology CSV. The first eight columns are positional,
exactly as SCALE-Sim reads them::

    Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,

(a trailing comma is tolerated, as in SCALE-Sim's files; a header naming another column in one of these
slots is refused, as it would shift every value after it). Optional named columns may follow, in
any order: ``Padding`` (default 0), ``Type`` (conv, fc/linear, matmul, pool, elementwise, batchnorm,
layernorm, deconv; default conv), ``Inputs`` (producer names separated by ``;``; default: the row above,
or the network input for the first row; ``input`` names the network input; ``NAME#K/N`` names the K-th of N
equal parts of NAME's output channels, as q of a fused QKV projection is ``qkv#1/3``: :func:`_inputs`), ``Bias`` (0/1),
``Repeat`` (independent instances per sample, e.g. attention heads), ``Groups`` (grouped or
depthwise convolution), ``Dilation`` (spacing of a conv's filter taps), ``Operator`` (an elementwise row's
operator as its ONNX op type, ``sigmoid``, any case; empty: unknown, read as before it was stated). A row may leave its last
optional columns out (their defaults); a short row that is refused says it is short (:func:`_short_row`). A SCALE-Sim sparsity column
(header containing ``sparsity``) is skipped here (SCALE-Sim uses it only with ``SparsitySupport``
on; ``archsim sparse`` reads it with :mod:`archsim.array.sparse_input`), and so is an empty
``batch size`` column.

SCALE-Sim's own files load as SCALE-Sim reads them (``scalesim/topology_utils.py``):

* GEMM mode — a header ``Layer, M, N, K`` (any spelling of the first column): each row
  ``name, M, N, K`` is a linear layer on M rows, out[M×N] = A[M×K]·W[K×N] (an fc layer with
  IFMAP Height M, Channels K, Num Filter N), so its forward GEMM is SCALE-Sim's GEMM.
* A line starting with ``#`` is a comment, above the header or between rows (:mod:`archsim.csv_lines`, the
  rule of every CSV archsim reads).
* In a plain eight-column file (no archsim columns), a trailing field starting with ``#`` is a
  comment (SCALE-Sim drops the field after the last comma), and repeated layer names are made
  unique (``name_2``…) and reported in ``Network.notes``; with an ``Inputs`` column they are errors.
  A layer whose name contains ``DP`` is SCALE-Sim's depthwise convolution: one convolution per
  input channel, each with all ``Num Filter`` filters (Groups = Channels, Channels × Num Filter
  outputs), also noted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeGuard

from archsim.choices.networks import SHAPE_CHECKS
from archsim.console import setting
from archsim.csv_lines import check_comma_separated, check_row_comma_separated, csv_rows
from archsim.errors import InputError
from archsim.validate import check_unique_columns, read_text
from archsim.value_parsers import stated_integer
from archsim.workload.layer import GEOMETRIES, NETWORK_INPUT, Geometry, Layer, Network, PartRead, flattening_conv_note
from archsim.workload.layer_types import canonical_kind
from archsim.workload.shapes import check_shapes

POSITIONAL = ("Layer name", "IFMAP Height", "IFMAP Width", "Filter Height", "Filter Width",
              "Channels", "Num Filter", "Strides")
_FIELD_OF = dict(zip(POSITIONAL[1:], ("ifmap_h", "ifmap_w", "filter_h", "filter_w", "channels",
                                       "filters", "stride")))
OPTIONAL = ("Padding", "Type", "Inputs", "Bias", "Repeat", "Groups", "Dilation", "Operator")
_ATTR_FIELD = {v: k for k, v in _FIELD_OF.items()} | {"padding": "Padding", "repeat": "Repeat",
                                                     "kind": "Type", "inputs": "Inputs", "groups": "Groups",
                                                     "dilation": "Dilation", "operator": "Operator"}


def _norm(name: str) -> str:
    return " ".join(name.strip().lower().split())


def is_geometry(text: str) -> TypeGuard[Geometry]:
    """Whether ``text`` is one of :data:`~archsim.workload.layer.GEOMETRIES` (a loader's ``geometry=``)."""
    return text in GEOMETRIES


def parse_topology(text: str, *, source: str = "<string>", name: str = "network",
                   geometry: str = "archsim", shapes: str = "auto") -> Network:
    """Parse topology CSV text. Raises :class:`InputError` (with file, line, field) on bad input.

    ``shapes`` (:mod:`archsim.workload.shapes`): ``auto`` checks every layer against its producers
    when the file declares ``Inputs`` — raw SCALE-Sim topologies are often unrelated layers, read
    as a chain for ordering only; ``check`` checks the implicit chain too; ``off`` checks nothing.
    """
    if not is_geometry(geometry):
        raise InputError(f"unknown geometry {geometry!r}; choose archsim or scalesim", field="geometry")
    if shapes not in SHAPE_CHECKS:
        raise InputError(f"unknown shape check {shapes!r}; choose {', '.join(SHAPE_CHECKS)}", field="shapes")
    if "\x00" in text:
        raise InputError("file contains NUL bytes; not a CSV text file", file=source)
    numbered = csv_rows(text, source, skipinitialspace=True)  # a `#` line is a comment: no row (archsim.csv_lines)
    numbered = [(n, r) for n, r in numbered if any(cell.strip() for cell in r)]
    if not numbered:
        raise InputError("empty topology file (expected a header and at least one layer row)", file=source)
    header_line, header = numbered[0]
    header = _strip_trailing_empty(header)
    if is_gemm_header(header):
        network = _parse_gemm(numbered, source, name, geometry)
        if shapes == "check":
            check_shapes(network)
        return network
    check_comma_separated([cell.strip() for cell in header], source, header_line)
    if len(header) < len(POSITIONAL):
        raise InputError(f"header has {len(header)} columns; the first {len(POSITIONAL)} must be "
                         f"{', '.join(POSITIONAL)}", file=source, line=header_line)
    _check_positional_names(header, source, header_line)
    extras: dict[int, str] = {}
    known = {_norm(x): x for x in OPTIONAL}
    ignored: dict[int, str] = {}
    for index, raw in enumerate(header[len(POSITIONAL):], start=len(POSITIONAL)):
        key = _norm(raw)
        if "sparsity" in key or key == "batch size":
            ignored[index] = raw.strip()
            continue
        if key not in known:
            raise InputError(f"unknown column {raw.strip()!r}; optional columns are {', '.join(OPTIONAL)}",
                             file=source, line=header_line, field=raw.strip() or f"column {index + 1}")
        extras[index] = known[key]
    check_unique_columns(list(extras.values()), source, header_line)  # by name, any spelling
    if len(numbered) < 2:
        raise InputError("no layer rows after the header", file=source, line=header_line)

    layers: list[Layer] = []
    seen: set[str] = set()
    notes: list[str] = []
    lines: dict[str, int] = {}
    part_reads: list[PartRead] = []
    plain = not extras  # a SCALE-Sim file: comments and repeated names as SCALE-Sim takes them
    previous = NETWORK_INPUT
    for line, given in numbered[1:]:
        given = _drop_comment(given) if plain else given
        row = _strip_trailing_empty(given)
        for index, column in ignored.items():
            if "batch" in column.lower() and index < len(row) and row[index].strip():
                raise InputError(f"a batch size per layer is not read (archsim applies {setting('batch')} to every "
                                 "layer); leave the column empty", file=source, line=line, field=column)
        if len(row) < len(POSITIONAL):
            check_row_comma_separated(row, len(header), source, line)
            raise InputError(f"row has {len(row)} fields, expected at least {len(POSITIONAL)}",
                             file=source, line=line, field=POSITIONAL[len(row)] if row else POSITIONAL[0])
        if len(row) > len(header):
            raise InputError(f"row has {len(row)} fields but the header has {len(header)}",
                             file=source, line=line)
        with _short_row(len(given), len(header)):  # a value read shifted: say the row is short
            layer_name = row[0].strip()
            if not layer_name.isprintable():
                raise InputError(f"layer name has control characters: {layer_name!r}", file=source, line=line,
                                 field="Layer name")
            if not layer_name:
                raise InputError("empty layer name", file=source, line=line, field="Layer name")
            if plain and layer_name in seen:
                layer_name = _renamed(layer_name, seen, notes, line)
            values: dict[str, Any] = {}  # Layer's integer fields, checked by Layer
            for column, attr in _FIELD_OF.items():
                values[attr] = _integer(row[POSITIONAL.index(column)], source, line, column)
            named = {extras[i]: row[i].strip() for i in extras if i < len(row)}
            values["padding"] = _integer(named.get("Padding") or "0", source, line, "Padding", minimum=0)
            values["repeat"] = _integer(named.get("Repeat") or "1", source, line, "Repeat")
            values["groups"] = _integer(named.get("Groups") or "1", source, line, "Groups")
            values["dilation"] = _integer(named.get("Dilation") or "1", source, line, "Dilation")
            values["operator"] = named.get("Operator", "").lower() or None  # checked by Layer
            bias = (named.get("Bias") or "0").lower()
            if bias not in ("0", "1", "true", "false", "yes", "no"):
                raise InputError(f"expected 0 or 1, got {named.get('Bias')!r}", file=source, line=line, field="Bias")
            try:
                kind = canonical_kind(named.get("Type") or "conv")
            except InputError as exc:
                raise InputError(exc.message, file=source, line=line, field="Type") from None
            inputs_text = named.get("Inputs", "")
            inputs, parts = _inputs(inputs_text, layer_name, seen, source, line) if inputs_text else ((previous,), ())
            if plain and "DP" in layer_name:  # SCALE-Sim: one conv per input channel, each with all the filters
                values["groups"], values["filters"] = values["channels"], values["channels"] * values["filters"]
                notes.append(f"line {line}: {layer_name!r} has 'DP' in its name: depthwise as SCALE-Sim runs it "
                             f"(one {values['filters'] // values['channels']}-filter conv per input channel)")
            try:
                layer = Layer(name=layer_name, kind=kind, bias=bias in ("1", "true", "yes"), inputs=inputs,
                              geometry=geometry, **values)
                layer.ofmap_h, layer.ofmap_w  # noqa: B018 - geometry must be computable
            except InputError as exc:
                raise InputError(exc.message, file=source, line=line,
                                 field=_ATTR_FIELD.get(exc.where.field or "", exc.where.field)) from None
            if layer.ofmap_h <= 0 or layer.ofmap_w <= 0:
                raise InputError("output size is not positive", file=source, line=line, field="Filter Height")
            if layer_name in seen or layer_name == NETWORK_INPUT:
                raise InputError(f"duplicate or reserved layer name {layer_name!r}", file=source, line=line,
                                 field="Layer name")
            for producer in inputs:
                if producer != NETWORK_INPUT and producer not in seen:
                    raise InputError(f"reads {producer!r}, which is not a layer defined above", file=source, line=line,
                                     field="Inputs")
        flattening = flattening_conv_note(layer)
        if flattening:
            notes.append(f"line {line}: {flattening}")
        seen.add(layer_name)
        layers.append(layer)
        part_reads.extend(parts)
        lines[layer_name] = line
        previous = layer_name
    network = Network(name=name, layers=tuple(layers), source=source, notes=tuple(notes), part_reads=tuple(part_reads))
    if shapes == "check" or (shapes == "auto" and "Inputs" in extras.values()):
        check_shapes(network, lines)
    return network


_PART = re.compile(r"([0-9]{1,9})\s*/\s*([0-9]{1,9})")


def _inputs(text: str, layer_name: str, seen: set[str], source: str, line: int) -> tuple[tuple[str, ...],
                                                                                          tuple[PartRead, ...]]:
    """An ``Inputs`` field's producer names, and the parts of producers the row reads: an entry that names a layer
    (or ``input``) is that layer whole, as in every older file; ``NAME#K/N`` is the K-th of N equal parts of NAME's
    output channels (1 ≤ K ≤ N; the last ``#`` splits it). One producer is read whole or as one part."""
    names: list[str] = []
    parts: list[PartRead] = []
    for entry in (x.strip() for x in text.replace("|", ";").split(";")):
        if not entry:
            continue
        if entry in seen or entry == NETWORK_INPUT or "#" not in entry:
            names.append(entry)
            continue
        producer, _, which = (x.strip() for x in entry.rpartition("#"))
        match = _PART.fullmatch(which)
        if not producer or not match or not 1 <= int(match[1]) <= int(match[2]):
            raise InputError(f"{entry!r} names no layer and no part of one: a part is NAME#K/N, the K-th of N equal "
                             f"parts of NAME's output channels, 1 <= K <= N (q of a fused projection qkv: qkv#1/3)",
                             file=source, line=line, field="Inputs")
        names.append(producer)
        parts.append(PartRead(layer_name, producer, int(match[1]), int(match[2])))
    for read in parts:
        if names.count(read.producer) > 1:
            raise InputError(f"reads {read.producer!r} more than once (a part and another part, or the whole): "
                             "name it once", file=source, line=line, field="Inputs")
    return tuple(names), tuple(parts)


def _renamed(layer_name: str, seen: set[str], notes: list[str], line: int) -> str:
    n = 2
    while f"{layer_name}_{n}" in seen:
        n += 1
    notes.append(f"line {line}: layer name {layer_name!r} repeats; renamed {layer_name}_{n}")
    return f"{layer_name}_{n}"


def _drop_comment(row: list[str]) -> list[str]:
    """A row without its trailing ``#`` comment field (and anything after it)."""
    for index, cell in enumerate(row):
        if index and cell.strip().startswith("#"):
            return row[:index]
    return row


_GEMM_COLUMNS = ("m", "n", "k")


def is_gemm_header(header: list[str]) -> bool:
    """Whether a topology's header row is SCALE-Sim's GEMM mode (``Layer, M, N, K``), not its conv layout:
    the one test of which reader a CSV takes (the SCALE-Sim comparison picks SCALE-Sim's mode by it too)."""
    return (len(header) >= 4 and _norm(header[0]) in ("layer", "layer name", "l")
            and tuple(_norm(x) for x in header[1:4]) == _GEMM_COLUMNS)


def _parse_gemm(numbered, source: str, name: str, geometry: Geometry) -> Network:
    """SCALE-Sim's GEMM-mode topology: ``Layer, M, N, K[, Sparsity]`` rows → fc layers on M rows."""
    header_line, header = numbered[0]
    header = _strip_trailing_empty(header)
    for index, raw in enumerate(header[4:], start=4):
        if "sparsity" not in _norm(raw):
            raise InputError(f"unknown column {raw.strip()!r} in a GEMM-mode topology (Layer, M, N, K[, Sparsity])",
                             file=source, line=header_line, field=raw.strip() or f"column {index + 1}")
    if len(numbered) < 2:
        raise InputError("no layer rows after the header", file=source, line=header_line)
    layers: list[Layer] = []
    seen: set[str] = set()
    notes: list[str] = []
    previous = NETWORK_INPUT
    for line, row in numbered[1:]:
        row = _strip_trailing_empty(_drop_comment(row))
        if len(row) < 4:
            check_row_comma_separated(row, len(header), source, line)
            raise InputError(f"row has {len(row)} fields, expected Layer, M, N, K", file=source, line=line,
                             field=("Layer", "M", "N", "K")[len(row)] if row else "Layer")
        if len(row) > len(header):
            raise InputError(f"row has {len(row)} fields but the header has {len(header)}", file=source, line=line)
        layer_name = row[0].strip()
        if not layer_name or layer_name == NETWORK_INPUT or not layer_name.isprintable():
            raise InputError(f"empty or reserved layer name {layer_name!r}", file=source, line=line, field="Layer")
        if layer_name in seen:
            layer_name = _renamed(layer_name, seen, notes, line)
        m, n, k = (_integer(row[i], source, line, label) for i, label in ((1, "M"), (2, "N"), (3, "K")))
        layers.append(Layer(name=layer_name, kind="fc", ifmap_h=m, ifmap_w=1, filter_h=1, filter_w=1, channels=k,
                            filters=n, inputs=(previous,), geometry=geometry))
        seen.add(layer_name)
        previous = layer_name
    return Network(name=name, layers=tuple(layers), source=source, notes=tuple(notes))


def load_topology(path: str | Path, *, geometry: str = "archsim", name: str | None = None,
                  shapes: str = "auto") -> Network:
    """Read a topology CSV file (see module docstring). Raises :class:`InputError` on bad input."""
    text = read_text(path, "topology file", encoding="utf-8-sig")  # as written: Path drops a trailing "/"
    path = Path(path)
    return parse_topology(text, source=str(path), name=name or path.stem, geometry=geometry, shapes=shapes)


MAX_DIMENSION = 2**31 - 1  # dimensions beyond int32 are typos, and overflow int64 products downstream


@contextmanager
def _short_row(fields: int, columns: int) -> Iterator[None]:
    """A row with fewer fields than the header's columns may leave its last optional columns out (their
    defaults); one refused inside (a value of the wrong type, an impossible layer) may instead have left a
    field out in the middle, every value after it read one column early: the refusal says the row is short."""
    try:
        yield
    except InputError as exc:
        if fields >= columns:
            raise
        raise InputError(f"row has {fields} fields but the header has {columns} (one left out shifts the rest); "
                         f"{exc.message}", file=exc.where.file, line=exc.where.line, field=exc.where.field) from None


def _integer(text: str, source: str, line: int, field: str, minimum: int = 1) -> int:
    """An integer cell (:func:`~archsim.value_parsers.stated_integer`, every CSV's reading: ``64`` and ``64.0``;
    not ``64.5``, nor ``1_6`` and non-ASCII digits, which int() takes) in ``minimum`` … 2³¹ − 1."""
    raw = text.strip()
    value = stated_integer(raw)
    if value is None and re.fullmatch(r"[-+]?[0-9]+", raw, re.ASCII):  # digits too many to read: above the bound
        value = MAX_DIMENSION + 1
    if value is None:
        raise InputError(f"expected an integer, got {raw!r}", file=source, line=line, field=field)
    if value > MAX_DIMENSION:
        shown = raw if len(raw) <= 20 else f"{raw[:8]}…({len(raw)} digits)"
        raise InputError(f"must be at most {MAX_DIMENSION}, got {shown}", file=source, line=line, field=field)
    if value < minimum:
        what = "positive" if minimum == 1 else f">= {minimum}"
        raise InputError(f"must be {what}, got {value}", file=source, line=line, field=field)
    return value


def _column_key(name: str) -> str:
    """A column name as spellings of it compare: letters and digits, lower case, no plural ``s``."""
    return re.sub(r"[^a-z0-9]", "", name.lower()).removesuffix("s")


_COLUMN_KEYS = {_column_key(x): x for x in (*POSITIONAL, *OPTIONAL)}


def _check_positional_names(header: list[str], source: str, line: int) -> None:
    """Refuse a header that names another column in one of the eight positional slots: those are read by position,
    so a dropped or moved column (no ``Channels``; ``Strides`` before ``Num Filter``) would shift every value after
    it. Names archsim does not know are left alone, as SCALE-Sim ignores them."""
    for index, (raw, expected) in enumerate(zip(header, POSITIONAL)):
        named = _COLUMN_KEYS.get(_column_key(raw))
        if named is not None and named != expected:
            raise InputError(f"column {index + 1} is {raw.strip()!r} where {expected!r} must be: the first "
                             f"{len(POSITIONAL)} columns are read by position ({', '.join(POSITIONAL)}), so a "
                             "missing or moved column would shift every value after it",
                             file=source, line=line, field=raw.strip())


def _strip_trailing_empty(row: list[str]) -> list[str]:
    row = list(row)
    while row and not row[-1].strip():
        row.pop()
    return row
