"""``archsim collective``: what one NCCL collective of each of several sizes costs over a group of a cluster file's GPUs,
priced on the links ``archsim train`` gives such a group (:func:`archsim.collective`, one row per size): nccl-tests'
columns, its size, time, algorithm and bus bandwidth, beside the algorithm NCCL's choice by size runs."""

from __future__ import annotations

import argparse

from archsim.choices.collectives import DEFAULT_NBYTES, GROUP_KINDS
from archsim.collective_units import nbytes_flag as _bytes
from archsim.commands import Command
from archsim.commands.common import add_output_arguments, emit, positive_int
from archsim.commands.list_flag import ListFlag


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", choices=GROUP_KINDS, help="the collective: all-reduce, all-gather, reduce-scatter or "
                                                          "all-to-all")
    parser.add_argument("--cluster", required=True, metavar="CLUSTER.toml",
                        help='cluster TOML whose [[servers]] name their GPU (gpu = "h100") or a device file, as train '
                             "reads it")
    parser.add_argument("--gpus", type=positive_int, required=True,
                        help="GPUs in the group: in a row as a TP group lies (inside one server, or whole servers), "
                             "or --per-server in each server")
    parser.add_argument("--per-server", type=positive_int, default=None,
                        help="the group's GPUs in each of its servers, a divisor of a server's GPUs (1: one GPU a "
                             "server, DP's group when TP fills a server); every group of that shape runs at once, as "
                             "in training (default: the GPUs in a row)")
    parser.add_argument("--nbytes", action=ListFlag, item=_bytes, default=None, metavar="BYTES",
                        help="sizes, nccl-tests' (an all-reduce's or all-to-all's buffer on each GPU, an all-gather's "
                             "gathered output, a reduce-scatter's input), whole bytes; 1e9 is read, and so are 1GiB and "
                             "nccl-tests' 1G (2^30; 1GB is refused as ambiguous) (default: 1 MiB … 4 GiB "
                             "by ×4, 2^20 … 2^32)")
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from archsim.collective_run import price_collective
    from archsim.console import say_after_run
    from archsim.outputs import render
    from archsim.rows import Rows
    from archsim.training.cluster_file import load_gpu_cluster

    loaded = load_gpu_cluster(args.cluster)
    costs = [price_collective(args.kind, float(size), loaded, args.gpus, args.per_server)
             for size in args.nbytes or DEFAULT_NBYTES]
    for kind, lines in (("warning", loaded.warnings), ("note", loaded.unread)):  # the file's, as train says them
        for text in lines:
            say_after_run(kind, text)
    first = costs[0]
    meta = {"collective": args.kind, "cluster_file": args.cluster, "gpus": first.gpus, "per_server": first.per_server,
            "servers_spanned": first.servers, "crosses_leaves": first.crosses_leaves}
    rows = Rows.of({"nbytes": int(cost.nbytes) if cost.nbytes.is_integer() else cost.nbytes, "collective_seconds": cost.seconds,
                    "algorithm_gbytes_per_s": cost.algorithm_gbytes_per_s, "bus_gbytes_per_s": cost.bus_gbytes_per_s,
                    "nccl_algorithm": cost.nccl_algorithm} for cost in costs)
    emit(render(rows, args.format, precision=args.precision, meta=meta), args)
    return 0


COMMAND = Command("collective", "one NCCL collective per size over a group of a cluster's GPUs: time, bus bandwidth, "
                                "algorithm", add_arguments, run)
