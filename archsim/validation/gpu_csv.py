"""The measured GPU-kernel CSV: its schema, a validating reader, and the writer the timing script uses.

One file per GPU (``benchmarks/results/gpu_kernels_<gpu-slug>.csv``, written by
``benchmarks/gpu_validate.py``). Leading ``# key: value`` lines carry the run's metadata (GPU
name, SM count, clocks, torch/CUDA versions, dtype, repeats); then a header and one row per
(network, layer, batch, op). Ops are the three kernels ``F``, ``D``, ``G`` and the stream pair
``DG_serial`` (D then G on one stream) / ``DG_concurrent`` (D and G on two streams) that measures
the out-of-order-backprop idea on one device. Times are milliseconds.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from archsim.csv_lines import check_row_length, choice_cell, csv_rows
from archsim.errors import InputError
from archsim.validate import check_unique_columns, read_text
from archsim.value_parsers import parse_float, parse_integer_cell
from archsim.workload.layer_types import canonical_kind

KERNEL_OPS = ("F", "D", "G")
STREAM_OPS = ("DG_serial", "DG_concurrent")
OPS = KERNEL_OPS + STREAM_OPS
SHAPE_COLUMNS = ("ifmap_h", "ifmap_w", "channels", "filters", "filter_h", "filter_w", "stride", "padding")
REQUIRED = ("network", "layer", "batch", "op", "measured_ms")
COLUMNS = ("network", "layer", "kind", "batch", "op", "measured_ms", *SHAPE_COLUMNS, "same_as", "repeats", "inner",
           "algorithm")
"""Column order the timing script writes; the reader needs only :data:`REQUIRED` (the rest are checked if present).
``algorithm``: the library's algorithm for the kernel where the measurement recorded it (DeepBench: forward only)."""


@dataclass(frozen=True)
class KernelTable:
    """A validated measured CSV: ``frame`` has the file's columns plus ``line`` (its line in the file)."""

    frame: pd.DataFrame
    meta: Mapping[str, str] = field(default_factory=dict)
    source: str = "<memory>"


def read_kernel_csv(path: str | Path) -> KernelTable:
    """Read and validate a measured CSV; every error names the file, line and column."""
    return parse_kernel_csv(read_text(path, "measured CSV", encoding="utf-8-sig"), source=str(path))


def parse_kernel_csv(text: str, source: str = "<memory>") -> KernelTable:
    """:func:`read_kernel_csv` on text already in memory (tests, notebooks)."""
    lines = io.StringIO(text, newline="").readlines()  # each keeps its end: the csv module's lines (csv_rows)
    meta: dict[str, str] = {}
    first = 0
    while first < len(lines) and (lines[first].startswith("#") or not lines[first].strip()):
        key, sep, value = lines[first].lstrip("#").partition(":")
        if sep and key.strip():
            meta[key.strip()] = value.strip()
        first += 1
    rows = [(number, row) for number, row in csv_rows("".join(lines[first:]), source, first_line=first + 1)
            if any(cell.strip() for cell in row)]
    if not rows:
        raise InputError(f"no header row (expected archsim's columns {', '.join(REQUIRED)}, … or NeuSight's "
                         "OPName, Latency, Device, …)", file=source)
    header_line, header = rows[0]
    names = [cell.strip().lower() for cell in header]
    check_unique_columns(names, source, header_line)
    missing = [name for name in REQUIRED if name not in names]
    if missing:
        kind = ("; this file holds whole training iterations (e2e_ms), which benchmarks/bench_neusight_iterations.py "
                "compares with archsim train --implementation pytorch-eager" if "e2e_ms" in names else "")
        raise InputError(f"missing column(s) {', '.join(missing)}: validate-gpu reads kernel CSVs, archsim's "
                         f"({', '.join(REQUIRED)}, …) or NeuSight's (OPName, Latency, Device, …){kind}",
                         file=source, line=header_line, field=missing[0], missing=True)
    index = {name: position for position, name in enumerate(names) if name}
    records = []
    seen: dict[tuple, int] = {}
    for line, row in rows[1:]:
        check_row_length(row, names, file=source, line=line)  # a short row's last cells would read as empty
        cells = {name: row[position].strip() for name, position in index.items()}
        record: dict[str, object] = {"line": line}
        for name in ("network", "layer"):
            record[name] = cells[name]
            if not record[name]:
                raise InputError("must not be empty", file=source, line=line, field=name)
        record["op"] = choice_cell(cells["op"], OPS, file=source, line=line, field="op")
        record["batch"] = _integer(cells["batch"], source, line, "batch", minimum=1)
        record["measured_ms"] = measured_ms(cells["measured_ms"], source, line)
        for name in (*SHAPE_COLUMNS, "repeats", "inner"):
            if name in index and cells[name]:  # optional: an empty cell is "not recorded"
                minimum = 0 if name == "padding" else 1
                record[name] = _integer(cells[name], source, line, name, minimum=minimum)
        for name in ("kind", "same_as", "algorithm"):
            if name in index:
                record[name] = cells[name]
        if record.get("kind"):  # a layer type, read as a topology's Type cell is (any case, its aliases)
            try:
                record["kind"] = canonical_kind(cells["kind"])
            except InputError as exc:
                raise InputError(exc.message, file=source, line=line, field="kind") from None
        row_key = (record["network"], record["layer"], record["batch"], record["op"])
        if row_key in seen:
            raise InputError(f"duplicate row for {'/'.join(map(str, row_key))} (first on line {seen[row_key]})",
                             file=source, line=line, field="op")
        seen[row_key] = line
        records.append(record)
    if not records:
        raise InputError("no measurement rows after the header", file=source)
    return KernelTable(frame=pd.DataFrame.from_records(records), meta=meta, source=source)


def _integer(raw: str, source: str, line: int, name: str, *, minimum: int) -> int:
    try:
        return parse_integer_cell(raw, low=minimum)  # 64 and 64.0, as every CSV's integer cells; not 64.5
    except ValueError as exc:
        raise InputError(str(exc), file=source, line=line, field=name) from None


def measured_ms(raw: str, source: str, line: int, name: str = "measured_ms") -> float:
    """A measured kernel time cell in milliseconds, positive and finite, written as every real archsim reads
    (:func:`~archsim.value_parsers.parse_float`: no ``1_0`` nor non-ASCII digits, which float() takes). One reading
    for archsim's kernel CSV and NeuSight's ``Latency`` column."""
    try:
        return parse_float(raw, low=0.0, low_open=True, what="a positive time in ms")
    except ValueError:
        raise InputError(f"expected a positive finite time in ms, got {raw!r}", file=source, line=line,
                         field=name) from None


def format_kernel_csv(meta: Mapping[str, object], rows: Sequence[Mapping[str, object]]) -> str:
    """The file text: ``# key: value`` metadata lines, then :data:`COLUMNS` (missing cells empty)."""
    head = "".join(f"# {key}: {' '.join(str(value).split())}\n" for key, value in meta.items())
    body = io.StringIO()
    writer = csv.writer(body, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow([_cell(row.get(name, "")) for name in COLUMNS])
    return head + body.getvalue()


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)

