"""``archsim gemm``: SCALE-Sim-exact cost of one GEMM, or of every row of a shapes CSV (with
``--engine cycle``: also its stall cycles and DRAM traffic under SCALE-Sim's USER-bandwidth model)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import TYPE_CHECKING

from archsim.array.config import ArrayConfig, parse_array_shape, read_scalesim_cfg
from archsim.array.options import memory_meta, with_memory
from archsim.commands import Command
from archsim.commands.common import (
    add_clock_argument,
    add_engine_arguments,
    add_output_arguments,
    check_engine_flags,
    emit,
    note_device_arrays,
    positive_int,
    warn_array_size,
    warn_sram_unused,
    with_memory_args,
)
from archsim.errors import InputError
from archsim.seconds import add_seconds
from archsim.validate import csv_rows, parse_int, read_text

if TYPE_CHECKING:
    import pandas as pd  # annotations only: loaded where used

    from archsim.array.analytic import OfmapCount
    from archsim.array.layout import GemmLayout

SHAPE_COLUMNS = ("m", "k", "n", "rows", "cols", "dataflow")
RESULT_COLUMNS = ("cycles", "folds", "mapping_efficiency", "utilization", "compute_utilization",
                  "ifmap_sram_reads", "filter_sram_reads", "ofmap_sram_writes")
# --engine cycle: cycles with stalls, and DRAM words (CycleResult fields)
CYCLE_COLUMNS = ("stall_cycles", "total_cycles", "ifmap_dram_reads", "filter_dram_reads", "ofmap_dram_writes")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--m", type=positive_int, help="rows of A and of the output")
    parser.add_argument("--k", type=positive_int, help="reduction dimension")
    parser.add_argument("--n", type=positive_int, help="columns of B and of the output")
    parser.add_argument("--array", default=None, help="ROWSxCOLS (default 32x32, or the config's)")
    parser.add_argument("--dataflow", default=None, choices=("ws", "os", "is"), help="default ws, or the config's")
    parser.add_argument("--config", default=None, metavar="FILE.cfg",
                        help="SCALE-Sim .cfg: array, dataflow, SRAMs and DRAM bandwidths (flags override)")
    parser.add_argument("--shapes", metavar="FILE.csv", help=f"CSV with columns {','.join(SHAPE_COLUMNS)} (each row its own array; "
                                                          "--config gives the SRAMs, bandwidth and clock)")
    parser.add_argument("--ofmap-count", default="scalesim", choices=("scalesim", "true"),
                        help="scalesim: match SCALE-Sim 3.0.0's os ofmap-write count; true: M·N")
    add_engine_arguments(parser)
    parser.add_argument("--layout", default=None, metavar="FILE.csv",
                        help="with --engine cycle and a USER-mode --config whose [layout] IfmapCustomLayout/"
                             "FilterCustomLayout is on: SCALE-Sim's layout file (its -l); its first row lays "
                             "out the operands and the SRAM banks' conflicts stall the array")
    parser.add_argument("--bank-rule", default="set", choices=("set", "line"),
                        help="with --layout: a word's bank as SCALE-Sim finds it (set: its place in CPython's "
                             "set of the line) or by its place in the line (line: interleaved)")
    parser.add_argument("--min-bandwidth", action="store_true",
                        help="with --engine cycle: add the fewest DRAM words/cycle that run stall-free")
    add_clock_argument(parser)
    add_output_arguments(parser)


def read_shapes(path: str) -> pd.DataFrame:
    """Read and validate a shapes CSV; errors name the file, line and column."""
    import pandas as pd

    text = read_text(path, "shapes file", encoding="utf-8-sig")
    rows = [(n, r) for n, r in csv_rows(text.splitlines(), path) if any(c.strip() for c in r)]
    if not rows:
        raise InputError("empty shapes file", file=path)
    header = [c.strip().lower() for c in rows[0][1] if c.strip()]
    missing = [c for c in SHAPE_COLUMNS if c not in header]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)}", file=path, line=rows[0][0], field=missing[0], missing=True)
    index = {c: header.index(c) for c in SHAPE_COLUMNS}
    records = []
    for line, row in rows[1:]:
        record: dict[str, object] = {}
        for column in SHAPE_COLUMNS:
            position = index[column]
            raw = row[position].strip() if position < len(row) else ""
            if column == "dataflow":
                if raw.lower() not in ("ws", "os", "is"):
                    raise InputError(f"unknown dataflow {raw!r}; choose ws, os or is", file=path, line=line,
                                     field=column)
                record[column] = raw.lower()
                continue
            try:
                record[column] = parse_int(raw, what="a positive integer")
            except ValueError as exc:
                raise InputError(str(exc), file=path, line=line, field=column) from None
        records.append(record)
    if not records:
        raise InputError("no shape rows after the header", file=path)
    return pd.DataFrame.from_records(records, columns=list(SHAPE_COLUMNS))


def cost_shapes(shapes: pd.DataFrame, ofmap_count: OfmapCount = "scalesim") -> pd.DataFrame:
    """The shapes frame plus one column per cost figure, all in one vectorized call."""
    import numpy as np

    from archsim.array.analytic import dataflow_codes, gemm_cost

    m, k, n, rows, cols = (shapes[c].to_numpy(dtype=np.int64) for c in ("m", "k", "n", "rows", "cols"))
    cost = gemm_cost(m, k, n, rows, cols, dataflow_codes(shapes["dataflow"].to_numpy()), ofmap_count=ofmap_count)
    out = shapes.copy()
    for column in RESULT_COLUMNS:
        out[column] = getattr(cost, column)
    return out


def cycle_columns(shapes: pd.DataFrame, memory: ArrayConfig, min_bandwidth: bool = False,
                  layout: GemmLayout | None = None) -> pd.DataFrame:
    """The cycle engine's figures for every shape row, on ``memory``'s SRAMs and bandwidth (and
    custom ``layout``, when given)."""
    import pandas as pd

    from archsim.array.cycle import (  # numba: --engine cycle only
        minimum_bandwidth,
        simulate_cached,
        simulate_gemm,
        sram_words,
    )

    out: dict[str, list[object]] = {column: [] for column in CYCLE_COLUMNS + (("min_bandwidth",) if min_bandwidth else ())}
    for m, k, n, rows, cols, dataflow in shapes[list(SHAPE_COLUMNS)].itertuples(index=False):
        array = replace(memory, rows=int(rows), cols=int(cols), dataflow=str(dataflow))
        if layout is None:
            result = simulate_cached(int(m), int(k), int(n), array)
        else:
            result = simulate_gemm(int(m), int(k), int(n), array.rows, array.cols, array.dataflow,
                                   sram_words=sram_words(array), bandwidth=array.dram_bandwidths, layout=layout)
        for column in CYCLE_COLUMNS:
            out[column].append(result.cycles if column == "total_cycles" else getattr(result, column))
        if min_bandwidth:
            found = minimum_bandwidth(int(m), int(k), int(n), int(rows), int(cols), str(dataflow),
                                      sram_words=sram_words(array))
            out["min_bandwidth"].append("none" if found is None else found)
    return pd.DataFrame(out, index=shapes.index)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from archsim.array.analytic import dataflow_codes, gemm_cost
    from archsim.outputs import render
    from archsim.rows import Rows

    check_engine_flags(args)  # the analytic path never reads the memory flags
    layout = None
    if args.layout is not None:
        if not args.config or args.engine != "cycle" or args.min_bandwidth or args.dram_bandwidth is not None:
            raise InputError("--layout needs --config (its [layout] section) and --engine cycle, without "
                             "--bandwidth or --min-bandwidth (the layout fixes the read bandwidths)", field="layout")
        from archsim.array.layout import layout_from_cfg

        base = read_scalesim_cfg(args.config, layouts=True)
        layout = layout_from_cfg(args.config, args.layout, args.bank_rule)
    else:
        base = read_scalesim_cfg(args.config) if args.config else ArrayConfig()
    if args.config:
        note_device_arrays(args.config)
    if args.clock_ghz is not None:
        base = replace(base, clock_hz=args.clock_ghz * 1e9)
    if args.sram_kb is not None and args.engine != "cycle":
        with_memory(base, sram_kb=args.sram_kb)  # a malformed size is refused as under --engine cycle
        warn_sram_unused(args, "gemm's analytic cycles and SRAM reads")
    if args.shapes:
        if any(v is not None for v in (args.m, args.k, args.n)):
            raise InputError("give either --shapes or --m/--k/--n, not both", field="shapes")
        ignored = [flag for flag, value in (("--array", args.array), ("--dataflow", args.dataflow)) if value]
        if ignored:  # each row names its own array and dataflow
            raise InputError(f"{ignored[0]} does not apply to --shapes: each row gives its rows, cols and dataflow",
                             field="shapes")
        shapes = read_shapes(args.shapes)
    else:
        missing = [f"--{x}" for x in ("m", "k", "n") if getattr(args, x) is None]
        if missing:
            raise InputError(f"missing {', '.join(missing)} (or give --shapes FILE.csv)", field=missing[0], missing=True)
        rows, cols = parse_array_shape(args.array) if args.array else (base.rows, base.cols)
        warn_array_size(rows, cols, args.array, args.config)
        shape = {"m": args.m, "k": args.k, "n": args.n, "rows": rows, "cols": cols,
                 "dataflow": args.dataflow or base.dataflow}
        if args.engine == "analytic" and base.clock_hz is None:  # one row, no frame: pandas stays unloaded
            if args.min_bandwidth:
                raise InputError("--min-bandwidth needs --engine cycle", field="min-bandwidth")
            one = [np.array([shape[c]], dtype=np.int64) for c in SHAPE_COLUMNS[:5]]
            cost = gemm_cost(one[0], one[1], one[2], one[3], one[4], dataflow_codes(shape["dataflow"]), ofmap_count=args.ofmap_count)
            record = {**shape, **{column: getattr(cost, column)[0] for column in RESULT_COLUMNS}}
            emit(render(Rows.of([record]), args.format, precision=args.precision,
                        meta={"ofmap_count": args.ofmap_count, "engine": args.engine}), args)
            return 0
    import pandas as pd

    if not args.shapes:
        shapes = pd.DataFrame([shape], columns=list(SHAPE_COLUMNS))
    if args.min_bandwidth and args.engine != "cycle":
        raise InputError("--min-bandwidth needs --engine cycle", field="min-bandwidth")
    result = cost_shapes(shapes, args.ofmap_count)
    meta: dict[str, object] = {"ofmap_count": args.ofmap_count, "engine": args.engine}
    if args.engine == "cycle":
        memory = with_memory_args(base, args)
        result = pd.concat([result, cycle_columns(shapes, memory, args.min_bandwidth, layout)], axis=1)
        meta.update(memory_meta(memory))
        if layout is not None:
            meta.update(layout=layout.row.name, bank_rule=layout.rule)
    if base.clock_hz is not None:
        meta["clock_ghz"] = base.clock_hz / 1e9
    emit(render(add_seconds(result, base.clock_hz), args.format, precision=args.precision, meta=meta), args)
    return 0


COMMAND = Command("gemm", "SCALE-Sim-exact cost of GEMMs out[MxN] = A[MxK]·B[KxN]", add_arguments, run)
