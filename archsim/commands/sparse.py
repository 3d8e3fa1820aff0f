"""``archsim sparse``: a SCALE-Sim sparsity run (``.cfg`` with ``[sparsity] SparsitySupport : true``
and a topology with a ``Sparsity`` column), per layer: SCALE-Sim's compute cycles, SRAM counts and
sparse report, and the δ/G cycles of training the pruned layer under named options."""

from __future__ import annotations

import argparse
from dataclasses import replace

from archsim.choices.devices import DELTA_OPTIONS, GRADIENT_OPTIONS
from archsim.commands import Command
from archsim.commands.common import add_output_arguments, emit, positive_int
from archsim.errors import InputError
from archsim.planners import PARTITIONERS
from archsim.validate import processors_flag

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


def stalls_note(array, sparsity) -> str:
    """What the table says of memory stalls, in one line."""
    from archsim.array.sparse_network import memory_modelled  # pandas: only when the command runs

    if not array.user_bandwidth:
        return "none: CALC bandwidth mode (F_cycles are SCALE-Sim's Total Cycles)"
    if memory_modelled(array, sparsity):
        return ("cycle engine on the condensed GEMM with each conv layer's windows (repeated ifmap words, off-edge "
                "nulls): F_total_cycles and F_stall_cycles are SCALE-Sim's USER-mode Total and Stall Cycles, exact "
                "for GEMM, fc and conv layers (dilation 1)")
    return ("not modelled for row-wise mapping (OptimizedMapping): F_cycles are SCALE-Sim's Total Cycles minus "
            "Stall Cycles")


def check_flags(args: argparse.Namespace) -> None:
    """Refuse a flag the run would drop: --method only partitions, --energy is a layer-table column."""
    if args.processors is None and args.method is not None:
        raise InputError("--method needs --processors (without it the layer table is printed)", field="method")
    if args.processors is not None and args.energy:
        raise InputError("--energy adds columns to the layer table; --processors prints the partition instead",
                         field="energy")


def ratios_note(sparsity, ratios) -> str:
    """What row-wise mapping (OptimizedMapping) does with the topology's N:M column, as SCALE-Sim does: each filter
    keeps n of every block of BlockSize weights, n drawn from the seed, so the column's N sets nothing."""
    shown = ", ".join(dict.fromkeys(f"{n}:{m}" for n, m in ratios))
    metadata = " (only their M sizes ELLPACK's metadata)" if sparsity.representation == "ellpack_block" else ""
    return (f"row-wise mapping (OptimizedMapping): each filter keeps n of every block of {sparsity.block_size} "
            f"weights, n drawn from the seed in 1…{sparsity.block_size // 2}, as SCALE-Sim does; the topology's "
            f"Sparsity ratios ({shown}) do not set the kept weights{metadata}: set OptimizedMapping false to cost them")


def run(args: argparse.Namespace) -> int:
    from archsim.array.sparse_network import read_sparse_run, sparse_table
    from archsim.array.sparse_training import SparseTraining
    from archsim.outputs import render
    from archsim.partition import build_profile
    from archsim.partition.pruned import pruned_profile
    from archsim.planners import partition

    check_flags(args)
    array, sparsity, network, ratios = read_sparse_run(args.config, args.network or args.topology)
    options = SparseTraining(delta=args.delta, gradient=args.gradient)
    table = sparse_table(array, sparsity, network, ratios, options, args.batch, args.energy)
    meta = {"array": f"{array.rows}x{array.cols}", "dataflow": array.dataflow,
            "representation": sparsity.representation, "optimized_mapping": sparsity.optimized_mapping,
            # BlockSize is read with row-wise mapping only (layer-wise N:M: each layer's M is its block)
            "block_size": sparsity.block_size if sparsity.optimized_mapping else None, "seed": sparsity.seed,
            "delta": args.delta,
            "gradient": args.gradient, "batch": args.batch, "stalls": stalls_note(array, sparsity)}
    if sparsity.optimized_mapping:  # SCALE-Sim draws the ratios itself there: the column is not what ran
        meta["ratios"] = ratios_note(sparsity, ratios)
    if args.processors is not None:
        dense = build_profile(network, array, args.batch, "exact")
        pruned = pruned_profile(table, dense, array.element_bytes)
        method = args.method or "layerpipe"
        plan = partition(pruned, args.processors, method)
        unsplit = replace(pruned, forward=dense.forward, weight_grad=dense.weight_grad, delta=dense.delta,
                          weight_bytes=dense.weight_bytes)  # the dense network under the same rules
        meta.update(method=method, processors=args.processors,
                    single_processor_cycles=float(pruned.total.sum()),
                    dense_single_processor_cycles=float(dense.total.sum()),
                    iteration_cycles=plan.max_stage_cost,
                    dense_iteration_cycles=partition(unsplit, args.processors, method).max_stage_cost)
        table = plan.to_frame()
    emit(render(table, args.format, precision=args.precision, meta=meta), args)
    return 0


COMMAND = Command("sparse", HELP, add_arguments, run)
