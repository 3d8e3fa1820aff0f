"""``archsim sparse``: a SCALE-Sim sparsity run (``.cfg`` with ``[sparsity] SparsitySupport : true``
and a topology with a ``Sparsity`` column), per layer: SCALE-Sim's compute cycles, SRAM counts and
sparse report, and the δ/G cycles of training the pruned layer under named options."""

from __future__ import annotations

import argparse

from archsim.array.sparse_network import read_sparse_run, sparse_table
from archsim.array.sparse_training import DELTA_OPTIONS, GRADIENT_OPTIONS, SparseTraining
from archsim.cli import Command
from archsim.commands.common import add_output_arguments, emit, positive_int
from archsim.outputs import render

HELP = "SCALE-Sim-exact sparse layers (N:M, CSR/CSC/ELLPACK) and their δ/G training cycles"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, metavar="FILE.cfg",
                        help="SCALE-Sim .cfg with [sparsity] SparsitySupport : true")
    parser.add_argument("--topology", required=True, metavar="FILE.csv",
                        help="SCALE-Sim topology (conv or Layer, M, N, K) with a Sparsity N:M column")
    parser.add_argument("--delta", default="transposed", choices=DELTA_OPTIONS,
                        help="transposed: δ skips the dA columns of all-zero weight rows; dense: full GEMM")
    parser.add_argument("--gradient", default="dense", choices=GRADIENT_OPTIONS,
                        help="dense: G computes every weight's gradient; masked: only rows holding kept weights")
    parser.add_argument("--batch", type=positive_int, default=1,
                        help="samples per GEMM (SCALE-Sim has none: 1 reproduces its numbers)")
    parser.add_argument("--energy", action="store_true",
                        help="add energy_pj (F+δ+G, compressed weights and metadata counted) and dense_energy_pj")
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:
    array, sparsity, network, ratios = read_sparse_run(args.config, args.topology)
    options = SparseTraining(delta=args.delta, gradient=args.gradient)
    table = sparse_table(array, sparsity, network, ratios, options, args.batch, args.energy)
    meta = {"array": f"{array.rows}x{array.cols}", "dataflow": array.dataflow,
            "representation": sparsity.representation, "optimized_mapping": sparsity.optimized_mapping,
            "block_size": sparsity.block_size, "seed": sparsity.seed, "delta": args.delta,
            "gradient": args.gradient, "batch": args.batch,
            "stalls": "not modelled: F_cycles are SCALE-Sim's Total Cycles minus Stall Cycles"}
    emit(render(table, args.format, precision=args.precision, meta=meta), args)
    return 0


COMMAND = Command("sparse", HELP, add_arguments, run)
