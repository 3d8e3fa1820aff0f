"""``archsim train --sweep`` and ``--runs``: many iterations from one command line — every point of the sweep's
axes, or every row of a runs file, predicted on the cluster and printed as one table with one iteration's notes
(:mod:`archsim.training.sweep`, :mod:`archsim.training.runs_predict`). ``archsim train`` checks its flags and
hands the two modes here; one iteration's own run stays in :mod:`archsim.commands.train`."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import cast

from archsim.commands.common import emit, note_default_seq, note_unread_cluster_keys
from archsim.console import note, warn

# train's reading of which of these (flag, argparse dest) pairs were given other than their default
Given = Callable[[argparse.Namespace, Sequence[tuple[str, str]]], list[str]]


def run_train_sweep(args: argparse.Namespace, config, dtype_given: bool, given: Given) -> int:
    """``--sweep``: every point of the axes on the cluster, with one iteration's notes on the model
    (``dtype_given``: ``--dtype`` was given, so the config's ``torch_dtype`` is not noted; ``given``: train's
    reading of which flags were given, to note those the sweep replaces)."""
    import pandas as pd

    from archsim.outputs import render
    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.training.moe_ops import padding_note
    from archsim.training.sweep import check_sweep_size
    from archsim.training.sweep_run import (
        noted_seq,
        refused_points_lines,
        run_grid,
        selective_flash_points_note,
        sweep_axes,
        sweep_base,
        swept_note,
    )
    from archsim.training.table_lines import csv_rows, table_rows
    from archsim.workload.model_files import config_dtype_note

    axes = sweep_axes(args.sweep)
    swept = given(args, [(f"--{key.replace('_', '-')}", key) for key, _ in axes])  # a flag the sweep replaces
    base = sweep_base(tp=args.tp, pp=args.pp, dp=args.dp, global_batch=args.global_batch, micro_batch=args.micro_batch,
                      recompute=args.recompute, sequence_parallel=args.sequence_parallel, interleave=args.interleave,
                      schedule=args.schedule, attention=args.attention, dp_overlap=args.dp_overlap,
                      grad_accumulation=args.grad_accumulation, distributed_optimizer=args.distributed_optimizer,
                      fsdp=args.fsdp, fsdp_reshard=args.fsdp_reshard, fsdp_grad_sync=args.fsdp_grad_sync, cp=args.cp,
                      cp_comm=args.cp_comm, cp_hierarchy=cp_hierarchy(args), ep=args.ep, etp=args.etp, fp8=args.fp8,
                      fp8_param_gather=args.fp8_param_gather, p2p=args.p2p)
    on = load_gpu_cluster(args.cluster, args.dtype)
    check_sweep_size(base, axes, args.max_ops, on.gpus)  # dp=fill's points: the cluster's GPUs
    grid = run_grid(config, on, base, axes, args.placement)
    rows, cluster = grid.rows, grid.cluster
    for line in grid.warnings:
        warn(line)
    note_default_seq(config, args.model, noted_seq(axes, args.seq))  # a seq axis sets every point's
    dtype_note = "" if dtype_given else config_dtype_note(config, args.dtype, model=args.model)
    for text in (grid.skipped, grid.sequence_parallel_off, dtype_note, padding_note(config), grid.short_pipelines,
                 selective_flash_points_note(rows)):  # every point's: noted once
        if text:
            note(text)
    note_unread_cluster_keys(cluster, "train", points=rows)  # the run done: notes never precede an error line
    if swept:
        note(swept_note(swept))
    if args.format == "table":  # a refused point's row is nan across: say which and why (JSON, csv: its error cell)
        for line in refused_points_lines(rows, grid.meta["axes"]):
            warn(line)
    if args.format == "table" and len({row["gpus"] for row in rows}) == 1:  # one count: the table leaves it out
        rows = [{k: v for k, v in row.items() if k != "gpus"} for row in rows]
    rows = {"csv": csv_rows, "table": table_rows}.get(args.format, list)(rows)  # the compute split: JSON's object
    emit(render(pd.DataFrame(rows), args.format, meta=grid.meta, precision=args.precision), args)
    return 0


def run_train_runs(args: argparse.Namespace, config, dtype_given: bool, given: Given) -> int:
    """``--runs``: every row of the runs file predicted on the cluster, in input order (nothing written
    when a row is bad: its line and field on stderr, exit 2), with one iteration's notes on the model
    (``dtype_given``: ``--dtype`` was given, so the config's ``torch_dtype`` is not noted; ``given``: train's
    reading of which flags were given, to refuse those the rows set themselves)."""
    from archsim.errors import InputError
    from archsim.outputs import render
    from archsim.progress import progress
    from archsim.rows import Rows
    from archsim.training.cluster_file import load_gpu_cluster
    from archsim.training.runs import runs_to_run
    from archsim.training.runs_notes import runs_file_notes
    from archsim.training.runs_predict import milliseconds_note, predict_runs, row_check
    from archsim.training.runs_result import runs_document
    from archsim.training.table_lines import csv_rows, table_rows
    from archsim.workload.model_files import config_dtype_note

    # every row runs with --attention (vTrain's measured runs: --attention standard), --dp-overlap, --grad-accumulation,
    # --schedule, --p2p and --dtype; a flag the rows set themselves (fp8 too, a column) is refused, not ignored
    apart = given(args, RUNS_APART)  # another job's flag, or one iteration's timeline: no column could say it
    if apart:
        raise InputError(f"{', '.join(apart)}: --runs predicts each row of the runs file as one line of its table and "
                         "draws no timeline (nor sweeps); drop them, or run one row alone, its columns as flags, "
                         "without --runs", field="runs")
    set_per_row = given(args, RUNS_SET_PER_ROW)
    if set_per_row:
        raise InputError(f"{', '.join(set_per_row)}: each row of the runs file sets its own parallelism (and experts' "
                         "capacity and load imbalance, fp8) and runs once; give them as its columns, or drop --runs", field="runs")

    cluster = load_gpu_cluster(args.cluster, args.dtype)
    rows = runs_to_run(args.runs, attention=args.attention, dp_overlap=args.dp_overlap,
                       grad_accumulation=args.grad_accumulation, schedule=args.schedule, max_ops=args.max_ops,
                       seq_given=args.seq is not None, check=row_check(config, cluster, args.runs), p2p=args.p2p)
    if given(args, (("--schedule", "schedule"),)) and all(row.schedule is not None for row in rows):
        raise InputError(f"--schedule {args.schedule}: every row of the runs file names its own schedule (its "
                         "schedule column), so the flag would set none and be ignored; drop it, or leave the "
                         "schedule cell empty in the rows it should set", field="runs")
    if given(args, (("--p2p", "p2p"),)) and all(row.p2p is not None for row in rows):
        raise InputError(f"--p2p {args.p2p}: every row of the runs file names its own pipeline sends (its p2p "
                         "column), so the flag would set none and be ignored; drop it, or leave the p2p cell empty "
                         "in the rows it should set", field="runs")
    warned: list[str] = []  # each row's train warnings, printed once the rows have run (a bad row: none)
    noted: list[str] = []  # and its notes (a fit above 90% of a GPU's memory), as train prints them
    with progress(len(rows), "runs", "run", delay=0.5) as bar:
        out = predict_runs(config, cluster, rows, bar.update, file=args.runs,
                           warn=lambda line, text: warned.append(f"line {line}: {text}"),
                           note=lambda line, text: noted.append(f"line {line}: {text}"))
    document = runs_document(out, rows, model=config.name, cluster=cluster, attention=args.attention,
                             dp_overlap=args.dp_overlap, schedule=args.schedule, p2p=args.p2p)
    for line in warned:
        warn(line)
    for line in noted:
        note(line)
    for line in runs_file_notes(args.runs, config.name, rows):
        note(line)
    # as one iteration's notes; vTrain's rows set their own sequence length: no note on MODEL's (read_runs: ≥ 1 row)
    note_default_seq(config, args.model, args.seq if rows[0].shape is None else config.seq)
    dtype_note = "" if dtype_given else config_dtype_note(config, args.dtype, model=args.model)
    if dtype_note:
        note(dtype_note)
    note_unread_cluster_keys(cluster, "train")  # the run done: notes never precede an error line
    units = milliseconds_note(out)
    if units:
        note(units)
    printed = {"csv": csv_rows, "table": table_rows}.get(args.format, list)(document["rows"])  # as --sweep's
    emit(render(Rows.of(printed), args.format, meta=document["meta"], precision=args.precision), args)
    return 0


# (flag, argparse dest) that a runs file's rows set themselves
RUNS_SET_PER_ROW = (("--tp", "tp"), ("--pp", "pp"), ("--dp", "dp"), ("--global-batch", "global_batch"),
                    ("--micro-batch", "micro_batch"), ("--recompute", "recompute"),
                    ("--sequence-parallel", "sequence_parallel"), ("--interleave", "interleave"),
                    ("--distributed-optimizer", "distributed_optimizer"), ("--fsdp", "fsdp"), ("--fsdp-reshard", "fsdp_reshard"),
                    ("--fsdp-grad-sync", "fsdp_grad_sync"), ("--cp", "cp"), ("--ep", "ep"), ("--etp", "etp"),
                    ("--fp8", "fp8"), ("--fp8-param-gather", "fp8_param_gather"),
                    ("--moe-expert-capacity-factor", "moe_expert_capacity_factor"),
                    ("--moe-pad-expert-input-to-capacity", "moe_pad_expert_input_to_capacity"),
                    ("--moe-load-imbalance", "moe_load_imbalance"),
                    ("--cp-comm", "cp_comm"), ("--cp-hierarchy", "cp_hierarchy"),
                    ("--stage-layers", "stage_layers"), ("--balance", "balance"), ("--placement", "placement"))
# (flag, argparse dest) of another job than the rows' (a sweep), or of one iteration's timeline, which no row draws
RUNS_APART = (("--sweep", "sweep"), ("--gantt", "gantt"), ("--chrome-trace", "trace"), ("--schedule-csv", "schedule_csv"))


def cp_hierarchy(args: argparse.Namespace) -> tuple[int, int] | None:
    """``--cp-hierarchy A P`` as the pair Parallelism takes (None when not given)."""
    return cast("tuple[int, int]", tuple(args.cp_hierarchy)) if args.cp_hierarchy else None  # Parallelism checks two


__all__ = ["RUNS_APART", "RUNS_SET_PER_ROW", "Given", "cp_hierarchy", "run_train_runs", "run_train_sweep"]
