"""``archsim search``: the fastest TP × PP × DP × micro-batch × recompute × schedule × sequence
parallelism for a transformer on a GPU cluster (:mod:`archsim.training.search`)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from archsim.choices.devices import DTYPES, TRAIN_DTYPE
from archsim.choices.schedules import TRAINING_SCHEDULES
from archsim.choices.training import (
    ATTENTIONS,
    BALANCES,
    CP_COMMS,
    DEFAULT_ATTENTION,
    DEFAULT_P2P,
    DP_OVERLAPS,
    ETP_TP,
    FP8_RECIPES,
    FSDP_GRAD_SYNCS,
    FSDP_RESHARDS,
    GRAD_ACCUMULATIONS,
    MAX_REFINE_ACTIONS,
    MAX_SEQ,
    OBJECTIVES,
    P2P_HELP,
    P2P_MODES,
    PLACEMENTS,
    RECOMPUTE,
)
from archsim.commands import Command
from archsim.commands.common import (
    add_model_argument,
    add_output_arguments,
    emit,
    global_batch_required,
    note_default_seq,
    note_unread_cluster_keys,
    positive_int,
)
from archsim.commands.list_flag import ListFlag
from archsim.commands.moe_flags import add_mtp_argument, add_overlap_arguments, add_routing_arguments
from archsim.commands.timeline_outputs import add_timeline_outputs
from archsim.console import note, notes_kept
from archsim.output_files import note_written
from archsim.output_targets import output_flag
from archsim.training.job_settings import elsewhere
from archsim.validate import INT32_MAX
from archsim.value_parsers import int_flag, int_or_word_flag, seq_flag

HELP = "search TP × PP × DP × micro-batch × recompute × schedule for the fastest training iteration"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_argument(parser)
    parser.add_argument("--cluster", required=True, metavar="CLUSTER.toml",
                        help='cluster TOML whose [[servers]] name their GPU (gpu = "a100-80gb")')
    parser.add_argument("--global-batch", type=positive_int, default=None,  # refused in run(), saying what it is
                        help="samples per iteration (required)")
    parser.add_argument("--gpus", action=ListFlag, item=positive_int, default=None,
                        help="GPUs to use, one count or several to compare (default: all the cluster's; the first "
                             "GPUs of the cluster file)")
    parser.add_argument("--seq", type=seq_flag, default=None,
                        help=f"sequence length, tokens per sample, at most {MAX_SEQ:,} (default: the config's)")
    parser.add_argument("--tp", action=ListFlag, item=positive_int, default=None,
                        help="tensor-parallel degrees to try, one or several (--tp 8, --tp 4 8), as archsim train's "
                             "--tp (default: every divisor of the GPUs); each divides the GPUs")
    parser.add_argument("--pp", action=ListFlag, item=positive_int, default=None,
                        help="pipeline-parallel degrees to try, one or several, as archsim train's --pp (default: "
                             "every divisor of the GPUs); each divides the GPUs")
    parser.add_argument("--cp", action=ListFlag, item=positive_int, default=None,
                        help="context-parallel degrees to try, one or several (default 1; at 32,768 tokens or more a "
                             "note says CP was not searched), as archsim train's --cp: each divides the GPUs, "
                             "TP × PP × DP over GPUs / CP")
    parser.add_argument("--ep", action=ListFlag, item=positive_int, default=None,
                        help="expert-parallel degrees to try for a mixture of experts, one or several, as archsim "
                             "train's --ep (default: every divisor of its expert count; a dense model: 1); a row's EP "
                             "divides the experts and, at ETP = TP, CP × DP (Megatron-Core's expert groups take the "
                             "CP ranks as DP ranks)")
    parser.add_argument("--etp", action=ListFlag, item=int_or_word_flag(ETP_TP), default=None, metavar="N|tp",
                        help="the experts' tensor-parallel degrees to try for a mixture of experts, as archsim train's "
                             "--etp: integers, and tp for each configuration's own TP (--etp 1 tp) (default: tp "
                             "alone, Megatron-LM's default); a row's ETP × EP divides TP × CP × DP, and its "
                             "command names --etp where ETP is not TP; an integer on a dense model is refused")
    add_routing_arguments(parser, capacity=False, whose="every configuration's")
    add_overlap_arguments(parser)
    add_mtp_argument(parser)
    parser.add_argument("--cp-comm", action=ListFlag, choices=CP_COMMS, default=["p2p"],
                        help="how CP above 1 exchanges K/V, one or several to try (default p2p), as archsim train's "
                             "--cp-comm: p2p (Megatron-LM's ring), all_gather (Llama 3's), a2a (DeepSpeed-Ulysses) or "
                             "a2a+p2p (TransformerEngine's hierarchical: every A × P = CP with A, P above 1)")
    parser.add_argument("--dtype", default=None, choices=DTYPES,
                        help="every configuration's training precision, as archsim train's --dtype (fp32: 4 bytes per "
                             f"element, GEMMs on the FP32 lanes; --balance planned refuses it) (default: {TRAIN_DTYPE}, "
                             "whatever the config's torch_dtype: a note says when it names another)")
    parser.add_argument("--objective", default="time", choices=OBJECTIVES,
                        help="what to minimise per iteration: time, cost (GPU-hours × price per GPU-hour) or energy "
                             "(train's energy_j: GPU board power × time; on a gemm = \"arrays\" device file the energy model on the "
                             "ops' accesses, plus its static_watts × time); the Pareto front is time against it (time: "
                             "against memory)")
    parser.add_argument("--balance", default="even", choices=BALANCES,
                        help="layers per pipeline stage: Megatron's even split, or planned by PipeDream's DP over "
                             "embedding, layers and LM head under each GPU's memory (interleaved and V-shaped schedules: "
                             "per model chunk, balancing each rank's work over its chunks; a model of several layer "
                             "kinds over several chunks: Megatron's split nearest to even, the last stages a layer fewer)")
    parser.add_argument("--placement", default="file", choices=PLACEMENTS,
                        help="which servers run which pipeline ranks: the cluster file's order, or the best of every "
                             "distinct server order for each configuration (heterogeneous clusters)")
    parser.add_argument("--top", type=positive_int, default=10, help="rows to print, best first")
    parser.add_argument("--recompute", action=ListFlag, choices=RECOMPUTE, default=list(RECOMPUTE),
                        help="recompute modes to try (none, selective, full: as archsim train's --recompute)")
    parser.add_argument("--schedule", action=ListFlag, choices=TRAINING_SCHEDULES, default=list(TRAINING_SCHEDULES),
                        help="pipeline schedules to try")
    parser.add_argument("--chunks", action=ListFlag, item=positive_int, default=None, metavar="V",
                        help="model chunks per rank that interleaved-1f1b, interleaved-zb and looped-bfs try "
                             "(default: 2 4; refused without one of them in --schedule)")
    parser.add_argument("--max-micro-batch", type=positive_int, default=8, help="micro-batches 1 … this")
    parser.add_argument("--sequence-parallel", default="both", choices=("both", "on", "off"),
                        help="Megatron sequence parallelism: try both, or only on / off (on: TP > 1 layouts only, "
                             "as train runs it off at TP 1; both tries TP 1 once, without it)")
    parser.add_argument("--attention", default=DEFAULT_ATTENTION, choices=ATTENTIONS,
                        help="attention kernels of every configuration, as archsim train's --attention")
    parser.add_argument("--dp-overlap", default="none", choices=DP_OVERLAPS,
                        help="every configuration's DP all-reduce, as archsim train's --dp-overlap")
    parser.add_argument("--fp8", default=None, choices=FP8_RECIPES,
                        help="every configuration's linear layers in Transformer Engine's FP8, as archsim train's "
                             "--fp8 (default: off)")
    parser.add_argument("--fp8-param-gather", action="store_true",
                        help="every configuration's fp8 weights, as archsim train's --fp8-param-gather")
    parser.add_argument("--distributed-optimizer", action="store_true",
                        help="every configuration with Megatron-LM's distributed optimizer, as archsim train's "
                             "--distributed-optimizer: optimizer states sharded over DP in the memory check and rows")
    parser.add_argument("--fsdp", action="store_true",
                        help="every configuration with PyTorch FSDP's full sharding, as archsim train's --fsdp: "
                             "every state sharded over DP in the memory check and rows, each pipeline rank its own")
    parser.add_argument("--fsdp-reshard", default="after-forward", choices=FSDP_RESHARDS,
                        help="with --fsdp, every configuration's, as archsim train's --fsdp-reshard")
    parser.add_argument("--fsdp-grad-sync", default="micro-batch", choices=FSDP_GRAD_SYNCS,
                        help="with --fsdp, every configuration's, as archsim train's --fsdp-grad-sync")
    parser.add_argument("--p2p", default=DEFAULT_P2P, choices=P2P_MODES, help=P2P_HELP)
    parser.add_argument("--grad-accumulation", default="fused", choices=GRAD_ACCUMULATIONS,
                        help="every configuration's gradient accumulation, as archsim train's --grad-accumulation "
                             "(fused: Megatron-LM's default since 2022; unfused: Megatron-LM of 2021)")
    parser.add_argument("--refine", type=int_flag(0, INT32_MAX, "a non-negative integer"), default=None, metavar="N",
                        help="re-time the best N of the closed forms with the event simulator and rank them again "
                             "(default: 2 × --top, at least 20; 0: closed forms only)")
    parser.add_argument("--pareto-html", type=output_flag, default=None, metavar="OUT.html",
                        help="write the Pareto front (time against memory, or against the objective) as a plotly page")
    parser.add_argument("--max-ops", type=positive_int, default=MAX_REFINE_ACTIONS, metavar="N",
                        help="refuse a --refine whose event simulations add up to more schedule actions than this "
                             f"(default {MAX_REFINE_ACTIONS:,}, about 15 s)")
    add_timeline_outputs(parser)  # of the first row's iteration, as archsim train writes them
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from archsim.api import search
    from archsim.outputs import render
    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.training.moe_ops import with_load_imbalance
    from archsim.training.mtp import with_mtp_layers
    from archsim.training.search_flags import chunk_counts, cp_comm_rule
    from archsim.training.search_front import front_block
    from archsim.training.search_result import rows_frame, text_meta
    from archsim.training.table_lines import csv_rows, table_rows
    from archsim.workload.model_files import config_dtype_note, load_transformer

    if args.global_batch is None:
        from archsim.errors import InputError

        raise InputError(global_batch_required(), field="global-batch")
    chunk_counts(args.schedule, args.chunks)  # a flag combination: refused before the model is read
    cp_comm_rule(args.cp or [1], args.cp_comm)
    config = with_mtp_layers(with_load_imbalance(load_transformer(args.model, seq=args.seq), args.moe_load_imbalance),
                             args.mtp_layers)
    cluster = load_gpu_cluster(args.cluster, args.dtype or TRAIN_DTYPE)
    with notes_kept():  # the library's notes are lines this command prints itself, after the run
        result = search(config, cluster=cluster, global_batch=args.global_batch, gpus=args.gpus,
                        objective=args.objective, balance=args.balance, placement=args.placement, top=args.top,
                        recompute=args.recompute, schedule=args.schedule, chunks=args.chunks,
                        max_micro_batch=args.max_micro_batch, sequence_parallel=args.sequence_parallel,
                        refine=args.refine, attention=args.attention, dp_overlap=args.dp_overlap,
                        max_ops=args.max_ops, grad_accumulation=args.grad_accumulation, seq=args.seq,
                        model_file=args.model, cluster_file=args.cluster,
                        distributed_optimizer=args.distributed_optimizer, fsdp=args.fsdp, cp=args.cp,
                        cp_comm=args.cp_comm, fsdp_reshard=args.fsdp_reshard,
                        fsdp_grad_sync=args.fsdp_grad_sync, ep=args.ep, etp=args.etp, fp8=args.fp8,
                        fp8_param_gather=args.fp8_param_gather, moe_load_imbalance=args.moe_load_imbalance, p2p=args.p2p,
                        overlap_moe_expert_parallel_comm=args.overlap_moe_expert_parallel_comm,
                        moe_shared_expert_overlap=args.moe_shared_expert_overlap, mtp_layers=args.mtp_layers,
                        tp=args.tp, pp=args.pp)
    why = None
    if not result.costed:  # an empty answer, not an error (exit 0): the meta's rejected counts say why
        from archsim.training.search_note import empty_search_note

        why = empty_search_note(config, cluster, args.global_batch, args.gpus or [cluster.gpus],
                                result.rejected, args.balance, result.sharded_fits)
    if (args.gantt or args.trace or args.schedule_csv) and not result.rows:  # before anything is printed
        from archsim.errors import InputError

        flag = "gantt" if args.gantt else "chrome-trace" if args.trace else "schedule-csv"  # why none, as the note
        raise InputError(f"no timeline to write: {why or 'no configuration fits'}", field=flag)  # would say it
    document = result.to_dict()  # built once, by archsim.search, naming the files as given
    meta, rows = document["meta"], document["rows"]
    if args.format != "json":
        meta = text_meta(meta, args.precision if args.format == "table" else None)
        if args.format == "table":  # csv: the rows' pareto_optimal; the table ends with the front's block
            from archsim.training.table_lines import search_host_note, table_parameters

            meta = search_host_note(table_parameters(meta, args.precision), rows, _host_times(args, cluster, result.rows),
                                    args.precision or 3)  # --precision's digits, as train's line
        # the table: gpus only when several counts are compared (one count is the meta's gpus)
        hidden = ("megatron_args", "command") + (() if args.gpus and len(args.gpus) > 1 else ("gpus",))
        rows = [{k: v for k, v in row.items() if k not in hidden} for row in table_rows(rows)] \
            if args.format == "table" else csv_rows(rows)  # the compute split: one cell in csv, none in the table
    if why is not None and args.format == "table":  # the table says why where its rows would be: a reader of the
        # output alone saw only the columns' names (csv keeps its header, json its empty rows: their readers parse)
        text = render(pd.DataFrame(), "table", meta=meta, precision=args.precision).removesuffix("\n") + why + "\n"
    else:
        text = render(rows_frame(rows), args.format, meta=meta, precision=args.precision)
    if args.format == "table":
        text += front_block(result.pareto, args.objective)
    note_default_seq(config, args.model, args.seq)
    from archsim.training.search_note import cp_not_searched_note

    cp_note = cp_not_searched_note(config, args.cp is not None, args.attention)  # a long sequence searched at CP 1
    if cp_note:
        note(cp_note)
    dtype_note = "" if args.dtype is not None else config_dtype_note(config, TRAIN_DTYPE, "search", model=args.model)
    if dtype_note:  # as train's: the checkpoint's precision is not the one priced
        note(dtype_note)
    note_unread_cluster_keys(cluster, "search", attention=args.attention)  # the search done: notes never precede an error line
    if result.orders_note:  # each kind's servers in the file's order: leaves told apart pass a cap
        note(result.orders_note)
    if why is not None:
        note(why)
    from archsim.fits import rows_headroom_note, rows_tp_span_note

    headroom = rows_headroom_note(result.rows, cluster)  # rows shown that fit with little room for what is not modelled
    if headroom:
        note(headroom)
    spanning = rows_tp_span_note(result.rows)  # train's TP-across-servers warning, for the rows shown
    if spanning:
        note(spanning)
    if args.objective == "energy":
        from archsim.training.energy_sources import mixed_basis_note, unpriced_static_note

        static = unpriced_static_note(cluster, args.gpus or [cluster.gpus])
        if static is not None:
            note(static)
        mixed = mixed_basis_note(cluster, args.gpus or [cluster.gpus])
        if mixed is not None:
            note(mixed)
    emit(text, args)
    if args.pareto_html:
        from archsim.report.search_front import write_front_page  # plotly: only when a page is asked for
        from archsim.training.energy_sources import energy_basis

        page = write_front_page(args.pareto_html, f"archsim search: {config.name}, global batch {args.global_batch}",
                                result.pareto, result.rows, args.objective,
                                energy_basis(cluster, {r["gpus"] for r in result.rows}))
        note_written(f"wrote {page}")
    if args.gantt or args.trace or args.schedule_csv:
        _write_best_timeline(args, config, cluster, result.rows)
    return 0


def _host_times(args: argparse.Namespace, cluster, rows: Sequence[dict]) -> tuple[tuple[float, str], ...]:
    """(host seconds per op, where they came from) of each pipeline rank's machine of the first row (its own GPUs,
    not every GPU type of the cluster), what its ``host_bound_seconds`` rest on; none without rows."""
    if not rows:
        return ()
    from archsim.training.search_rows import row_layout

    par, placed = row_layout(cluster, args.global_batch, rows[0])
    return tuple((m.efficiency.host_s, m.host_source) for m in placed.laid_out(par))


def _write_best_timeline(args: argparse.Namespace, config, cluster, rows: Sequence[dict]) -> None:
    """The first row's iteration timed by archsim train, written as its Gantt chart, Chrome trace and
    torch.distributed.pipelining schedule CSV."""
    from archsim.commands.timeline_outputs import RANK_ROWS, iteration_caption, iteration_title, write_timeline_outputs
    from archsim.training.run import train
    from archsim.training.search_rows import row_layout

    par, cluster = row_layout(cluster, args.global_batch, rows[0])  # run() refused the timelines of an empty search
    result = train(config, par, cluster.machine(par), cluster.rank_wise(par))
    write_timeline_outputs(args, result.timeline, iteration_title(config.name, par),
                           unit="seconds",
                           caption=iteration_caption(result.iteration_seconds, result.timeline, par, result.post),
                           rows_title=RANK_ROWS)


# train's layout flags brought to search: it tries them itself, in the line argparse refuses them
ELSEWHERE = tuple(elsewhere("search").items())
COMMAND = Command("search", HELP, add_arguments, run, ELSEWHERE)
