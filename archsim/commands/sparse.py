"""``archsim sparse``: a SCALE-Sim sparsity run (``.cfg`` with ``[sparsity] SparsitySupport : true``
and a topology with a ``Sparsity`` column), per layer: SCALE-Sim's compute cycles, SRAM counts and
sparse report, and the δ/G cycles of training the pruned layer under named options."""

from __future__ import annotations

import argparse

from archsim.choices.devices import DELTA_OPTIONS, GRADIENT_OPTIONS
from archsim.commands import Command
from archsim.commands.common import add_output_arguments, emit, positive_int
from archsim.planners import PARTITIONERS
from archsim.value_parsers import processors_flag

HELP = "SCALE-Sim-exact sparse layers (N:M, CSR/CSC/ELLPACK) and their δ/G training cycles"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, metavar="FILE.cfg",
                        help="SCALE-Sim .cfg with [sparsity] SparsitySupport : true")
    network = parser.add_mutually_exclusive_group(required=True)  # one of the two, checked as flags are parsed
    network.add_argument("network", metavar="NETWORK", nargs="?", default=None,
                         help="SCALE-Sim topology CSV (conv or Layer, M, N, K) with a Sparsity N:M column")
    network.add_argument("--topology", metavar="FILE.csv", default=None,
                         help="the same as NETWORK (the older spelling, kept)")
    parser.add_argument("--delta", default="transposed", choices=DELTA_OPTIONS,
                        help="transposed: δ skips the dA columns of all-zero weight rows; dense: full GEMM")
    parser.add_argument("--gradient", default="dense", choices=GRADIENT_OPTIONS,
                        help="dense: G computes every weight's gradient; masked: only rows holding kept weights")
    parser.add_argument("--batch", type=positive_int, default=1,
                        help="samples per GEMM (SCALE-Sim has none: 1 reproduces its numbers)")
    parser.add_argument("--energy", action="store_true",
                        help="add energy_pj (F+δ+G, compressed weights and metadata counted) and dense_energy_pj")
    parser.add_argument("--processors", type=processors_flag, default=None,
                        help="instead of the layer table: partition the pruned network over P processors")
    parser.add_argument("--method", default=None, choices=PARTITIONERS,
                        help="with --processors: the partitioner (LayerPipe borrows whole δs only; the dense "
                             "bottleneck in the header is the unpruned network under the same rule) "
                             "(default: layerpipe)")
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from archsim.outputs import render
    from archsim.sparse_run import run_sparse

    done = run_sparse(args.network or args.topology, config=args.config, delta=args.delta, gradient=args.gradient,
                      batch=args.batch, energy=args.energy, processors=args.processors, method=args.method)
    emit(render(done.table, args.format, precision=args.precision, meta=done.meta), args)
    return 0


COMMAND = Command("sparse", HELP, add_arguments, run)
