"""Search the whole machine: the fastest TP × PP × DP × micro-batch × recompute × schedule × sequence
parallelism for a transformer, a global batch and a GPU cluster.

1. Enumerate every candidate (:mod:`archsim.training.search_space`) and drop those that break a rule
   or do not fit a GPU's memory, counting each reason.
2. Time the rest by closed forms of the pipeline span over the end-to-end model's per-stage
   F/I/W times (:func:`~archsim.training.search_cost.pipeline_seconds`; the pieces' op costs are
   computed once per TP × micro-batch × recompute × sequence parallelism × TP link, so a candidate
   costs microseconds).
   1F1B's is :func:`archsim.training.stages.one_f_one_b_seconds`, the one the kernel fit uses.
   Schedules other than 1F1B and GPipe are timed in the event simulator while short of a steady
   state (fewer than 2p micro-batches), where their closed forms are poor.
3. Re-time the best ``refine`` estimated by a closed form with the event simulator
   (:func:`archsim.training.run.train`) when their schedule is small enough, and rank again:
   ``timing`` says which model timed each row. Every closed form is an estimate, 1F1B's and GPipe's too
   (exact on equal stages, over the real ones where a dense first layer, the embedding or the head, a planned split
   or a mixed cluster make them unequal), so a re-timed row's time is ``archsim train``'s for its ``command``;
   a row on a planned placement is re-timed on each server order.

Only the ranking lives here; each step's parts have a module of their own: the costing
(:mod:`~archsim.training.search_cost`), the rows (:mod:`~archsim.training.search_row_maker`), the Pareto
front and identical-row twins (:mod:`~archsim.training.search_front`), the size caps
(:mod:`~archsim.training.search_limits`), the empty-search note (:mod:`~archsim.training.search_note`)
and the result (:mod:`~archsim.training.search_result`).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import replace

from archsim.choices.training import DEFAULT_P2P
from archsim.console import setting
from archsim.errors import InputError
from archsim.training.fp8_ops import check_fp8
from archsim.training.moe_overlap import check_config
from archsim.training.objectives import OBJECTIVE_COLUMN, check_objective_figures
from archsim.training.parallel import Parallelism
from archsim.training.placement import capped_order_count, layouts, orders_note, server_orders
from archsim.training.search_cost import Coster, objective_value
from archsim.training.search_experts import expert_degrees, expert_tp_degrees
from archsim.training.search_fit import fit_candidate
from archsim.training.search_flags import cp_divides_rule, layout_divides_rule
from archsim.training.search_front import distinct_rows, identical_rows_dropped, pareto_front_rows
from archsim.training.search_limits import check_planning_work, check_search_size
from archsim.training.search_result import SearchResult, ShardedFits
from archsim.training.search_row_maker import RowMaker
from archsim.training.search_space import REASONS, Candidate, candidates, rejection
from archsim.training.stage_split import refuse_planned_fp32
from archsim.workload.transformer import TransformerConfig, refuse_switch

MIN_REFINE = 20  # the default --top's double: with fewer rows asked for, the same rows are re-timed



def default_refine(top: int) -> int:
    """How many of the best closed-form rows are re-timed when the caller names no ``refine``: 2 × ``top``, at
    least :data:`MIN_REFINE`. Why the floor: a closed form can be a few percent off, so a row it ranks 15th may
    re-time first; with 2 × ``top`` alone ``--top 1`` re-timed two rows and named another best than ``--top 3``
    did. With the floor the first row is the same for every ``top`` up to 10."""
    return max(2 * top, MIN_REFINE)


def refine_refusal(actions: list[int], limit: int, top: int | None) -> tuple[str, str]:
    """The refusal (message, field) of a re-timing whose event simulations add up to more schedule actions than
    ``limit`` (``--max-ops``); ``actions``: each re-timed row's, best first (0: kept as it is); ``top``: the caller's
    ``--top`` where ``--refine`` took its default (None: ``--refine`` given). Why: a default refusal named only
    ``--refine``, a flag the caller never gave; it now names ``--top`` and the largest ``--refine`` within
    ``limit`` (the leading rows whose actions fit), and a ``--top`` whose default fits where one does."""
    fits, total = 0, 0
    for count in actions:
        if total + count > limit:
            break
        fits, total = fits + 1, total + count
    head = (f"re-timing the best {len(actions):,} configurations simulates about {sum(actions):,} schedule actions, "
            f"above {setting('max-ops', placeholder=f'{limit:,}')}")
    if top is None:
        return (f"{head}; lower {setting('refine')} (by default 2 × {setting('top')}, at least {MIN_REFINE}) or "
                f"raise {setting('max-ops')}"), "refine"
    smaller = f"{setting('top', placeholder=f'{fits // 2:,}')} or fewer, " if fits >= MIN_REFINE else ""
    fewer = (f"{setting('refine', placeholder='N')} of at most {fits:,} to re-time only the best N (the rest keep "
             "their closed-form times; 0: none)") if fits else f"{setting('refine', 0)} to keep the closed-form times"
    return (f"{head} ({setting('refine')}'s default: 2 × {setting('top', top)}, at least {MIN_REFINE}); give "
            f"{smaller}{fewer}, or a larger {setting('max-ops', placeholder='N')}"), "top"


def search(c: TransformerConfig, cluster, global_batch: int, gpus=None, *,
           micro_batches=range(1, 9), recomputes=("none", "selective", "full"),
           schedules=("1f1b", "interleaved-1f1b"), chunks=(2,), sequence_parallel=(False, True),
           top: int = 10, refine: int | None = 0, only=None, progress_desc: str | None = None,
           balance: str = "even", objective: str = "time", placement: str = "file",
           attention: str = "standard", dp_overlap: str = "none", max_actions: int | None = None,
           grad_accumulation: str = "fused", distributed_optimizer: bool = False,
           fsdp: bool = False, cps=(1,), cp_comms=("p2p",), fsdp_reshard: str = "after-forward",
           fsdp_grad_sync: str = "micro-batch", eps=None, etps=None, fp8: str | None = None,
           fp8_param_gather: bool = False, p2p: str = DEFAULT_P2P, tps=None, pps=None) -> SearchResult:
    """Rank every candidate on ``gpus`` GPUs (an int or several; default all the cluster's) by
    ``objective`` (:mod:`archsim.training.objectives`); ``balance``: ``even`` (Megatron's split) or
    ``planned`` (:mod:`archsim.training.stage_split`, per model chunk for interleaved and V-shaped
    schedules; then PP × chunks need not divide the layers); ``placement``: ``file`` (the servers in
    the file's order) or ``planned`` (each candidate on its best server order,
    :mod:`archsim.training.placement`; the result's ``orders_note`` says where each kind's servers kept the file's
    order: :func:`~archsim.training.search_limits.check_search_size`); ``only(candidate)``: an extra filter (e.g. the configurations a
    measurement covered), its rejections counted as ``filtered``. Each row's ``uneven_gain`` is how
    much faster the planned split is than the even one, ``placement_gain`` the planned order than the
    file's, as fractions of the latter's time. ``refine``: how many of the best closed-form rows the event
    simulator re-times, None: :func:`default_refine` (a refusal then names ``top``, :func:`refine_refusal`).
    ``max_actions``: refuse (before simulating) a re-timing whose event simulations add up to more schedule actions
    (``--max-ops``); None: no limit. ``attention``:
    every candidate's attention kernels (``standard`` or ``flash``), ``dp_overlap`` its DP all-reduce
    (``none`` or ``bucketed``, :class:`~archsim.training.parallel.Parallelism`), ``grad_accumulation``
    its gradient accumulation (``fused`` or ``unfused``, :mod:`archsim.training.grad_accumulation`),
    ``distributed_optimizer`` whether Megatron-LM's distributed optimizer shards its optimizer states over DP
    (the memory rule and the rows' time, :class:`~archsim.training.parallel.Parallelism`); off, and every
    configuration out of memory (and ``fsdp`` off: it shards every state already), the result's ``sharded_fits``
    says how many it would fit (each laid out as the search lays it out); ``fsdp`` whether PyTorch FSDP shards every state (each pipeline rank its own stages',
    :mod:`archsim.training.fsdp`), ``fsdp_reshard`` when it frees the gathered parameters, ``fsdp_grad_sync`` when it reduce-scatters the gradients; ``cps``: the context-parallel degrees tried (each dividing a GPU count), ``cp_comms`` their K/V exchanges; ``eps``: the EP degrees tried (default: a mixture of experts' every
    divisor of its expert count, a dense model's 1; each row's EP divides the experts and, at ETP = TP, CP × DP, train's rule: Megatron-Core's expert groups
    take the CP ranks as DP ranks, :func:`expert_degrees`; rejected as ``ep-divides-dp``, a name kept from before CP);
    ``etps``: the experts' tensor-parallel degrees tried, integers and ``"tp"`` (each candidate's TP; default: TP
    alone; :func:`expert_tp_degrees`), a row's ETP × EP dividing TP × CP × DP; the rows carry ``etp`` when given;
    ``fp8``: every candidate's Transformer Engine recipe (:mod:`archsim.training.fp8_ops`; each of the cluster's GPUs
    needs an fp8 peak, refused once here), the rows carrying ``fp8`` when given; ``fp8_param_gather``: its fp8
    weights (:mod:`archsim.training.fp8_memory`; with ``fp8`` and ``distributed_optimizer``), the rows carrying
    ``fp8_param_gather`` when set; ``p2p``: every candidate's pipeline sends (``--p2p``,
    :attr:`~archsim.training.parallel.Parallelism.p2p_blocking`; blocking ones costed by
    :func:`~archsim.policies.held_span.held_span`), the rows carrying ``p2p`` when not the default; ``tps``, ``pps``:
    the TP and PP degrees tried (``--tp``, ``--pp``; None: every divisor of the GPUs), each dividing a GPU count."""
    refuse_switch(c, "search (Megatron's configurations)")
    eps, etps = expert_degrees(c, eps), expert_tp_degrees(c, etps)
    Parallelism(fsdp=fsdp, fsdp_reshard=fsdp_reshard,  # a mode without --fsdp, or a misspelt one: refused once, here
                fsdp_grad_sync=fsdp_grad_sync, p2p=p2p)
    check_config(c, cluster.dtype)  # the all-to-all overlaps' refusals whatever the layout (moe_overlap.py), once
    for device in {*cluster.servers, cluster.gpu}:  # as train refuses it, once for the search
        check_fp8(fp8, device, cluster.dtype, fsdp=fsdp, param_gather=fp8_param_gather,
                  distributed_optimizer=distributed_optimizer)
    from archsim.progress import progress

    started = time.monotonic()
    # the bars after the grid's draw once the search has run a second (at once after a drawn grid bar), so
    # its last phases (the rows: ~1.5 s for docs' 1T search) show too, and a quick search draws none
    later = lambda: max(0.0, 1.0 - (time.monotonic() - started))

    counts = (gpus,) if isinstance(gpus, int) else tuple(gpus or (cluster.gpus,))
    cp_divides_rule(cps, counts)
    for flag, given in (("tp", tps), ("pp", pps)):
        if given is not None:
            cp_divides_rule(given, counts, flag)
    layout_divides_rule(counts, cps, tps, pps)
    planned = check_search_size(cluster, counts, micro_batches, recomputes, schedules, chunks, sequence_parallel,
                                placement, cps, cp_comms, eps, etps, tps, pps)
    for n in counts:
        check_objective_figures(cluster, n, objective)
    grid = [k for n in counts
            for k in candidates(n, micro_batches, recomputes, schedules, chunks, sequence_parallel, attention,
                                dp_overlap, grad_accumulation, distributed_optimizer, fsdp, cps, cp_comms, fsdp_reshard,
                                fsdp_grad_sync, eps, etps, fp8, fp8_param_gather, p2p, tps, pps)]
    if balance == "planned":
        refuse_planned_fp32(cluster.dtype)
        check_planning_work(c, cluster, global_batch, grid,
                            capped_order_count(cluster, planned.most) if placement == "planned" else 1)
    orders = server_orders(cluster, planned.most) if placement == "planned" else None
    placed: dict = {}  # (tp, pp, dp, cp, ep, etp) → the distinct layouts of the server orders (each group's links)
    rejected: Counter = Counter()
    coster = Coster(c, cluster, global_batch)
    value = objective_value(coster, objective, c, global_batch)
    costed: list[tuple[float, str, float, Candidate]] = []  # seconds, timing, memory, candidate

    def place(k: Candidate) -> tuple[str | None, tuple | None]:
        """Why ``k`` cannot run, or its (seconds, timing, memory, candidate) on its layout."""
        reason = rejection(c, k, global_batch, cluster.gpus_per_server, balance == "planned")
        if reason is None and only is not None and not only(k):
            return "filtered", None
        if reason is not None:
            return reason, None
        if orders is None:
            fit = fit_candidate(c, cluster, global_batch, k, balance, coster)
            return (fit, None) if isinstance(fit, str) else (None, (*coster.seconds(fit[0]), fit[1], fit[0]))
        key = (k.tp, k.pp, k.dp, k.cp, k.ep, k.etp)  # the EP and expert-TP groups' links differ by order too
        if key not in placed:
            placed[key] = layouts(cluster, k.parallelism(global_batch), orders)
        options, reason = placed[key]
        best = None
        for order, on in options:
            fit = fit_candidate(c, on, global_batch, replace(k, placement=order), balance, coster)
            item = None if isinstance(fit, str) else (*coster.seconds(fit[0]), fit[1], fit[0])
            if item is not None and (best is None or value(item) < value(best)):
                best = item
        return (reason or "out-of-memory", None) if best is None else (None, best)

    out_of_memory: list[Candidate] = []  # what the distributed optimizer's sharded states might fit (DP > 1)
    with progress(len(grid), progress_desc or f"search {c.name}", "config", delay=1.0) as bar:
        for k in grid:
            bar.update(1)
            reason, item = place(k)
            if item is not None:
                costed.append(item)
            else:
                rejected[reason] += 1
                if reason == "out-of-memory" and k.dp > 1 and not (distributed_optimizer or fsdp) and not costed:
                    out_of_memory.append(k)
    sharded = None
    if not costed and out_of_memory:  # all out of memory: how many would fit with the distributed optimizer
        with progress(len(out_of_memory), "fit with the distributed optimizer", "config", delay=later()) as bar:
            fits = []
            for k in out_of_memory:
                _, item = place(replace(k, distributed_optimizer=True))
                if item is not None:
                    fits.append(item[2])
                bar.update(1)
        sharded = ShardedFits(len(fits), min(fits)) if fits else None
    costed.sort(key=lambda t: (value(t), t[0]))  # ties (an array device's joules, alike at any time): faster first
    make = RowMaker(c, cluster, global_batch, coster, balance, orders, value, etp_column=etps != (None,))
    refine_default = refine is None  # then a refusal names what the caller gave, --top
    refine = default_refine(top) if refine is None else refine
    rows, picked, twins = distinct_rows(make, costed, max(top, refine), later())
    retimed: dict[int, dict] = {}  # index in costed → its row re-timed by the event simulator
    first = list(zip(picked, rows))  # each row's index in costed, before re-timing reorders them
    if refine:
        def estimate(row: dict) -> bool:  # every closed form, 1F1B's and GPipe's too: exact on equal stages only
            return row["timing"] == "closed-form"

        if max_actions is not None:  # before any event simulation: their schedules' actions in all
            actions = [make.event_actions(row) if estimate(row) else 0 for row in rows[:refine]]
            if sum(actions) > max_actions:
                message, field = refine_refusal(actions, max_actions, top if refine_default else None)
                raise InputError(message, field=field)
        with progress(min(refine, len(rows)), "re-time in the event simulator", "config", delay=1.0) as bar:
            timed = []
            for index, row in zip(picked, rows[:refine]):
                timed.append(make.event_row(row) if estimate(row) else row)
                if timed[-1] is not row:
                    retimed[index] = timed[-1]
                bar.update(1)
        rows[:refine] = sorted(timed, key=lambda r: (r[OBJECTIVE_COLUMN[objective]], r["iteration_seconds"]))
    order = [r for r in REASONS if rejected[r]] + (["filtered"] if rejected["filtered"] else [])
    second = (lambda t: t[2]) if objective == "time" else value
    front, on_front = pareto_front_rows(make, costed, set(twins), retimed, second, later())
    rows = rows[:top]
    for row in rows:  # the rows' own times decide it, as they do the front's
        row["pareto_optimal"] = make.keep[id(row)] in on_front
    dropped = identical_rows_dropped(first, retimed, rows, twins)
    said = (planned.note or orders_note(cluster)) if placement == "planned" else None
    return SearchResult(rows, {r: rejected[r] for r in order}, len(grid), len(costed), front, dropped, sharded,
                        orders_note=said)


__all__ = ["search"]
