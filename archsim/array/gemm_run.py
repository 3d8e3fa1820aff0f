"""``archsim gemm``'s run, once for the command and :func:`archsim.gemm`: SCALE-Sim-exact cost of one GEMM
out[M×N] = A[M×K]·B[K×N], or of every row of a shapes CSV (with the ``cycle`` engine: also its stall cycles and
DRAM words under SCALE-Sim's USER-bandwidth model). :func:`run_gemm` takes the flags' values as keywords of the
same names, refuses what the command refuses with the same lines, and returns the rows and meta it prints.
Cycles are array clock cycles, SRAM and DRAM counts words, seconds beside cycles at a clock."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archsim.array.config import DATAFLOWS, ArrayConfig, parse_array_shape, read_scalesim_cfg
from archsim.array.options import array_from_flags, memory_meta, with_memory
from archsim.console import Speak, say, say_after_run, setting
from archsim.csv_lines import check_row_length, choice_cell, csv_rows
from archsim.errors import InputError
from archsim.validate import read_text
from archsim.value_parsers import parse_integer_cell

if TYPE_CHECKING:
    import pandas as pd  # annotations only: loaded where used

    from archsim.array.analytic import OfmapCount
    from archsim.array.layout import GemmLayout
    from archsim.count_types import Counts
    from archsim.rows import Rows

SHAPE_COLUMNS = ("m", "k", "n", "rows", "cols", "dataflow")
RESULT_COLUMNS = ("cycles", "folds", "mapping_efficiency", "utilization", "compute_utilization",
                  "ifmap_sram_reads", "filter_sram_reads", "ofmap_sram_writes")
# the cycle engine: cycles with stalls, and DRAM words (CycleResult fields)
CYCLE_COLUMNS = ("stall_cycles", "total_cycles", "ifmap_dram_reads", "filter_dram_reads", "ofmap_dram_writes")
OFMAP_COUNTS = ("scalesim", "true")
BANK_RULES = ("set", "line")



@dataclass(frozen=True)
class GemmRun:
    """One run's printed table (``Rows`` where one GEMM needs no pandas, else a DataFrame), its meta, and the
    ``array`` it costed (its clock and width; under the cycle engine its SRAMs and DRAM rate too): what a device
    file's chip is timed at one level up (:mod:`archsim.gemm_chip`; ``array/`` reads no device model)."""

    table: Rows | pd.DataFrame
    meta: dict
    array: ArrayConfig


def read_shapes(path: str | Path) -> pd.DataFrame:
    """Read and validate a shapes CSV; errors name the file, line and column."""
    import pandas as pd

    path = str(path)
    text = read_text(path, "shapes file", encoding="utf-8-sig")
    rows = [(n, r) for n, r in csv_rows(text, path) if any(c.strip() for c in r)]
    if not rows:
        raise InputError("empty shapes file", file=path)
    header = [c.strip().lower() for c in rows[0][1] if c.strip()]
    missing = [c for c in SHAPE_COLUMNS if c not in header]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)}", file=path, line=rows[0][0], field=missing[0], missing=True)
    index = {c: header.index(c) for c in SHAPE_COLUMNS}
    records = []
    for line, row in rows[1:]:
        check_row_length(row, rows[0][1], file=path, line=line)  # its last cells named as missing, not as ''
        record: dict[str, object] = {}
        for column in SHAPE_COLUMNS:
            position = index[column]
            raw = row[position].strip() if position < len(row) else ""
            if column == "dataflow":
                record[column] = choice_cell(raw, DATAFLOWS, file=path, line=line, field=column)
                continue
            try:
                record[column] = parse_integer_cell(raw, what="a positive integer")
            except ValueError as exc:
                raise InputError(str(exc), file=path, line=line, field=column) from None
        records.append(record)
    if not records:
        raise InputError("no shape rows after the header", file=path)
    return pd.DataFrame.from_records(records, columns=list(SHAPE_COLUMNS))


def cost_shapes(shapes: pd.DataFrame, ofmap_count: OfmapCount = "scalesim", mac_rate: float = 1.0) -> pd.DataFrame:
    """The shapes frame plus one column per cost figure, all in one vectorized call (:func:`rated_columns` at
    ``mac_rate`` MACs per PE per cycle)."""
    import numpy as np

    from archsim.array.analytic import dataflow_codes

    m, k, n, rows, cols = (shapes[c].to_numpy(dtype=np.int64) for c in ("m", "k", "n", "rows", "cols"))
    figures = rated_columns(m, k, n, rows, cols, dataflow_codes(shapes["dataflow"].to_numpy()), ofmap_count, mac_rate)
    out = shapes.copy()
    for column in RESULT_COLUMNS:
        out[column] = figures[column]
    return out


def rated_columns(m, k, n, rows, cols, dataflow, ofmap_count: OfmapCount, mac_rate: float) -> dict[str, Any]:
    """:data:`RESULT_COLUMNS` of GEMMs (int64 arrays) at ``mac_rate`` MACs per PE per cycle: cycles, folds and the
    mapping and compute utilizations the packed GEMM's (:func:`archsim.array.costing.rated_k`, train's packing),
    the SRAM words the real GEMM's, utilization its MACs ÷ (cycles · PEs · rate): the share of the PEs' capacity
    at that rate, a fraction 0–1 as at rate 1; SCALE-Sim's GEMM itself at 1."""
    import numpy as np

    from archsim.array.analytic import gemm_cost
    from archsim.array.mac_rates import packed_k

    real = gemm_cost(m, k, n, rows, cols, dataflow, ofmap_count=ofmap_count)
    if mac_rate == 1:
        return {column: getattr(real, column) for column in RESULT_COLUMNS}
    timed = gemm_cost(m, packed_k(k, mac_rate), n, rows, cols, dataflow, ofmap_count=ofmap_count)
    figures = {column: getattr(timed if column in ("cycles", "folds", "mapping_efficiency", "compute_utilization")
                               else real, column) for column in RESULT_COLUMNS}
    figures["utilization"] = real.macs / (np.maximum(timed.cycles, 1) * (rows * cols).astype(np.float64) * mac_rate)
    return figures


def cycle_columns(shapes: pd.DataFrame, memory: ArrayConfig, min_bandwidth: bool = False,
                  layout: GemmLayout | None = None) -> pd.DataFrame:
    """The cycle engine's figures for every shape row, on ``memory``'s SRAMs and bandwidth (and
    custom ``layout``, when given); a shapes file's GEMMs take seconds each, so a bar counts them on a terminal."""
    import numpy as np
    import pandas as pd

    from archsim.array.analytic import dataflow_codes, gemm_cost
    from archsim.array.costing import bar_delay
    from archsim.progress import progress

    out: dict[str, list[object]] = {column: [] for column in CYCLE_COLUMNS + (("min_bandwidth",) if min_bandwidth else ())}
    m, k, n, rows, cols = (shapes[c].to_numpy(dtype=np.int64) for c in ("m", "k", "n", "rows", "cols"))
    work = float(gemm_cost(m, k, n, rows, cols, dataflow_codes(shapes["dataflow"].to_numpy())).cycles.sum())
    with progress(len(shapes), "cycle engine", "GEMM", delay=bar_delay(work)) as bar:  # one long GEMM: drawn at once
        for a, b, c, height, width, dataflow in shapes[list(SHAPE_COLUMNS)].itertuples(index=False):
            bar.set_postfix_str(f"{a}x{b}x{c}")
            array = replace(memory, rows=int(height), cols=int(width), dataflow=str(dataflow))
            _cycle_row(out, int(a), int(b), int(c), array, min_bandwidth, layout)
            bar.update()
    return pd.DataFrame(out, index=shapes.index)


def _cycle_row(out: dict[str, list[object]], m: int, k: int, n: int, array: ArrayConfig, min_bandwidth: bool,
               layout: GemmLayout | None) -> None:
    """:func:`cycle_columns`' figures of one GEMM on ``array``, appended to ``out``'s columns."""
    from archsim.array.cycle import (  # numba: the cycle engine only
        minimum_bandwidth,
        simulate_cached,
        simulate_gemm,
        sram_words,
    )
    from archsim.array.mac_rates import packed_k

    def stepped(depth: int):
        if layout is None:
            return simulate_cached(m, depth, n, array)
        return simulate_gemm(m, depth, n, array.rows, array.cols, array.dataflow, sram_words=sram_words(array),
                             bandwidth=array.dram_bandwidths, layout=layout)

    packed = int(packed_k(k, array.mac_rate))  # the reduction at the array's MACs per PE per cycle, as cost steps it
    result, words = stepped(packed), stepped(k) if packed != k else None  # words: the real GEMM's DRAM counts
    for column in CYCLE_COLUMNS:
        source = result if words is None or column in ("stall_cycles", "total_cycles") else words
        out[column].append(source.cycles if column == "total_cycles" else getattr(source, column))
    if min_bandwidth:
        found = minimum_bandwidth(m, packed, n, array.rows, array.cols, array.dataflow, sram_words=sram_words(array))
        out["min_bandwidth"].append("none" if found is None else found)


def run_gemm(*, m: int | None = None, k: int | None = None, n: int | None = None, array: str | None = None,
             dataflow: str | None = None, config: str | Path | None = None, shapes: str | Path | None = None,
             ofmap_count: OfmapCount = "scalesim", engine: str = "analytic", dram_bandwidth: int | None = None,
             sram_kb: Counts | None = None, layout: str | Path | None = None, bank_rule: str = "set",
             min_bandwidth: bool = False, clock_ghz: float | None = None, bandwidth_flag: str = "--bandwidth",
             dtype: str | None = None, element_bytes: int | None = None, toml_array: ArrayConfig | None = None,
             speak: Speak = say, speak_after: Speak = say_after_run) -> GemmRun:
    """One ``archsim gemm`` run: each keyword its flag's value, already of the flag's type (``dram_bandwidth``:
    ``--bandwidth``, named ``bandwidth_flag``). ``dtype`` or ``element_bytes`` (``--dtype``, ``--element-bytes``: one
    width, :func:`~archsim.array.options.element_width`) add the SRAM and DRAM traffic in bytes and state the width
    in the meta, as ``cost`` does; the cycle engine's SRAMs then hold KiB / width words. ``toml_array``: ``config`` is a device TOML and this its one array
    kind, as the caller read it with the reader ``cost`` and ``energy`` share (``array/`` reads no device file;
    that reader said its notes). ``speak(kind, text)``: a warning said as it arises (default:
    stderr); ``speak_after``: a note or warning said once the run has succeeded (default: stderr after the run).
    A device file of several arrays' ``chip_seconds`` are added by the callers, the command and :func:`archsim.gemm`
    (:func:`archsim.gemm_chip.with_chip_seconds`, at the run's ``array``)."""
    from archsim.array.device_notes import device_arrays_note, device_dtype_note
    from archsim.array.device_rate import with_device_bandwidth
    from archsim.array.options import (
        array_size_warning,
        array_source,
        check_bandwidth_engine,
        dtype_meta,
        element_width,
        sram_kb_warning,
        sram_unused_warning,
    )
    from archsim.array.sram_sizes import cfg_sram_warning

    check_bandwidth_engine(dram_bandwidth, engine, bandwidth_flag)  # the analytic path never reads the memory flags
    width = element_width(dtype, element_bytes)
    config = None if config is None else str(config)
    chosen = None
    if layout is not None:
        if not config or engine != "cycle" or min_bandwidth or dram_bandwidth is not None:
            raise InputError(f"{setting('layout')} needs {setting('config')} (its [layout] section) and "
                             f"{setting('engine', 'cycle')}, without {setting(bandwidth_flag.lstrip('-'))} or "
                             f"{setting('min-bandwidth')} (the layout fixes the read bandwidths)", field="layout")
        from archsim.array.layout import layout_from_cfg

        base = read_scalesim_cfg(config, layouts=True)
        chosen = layout_from_cfg(config, layout, bank_rule)
    else:
        base = toml_array or (array_from_flags(config=config, dtype=dtype) if config else ArrayConfig())
    if config:  # a device file's arrays, its unread GB/s, and SRAMs that look like bytes, said once the run has succeeded
        unread = None  # the file's GB/s as the DRAM rate, said (a device TOML's: its reader's)
        if engine == "cycle" and dram_bandwidth is None and layout is None and not toml_array:
            base, unread = with_device_bandwidth(base, config, width or 1, bandwidth_flag.lstrip("-"))
        said = () if toml_array else (  # a device TOML's notes are its reader's, said by the caller
            ("note", device_arrays_note(config)), ("note", None if width else device_dtype_note(config)),
            ("note", unread), ("warning", cfg_sram_warning(config)))
        for kind, text in said:
            if text:
                speak_after(kind, text)
    if clock_ghz is not None:
        base = replace(base, clock_hz=clock_ghz * 1e9)
    if width is not None:
        base = replace(base, element_bytes=width)
    widths: dict[str, object] = {} if width is None else {"dtype": dtype_meta(dtype, base), "element_bytes": width}
    if sram_kb is not None and engine != "cycle":
        with_memory(base, sram_kb=sram_kb)  # a malformed size is refused as under the cycle engine
        unused = sram_unused_warning(sram_kb, engine, "gemm's analytic cycles and SRAM reads")
        if unused:
            speak("warning", unused)
    if shapes:
        if any(v is not None for v in (m, k, n)):
            raise InputError(f"give either {setting('shapes')} or {setting('m')}/{setting('k')}/{setting('n')}, "
                             "not both", field="shapes")
        ignored = [name for name, value in (("array", array), ("dataflow", dataflow)) if value]
        if ignored:  # each row names its own array and dataflow
            raise InputError(f"{setting(ignored[0])} does not apply to {setting('shapes')}: each row gives its rows, "
                             "cols and dataflow", field="shapes")
        frame = read_shapes(shapes)
    else:
        missing = [x for x, value in (("m", m), ("k", k), ("n", n)) if value is None]
        if missing:
            raise InputError(f"missing {', '.join(setting(x) for x in missing)} (or give {setting('shapes', placeholder='FILE.csv')})",
                             field=missing[0], missing=True)
        rows, cols = parse_array_shape(array) if array else (base.rows, base.cols)
        huge = array_size_warning(rows, cols, array_source(array, config))
        if huge:
            speak_after("warning", huge)
        shape = {"m": m, "k": k, "n": n, "rows": rows, "cols": cols, "dataflow": dataflow or base.dataflow}
        if engine == "analytic" and base.clock_hz is None:  # one row, no frame: pandas stays unloaded
            return _one_gemm(shape, ofmap_count, engine, min_bandwidth, widths, base)
    import pandas as pd

    from archsim.seconds import add_seconds

    if not shapes:
        frame = pd.DataFrame([shape], columns=list(SHAPE_COLUMNS))
    if min_bandwidth and engine != "cycle":
        raise InputError(f"{setting('min-bandwidth')} needs {setting('engine', 'cycle')}", field="min-bandwidth")
    result = cost_shapes(frame, ofmap_count, base.mac_rate)
    meta: dict[str, object] = {"ofmap_count": ofmap_count, "engine": engine, **widths}
    costed = base
    if engine == "cycle":
        costed = memory = with_memory(base, dram_bandwidth, sram_kb)
        slip = sram_kb_warning(sram_kb)
        if slip:
            speak("warning", slip)
        result = pd.concat([result, cycle_columns(frame, memory, min_bandwidth, chosen)], axis=1)
        meta.update(memory_meta(memory))
        if chosen is not None:
            meta.update(layout=chosen.row.name, bank_rule=chosen.rule)
    if base.clock_hz is not None:
        meta["clock_ghz"] = base.clock_hz / 1e9
    if width is not None:
        for name, values in traffic_bytes(result, width).items():
            result[name] = values
    return GemmRun(add_seconds(result, base.clock_hz), meta, costed)


def traffic_bytes(counts, width: int) -> dict[str, object]:
    """The SRAM and DRAM traffic of ``counts`` (a row or a frame of gemm's word counts) in bytes at ``width`` bytes
    a word: ``sram_read_bytes`` (ifmap and filter reads), ``sram_write_bytes`` (ofmap writes) and, from the cycle
    engine, ``dram_read_bytes`` and ``dram_write_bytes``, as ``cost`` names its DRAM bytes."""
    out = {"sram_read_bytes": (counts["ifmap_sram_reads"] + counts["filter_sram_reads"]) * width,
           "sram_write_bytes": counts["ofmap_sram_writes"] * width}
    if "ifmap_dram_reads" in counts:
        out["dram_read_bytes"] = (counts["ifmap_dram_reads"] + counts["filter_dram_reads"]) * width
        out["dram_write_bytes"] = counts["ofmap_dram_writes"] * width
    return out


def _one_gemm(shape: dict, ofmap_count: OfmapCount, engine: str, min_bandwidth: bool,
              widths: dict[str, object], array: ArrayConfig) -> GemmRun:
    """One GEMM on the analytic engine without a clock, as rows (pandas stays unloaded); ``widths``: the meta's
    dtype and element_bytes where a width was given (the traffic in bytes added); ``array``: the one costed."""
    import numpy as np

    from archsim.array.analytic import dataflow_codes
    from archsim.rows import Rows

    if min_bandwidth:
        raise InputError(f"{setting('min-bandwidth')} needs {setting('engine', 'cycle')}", field="min-bandwidth")
    one = [np.array([shape[c]], dtype=np.int64) for c in SHAPE_COLUMNS[:5]]
    cost = rated_columns(one[0], one[1], one[2], one[3], one[4], dataflow_codes(shape["dataflow"]), ofmap_count,
                         array.mac_rate)
    record = {**shape, **{column: cost[column][0] for column in RESULT_COLUMNS}}
    if widths:
        record.update(traffic_bytes(record, int(str(widths["element_bytes"]))))
    return GemmRun(Rows.of([record]), {"ofmap_count": ofmap_count, "engine": engine, **widths}, array)


__all__ = ["BANK_RULES", "CYCLE_COLUMNS", "OFMAP_COUNTS", "RESULT_COLUMNS", "SHAPE_COLUMNS", "GemmRun", "cost_shapes",
           "cycle_columns", "read_shapes", "run_gemm", "traffic_bytes"]
