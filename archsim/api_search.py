"""The search of the library's face: ``archsim.search``, a keyword-only function that takes ``archsim search``'s
flags as keywords of the same names and calls the code that command runs; nothing here computes a number of its own.
Seconds, bytes and GiB as the command prints them. Re-exported by :mod:`archsim.api` (and :mod:`archsim`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from archsim.api_keywords import (
    check_choice,
    check_path,
    check_switch,
    gpu_cluster,
    int_or_word,
    listed,
    named,
    positive_int,
    ratio,
    seq_keyword,
    seq_note,
    speaks_keywords,
    transformer,
    unread_note,
)
from archsim.choices.training import DEFAULT_P2P
from archsim.console import library_note

if TYPE_CHECKING:  # the result type loads with the job that returns it
    from archsim.api_types import Cluster, Model
    from archsim.count_types import Count, Counts, Number
    from archsim.training.search_result import SearchResult


@speaks_keywords
def search(model: Model, *, cluster: Cluster, global_batch: Count, gpus: Counts | None = None, seq: Count | None = None,
           objective: str = "time", balance: str = "even", placement: str = "file", top: Count = 10,
           recompute: str | Sequence[str] = ("none", "selective", "full"), schedule: str | Sequence[str] | None = None,
           chunks: Counts | None = None, max_micro_batch: Count = 8, sequence_parallel: bool | str = "both",
           refine: Count | None = None, attention: str = "flash", dp_overlap: str = "none",
           max_ops: Count | None = None, grad_accumulation: str = "fused", dtype: str | None = None,
           progress: bool | None = None, model_file: str | Path | None = None,
           cluster_file: str | Path | None = None, distributed_optimizer: bool = False,
           fsdp: bool = False, cp: Counts | None = None,
           cp_comm: str | Sequence[str] = "p2p", fsdp_reshard: str = "after-forward",
           fsdp_grad_sync: str = "micro-batch", ep: Counts | None = None,
           etp: Counts | None = None, fp8: str | None = None,
           fp8_param_gather: bool = False, moe_load_imbalance: Number | None = None,
           overlap_moe_expert_parallel_comm: bool = False, moe_shared_expert_overlap: bool = False,
           mtp_layers: Count | None = None, p2p: str = DEFAULT_P2P,
           tp: Counts | None = None, pp: Counts | None = None) -> SearchResult:
    """Rank TP × PP × DP × micro-batch × recompute × schedule for ``model`` on ``cluster`` as
    ``archsim search`` does, with its flags' names and defaults. Units: ``global_batch`` in sequences per iteration,
    over every data-parallel rank; ``max_micro_batch`` the largest micro-batch tried, in sequences; ``seq`` in tokens
    per sequence; ``gpus``, ``tp``, ``pp``, ``cp``, ``ep``, ``etp`` in GPUs; a count takes an int, a whole float, a numpy
    integer or its flag's text (:data:`archsim.api_types.Count`). (``schedule`` None: every schedule;
    ``refine`` None: 2 × ``top``, at least 20; ``chunks`` None: 2 and 4, refused given without a schedule that takes it;
    ``max_ops``: ``--max-ops``, None: its default; ``sequence_parallel``: ``--sequence-parallel``'s ``"both"``,
    ``"on"`` or ``"off"``, or :func:`archsim.train`'s switch, True (``"on"``) or False (``"off"``); one value where
    the flag takes several, ``schedule="1f1b"``, is a list of one; ``dtype`` None: ``--dtype``'s default fp16 for a path, a cluster object's own;
    ``progress``: ``archsim search``'s progress bars on stderr, True always, False never, None only when
    stderr is a terminal, as the CLI draws them; ``distributed_optimizer``: every configuration's, True or False, as
    ``--distributed-optimizer``; ``fsdp``: every configuration's, as ``--fsdp``, ``fsdp_reshard`` as ``--fsdp-reshard``, ``fsdp_grad_sync`` as ``--fsdp-grad-sync``; ``cp``: the context-parallel
    degrees tried, as ``--cp`` (None: 1 alone, with a note at 32,768 tokens or more); ``cp_comm``: the K/V exchanges each CP above 1 tries, as ``--cp-comm``; ``ep``: the expert-parallel degrees tried, as ``--ep``, None: a
    mixture of experts' every divisor of its expert count, a dense model's 1; ``etp``: the experts' tensor-parallel degrees
    tried, as ``--etp``: integers and ``"tp"`` (each candidate's TP), ``etp=[1, "tp"]`` or ``"1,tp"``, None: TP alone;
    ``fp8``: every configuration's, as ``--fp8``, None off; ``fp8_param_gather``: as ``--fp8-param-gather``; ``overlap_moe_expert_parallel_comm``, ``moe_shared_expert_overlap``: every configuration's, as their flags;
    ``moe_load_imbalance``: every configuration's busiest EP rank's rows over the mean, as ``--moe-load-imbalance``,
    None uniform; ``mtp_layers``: as ``--mtp-layers``, None the model's own; ``p2p``: every configuration's pipeline
    sends, as ``--p2p``: ``"overlapped"``, ``"blocking"`` or ``"megatron"`` (the default), the rows carrying ``p2p``
    when not the default); ``tp``, ``pp``: the TP and PP degrees tried, as ``--tp``, ``--pp`` (``tp=8``, ``tp=[4, 8]`` or ``"4,8"``),
    None: every divisor of the GPUs).
    Returns the :class:`~archsim.training.search_result.SearchResult`, read-only: ``rows``
    (a tuple of read-only dicts, best first: the configuration, ``iteration_seconds``, ``peak_memory_gib``, ``mfu``, …, ``command``: the
    rows of ``to_dict()``, key for key),
    ``rejected`` (reason → count), the Pareto front and ``sharded_fits`` (every configuration out of memory
    without ``distributed_optimizer``: how many it would fit and the smallest's bytes per GPU, else None);
    ``to_dict()`` is the document ``archsim search
    --format json`` prints (each row's ``command`` naming ``model`` and ``cluster``, or ``MODEL.json`` and
    ``CLUSTER.toml`` where they are objects; ``model_file`` and ``cluster_file``, where given, are the
    paths named instead: the files objects were loaded from, as ``archsim search`` names its own). A link speed
    whose unit slipped, a rotary config's default sequence, its ``torch_dtype`` naming another dtype than the one
    priced (``dtype`` None, ``cluster`` a path: :func:`archsim.train`'s note) and each of the cluster file's notes
    (:func:`archsim.training.cluster_file.cluster_notes`) are a :class:`UserWarning`, the lines ``archsim
    search`` prints on stderr; so are its note on an empty answer (no configuration costed: why, and what to
    give instead) and on rows shown above 90% of a GPU's whole memory (:func:`archsim.fits.rows_headroom_note`)."""
    from dataclasses import replace

    from archsim.choices.schedules import TRAINING_SCHEDULES as SCHEDULES
    from archsim.choices.training import (
        BALANCES,
        CP_COMMS,
        DP_OVERLAPS,
        ETP_TP,
        FP8_RECIPES,
        GRAD_ACCUMULATIONS,
        MAX_REFINE_ACTIONS,
        OBJECTIVES,
        P2P_MODES,
        PLACEMENTS,
    )
    from archsim.errors import InputError
    from archsim.fits import rows_headroom_note, rows_tp_span_note
    from archsim.progress import shown
    from archsim.training.cluster import GpuCluster
    from archsim.training.cluster_file import cluster_notes
    from archsim.training.moe_ops import with_load_imbalance
    from archsim.training.moe_overlap import with_overlap
    from archsim.training.mtp import with_mtp_layers
    from archsim.training.search import search as _search
    from archsim.training.search_flags import chunk_counts, cp_comm_rule
    from archsim.training.search_note import cp_not_searched_note
    from archsim.training.train_json import row_context, search_document
    from archsim.workload.model_files import config_dtype_note

    # the checks archsim search's parser makes, in its flags' order, before any file is read
    global_batch = positive_int(global_batch, "global-batch")  # a str or float was a TypeError deep in search
    counts = [] if gpus is None else [positive_int(n, "gpus") for n in listed(gpus, "gpus")]
    cps = (1,) if cp is None else tuple(positive_int(n, "cp") for n in listed(cp, "cp"))
    cp_comms = tuple(listed(cp_comm, "cp-comm"))
    eps = None if ep is None else tuple(positive_int(n, "ep") for n in listed(ep, "ep"))
    etps = None if etp is None else tuple(int_or_word(n, ETP_TP, "etp") for n in listed(etp, "etp"))
    tps = None if tp is None else tuple(positive_int(n, "tp") for n in listed(tp, "tp"))
    pps = None if pp is None else tuple(positive_int(n, "pp") for n in listed(pp, "pp"))
    for name in cp_comms:
        check_choice(name, CP_COMMS, "cp-comm")
    cp_comm_rule(cps, cp_comms)
    check_choice(objective, OBJECTIVES, "objective")
    check_choice(balance, BALANCES, "balance")
    check_choice(placement, PLACEMENTS, "placement")
    check_choice(p2p, P2P_MODES, "p2p")
    if fp8 is not None:
        check_choice(fp8, FP8_RECIPES, "fp8")
    top = positive_int(top, "top")
    schedules = listed(SCHEDULES if schedule is None else schedule, "schedule")
    for name in schedules:
        check_choice(name, SCHEDULES, "schedule")
    chunk_given = None if chunks is None else [positive_int(v, "chunks") for v in listed(chunks, "chunks")]
    max_micro_batch = positive_int(max_micro_batch, "max-micro-batch")
    refine = None if refine is None else positive_int(refine, "refine", low=0)  # None: search's default, 2 × top
    max_ops = MAX_REFINE_ACTIONS if max_ops is None else positive_int(max_ops, "max-ops")
    check_choice(dp_overlap, DP_OVERLAPS, "dp-overlap")
    check_choice(grad_accumulation, GRAD_ACCUMULATIONS, "grad-accumulation")
    chunk_list = chunk_counts(schedules, chunk_given)  # before the files are read
    seq = None if seq is None else seq_keyword(seq)  # "2048" is 2048 to the notes and the document too
    imbalance = None if moe_load_imbalance is None else ratio(moe_load_imbalance, "moe-load-imbalance")
    check_switch(overlap_moe_expert_parallel_comm, "overlap_moe_expert_parallel_comm")
    check_switch(moe_shared_expert_overlap, "moe_shared_expert_overlap")
    mtp = None if mtp_layers is None else positive_int(mtp_layers, "mtp-layers", low=0)
    config = with_overlap(with_load_imbalance(with_mtp_layers(transformer(model, seq), mtp), imbalance),
                          overlap_moe_expert_parallel_comm, moe_shared_expert_overlap)
    on = gpu_cluster(cluster, dtype)
    if counts and max(counts) > on.gpus:
        raise InputError(f"{max(counts)} GPUs asked for, the cluster has {on.gpus}", field="gpus")
    modes = {"both": (False, True), "on": (True,), "off": (False,)}
    if isinstance(sequence_parallel, bool):  # train's switch: True is "on", False "off"
        sequence_parallel = "on" if sequence_parallel else "off"
    check_choice(sequence_parallel, tuple(modes), "sequence-parallel")
    check_switch(progress, "progress", none=True)
    check_switch(distributed_optimizer, "distributed_optimizer")
    check_switch(fsdp, "fsdp")
    check_switch(fp8_param_gather, "fp8_param_gather")
    for name, field in ((model_file, "model_file"), (cluster_file, "cluster_file")):
        if name is not None:
            check_path(name, field, "a path (a str or Path) or None")
    with shown(progress):
        result = _search(config, on, global_batch, counts or None, micro_batches=range(1, max_micro_batch + 1),
                       recomputes=listed(recompute, "recompute"), schedules=schedules, chunks=chunk_list,
                       sequence_parallel=modes[sequence_parallel], top=top,
                       refine=refine, balance=balance, objective=objective, placement=placement,
                       attention=attention, dp_overlap=dp_overlap, grad_accumulation=grad_accumulation,
                       max_actions=max_ops, distributed_optimizer=distributed_optimizer, fsdp=fsdp, cps=cps,
                       cp_comms=cp_comms, fsdp_reshard=fsdp_reshard, fsdp_grad_sync=fsdp_grad_sync, eps=eps,
                       etps=etps, fp8=fp8, fp8_param_gather=fp8_param_gather, p2p=p2p, tps=tps, pps=pps)
    dtype_note = "" if dtype is not None or isinstance(cluster, GpuCluster) else \
        config_dtype_note(config, on.dtype, "search", model=model)  # as train's
    for note in (*on.warnings, seq_note(model, config, seq), cp_not_searched_note(config, cp is not None, attention),
                 unread_note(model), dtype_note, result.orders_note, rows_headroom_note(result.rows, on), rows_tp_span_note(result.rows),
                 *cluster_notes(on, "search", attention=attention)):
        if note:  # the lines archsim search prints on stderr: a link's unit that slipped, the sequence's default,
            # what the cluster file states that search does not read
            library_note(note, stacklevel=3)
    if not result.costed:  # an empty answer: why, and what to give instead, as archsim search's note says it
        from archsim.training.search_note import empty_search_note

        library_note(empty_search_note(config, on, global_batch, counts or [on.gpus], result.rejected, balance,
                                       result.sharded_fits), stacklevel=3)
    from archsim.training.energy_sources import energy_sources

    document = search_document(
        result, config, on, model=named(model_file, model, "MODEL.json"),
        cluster_file=named(cluster_file, cluster, "CLUSTER.toml"), global_batch=global_batch, gpus=counts or None,
        seq=seq, objective=objective, balance=balance, placement=placement,
        distributed_optimizer=distributed_optimizer, fsdp=fsdp, cps=cps, cp_comms=cp_comms,
        fsdp_reshard=fsdp_reshard, fsdp_grad_sync=fsdp_grad_sync, eps=eps, etps=etps, fp8=fp8,
        fp8_param_gather=fp8_param_gather, energy_source=energy_sources(on, counts or [on.gpus]), tps=tps, pps=pps)
    # the rows are the document's (each with its command), copied and read-only (SearchResult.__post_init__): to_dict
    # gives what was printed
    return replace(result, rows=[dict(row) for row in document["rows"]], document=document,
                   row_context=row_context(config, on, global_batch, seq))
