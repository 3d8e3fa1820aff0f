"""``archsim train``: one training iteration of a transformer on a GPU cluster — time, memory per GPU,
per-op and per-collective breakdown and the pipeline timeline (:mod:`archsim.training`)."""

from __future__ import annotations

import argparse

from archsim.choices.devices import DTYPES, TRAIN_DTYPE
from archsim.choices.training import (
    ATTENTIONS,
    BALANCES,
    CP_COMMS,
    DEFAULT_P2P,
    DP_OVERLAPS,
    FP8_RECIPES,
    FSDP_GRAD_SYNCS,
    FSDP_RESHARDS,
    GRAD_ACCUMULATIONS,
    IMPLEMENTATION_ATTENTION,
    IMPLEMENTATIONS,
    MAX_SEQ,
    P2P_HELP,
    P2P_MODES,
    RECOMPUTE,
)
from archsim.commands import Command
from archsim.commands.common import (
    add_job_limit_argument,
    add_model_argument,
    add_output_arguments,
    emit,
    global_batch_required,
    note_default_seq,
    note_unread_cluster_keys,
    phases,
    positive_int,
)
from archsim.commands.list_flag import ListFlag
from archsim.commands.moe_flags import add_mtp_argument, add_overlap_arguments, add_routing_arguments
from archsim.commands.timeline_outputs import add_timeline_outputs
from archsim.console import note, warn
from archsim.fits import cp_span_warning, rank_headroom_note, rank_memory_warning, tp_span_warning
from archsim.training.job_settings import elsewhere
from archsim.validate import SECONDS_PER_OP
from archsim.value_parsers import seq_flag

DEFAULT_DTYPE = TRAIN_DTYPE  # --dtype when not given (a config's torch_dtype does not set it: config_dtype_note)
DEFAULT_RECOMPUTE = "full"  # --recompute when not given: the measured runs' (Megatron-LM's own is none); eager: a note
# schedule actions (Parallelism.schedule_actions, the count --max-ops bounds) from which one iteration may run past
# 2 s at the measured cost per simulated op: a bar on a terminal (issue #40), none for shorter jobs
LONG_JOB_OPS = round(2.0 / SECONDS_PER_OP)
HELP = "one training iteration of a transformer on GPUs: TP × PP × DP, time, memory, breakdown"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_argument(parser)
    parser.add_argument("--cluster", required=True, metavar="CLUSTER.toml",
                        help='cluster TOML whose [[servers]] name their GPU (gpu = "a100-80gb") or a device file '
                             '(device = "chip.toml" or a SCALE-Sim .cfg, relative to the cluster file)')
    parser.add_argument("--dtype", default=None, choices=DTYPES,
                        help=f"training precision: fp16/bf16 mixed precision, or fp32 (on a GPU its FP32 lanes, "
                             f"PyTorch's default; 4 bytes per element) (default: {DEFAULT_DTYPE}, whatever the "
                             "config's torch_dtype: a note says when it names another)")
    parser.add_argument("--fp8", default=None, choices=FP8_RECIPES,
                        help="Transformer Engine's FP8 on the linear layers (Megatron-LM's --fp8-format, delayed "
                             "scaling): hybrid (E4M3 forward, E5M2 gradients) or e4m3; --dtype bf16/fp16 stays the "
                             "higher precision; needs an fp8 peak (H100, H200) (default: off; docs/training.md)")
    parser.add_argument("--fp8-param-gather", action="store_true",
                        help="with --fp8 and --distributed-optimizer: the linear layers' weights held in fp8, no "
                             "16-bit copy, and all-gathered in fp8 (Megatron-LM's --fp8-param-gather)")
    parser.add_argument("--implementation", default="megatron", choices=IMPLEMENTATIONS,
                        help="whose op list runs: Megatron-LM's fused kernels, or plain eager PyTorch on one GPU (TP, PP, DP 1) "
                             "(fp16/bf16: the AMP GPT of benchmarks/gpu_train_measure.py, standard attention or "
                             "--attention flash; fp32: Hugging Face's GPT-2, OPT and BERT modules, as NeuSight "
                             "measured them, standard attention); one iteration only")
    parser.add_argument("--tp", type=positive_int, default=1, help="tensor-parallel degree")
    parser.add_argument("--pp", type=positive_int, default=1, help="pipeline-parallel degree")
    parser.add_argument("--dp", type=positive_int, default=1, help="data-parallel degree")
    parser.add_argument("--ep", type=positive_int, default=1,
                        help="expert-parallel degree of a mixture-of-experts model (Megatron-Core's "
                             "--expert-model-parallel-size): E/EP experts a GPU, tokens all-to-all'd over the EP "
                             "group; EP divides the experts and ETP × EP divides TP × CP × DP (EP divides CP × DP at ETP = TP) "
                             "(docs/training.md#mixture-of-experts)")
    parser.add_argument("--etp", type=positive_int, default=None,
                        help="the experts' tensor-parallel degree (Megatron-Core's --expert-tensor-parallel-size; "
                             "default: --tp): each expert split over ETP GPUs; ETP × EP divides TP × CP × DP")
    add_routing_arguments(parser)
    add_overlap_arguments(parser)
    add_mtp_argument(parser)
    parser.add_argument("--cp", type=positive_int, default=1,
                        help="context-parallel degree (Megatron-LM's --context-parallel-size): each GPU of a CP group "
                             "runs 2 of the sequence's 2·CP chunks; GPUs = TP × CP × PP × DP (docs/training.md)")
    parser.add_argument("--cp-comm", default="p2p", choices=CP_COMMS,
                        help="how CP exchanges K/V: p2p (a ring overlapped with attention, Megatron-LM's default), "
                             "all_gather (Llama 3's: K/V all-gathered, dK/dV reduce-scattered) or a2a "
                             "(DeepSpeed-Ulysses: Q, K, V and the output all-to-all'd to 1/CP of the heads and back; "
                             "CP must divide each TP rank's query and K/V heads) or a2a+p2p (TransformerEngine's "
                             "hierarchical: an all-to-all inside groups of A ranks, then p2p's ring over P of them; "
                             "give --cp-hierarchy A P)")
    parser.add_argument("--cp-hierarchy", action=ListFlag, item=positive_int, metavar="A P", default=None,
                        help="a2a+p2p's levels (Megatron-LM's --hierarchical-context-parallel-sizes A P): all-to-alls "
                             "inside groups of A consecutive CP ranks, p2p's ring over P; A × P = CP, A dividing each "
                             "TP rank's query and K/V heads")
    parser.add_argument("--global-batch", type=positive_int, default=None,
                        help="samples per iteration (required unless --runs)")
    parser.add_argument("--micro-batch", type=positive_int, default=1, help="samples per micro-batch")
    parser.add_argument("--seq", type=seq_flag, default=None,
                        help=f"sequence length, tokens per sample, at most {MAX_SEQ:,} (default: the config's)")
    parser.add_argument("--recompute", default=None, choices=RECOMPUTE, help="activation recomputation: none (keep every activation), selective (recompute the attention "
                             "core's s² part: with --attention flash nothing, as none, a note says) or full (keep "
                             "each layer's input, recompute the layer) (default: full, as the measured Megatron-LM "
                             "runs archsim is checked on trained (vTrain's, Narayanan et al. 2021's); Megatron-LM's "
                             "own default, --recompute-granularity unset, is none: give --recompute none for it; "
                             "with --implementation pytorch-eager full too, which a note then says: plain PyTorch "
                             "checkpoints nothing unless asked)")
    parser.add_argument("--sequence-parallel", action="store_true", help="Megatron sequence parallelism (TP > 1; at TP 1 turned off with a note, as "
                             "Megatron-LM turns it off)")
    parser.add_argument("--attention", default=None, choices=ATTENTIONS,
                        help="attention kernels: FlashAttention-2 (what Megatron-LM runs today) or Megatron's standard "
                             "core (the s² scores in HBM, as the measured Megatron-DeepSpeed runs); default flash for "
                             "megatron, standard for pytorch-eager (whose flash is PyTorch's "
                             "scaled_dot_product_attention on its FlashAttention-2 backend, fp16/bf16 only); "
                             "docs/training.md")
    parser.add_argument("--dp-overlap", default="none", choices=DP_OVERLAPS,
                        help="DP gradient all-reduce: after the backward (none: vTrain's runs) or in Megatron's "
                             "buckets under the last micro-batch's backward (bucketed: --overlap-grad-reduce; megatron only, "
                             "refused with --implementation pytorch-eager, one GPU with no DP all-reduce)")
    parser.add_argument("--p2p", default=DEFAULT_P2P, choices=P2P_MODES, help=P2P_HELP)
    parser.add_argument("--distributed-optimizer", action="store_true",
                        help="Megatron-LM's --use-distributed-optimizer (ZeRO-1): fp32 main weights, Adam's moments "
                             "and the fp32 gradient copy sharded over DP; gradients reduce-scattered and parameters "
                             "all-gathered in place of the all-reduce, each DP rank stepping its 1/DP")
    parser.add_argument("--fsdp", action="store_true",
                        help="PyTorch FSDP's FULL_SHARD (ZeRO-3; torchtitan, llm-foundry): parameters, gradients and "
                             "optimizer states sharded over DP, each layer all-gathered before its forward and its "
                             "backward and its gradients reduce-scattered, prefetched under the neighbour's compute "
                             "(each pipeline rank its own stages'; not with --distributed-optimizer)")
    parser.add_argument("--fsdp-reshard", default="after-forward", choices=FSDP_RESHARDS,
                        help="with --fsdp, when a layer's gathered parameters are freed: after-forward (FULL_SHARD: "
                             "gathered again for the backward) or none (Llama 3's: kept to the backward, one "
                             "all-gather a micro-batch, the rank's parameters held whole in the compute dtype)")
    parser.add_argument("--fsdp-grad-sync", default="micro-batch", choices=FSDP_GRAD_SYNCS,
                        help="with --fsdp, when the gradients are reduce-scattered: micro-batch (after each "
                             "micro-batch's backward) or step (PyTorch's pipeline runtime: held unsharded to one "
                             "reduce-scatter per stage after its last backward, the parameters gathered once a step; "
                             "with --fsdp-reshard none)")
    parser.add_argument("--grad-accumulation", default=None, choices=GRAD_ACCUMULATIONS,
                        help="weight gradients summed over micro-batches inside the weight-gradient GEMM (fused: "
                             "Megatron-LM's --gradient-accumulation-fusion, its default since 2022) or by a separate "
                             "pass after each micro-batch's backward but the first (unfused: Megatron-LM of 2021, "
                             "plain PyTorch); default fused for megatron, unfused for pytorch-eager (its only one)")
    parser.add_argument("--interleave", type=positive_int, default=1, metavar="V",
                        help="model chunks per pipeline rank (interleaved 1F1B when V > 1)")
    parser.add_argument("--schedule", default="1f1b", help="pipeline schedule (archsim's published orders: 1f1b, "
                        "gpipe, zb-h1, zb-h2, interleaved-1f1b, …)")
    parser.add_argument("--stage-layers", default=None, metavar="N1,N2,…|LAYOUT",
                        help="transformer layers of each model chunk in pipeline order: PP counts, or PP × V with "
                             "--interleave V (chunk c of rank r is the (c·PP + r)-th) and 2·PP with zb-v / dualpipev "
                             "(rank r holds the r-th and the (2·PP − 1 − r)-th), or the same split as Megatron-LM's "
                             "--pipeline-model-parallel-layout string ('Et*3|t*4|t*4|t*3L') (default: Megatron's "
                             "even split)")
    parser.add_argument("--balance", default="even", choices=BALANCES,
                        help="without --stage-layers: Megatron's even split, or the split PipeDream's DP plans over "
                             "embedding, layers and LM head under each GPU's memory (with several chunks per rank: "
                             "balancing each rank's work over its chunks)")
    parser.add_argument("--placement", default="file", metavar="file|planned|I,J,…",
                        help="which servers run which pipeline ranks: the cluster file's order (default), the fastest "
                             "of every distinct server order (with its split under --balance planned), or an order "
                             "of the file's servers numbered from 0 (count expanded), as archsim search prints")
    parser.add_argument("--sweep", action="append", default=[], metavar="KEY=V1,V2,…",
                        help="sweep an axis (tp, pp, dp, global_batch, micro_batch, interleave, recompute, schedule, "
                             "sequence_parallel, attention, dp_overlap, grad_accumulation, p2p, distributed_optimizer, "
                             "fsdp, fsdp_reshard, fsdp_grad_sync, cp, cp_comm, ep, etp, fp8: hybrid, e4m3 or none, "
                             "fp8_param_gather, moe_load_imbalance, seq: each point's --seq); dp=fill gives each "
                             "point the DP that fills the cluster; repeat for a grid: one row per point (Megatron's "
                             "even split, no timeline) instead of one iteration's breakdown")
    parser.add_argument("--runs", default=None, metavar="RUNS.csv",
                        help="predict every row of a runs file in one process (columns tp, pp, dp, micro_batch, "
                             "global_batch and optionally recompute, sequence_parallel, interleave, distributed_optimizer, "
                             "fsdp, fsdp_reshard, fsdp_grad_sync, cp, cp_comm, cp_hierarchy, ep, etp, fp8, "
                             "fp8_param_gather, moe_expert_capacity_factor, moe_pad_expert_input_to_capacity, "
                             "moe_load_imbalance, schedule (else --schedule), p2p (else --p2p), gpus, measured_seconds; or vTrain's "
                             "released CSV as it is): one row "
                             "each, in input order, with the error where measured")
    add_job_limit_argument(parser)
    add_timeline_outputs(parser)
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:

    from archsim.commands.timeline_outputs import RANK_ROWS, iteration_caption, iteration_title, write_timeline_outputs
    from archsim.commands.train_many import cp_hierarchy, run_train_runs, run_train_sweep
    from archsim.errors import InputError
    from archsim.outputs import render
    from archsim.rows import Rows
    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.training.energy import priced
    from archsim.training.layout_notes import breakdown_rank_note, eager_recompute_note, layout_notes
    from archsim.training.moe_ops import with_capacity, with_load_imbalance
    from archsim.training.moe_overlap import with_overlap
    from archsim.training.mtp import with_mtp_layers
    from archsim.training.op_rows import SHAPE_KEYS
    from archsim.training.parallel import Parallelism
    from archsim.training.run import train
    from archsim.training.stage_layout import parse_stage_layers
    from archsim.training.table_lines import (
        energy_line,
        table_gradient_note,
        table_host_note,
        table_parameters,
        table_split,
        text_meta,
    )
    from archsim.training.train_json import timeline_note, train_document
    from archsim.training.train_layout import lay_out
    from archsim.validate import check_job_size
    from archsim.workload.model_files import config_dtype_note, load_transformer

    dtype_given = args.dtype is not None
    typed = args  # the flags as given: --attention unset is not given, though the implementation's is used

    def given(_: argparse.Namespace, flags) -> list[str]:
        return _given(typed, flags)

    args = argparse.Namespace(**{**vars(args), "dtype": args.dtype or DEFAULT_DTYPE,
                                 "attention": args.attention or IMPLEMENTATION_ATTENTION[args.implementation],
                                 "recompute": args.recompute or DEFAULT_RECOMPUTE})
    if args.stage_layers and args.balance == "planned":  # flag combinations: checked before the model is read
        raise InputError("--stage-layers gives the split --balance planned would plan: give one of them",
                         field="balance")
    ignored = _given(args, SWEEP_IGNORES) if args.sweep and not args.runs else []
    if ignored:
        raise InputError(f"{', '.join(ignored)}: --sweep runs each point on Megatron's even split and writes no "
                         "timeline; drop them, or run one point without --sweep", field="sweep")
    config = with_overlap(with_mtp_layers(load_transformer(args.model, seq=args.seq), args.mtp_layers),
                          args.overlap_moe_expert_parallel_comm, args.moe_shared_expert_overlap)
    if args.implementation != "megatron" and (args.runs or args.sweep):
        raise InputError("--implementation pytorch-eager times one iteration: not with --runs or --sweep",
                         field="implementation")
    if args.runs:  # each row its own capacity (its columns): the flags refused there
        return run_train_runs(args, config, dtype_given, given)
    config = with_load_imbalance(with_capacity(config, args.moe_expert_capacity_factor,
                                               args.moe_pad_expert_input_to_capacity), args.moe_load_imbalance)
    if args.global_batch is None:
        raise InputError(global_batch_required("--runs"), field="global-batch")
    if args.sweep:
        return run_train_sweep(args, config, dtype_given, given)
    from archsim.training.layout_notes import sequence_parallel_run

    sequence_parallel, sp_note = sequence_parallel_run(args.tp, args.sequence_parallel)  # TP 1: off, as Megatron-LM
    par = Parallelism(args.tp, args.pp, args.dp, args.global_batch, args.micro_batch, args.recompute,
                      sequence_parallel, args.interleave, args.schedule,
                      parse_stage_layers(args.stage_layers, layers=config.layers, pp=args.pp, interleave=args.interleave,
                                         schedule=args.schedule, mtp=config.mtp_layers) if args.stage_layers else None,
                      args.attention,
                      args.dp_overlap, args.grad_accumulation, args.distributed_optimizer, args.fsdp, args.cp,
                      args.cp_comm, args.fsdp_reshard, args.fsdp_grad_sync, cp_hierarchy(args), args.ep, args.etp, args.fp8,
                      args.fp8_param_gather, args.p2p)
    check_job_size(par.schedule_actions, args.max_ops)  # before the cluster's matrices are built
    with phases(f"train {par.schedule_name}", ("lay out the ranks", "build and simulate the order"),
                enabled=par.schedule_actions >= LONG_JOB_OPS) as phase:
        phase("lay out the ranks")
        laid = lay_out(config, load_gpu_cluster(args.cluster, args.dtype), par, placement=args.placement,
                       balance=args.balance, implementation=args.implementation, max_ops=args.max_ops)
        cluster, par, machines = laid.cluster, laid.par, laid.machines
        phase("build and simulate the order")
        ran = laid.result or train(config, par, machines[0], machines)  # --balance planned timed it already
    result = priced(ran, config, par, cluster, args.implementation)
    for spans in (tp_span_warning(cluster, par), cp_span_warning(cluster, par)):  # after the run's own checks:
        if spans:  # a warning never precedes an error line
            warn(spans)
    document = train_document(result, config, laid, args.implementation)
    meta = document["meta"]
    frame = Rows.of(document["rows"], SHAPE_KEYS)  # a GEMM's m, n, k and count: whole numbers, empty on other rows
    if args.format != "json":  # the breakdown as one line of text; the per-rank lists stay JSON's
        from archsim.outputs import format_number

        digits = "{:.4g}" if args.precision is None else f"{{:.{args.precision}g}}"
        show = (lambda v: format_number(v, digits)) if args.format == "table" else repr  # csv: full precision
        meta = text_meta(meta, result.breakdown, show, args.precision if args.format == "table" else None)
        if args.format == "table":  # csv keeps the exact integer; the energy's parts are the line under the rows
            host_source = machines[result.finishing_rank].host_source  # where its host_seconds_per_op came from
            meta = table_split(table_host_note(table_gradient_note(table_parameters(meta, args.precision)), host_source,
                                               args.precision or 3),  # --precision's digits, as above
                               document["meta"]["compute_split_seconds"], args.precision)
            meta.pop("energy_breakdown_j", None)
    warning = rank_memory_warning(result, machines)
    if warning:
        warn(warning)
    headroom = rank_headroom_note(result, machines)  # fits, but with little room for what is not modelled
    if headroom:
        note(headroom)
    note_default_seq(config, args.model, args.seq)
    dtype_note = "" if dtype_given else config_dtype_note(config, args.dtype, model=args.model)
    left_out = timeline_note(len(result.timeline.slots)) if args.format == "json" else None  # not a timeless run
    eager_note = eager_recompute_note(args.implementation, typed.recompute is not None)
    for text in (sp_note, dtype_note, eager_note, *layout_notes(par, config, cluster, args.placement),
                 breakdown_rank_note(par, config, result.finishing_rank), left_out):
        if text:
            note(text)
    note_unread_cluster_keys(cluster, "train", par)  # the run done: notes never precede an error line
    text = render(frame, args.format, meta=meta, precision=args.precision)
    energy = energy_line(document["meta"], args.precision) if args.format == "table" else None  # JSON and csv have the parts
    emit(text + (f"{energy}\n" if energy else ""), args)
    write_timeline_outputs(args, result.timeline, iteration_title(config.name, par),
                           unit="seconds",
                           caption=iteration_caption(result.iteration_seconds, result.timeline, par, result.post),
                           rows_title=RANK_ROWS)
    return 0


# (flag, argparse dest) that a --sweep's points would not apply: each point is one even-split iteration, no timeline
SWEEP_IGNORES = (("--stage-layers", "stage_layers"), ("--balance", "balance"), ("--gantt", "gantt"),
                 ("--chrome-trace", "trace"), ("--schedule-csv", "schedule_csv"))


def _given(args: argparse.Namespace, flags) -> list[str]:
    """The flags among ``flags`` ((flag, dest) pairs) whose value is not their default (add_arguments')."""
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    return [flag for flag, dest in flags if getattr(args, dest) != parser.get_default(dest)]


# search's --gpus brought to train: its layout's flags instead, in the line argparse refuses it
ELSEWHERE = tuple(elsewhere("train").items())
COMMAND = Command("train", HELP, add_arguments, run, ELSEWHERE)
