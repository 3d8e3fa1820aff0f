"""The training jobs of the library's face: ``archsim.train`` and ``archsim.train_runs`` (``archsim.search`` in
:mod:`archsim.api_search`), keyword-only functions that take ``archsim train``'s flags as keywords of the same names
and call the code those commands run; nothing here computes a number of its own. Seconds, bytes and GiB as
the commands print them. Re-exported by :mod:`archsim.api` (and :mod:`archsim`, ``archsim.train(...)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from archsim.api_keywords import (
    check_choice,
    check_path,
    check_switch,
    check_text,
    gpu_cluster,
    listed,
    positive_int,
    seq_keyword,
    seq_note,
    speaks_keywords,
    train_numbers,
    transformer,
    unread_note,
)
from archsim.choices.training import DEFAULT_P2P
from archsim.console import library_note

if TYPE_CHECKING:  # the result types load with the jobs that return them
    import pandas

    from archsim.api_types import Cluster, Model
    from archsim.count_types import Count, Number
    from archsim.training.run import TrainResult
    from archsim.training.runs_result import RunsResult
    from archsim.training.throughput import Throughput


@speaks_keywords
def train(model: Model, *, cluster: Cluster, global_batch: Count, tp: Count = 1, pp: Count = 1, dp: Count = 1, micro_batch: Count = 1,
          seq: Count | None = None, recompute: str | None = None, sequence_parallel: bool = False, interleave: Count = 1,
          schedule: str = "1f1b", stage_layers: str | Sequence[Count] | None = None, attention: str | None = None,
          dp_overlap: str = "none", dtype: str | None = None, implementation: str = "megatron",
          grad_accumulation: str | None = None, balance: str = "even", placement: str = "file",
          max_ops: Count | None = None, distributed_optimizer: bool = False, fsdp: bool = False, cp: Count = 1,
          cp_comm: str = "p2p", fsdp_reshard: str = "after-forward", fsdp_grad_sync: str = "micro-batch",
          cp_hierarchy: str | Sequence[Count] | None = None, ep: Count = 1,
          etp: Count | None = None, moe_expert_capacity_factor: Number | None = None,
          moe_pad_expert_input_to_capacity: bool = False, moe_load_imbalance: Number | None = None,
          fp8: str | None = None, fp8_param_gather: bool = False, overlap_moe_expert_parallel_comm: bool = False,
          moe_shared_expert_overlap: bool = False, mtp_layers: Count | None = None, p2p: str = DEFAULT_P2P,
          ) -> tuple[TrainResult, Throughput]:
    """One training iteration of a transformer on a GPU cluster, as ``archsim train`` runs it. ``model``:
    a config path, a shipped config's name (``"gpt3_1.3b"``: :func:`~archsim.workload.model_files.transformer_path`)
    or a :class:`~archsim.workload.transformer.TransformerConfig`; ``cluster``: a cluster TOML path or a
    :class:`~archsim.training.cluster.GpuCluster`; the other names are ``train``'s flags. Units: ``global_batch``
    is in sequences per iteration, over every data-parallel rank (``--global-batch``), ``micro_batch`` in sequences per
    micro-batch of one pipeline, ``seq`` in tokens per sequence (None: the model's own); ``tp``, ``pp``, ``dp``, ``cp``,
    ``ep``, ``etp`` are group sizes in GPUs, ``interleave`` model chunks per pipeline rank, ``max_ops`` the most schedule ops the run
    may simulate (a job-size limit); a count takes an int, a whole float, a numpy integer or its flag's text
    (:data:`archsim.api_types.Count`). (``dtype`` None: ``--dtype``'s default fp16 for a path, a cluster object's own; ``grad_accumulation``
    None: the implementation's own, fused for megatron, unfused for pytorch-eager; ``attention`` None likewise,
    flash for megatron, standard for pytorch-eager (which takes ``"flash"`` too in fp16/bf16: PyTorch's
    ``scaled_dot_product_attention`` on its FlashAttention-2 backend); ``stage_layers`` as
    ``"6,6,6,6"`` or a sequence; ``balance``, ``placement`` and ``max_ops`` (None: ``--max-ops``' default)
    as their flags, :func:`archsim.training.train_layout.lay_out`; ``distributed_optimizer``: True or False,
    ``--distributed-optimizer``; ``fsdp``: True or False, ``--fsdp``; ``fsdp_reshard``: ``--fsdp-reshard``; ``fsdp_grad_sync``: ``--fsdp-grad-sync``; ``cp``, ``cp_comm``: ``--cp``,
    ``--cp-comm``; ``cp_hierarchy``: a2a+p2p's (A, P), ``--cp-hierarchy A P``; ``ep``: ``--ep``; ``etp``: ``--etp``, None: TP;
    ``moe_expert_capacity_factor``, ``moe_pad_expert_input_to_capacity``: their flags, None and False dropless;
    ``moe_load_imbalance``: ``--moe-load-imbalance``, the busiest EP rank's rows over the mean (≥ 1), None uniform;
    ``fp8``: ``--fp8``, ``"hybrid"`` or ``"e4m3"``, None off; ``fp8_param_gather``: True or False, ``--fp8-param-gather``;
    ``overlap_moe_expert_parallel_comm``, ``moe_shared_expert_overlap``: True or False, their flags,
    :mod:`archsim.training.moe_overlap`; ``mtp_layers``: ``--mtp-layers``, None the model's own, :mod:`archsim.training.mtp`;
    ``p2p``: ``--p2p``, ``"overlapped"``, ``"blocking"`` or ``"megatron"`` (the default), :attr:`~archsim.training.parallel.Parallelism.p2p_blocking`).
    Returns the :class:`~archsim.training.run.TrainResult` (``iteration_seconds``, ``memory`` per pipeline rank in
    bytes, ``peak_memory_gib`` in GiB, ``breakdown`` in seconds; ``energy_j`` and ``energy_source``, priced as ``archsim train`` prices them:
    :func:`archsim.training.energy.priced`) and its :class:`~archsim.training.throughput.Throughput`
    (MFU, TFLOP/s per GPU, tokens/s); ``result.to_dict()`` is the document ``archsim train --format json``
    prints. Each line ``archsim train`` prints on stderr is a :class:`UserWarning`: a TP group across servers, a
    rank whose memory does not fit its GPU (``result.fits``) or fits above 90% of it, a NIC speed outside every NIC
    sold, a config ``torch_dtype`` other than the cluster's, an interleaved schedule of one chunk, ``cp_comm`` at
    ``cp`` 1, capacity padding beyond the routed tokens, a breakdown rank of dense layers only at ``ep`` > 1, the
    eager default's full recompute, and the cluster file's notes (:mod:`archsim.fits`,
    :mod:`archsim.training.layout_notes`, :func:`archsim.training.cluster_file.cluster_notes`)."""
    from dataclasses import replace

    from archsim.choices.training import BALANCES, CP_COMMS, IMPLEMENTATION_ATTENTION, IMPLEMENTATIONS
    from archsim.fits import cp_span_warning, rank_headroom_note, rank_memory_warning, tp_span_warning
    from archsim.training.cluster import GpuCluster
    from archsim.training.cluster_file import cluster_notes
    from archsim.training.energy import priced
    from archsim.training.layout_notes import (
        breakdown_rank_note,
        eager_recompute_note,
        layout_notes,
        sequence_parallel_run,
    )
    from archsim.training.moe_ops import with_capacity, with_load_imbalance
    from archsim.training.moe_overlap import with_overlap
    from archsim.training.mtp import with_mtp_layers
    from archsim.training.parallel import Parallelism
    from archsim.training.run import train as _train
    from archsim.training.stage_layout import parse_stage_layers
    from archsim.training.throughput import mean_peak, throughput
    from archsim.training.train_json import train_document
    from archsim.training.train_layout import lay_out
    from archsim.validate import DEFAULT_MAX_OPS, check_job_size
    from archsim.workload.model_files import config_dtype_note

    check_choice(implementation, IMPLEMENTATIONS, "implementation")
    attention = IMPLEMENTATION_ATTENTION[implementation] if attention is None else attention
    eager_note = eager_recompute_note(implementation, recompute is not None)
    recompute = "full" if recompute is None else recompute  # --recompute's default (the measured runs')
    check_choice(balance, BALANCES, "balance")
    check_text(schedule, "schedule", "a schedule name (str)")  # a list is no name: one line, not a TypeError
    check_switch(distributed_optimizer, "distributed_optimizer")
    check_switch(fsdp, "fsdp")
    check_switch(fp8_param_gather, "fp8_param_gather")
    check_switch(overlap_moe_expert_parallel_comm, "overlap_moe_expert_parallel_comm")
    check_switch(moe_shared_expert_overlap, "moe_shared_expert_overlap")
    check_choice(cp_comm, CP_COMMS, "cp-comm")
    check_switch(moe_pad_expert_input_to_capacity, "moe_pad_expert_input_to_capacity")
    # the counts read as their flags read them, "2" too (search's top="2" is 2): the API's one rule
    n = train_numbers(tp=tp, pp=pp, dp=dp, global_batch=global_batch, micro_batch=micro_batch, interleave=interleave,
                      cp=cp, ep=ep, etp=etp, cp_hierarchy=cp_hierarchy, seq=seq,
                      moe_expert_capacity_factor=moe_expert_capacity_factor, moe_load_imbalance=moe_load_imbalance,
                      mtp_layers=mtp_layers)
    config = with_overlap(with_load_imbalance(with_capacity(with_mtp_layers(transformer(model, n.seq), n.mtp),
                                                            n.capacity, moe_pad_expert_input_to_capacity), n.imbalance),
                          overlap_moe_expert_parallel_comm, moe_shared_expert_overlap)
    split = parse_stage_layers(stage_layers, layers=config.layers, pp=n.pp, interleave=n.interleave, schedule=schedule,
                               mtp=config.mtp_layers) \
        if isinstance(stage_layers, str) else \
        None if stage_layers is None else [positive_int(k, "stage-layers") for k in listed(stage_layers, "stage-layers", single=True)]
    sequence_parallel, sp_note = sequence_parallel_run(n.tp, sequence_parallel)  # TP 1: off, as Megatron-LM turns it
    par = Parallelism(n.tp, n.pp, n.dp, n.global_batch, n.micro_batch, recompute, sequence_parallel, n.interleave,
                      schedule, tuple(split) if split else None, attention, dp_overlap, grad_accumulation,
                      distributed_optimizer, fsdp, n.cp, cp_comm, fsdp_reshard, fsdp_grad_sync, n.cp_hierarchy, n.ep,
                      n.etp, fp8, fp8_param_gather, p2p)
    limit = DEFAULT_MAX_OPS if max_ops is None else positive_int(max_ops, "max-ops")
    check_job_size(par.schedule_actions, limit)  # before the cluster's matrices are built
    laid = lay_out(config, gpu_cluster(cluster, dtype), par, placement=placement, balance=balance,
                   implementation=implementation, max_ops=limit)
    machines = laid.machines
    ran = laid.result or _train(config, laid.par, machines[0], machines)  # balance="planned" timed it already
    result = priced(ran, config, laid.par, laid.cluster, implementation)
    result = replace(result, document=train_document(result, config, laid, implementation))
    dtype_note = "" if dtype is not None or isinstance(cluster, GpuCluster) else \
        config_dtype_note(config, laid.cluster.dtype, model=model)
    for warning in (*laid.cluster.warnings,
                    tp_span_warning(laid.cluster, laid.par), cp_span_warning(laid.cluster, laid.par),
                    rank_memory_warning(result, machines), rank_headroom_note(result, machines),
                    seq_note(model, config, n.seq), unread_note(model), sp_note, dtype_note, eager_note,
                    *layout_notes(laid.par, config, laid.cluster, placement),
                    breakdown_rank_note(laid.par, config, result.finishing_rank),
                    *cluster_notes(laid.cluster, "train", laid.par)):
        if warning:  # the lines archsim train prints on stderr
            library_note(warning, stacklevel=3)
    return result, throughput(config, n.global_batch, recompute, result.iteration_seconds, laid.par.gpus,
                              mean_peak(machines), attention)


@speaks_keywords
def train_runs(model: Model, *, runs: str | Path | pandas.DataFrame, cluster: Cluster, seq: Count | None = None,
               attention: str | None = None, dp_overlap: str = "none", grad_accumulation: str | None = None,
               schedule: str = "1f1b", dtype: str | None = None, max_ops: Count | None = None,
               overlap_moe_expert_parallel_comm: bool = False, moe_shared_expert_overlap: bool = False,
               mtp_layers: Count | None = None, p2p: str = DEFAULT_P2P) -> RunsResult:
    """Every row of a runs file predicted as ``archsim train MODEL --runs RUNS.csv`` predicts it: a
    :class:`~archsim.training.runs_result.RunsResult`, the list of one dict a row it always was (``to_dict()``: the
    command's ``--format json``; ``to_frame()``: its ``--format csv`` rows), in the file's order (``runs``: the file's path, or a pandas DataFrame of its columns, checked as the CSV
    ``runs.to_csv(index=False)`` writes, its rows numbered in errors from line 2 as that file's; a float column's
    whole numbers, 8.0, are counts) (``predicted_seconds``, ``peak_memory_gib``, ``energy_j`` and ``energy_source``,
    ``measured_seconds`` and ``error`` = predicted / measured − 1), each row run with the command's flags
    kept here as keywords of the same names and defaults (``attention`` None: megatron's flash, the runs'
    implementation, as :func:`train`'s; vTrain's measured runs need ``"standard"``; ``model``, ``cluster``, ``dtype``, ``seq``, ``max_ops``,
    ``overlap_moe_expert_parallel_comm``, ``moe_shared_expert_overlap`` and ``mtp_layers`` as :func:`train`'s, every
    row's, as ``archsim train --runs`` takes their flags; fp8 is each row's ``fp8`` column; ``p2p``: ``--p2p``, the
    pipeline sends of every row whose ``p2p`` cell is empty or absent).
    A bad row raises :class:`~archsim.errors.InputError` naming its line and field before any row runs;
    measured times that look like milliseconds are a :class:`UserWarning`, the note the command prints, as are
    rows of empty cells skipped (:func:`archsim.training.runs_notes.cleared_rows_note`), a ``# model:`` line naming another
    model (:func:`archsim.training.runs_notes.model_note`), an interleaved
    ``schedule`` on rows of one chunk per rank (:func:`archsim.training.runs_notes.one_chunk_rows_note`), rows of
    ``sequence_parallel`` true at ``tp`` 1, run without it as :func:`train` runs them
    (:func:`archsim.training.runs_notes.sequence_parallel_rows_note`),
    a link speed whose unit slipped (:attr:`GpuCluster.warnings <archsim.training.cluster.GpuCluster>`), each
    of the cluster file's notes (:func:`archsim.training.cluster_file.cluster_notes`) and :func:`train`'s notes on
    the model (a rotary config's sequence from ``max_position_embeddings``, a config.json's unread fields, its
    ``torch_dtype`` without ``dtype``)."""
    from archsim.choices.schedules import TRAINING_SCHEDULES as SCHEDULES
    from archsim.choices.training import (
        ATTENTIONS,
        DP_OVERLAPS,
        GRAD_ACCUMULATIONS,
        IMPLEMENTATION_ATTENTION,
        P2P_MODES,
    )
    from archsim.training.cluster import GpuCluster
    from archsim.training.cluster_file import cluster_notes
    from archsim.training.moe_overlap import with_overlap
    from archsim.training.mtp import with_mtp_layers
    from archsim.training.runs import frame_text, runs_to_run
    from archsim.training.runs_notes import runs_file_notes
    from archsim.training.runs_predict import milliseconds_note, predict_runs, row_check
    from archsim.training.runs_result import RunsResult, runs_document
    from archsim.validate import DEFAULT_MAX_OPS
    from archsim.workload.model_files import config_dtype_note

    attention = IMPLEMENTATION_ATTENTION["megatron"] if attention is None else attention  # runs are megatron's
    check_choice(attention, ATTENTIONS, "attention")  # the flags' choices, before any file is read
    check_choice(dp_overlap, DP_OVERLAPS, "dp-overlap")
    if grad_accumulation is not None:
        check_choice(grad_accumulation, GRAD_ACCUMULATIONS, "grad-accumulation")
    check_choice(schedule, SCHEDULES, "schedule")
    check_choice(p2p, P2P_MODES, "p2p")
    check_switch(overlap_moe_expert_parallel_comm, "overlap_moe_expert_parallel_comm")
    check_switch(moe_shared_expert_overlap, "moe_shared_expert_overlap")
    mtp = None if mtp_layers is None else positive_int(mtp_layers, "mtp-layers", low=0)
    if not isinstance(runs, (str, Path)):
        import pandas

        if not isinstance(runs, pandas.DataFrame):
            check_path(runs, "runs", "a runs CSV path or a pandas DataFrame")
        runs = frame_text(runs)  # the CSV it would be written as, read by the file's reader
    seq = None if seq is None else seq_keyword(seq)  # "2048" is 2048 to the notes and the document too
    config = with_overlap(with_mtp_layers(transformer(model, seq), mtp), overlap_moe_expert_parallel_comm,
                          moe_shared_expert_overlap)  # every row's, as the command's flags beside --runs
    on = gpu_cluster(cluster, dtype)
    rows = runs_to_run(runs, attention=attention, dp_overlap=dp_overlap, grad_accumulation=grad_accumulation,
                       schedule=schedule, max_ops=DEFAULT_MAX_OPS if max_ops is None else positive_int(max_ops, "max-ops"),
                       seq_given=seq is not None, check=row_check(config, on, runs), p2p=p2p)
    out = predict_runs(config, on, rows, file=runs,  # the lines archsim train --runs prints on stderr
                       warn=lambda line, text: library_note(f"line {line}: {text}", stacklevel=5))
    dtype_note = "" if dtype is not None or isinstance(cluster, GpuCluster) else config_dtype_note(config, on.dtype, model=model)
    model_notes = (seq_note(model, config, seq) if rows[0].shape is None else "",  # vTrain's rows: their own seq
                   unread_note(model), dtype_note)
    for note in (*on.warnings, *runs_file_notes(runs, config.name, rows), *model_notes,
                 *cluster_notes(on, "train"), milliseconds_note(out)):  # as the command's, in order
        if note:
            library_note(note, stacklevel=3)
    return RunsResult(out, runs_document(out, rows, model=config.name, cluster=on, attention=attention,
                                         dp_overlap=dp_overlap, schedule=schedule, p2p=p2p))
