"""``archsim gemm``: SCALE-Sim-exact cost of one GEMM, or of every row of a shapes CSV (with
``--engine cycle``: also its stall cycles and DRAM traffic under SCALE-Sim's USER-bandwidth model)."""

from __future__ import annotations

import argparse

from archsim.array.gemm_run import (  # the run, once for this command and archsim.gemm
    BANK_RULES,
    OFMAP_COUNTS,
    SHAPE_COLUMNS,
)
from archsim.commands import Command
from archsim.commands.common import (
    add_clock_argument,
    add_engine_arguments,
    add_output_arguments,
    add_width_arguments,
    emit,
    note_unread_keys,
    positive_int,
)
from archsim.training.job_settings import elsewhere

__all__ = ["COMMAND"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--m", type=positive_int, help="rows of A and of the output")
    parser.add_argument("--k", type=positive_int, help="reduction dimension")
    parser.add_argument("--n", type=positive_int, help="columns of B and of the output")
    parser.add_argument("--array", default=None, help="ROWSxCOLS (default 32x32, or the config's)")
    parser.add_argument("--dataflow", default=None, choices=("ws", "os", "is"), help="default ws, or the config's")
    parser.add_argument("--config", default=None, metavar="FILE.cfg|FILE.toml",
                        help="SCALE-Sim .cfg: array, dataflow, SRAMs and DRAM bandwidths (flags override); or a "
                             "device TOML (train's device file: one of its arrays, read as cost and energy read it)")
    add_width_arguments(parser, fp8=True)
    parser.add_argument("--shapes", metavar="FILE.csv", help=f"CSV with columns {','.join(SHAPE_COLUMNS)} (each row its own array; "
                                                          "--config gives the SRAMs, bandwidth and clock)")
    parser.add_argument("--ofmap-count", default="scalesim", choices=OFMAP_COUNTS,
                        help="scalesim: match SCALE-Sim 3.0.0's os ofmap-write count; true: M·N")
    add_engine_arguments(parser)
    parser.add_argument("--layout", default=None, metavar="FILE.csv",
                        help="with --engine cycle and a USER-mode --config whose [layout] IfmapCustomLayout/"
                             "FilterCustomLayout is on: SCALE-Sim's layout file (its -l); its first row lays "
                             "out the operands and the SRAM banks' conflicts stall the array")
    parser.add_argument("--bank-rule", default="set", choices=BANK_RULES,
                        help="with --layout: a word's bank as SCALE-Sim finds it (set: its place in CPython's "
                             "set of the line) or by its place in the line (line: interleaved)")
    parser.add_argument("--min-bandwidth", action="store_true",
                        help="with --engine cycle: add the fewest DRAM words/cycle that run stall-free")
    add_clock_argument(parser)
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from archsim.array.device_sections import is_device_toml
    from archsim.array.gemm_run import run_gemm
    from archsim.array.options import element_width
    from archsim.console import say_after_run
    from archsim.device_toml import device_toml_dtype, device_toml_notes
    from archsim.gemm_chip import with_chip_seconds
    from archsim.outputs import render

    toml = is_device_toml(args.config) and args.layout is None  # a --layout reads a .cfg's [layout]: refused there
    args.dtype = device_toml_dtype(args.config, args.dtype, args.element_bytes)  # a device TOML's: train's
    width = element_width(args.dtype, args.element_bytes)
    read, notes = device_toml_notes(args.config, None, None, width, engine=args.engine, bandwidth=args.dram_bandwidth,
                                    flag=args.bandwidth_flag.lstrip("-"), dtype=args.dtype) if toml else (None, [])
    for kind, text in notes:  # the lines cost says of the file, word for word (the one reader's), after the run
        say_after_run(kind, text)
    done = run_gemm(m=args.m, k=args.k, n=args.n, array=args.array, dataflow=args.dataflow, config=args.config,
                    shapes=args.shapes, ofmap_count=args.ofmap_count, engine=args.engine,
                    dram_bandwidth=args.dram_bandwidth, sram_kb=args.sram_kb, layout=args.layout,
                    bank_rule=args.bank_rule, min_bandwidth=args.min_bandwidth, clock_ghz=args.clock_ghz,
                    bandwidth_flag=args.bandwidth_flag, dtype=args.dtype, element_bytes=args.element_bytes,
                    toml_array=read)
    done = with_chip_seconds(done, args.config, engine=args.engine, dtype=args.dtype, shapes=bool(args.shapes))
    if args.config and not toml:  # array/ reads the file's arrays, never its device keys: said here, as cost says it
        note_unread_keys(args.config, rates_read=True)  # gemm runs a .cfg's GEMMs at its [macs_per_pe]
    emit(render(done.table, args.format, precision=args.precision, meta=done.meta), args)
    return 0


COMMAND = Command("gemm", "SCALE-Sim-exact cost of GEMMs out[MxN] = A[MxK]·B[KxN]", add_arguments, run,
                  tuple(elsewhere("gemm").items()))
