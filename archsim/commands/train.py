"""``archsim train``: one training iteration of a transformer on a GPU cluster — time, memory per GPU,
per-op and per-collective breakdown and the pipeline timeline (:mod:`archsim.training`)."""

from __future__ import annotations

import argparse

from archsim.commands import Command
from archsim.commands.common import (
    add_job_limit_argument,
    add_output_arguments,
    add_timeline_outputs,
    emit,
    positive_int,
)
from archsim.training.parallel import RECOMPUTE

HELP = "one training iteration of a transformer on GPUs: TP × PP × DP, time, memory, breakdown"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL", help="transformer config: Hugging Face config.json (gpt2, llama, "
                        "bert) or a [transformer] TOML")
    parser.add_argument("--cluster", required=True, metavar="CLUSTER.toml",
                        help='cluster TOML whose [[servers]] name their GPU (gpu = "a100-80gb")')
    parser.add_argument("--tp", type=positive_int, default=1, help="tensor-parallel degree")
    parser.add_argument("--pp", type=positive_int, default=1, help="pipeline-parallel degree")
    parser.add_argument("--dp", type=positive_int, default=1, help="data-parallel degree")
    parser.add_argument("--global-batch", type=positive_int, required=True, help="samples per iteration")
    parser.add_argument("--micro-batch", type=positive_int, default=1, help="samples per micro-batch")
    parser.add_argument("--seq", type=positive_int, default=None, help="sequence length (default: the config's)")
    parser.add_argument("--recompute", default="full", choices=RECOMPUTE, help="activation recomputation")
    parser.add_argument("--sequence-parallel", action="store_true", help="Megatron sequence parallelism (TP > 1)")
    parser.add_argument("--interleave", type=positive_int, default=1, metavar="V",
                        help="model chunks per pipeline rank (interleaved 1F1B when V > 1)")
    parser.add_argument("--schedule", default="1f1b", help="pipeline schedule (archsim's published orders: 1f1b, "
                        "gpipe, zb-h1, zb-h2, interleaved-1f1b, …)")
    parser.add_argument("--stage-layers", default=None, metavar="N1,N2,…",
                        help="transformer layers of each model chunk in pipeline order: PP counts, or PP × V with "
                             "--interleave V (chunk c of rank r is the (c·PP + r)-th) and 2·PP with zb-v / dualpipev "
                             "(rank r holds the r-th and the (2·PP − 1 − r)-th) (default: Megatron's even split)")
    parser.add_argument("--balance", default="even", choices=("even", "planned"),
                        help="without --stage-layers: Megatron's even split, or the split PipeDream's DP plans over "
                             "embedding, layers and LM head under each GPU's memory (with several chunks per rank: "
                             "balancing each rank's work over its chunks)")
    parser.add_argument("--placement", default="file", metavar="file|planned|I,J,…",
                        help="which servers run which pipeline ranks: the cluster file's order (default), the fastest "
                             "of every distinct server order (with its split under --balance planned), or an order "
                             "of the file's servers numbered from 0 (count expanded), as archsim search prints")
    parser.add_argument("--sweep", action="append", default=[], metavar="KEY=V1,V2,…",
                        help="sweep an axis (tp, pp, dp, global_batch, micro_batch, interleave, recompute, schedule, "
                             "sequence_parallel); repeat for a grid: one row per point instead of one iteration's "
                             "breakdown")
    add_job_limit_argument(parser)
    add_timeline_outputs(parser)
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> int:

    import pandas as pd

    from archsim.commands.common import write_timeline_outputs
    from archsim.errors import InputError
    from archsim.outputs import render
    from archsim.training.cluster import load_gpu_cluster
    from archsim.training.parallel import Parallelism
    from archsim.training.placement import MAX_ORDERS, order_count, order_text, parse_placement
    from archsim.training.run import train
    from archsim.training.stage_split import parse_stage_layers
    from archsim.validate import check_job_size
    from archsim.workload.transformer import load_transformer

    config = load_transformer(args.model, seq=args.seq)
    if args.sweep:
        return _run_sweep(args, config)
    par = Parallelism(args.tp, args.pp, args.dp, args.global_batch, args.micro_batch, args.recompute,
                      args.sequence_parallel, args.interleave, args.schedule,
                      parse_stage_layers(args.stage_layers) if args.stage_layers else None)
    check_job_size(par.schedule_actions, args.max_ops)  # before the cluster's matrices are built
    cluster = load_gpu_cluster(args.cluster)
    placement = parse_placement(args.placement, cluster)
    if isinstance(placement, tuple):
        cluster = cluster.reordered(placement)
    if placement == "planned":  # one iteration (and one planned split) per distinct server order
        orders = min(order_count(cluster), MAX_ORDERS + 1)
        check_job_size(par.schedule_actions * orders, args.max_ops)
        if args.balance == "planned" and par.stage_layers is None and par.pp > 1:
            from archsim.training.search import Candidate, check_planning_work

            one = Candidate(par.tp, par.pp, par.dp, par.micro_batch, par.recompute, par.schedule, par.interleave,
                            par.sequence_parallel)
            check_planning_work(config, cluster, par.global_batch, [one] * orders,
                                hint="--stage-layers, or one server order (--placement file or I,J,…)")
        cluster, par, placement = _best_placement(config, cluster, par, args.balance)
    machines = cluster.rank_machines(par)
    if machines is None:
        raise InputError(_LAYOUT_ERRORS["stage-mixes-gpu-types"], field="tp")
    par = _split(config, par, machines, args.balance)
    capacities = [m.gpu.memory_bytes for m in machines]
    result = train(config, par, machines[0], machines)
    capacity = max(capacities)
    memory = [{"rank": r, "gpu": machines[r].gpu.name, "parameters": m.parameters, "states_gib": m.states / 2**30,
               "activations_gib": m.activations / 2**30, "total_gib": m.total / 2**30,
               "fits": m.total <= capacities[r]} for r, m in enumerate(result.memory)]
    slots = result.timeline.to_frame()
    timeline = [{"rank": str(row.processor), "action": str(row.op), "start_s": float(row.start), "end_s": float(row.end)}
                for row in slots.itertuples()] if len(slots) <= 20000 else []
    meta = {"model": config.name, "gpu": ", ".join(sorted({m.gpu.name for m in machines})), "gpus": par.gpus, "tp": par.tp, "pp": par.pp,
            "dp": par.dp, "global_batch": par.global_batch, "micro_batch": par.micro_batch,
            "microbatches": par.microbatches, "recompute": par.recompute,
            "sequence_parallel": par.sequence_parallel, "interleave": par.interleave, "schedule": par.schedule,
            "stage_layers": ",".join(map(str, par.stage_layers)) if par.stage_layers else "even",
            "placement": order_text(placement) if isinstance(placement, tuple) else "file",
            "iteration_seconds": result.iteration_seconds, "peak_memory_gib": result.peak_memory_gib,
            "memory_capacity_gib": capacity / 2**30, "fits_memory": all(m["fits"] for m in memory),
            "breakdown_seconds": result.breakdown, "memory_per_rank": memory,
            "after_backward_seconds": list(result.post), "timeline": timeline}
    frame = pd.DataFrame(result.ops, columns=["piece", "name", "op", "seconds"])
    if args.format != "json":
        meta = {k: v for k, v in meta.items() if not isinstance(v, (list, dict))}
    emit(render(frame, args.format, meta=meta, precision=args.precision), args)
    write_timeline_outputs(args, result.timeline, f"{config.name}: TP{par.tp} PP{par.pp} DP{par.dp}")
    return 0


_LAYOUT_ERRORS = {
    "tp-within-server": "a TP group spans two servers: choose a TP that divides the GPUs of each server it runs on",
    "stage-mixes-gpu-types": "a pipeline stage's GPUs are of different types: choose TP × DP to fill whole servers "
                             "of one type"}


def _split(config, par, machines, balance: str):
    """``par`` with the planner's stage split under ``--balance planned`` (its own split kept)."""
    from dataclasses import replace

    from archsim.errors import InputError
    from archsim.training.stage_split import planned_split, stage_layer_counts

    if balance != "planned" or par.stage_layers is not None or par.pp == 1:
        return par
    split = planned_split(config, par, machines, [m.gpu.memory_bytes for m in machines])
    if split is None:
        raise InputError("no split of the layers over the pipeline stages fits the GPUs' memory (or fewer layers "
                         "than model chunks)", field="balance")
    return replace(par, stage_layers=stage_layer_counts(split))


def _best_placement(config, cluster, par, balance: str):
    """The fastest of the distinct server orders (:mod:`archsim.training.placement`) that fit memory:
    (placed cluster, parallelism with its split, order); ties keep the earlier order (the file's first)."""
    from archsim.errors import InputError
    from archsim.training.placement import layouts, server_orders
    from archsim.training.run import train

    options, reason = layouts(cluster, par, server_orders(cluster))
    if not options:
        raise InputError(f"no server order lays this out: {_LAYOUT_ERRORS[reason or 'stage-mixes-gpu-types']}",
                         field="placement")
    best = None
    for order, placed in options:
        machines = placed.rank_machines(par)
        assert machines is not None  # layouts() kept only orders that lay it out
        try:
            trial = _split(config, par, machines, balance)
        except InputError:
            continue
        result = train(config, trial, machines[0], machines)
        fits = all(m.total <= mc.gpu.memory_bytes for m, mc in zip(result.memory, machines))
        key = (not fits, result.iteration_seconds)
        if best is None or key < best[0]:
            best = (key, placed, trial, order)
    if best is None:
        raise InputError("no split of the layers over the pipeline stages fits the GPUs' memory in any server order",
                         field="balance")
    return best[1], best[2], best[3]


def _run_sweep(args: argparse.Namespace, config) -> int:
    import pandas as pd

    from archsim.errors import InputError
    from archsim.outputs import render
    from archsim.training.cluster import load_gpu_cluster
    from archsim.training.placement import parse_placement
    from archsim.training.sweep import check_sweep_size, parse_axis, sweep

    axes = [parse_axis(text) for text in args.sweep]
    base = {"tp": args.tp, "pp": args.pp, "dp": args.dp, "global_batch": args.global_batch,
            "micro_batch": args.micro_batch, "recompute": args.recompute,
            "sequence_parallel": args.sequence_parallel, "interleave": args.interleave, "schedule": args.schedule}
    check_sweep_size(base, axes, args.max_ops)
    cluster = load_gpu_cluster(args.cluster)
    placement = parse_placement(args.placement, cluster)
    if placement == "planned":
        raise InputError("--sweep runs each point in one server order: give --placement file or an order I,J,…",
                         field="placement")
    if isinstance(placement, tuple):
        cluster = cluster.reordered(placement)
    rows = sweep(config, cluster, base, axes)
    meta = {"model": config.name, "gpu": cluster.gpu.name, "points": len(rows),
            "axes": ",".join(name for name, _ in axes)}
    emit(render(pd.DataFrame(rows), args.format, meta=meta, precision=args.precision), args)
    return 0


COMMAND = Command("train", HELP, add_arguments, run)
