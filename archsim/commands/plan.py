"""``archsim plan``: pipeline planning over a cluster — SPP, PipeDream's optimizer, and SPP's baselines."""

from __future__ import annotations

import argparse

from archsim.commands import Command
from archsim.commands.common import (
    BATCH_HELP,
    MODE_HELP,
    add_array_arguments,
    add_job_limit_argument,
    add_output_arguments,
    array_from_args,
    clock_ghz_flag,
    emit,
    positive_int,
)
from archsim.commands.network_args import add_network_arguments, network_from_args
from archsim.commands.timeline_outputs import add_timeline_outputs, write_timeline_outputs
from archsim.modes import MODES
from archsim.plan_flags import (  # the flags, once for this command and archsim.plan
    BASELINE_CONFIGS,
    DEFAULT_DTYPE,
    DEFAULT_MICRO_BATCH,
    LINK_MODELS,
    METHODS,
    NO_BASELINES,
    OBJECTIVES,
    REPLICATION_MODELS,
)
from archsim.value_parsers import float_flag, int_flag, seed_flag

__all__ = ["COMMAND", "layer_profile"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_network_arguments(parser)
    parser.add_argument("--cluster", required=True, metavar="CONFIG.toml", help="cluster topology (configs/clusters/); when its servers name a gpu or device, the "
                             "layers are priced on it (docs/formats.md, which device prices plan's layers)")
    parser.add_argument("--microbatches", type=positive_int, required=True, help="micro-batches per iteration")
    parser.add_argument("--method", default="spp", choices=METHODS,
                        help="spp (default); pipedream: PipeDream's optimizer as released (one server: its flat "
                             "setting; servers × GPUs: its two levels); pipedream-prm: the SPP paper's synchronous "
                             "PipeDream (PRM over the cluster's real links); dp, gpipe, hetpipe: SPP's baselines; "
                             "layerpipe: LayerPipe's Algorithm 1 (pipeline's plan on as many processors; δ'/δ'' "
                             "splits priced on an array only) on the first devices in order, one a stage, its borrowed "
                             "δs' results over the links, scheduled by SPP's synchronous PE: no retiming or delayed "
                             "updates; servers of different devices refused, as for every method; docs/cli.md")
    parser.add_argument("--baselines", default=None, choices=(*BASELINE_CONFIGS, NO_BASELINES),
                        help="how the baselines run: archsim (default: dp splits one mini-batch over the GPUs, gpipe "
                             "balances compute, the synchronous pipedream-prm), paper (as the SPP paper's §V-A "
                             "states them: dp trains a mini-batch on every GPU, gpipe balances layer counts, "
                             "pipedream is PipeDream's optimizer; docs/papers/spp.md) or none (run no baseline: "
                             "SPP alone, its search alone counted by --max-search-steps)")
    parser.add_argument("--seed", type=seed_flag, default=None, help="redraw the cluster's bandwidth ranges")
    parser.add_argument("--links", default="paper", choices=LINK_MODELS,
                        help="how transfers and all-reduces between GPUs are priced: paper (default: the SPP paper's "
                             "bytes / bandwidth, each replica pair of a split boundary on a link of its own) or exact "
                             "(as train prices them: a send is its link's launch latency plus the bytes at "
                             "η·bandwidth, a boundary's replica pairs share the GPU links and NICs they leave or "
                             "arrive on, and a stage's all-reduce is train's collective over its GPUs, slowed across "
                             "leaves by train's uplink factor; needs every server to name a gpu or device; "
                             "docs/papers/spp.md)")
    parser.add_argument("--replication", default="paper", choices=REPLICATION_MODELS,
                        help="how SPP's replicas of a stage share a micro-batch: paper (default: each runs 1/r of it, "
                             "any r, the SPP paper's §III-B) or exact (each takes whole samples: ⌈m/r⌉/m of it for m "
                             "samples per micro-batch, and a stage has at most m replicas; docs/papers/spp.md)")
    parser.add_argument("--objective", default="paper", choices=OBJECTIVES,
                        help="which plan SPP keeps of each stage count: paper (default: PRM's best by its objective 𝒲, "
                             "the SPP paper's §IV-B) or exact (the one PE runs fastest of every plan PRM's tables "
                             "hold with its last stage's layers and GPUs and the GPUs before it free, scheduled in "
                             "rising 𝒲 until 𝒲 reaches the best makespan; docs/papers/spp.md)")
    parser.add_argument("--max-stages", type=positive_int, default=None,
                        help="try at most this many stages (default: as many as devices and layers allow)")
    pipedream = parser.add_argument_group("PipeDream's optimizer (--method pipedream), as its own flags")
    pipedream.add_argument("--activation-compression-ratio", type=float_flag(1e-6, 1e6, what="a compression ratio"),
                           default=None, metavar="R",
                           help="count activation transfers, compressed R× (default: ignored, as the optimizer's CLI)")
    pipedream.add_argument("--memory-constraint", action="store_true",
                           help="skip stages whose stash exceeds a GPU's memory (the servers' device's; else the "
                                "cluster's gpu_memory_gb, default 16)")
    pipedream.add_argument("--straight-pipeline", action="store_true", help="no stage replication")
    pipedream.add_argument("--use-fewer-machines", action="store_true", help="a plan may leave machines idle")
    add_array_arguments(parser, device_dtype=DEFAULT_DTYPE, fp8=True)  # on the servers' GPU: train's fp16, not int8
    parser.add_argument("--micro-batch", type=positive_int, default=None,
                        help=f"samples per micro-batch (layer costs; default {DEFAULT_MICRO_BATCH})")
    parser.add_argument("--batch", type=positive_int, default=None,
                        help=f"{BATCH_HELP['plan']} (default: none, --micro-batch gives the micro-batch)")
    parser.add_argument("--mode", default=None, choices=MODES,  # None: not given (check_flags)
                        help=f"{MODE_HELP} (default: exact; refused with a graph.txt, whose layers are measured)")
    parser.add_argument("--clock-ghz", type=clock_ghz_flag, default=None, metavar="GHZ",
                        help="array clock, to turn cycles into seconds (default 1); with a cluster whose servers "
                             "name a device, any array flag prices on the array instead of the device")
    add_timeline_outputs(parser)
    add_output_arguments(parser)
    add_job_limit_argument(parser)
    from archsim.spp import SEARCH_STEP_LIMIT  # not archsim.spp.plan: --method pipedream needs none of SPP's search

    parser.add_argument("--max-search-steps", type=int_flag(1, 10**15, "a step count"), default=None,
                        metavar="N", help=f"refuse SPP searches (every method but pipedream runs SPP) of more PRM "
                                          "steps than this, with the pipedream-prm baseline's search of every stage "
                                          "count unless --baselines none or paper leaves it out "
                                          f"(default {SEARCH_STEP_LIMIT:,}, about 10 s of PRM tables)")


def _network(args: argparse.Namespace):
    """The NETWORK flag's network; :mod:`archsim.plan_profile` notes a batch its file fixes, at plan's mini-batch."""
    return network_from_args(args, batch_note=False)


def _array(args: argparse.Namespace):
    """The array the layers are priced on: a ``.cfg``'s GEMMs at its ``[macs_per_pe]`` rate of ``--dtype``, as
    ``cost``'s (:func:`array_from_args`, ``rated``); one MAC per PE per cycle without ``--dtype`` (int8)."""
    return array_from_args(args, rated=True)


def layer_profile(args: argparse.Namespace):
    """:func:`archsim.plan_profile.layer_profile` with the command's network and array flags (notes on stderr). Public:
    the profile ``plan`` prices is checked apart from the plan made of it."""
    from archsim.console import say
    from archsim.plan_profile import layer_profile as priced

    return priced(args, loader=_network, array_of=_array, speak=say)


def run(args: argparse.Namespace) -> int:
    from archsim.commands.common import phases, print_cluster_lines
    from archsim.console import say_after_run
    from archsim.outputs import render
    from archsim.plan_run import run_plan
    from archsim.rows import Rows

    drawn = bool(args.gantt or args.trace or args.schedule_csv)
    # the run's notes (servers' devices set aside, --max-stages above the plans) after it, as the cluster file's:
    # a refused run prints its error line alone (docs/cli.md)
    done = run_plan(args, loader=_network, array_of=_array, speak=say_after_run, drawn=drawn,
                    phases=phases)
    meta = done.meta
    if meta.get("method") == "pipedream" and args.format != "json":  # its tables of levels: JSON's alone
        meta = {k: v for k, v in meta.items() if k not in ("levels", "time_per_stage_by_machines")}
    if done.timeline is not None:  # SPP's always; PipeDream's where drawn (it writes only what was asked)
        write_timeline_outputs(args, done.timeline, done.title, unit=done.unit, rows_title=done.rows_title,
                               caption=done.caption)
    emit(render(Rows.of(done.rows), args.format, precision=args.precision, meta=meta), args)
    print_cluster_lines(done.warnings, done.notes)  # the run done, as train's: notes never precede an error line
    return 0


COMMAND = Command("plan", "pipeline planning over a cluster: SPP, PipeDream's optimizer, baselines", add_arguments, run)
