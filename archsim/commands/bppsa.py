"""``archsim bppsa``: back-propagation as a parallel scan — the RNN study and the pruned VGG-11 study.

``archsim bppsa rnn`` models Fig. 8 (backward-pass speedup as T and p vary) on systolic arrays;
``archsim bppsa pruned-vgg11`` counts Fig. 10's FLOPs per scan step from CSR sparsity patterns;
``archsim bppsa network NETWORK`` counts them for a network of the user's own (a chain of conv, fc, pool and
ReLU, sigmoid or tanh layers) and checks the scan's gradients against plain BP.
"""

from __future__ import annotations

import argparse

from archsim.bppsa_run import (
    PAPER_SEQ_LENS,
    parse_up_levels,
    rnn_page,
    vgg_page,
    without_repeats,
)
from archsim.choices.bppsa import DEFAULT_MAX_SCAN_MFLOPS, NETWORK_MAX_MFLOPS, ZEROS
from archsim.commands import Command
from archsim.commands.common import (
    add_array_arguments,
    add_output_arguments,
    array_from_args,
    emit,
    positive_int,
)
from archsim.commands.list_flag import ListFlag
from archsim.console import warn
from archsim.errors import InputError
from archsim.output_files import note_written
from archsim.output_targets import output_flag
from archsim.value_parsers import seed_flag


def _depth(text: str, flag: str) -> int:
    """A whole up-sweep depth (no 'full'): :func:`~archsim.bppsa_run.parse_up_levels` that never returns None."""
    depth = parse_up_levels(text, flag, full=False)
    assert depth is not None, "full=False refuses 'full'"
    return depth


def _seq_len(text: str) -> int:
    """argparse type: :func:`~archsim.bppsa.rnn_cost.check_seq_len`'s T ≥ 2, refused as the flag's own error."""
    from archsim.bppsa.rnn_cost import check_seq_len

    try:
        return check_seq_len(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def add_rnn_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seq-len", action=ListFlag, item=_seq_len, metavar="T",
                        default=[int(t) for t in PAPER_SEQ_LENS.split(",")],
                        help=f"sequence lengths T ≥ 2 (default {PAPER_SEQ_LENS})")
    parser.add_argument("--hidden", type=positive_int, default=20, help="hidden size H (default 20, §4.1)")
    parser.add_argument("--batch", type=positive_int, default=16, help="mini-batch size B (default 16, §5.1)")
    parser.add_argument("--processors", action=ListFlag, item=positive_int, default=[64, 256, 1024], metavar="P",
                        help="processor (array) counts p (default 64,256,1024)")
    add_array_arguments(parser, fp8=True)  # fp8: a .cfg's fp8 rate in 1-byte words, as cost's
    add_output_arguments(parser)
    parser.add_argument("--report", type=output_flag, default=None, metavar="OUT.html", help="write the HTML study page")


def run_rnn(args: argparse.Namespace) -> int:
    from archsim.bppsa_run import rnn_study
    from archsim.outputs import render

    hidden, batch = args.hidden, args.batch
    array = array_from_args(args, rated=True)  # a .cfg's GEMMs at its [macs_per_pe] rate of --dtype, as cost's
    seq_lens = without_repeats(args.seq_len, "seq-len", warn)
    processors = without_repeats(args.processors, "processors", warn)
    done = rnn_study(seq_lens, processors, hidden=hidden, batch=batch, array=array, dtype=args.dtype)
    emit(render(done.table, args.format, precision=args.precision, meta=done.meta), args)
    if args.report:
        path = rnn_page(args.report, done, seq_lens=seq_lens, processors=processors, hidden=hidden, batch=batch,
                        array=array, dtype=args.dtype, config=args.config)
        note_written(f"wrote {path}")
    return 0


def _width_divisor(text: str) -> int:
    """--width-divisor's type: a positive integer dividing every VGG-11 width, refused as the flag's own error."""
    from archsim.bppsa.vgg import check_width_divisor

    try:
        return check_width_divisor(positive_int(text))
    except InputError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def add_vgg_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sparsity", type=float, default=0.97, help="fraction of weights pruned (default 0.97, §4.3)")
    parser.add_argument("--seed", type=seed_flag, default=0, help="pruning and input seed (default 0)")
    parser.add_argument("--up-levels", default="2",
                        help="up-sweep levels before the linear part (default 2, §5.3's L0–L2; 'full' = Algorithm 1, "
                             "at full width minutes, above the default --max-mflops)")
    parser.add_argument("--compare-levels", action=ListFlag, default=["0", "1", "2"], metavar="DEPTH",
                        help="up-sweep depths (0…4) to summarize side by side, depth 0 (the linear scan: BP's "
                             "steps) always among them (default 0,1,2)")
    parser.add_argument("--width-divisor", type=_width_divisor, default=1,
                        help="divide every channel count (default 1: real VGG-11)")
    parser.add_argument("--zeros", choices=ZEROS, default="pattern",
                        help="'pattern': count input-dependent zeros (ReLU, pooling) as stored, valid for every input "
                             "(default); 'values': drop them for this input, as a real run's CSR Jacobians would")
    parser.add_argument("--max-mflops", type=positive_int, default=DEFAULT_MAX_SCAN_MFLOPS, metavar="N",
                        help=f"refuse a study whose scans are estimated above N million FLOPs (default "
                             f"{DEFAULT_MAX_SCAN_MFLOPS:,}: --sparsity 0.7 at full width is about 44,000, 91 s and "
                             "3.2 GB; 0 about 450,000)")
    add_output_arguments(parser)
    parser.add_argument("--report", type=output_flag, default=None, metavar="OUT.html", help="write the HTML study page")


def run_vgg(args: argparse.Namespace) -> int:
    from archsim.bppsa.vgg import check_sparsity
    from archsim.bppsa_run import vgg_study
    from archsim.outputs import render

    sparsity, up_levels = check_sparsity(args.sparsity), parse_up_levels(args.up_levels)
    divisor = args.width_divisor
    depths = [_depth(x, "--compare-levels") for x in args.compare_levels]
    compare = sorted({0, *without_repeats(depths, "compare-levels", warn)})
    done = vgg_study(sparsity=sparsity, seed=args.seed, up_levels=up_levels, compare=compare, width_divisor=divisor,
                     zeros=args.zeros, max_mflops=args.max_mflops)
    emit(render(done.table, args.format, precision=args.precision, meta=done.meta), args)
    if args.report:
        path = vgg_page(args.report, done, compare_levels=args.compare_levels, width_divisor=divisor)
        note_written(f"wrote {path}")
    return 0


def add_network_study_arguments(parser: argparse.ArgumentParser) -> None:
    from archsim.commands.network_args import add_network_arguments

    add_network_arguments(parser)
    parser.add_argument("--batch", type=positive_int, default=1,
                        help="mini-batch size B: B independent chains, B times the FLOPs (default 1)")
    parser.add_argument("--up-levels", default="full",
                        help="up-sweep levels before the linear part (default 'full': Algorithm 1; 0: the linear "
                             "scan, BP's steps)")
    parser.add_argument("--seed", type=seed_flag, default=0, help="weights' and input's seed (default 0)")
    parser.add_argument("--max-mflops", type=positive_int, default=NETWORK_MAX_MFLOPS, metavar="N",
                        help=f"refuse a network whose BP or scan counts more than N million FLOPs (default "
                             f"{NETWORK_MAX_MFLOPS:,}: about a minute)")
    add_output_arguments(parser)
    parser.add_argument("--report", type=output_flag, default=None, metavar="OUT.html", help="write the HTML study page")


def run_network(args: argparse.Namespace) -> int:
    from archsim.bppsa_run import network_page, network_study
    from archsim.commands.network_args import network_from_args
    from archsim.outputs import render

    network = network_from_args(args)
    done = network_study(network, batch=args.batch, depth_text=args.up_levels, seed=args.seed,
                         max_mflops=args.max_mflops)
    emit(render(done.table, args.format, precision=args.precision, meta=done.meta), args)
    if args.report:
        path = network_page(args.report, done, network=args.network)
        note_written(f"wrote {path}")
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="study", metavar="STUDY", help="rnn, pruned-vgg11 or network")
    sub.required = True
    rnn = sub.add_parser("rnn", help="RNN backward-pass speedup as T and p vary (Fig. 8)")
    add_rnn_arguments(rnn)
    rnn.set_defaults(_study=run_rnn)
    vgg = sub.add_parser("pruned-vgg11", help="FLOPs per scan step of a pruned VGG-11 (Fig. 10)")
    add_vgg_arguments(vgg)
    vgg.set_defaults(_study=run_vgg)
    own = sub.add_parser("network", help="FLOPs per scan step of your own network, checked against BP")
    add_network_study_arguments(own)
    own.set_defaults(_study=run_network)


def run(args: argparse.Namespace) -> int:
    return args._study(args)


COMMAND = Command("bppsa", "back-propagation as a parallel scan: RNN speedup, pruned VGG-11 and your network's FLOPs",
                  add_arguments, run)
