"""Search the whole machine: the fastest TP × PP × DP × micro-batch × recompute × schedule × sequence
parallelism for a transformer, a global batch and a GPU cluster.

1. Enumerate every candidate (:mod:`archsim.training.search_space`) and drop those that break a rule
   or do not fit a GPU's memory, counting each reason.
2. Time the rest by closed forms of the pipeline span over the end-to-end model's per-stage
   F/I/W times (:func:`pipeline_seconds`; the pieces' op costs are computed once per TP ×
   micro-batch × recompute × sequence parallelism × TP link, so a candidate costs microseconds).
   1F1B's is :func:`archsim.training.stages.one_f_one_b_seconds`, the one the kernel fit uses.
   Schedules other than 1F1B and GPipe are timed in the event simulator while short of a steady
   state (fewer than 2p micro-batches), where their closed forms are poor.
3. Re-time the best ``refine`` estimated by a closed form with the event simulator
   (:func:`archsim.training.run.train`) when their schedule is small enough, and rank again:
   ``timing`` says which model timed each row. On a heterogeneous cluster every closed form is an
   estimate (1F1B's too), and a row on a planned placement is re-timed on each server order.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass, field, replace

import numpy as np

from archsim.errors import InputError
from archsim.training.iteration import after_backward, model_pieces
from archsim.training.objectives import OBJECTIVE_COLUMN, objectives
from archsim.training.parallel import layers_per_stage, tp_split_problem
from archsim.training.placement import MAX_ORDERS, layouts, order_count, order_text, server_orders
from archsim.training.search_fit import fit_candidate, memory_fits, plan_candidate, rank_capacities
from archsim.training.search_rows import megatron_args, pareto_front
from archsim.training.search_space import (
    MAX_CANDIDATES,
    REASONS,
    V_SHAPED,
    Candidate,
    candidate_count,
    candidates,
    check_distinct,
    divisors,
    factorizations,
    rank_chunks,
    rank_memories,
    rejection,
)
from archsim.training.stage_split import refuse_planned_fp32
from archsim.training.stages import one_f_one_b_seconds, rank_stage_times, stage_times
from archsim.training.throughput import model_flops
from archsim.workload.transformer import TransformerConfig, refuse_switch

CLOSED_FORM_EXACT = ("1f1b", "gpipe")  # their closed form equals the event simulator (tests)
EVENT_ACTION_LIMIT = 100_000  # stages × micro-batches × chunks above which re-timing is skipped (~1 s each)


@dataclass(frozen=True)
class SearchResult:
    rows: list[dict]          # best first
    rejected: dict[str, int]  # reason → candidates
    enumerated: int
    costed: int
    pareto: list[dict]        # time vs memory per GPU (or vs the objective), at the rows' times: none other is
    #                           faster and smaller
    identical_rows_dropped: int = 0  # configurations left out as alike but for recompute to a row listed
    #                                  (flash: selective prices as none)
    # archsim search --format json's document, set by archsim.search (train_json.search_document): what
    # to_dict returns; not compared, as it only restates the fields above
    document: dict | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict:
        """The JSON document ``archsim search --format json`` prints for this search (``meta`` and the
        ranked ``rows``; NaN where the CLI prints null): a copy, JSON-safe, of a result of ``archsim.search``."""
        import copy

        if self.document is None:
            raise InputError("only archsim.search's result knows its model and cluster to make archsim search's "
                             "JSON; this one came from archsim.training.search.search", field="to_dict")
        return copy.deepcopy(self.document)


def pipeline_seconds(schedule: str, times, p: int, m: int, v: int) -> float:
    """Pipeline span by closed form. 1F1B and GPipe: the first micro-batch's way down and the last's
    way back plus m − 1 steps of the slowest stage. ZB-H1 / ZB-H2 (Qi et al. 2024 §3): 1F1B's bubble
    (p − 1)(F + I + W) shrinks to (p − 1)(F + I − W), (p − 1)(F + I − 2W) (not below 0, nor above 1F1B). Interleaved
    1F1B (Narayanan et al. 2021 §2.2) and looped BFS: m × the busiest rank's chunks plus (p − 1) × a
    chunk's F + B; interleaved ZB: (p − 1) × a chunk's F + I − W; ZB-V and DualPipeV: no bubble. Screening estimates, not exact (the
    tests bound them against the event simulator in steady state, m ≥ 2p)."""
    f = np.asarray(times.forward)
    i = np.asarray(times.backward_input)
    w = np.asarray(times.backward_weight)
    if schedule in ("1f1b", "gpipe"):
        return one_f_one_b_seconds(times, m)
    if schedule in ("zb-h1", "zb-h2"):
        k = int(schedule[-1])
        step = float((f + i + w).max())
        bubble = (p - 1) * max(float((f + i).max()) - (k - 1) * float(w.min()) - float(w.min()), 0.0)
        # never above 1F1B's (the formula assumes a steady state, which m < p micro-batches lack)
        return min(m * step + bubble + 2 * times.path(p), one_f_one_b_seconds(times, m))
    if schedule in V_SHAPED:  # zero bubble, as ZB-V and DualPipe aim for
        per_rank = np.array([(f + i + w)[rank_chunks(schedule, p, v, r)].sum() for r in range(p)])
        return float(m * per_rank.max() + 2 * times.path(p))
    per_rank = (f + i + w).reshape(v, p).sum(axis=0)
    step = (f + i - w).max() if schedule == "interleaved-zb" else (f + i + w).max()
    return float(m * per_rank.max() + (p - 1) * max(step, 0.0) + 2 * times.path(p))


class _Coster:
    """Iteration seconds of a candidate and which model gave them: 1F1B's and GPipe's closed form
    (equal to the event simulator); for the other schedules the event simulator itself
    (:func:`archsim.training.run.train`) while the pipeline is short of a steady state (m < 2p
    micro-batches), where their closed forms are poor, else their closed forms. Layer pieces are
    cached per what they depend on. On a cluster of mixed GPUs each rank is costed on its own GPU."""

    def __init__(self, c: TransformerConfig, cluster, global_batch: int) -> None:
        self.c, self.cluster, self.global_batch = c, cluster, global_batch
        self.pieces: dict = {}
        self._placed: dict = {}

    def placed(self, k: Candidate):
        """The cluster with its servers in ``k``'s order."""
        if k.placement is None:
            return self.cluster
        if k.placement not in self._placed:
            self._placed[k.placement] = self.cluster.reordered(k.placement)
        return self._placed[k.placement]

    def pieces_of(self, par, machine):
        key = (machine.gpu.name, par.tp, par.micro_batch, par.recompute, par.sequence_parallel, machine.links.tp,
               par.attention)
        if key not in self.pieces:
            self.pieces[key] = model_pieces(self.c, par, machine)
        return self.pieces[key]

    def seconds(self, k: Candidate) -> tuple[float, str]:
        par = k.parallelism(self.global_batch)
        cluster = self.placed(k)
        machines = cluster.rank_wise(par)
        machine = machines[0] if machines else cluster.machine(par)
        m = par.microbatches
        if (k.schedule not in CLOSED_FORM_EXACT and m < 2 * k.pp
                and k.pp * m * par.chunks <= EVENT_ACTION_LIMIT):
            from archsim.training.run import train

            return train(self.c, par, machine, machines).iteration_seconds, "event"
        if machines:
            times = rank_stage_times(self.c, par, machines, [self.pieces_of(par, mc) for mc in machines])
        else:
            times = stage_times(self.c, par, machine, self.pieces_of(par, machine))
        span = pipeline_seconds(k.schedule, times, k.pp, m, par.chunks)
        # even split, one GPU type: the largest parameters are on the first or the last rank
        ranks = sorted({0, k.pp - 1}) if machines is None and k.stage_layers is None else list(range(k.pp))
        tied = (0, 0) if k.schedule in V_SHAPED else (0, k.pp - 1)  # ranks of the embedding and the LM head
        backward = [sum(times.backward_input[j] + times.backward_weight[j]
                        for j in rank_chunks(k.schedule, k.pp, par.chunks, r)) for r in ranks]
        post = max(sum(after_backward(self.c, par, machines[r] if machines else machine, r, mem.parameters,
                                      tied, window).values())
                   for r, mem, window in zip(ranks, rank_memories(self.c, par, ranks), backward))
        return span + post, "closed-form"


def search(c: TransformerConfig, cluster, global_batch: int, gpus=None, *,
           micro_batches=range(1, 9), recomputes=("none", "selective", "full"),
           schedules=("1f1b", "interleaved-1f1b"), chunks=(2,), sequence_parallel=(False, True),
           top: int = 10, refine: int = 0, only=None, progress_desc: str | None = None,
           balance: str = "even", objective: str = "time", placement: str = "file",
           attention: str = "standard", dp_overlap: str = "none", max_actions: int | None = None,
           grad_accumulation: str = "fused") -> SearchResult:
    """Rank every candidate on ``gpus`` GPUs (an int or several; default all the cluster's) by
    ``objective`` (:mod:`archsim.training.objectives`); ``balance``: ``even`` (Megatron's split) or
    ``planned`` (:mod:`archsim.training.stage_split`, per model chunk for interleaved and V-shaped
    schedules; then PP × chunks need not divide the layers); ``placement``: ``file`` (the servers in
    the file's order) or ``planned`` (each candidate on its best server order,
    :mod:`archsim.training.placement`); ``only(candidate)``: an extra filter (e.g. the configurations a
    measurement covered), its rejections counted as ``filtered``. Each row's ``uneven_gain`` is how
    much faster the planned split is than the even one, ``placement_gain`` the planned order than the
    file's, as fractions of the latter's time. ``max_actions``: refuse (before simulating) a re-timing
    whose event simulations add up to more schedule actions (``--max-ops``); None: no limit. ``attention``:
    every candidate's attention kernels (``standard`` or ``flash``), ``dp_overlap`` its DP all-reduce
    (``none`` or ``bucketed``, :class:`~archsim.training.parallel.Parallelism`), ``grad_accumulation``
    its gradient accumulation (``fused`` or ``unfused``, :mod:`archsim.training.grad_accumulation`)."""
    refuse_switch(c, "search (Megatron's configurations)")
    from archsim.progress import progress

    counts = (gpus,) if isinstance(gpus, int) else tuple(gpus or (cluster.gpus,))
    check_search_size(cluster, counts, micro_batches, recomputes, schedules, chunks, sequence_parallel, placement)
    grid = [k for n in counts
            for k in candidates(n, micro_batches, recomputes, schedules, chunks, sequence_parallel, attention,
                                dp_overlap, grad_accumulation)]
    if balance == "planned":
        refuse_planned_fp32(cluster.dtype)
        check_planning_work(c, cluster, global_batch, grid, placement)
    orders = server_orders(cluster) if placement == "planned" else None
    placed: dict = {}  # (tp, pp, dp) → the distinct layouts of the server orders
    rejected: Counter = Counter()
    coster = _Coster(c, cluster, global_batch)
    value = _objective_value(coster, objective, c, global_batch)
    costed: list[tuple[float, str, float, Candidate]] = []  # seconds, timing, memory, candidate
    with progress(len(grid), progress_desc or f"search {c.name}", "config", delay=1.0) as bar:
        for k in grid:
            bar.update(1)
            reason = rejection(c, k, global_batch, cluster.gpus_per_server, balance == "planned")
            if reason is None and only is not None and not only(k):
                reason = "filtered"
            if reason is None and orders is None:
                fit = fit_candidate(c, cluster, global_batch, k, balance, coster.pieces_of)
                if isinstance(fit, str):
                    reason = fit
                else:
                    costed.append((*coster.seconds(fit[0]), fit[1], fit[0]))
            elif reason is None:
                key = (k.tp, k.pp, k.dp)
                if key not in placed:
                    placed[key] = layouts(cluster, k.parallelism(global_batch), orders)
                options, reason = placed[key]
                best = None
                for order, on in options:
                    fit = fit_candidate(c, on, global_batch, replace(k, placement=order), balance, coster.pieces_of)
                    item = None if isinstance(fit, str) else (*coster.seconds(fit[0]), fit[1], fit[0])
                    if item is not None and (best is None or value(item) < value(best)):
                        best = item
                if best is None:
                    reason = reason or "out-of-memory"
                else:
                    costed.append(best)
            if reason:
                rejected[reason] += 1
    costed.sort(key=lambda t: (value(t), t[0]))  # ties (an array device's joules, alike at any time): faster first
    make = _RowMaker(c, cluster, global_batch, coster, balance, orders, value)
    rows, picked, twins = _distinct_rows(make, costed, max(top, refine))
    retimed: dict[int, dict] = {}  # index in costed → its row re-timed by the event simulator
    first = list(zip(picked, rows))  # each row's index in costed, before re-timing reorders them
    if refine:
        def estimate(row: dict) -> bool:  # 1F1B's and GPipe's closed form is exact on equal ranks only
            k = make.keep[id(row)]
            return row["timing"] == "closed-form" and (row["schedule"] not in CLOSED_FORM_EXACT or
                                                       coster.placed(k).rank_wise(k.parallelism(global_batch)) is not None)

        if max_actions is not None:  # before any event simulation: their schedules' actions in all
            work = sum(make.event_actions(row) for row in rows[:refine] if estimate(row))
            if work > max_actions:
                raise InputError(f"re-timing the best {min(refine, len(rows)):,} configurations simulates about "
                                 f"{work:,} schedule actions, above --max-ops {max_actions:,}; lower --refine "
                                 f"(or --top, whose double it defaults to) or raise --max-ops", field="refine")
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
    front, on_front = _front(make, costed, set(twins), retimed, second)
    rows = rows[:top]
    for row in rows:  # the rows' own times decide it, as they do the front's
        row["pareto_optimal"] = make.keep[id(row)] in on_front
    index_of = {id(retimed.get(index, row)): index for index, row in first}
    listed = {index_of[id(row)] for row in rows}  # the twins counted: those of the rows listed (re-timed, top)
    dropped = sum(index in listed for index in twins.values())
    return SearchResult(rows, {r: rejected[r] for r in order}, len(grid), len(costed), front, dropped)


def _front(make: _RowMaker, costed: list[tuple], twins: set[int], retimed: dict[int, dict],
           second) -> tuple[list[dict], set[Candidate]]:
    """The Pareto front's rows (:func:`pareto_front` by time and ``second``) and their candidates, over every
    costed configuration with the time the rows give it: a row re-timed by the event simulator (``retimed``,
    by index in ``costed``) enters with that time, memory and server order, and is the front's entry as it is
    the row, so one configuration shows one time in one output; ``twins`` (indices) are left out as the rows
    leave them out, their listed twin standing for them."""
    known: list[tuple] = []
    rows_of: dict[int, dict] = {}  # id of an entry of known → the re-timed row it is
    for index, item in enumerate(costed):
        if index in twins:
            continue
        row = retimed.get(index)
        if row is not None:
            item = (row["iteration_seconds"], row["timing"], row["peak_memory_gib"] * 2**30, make.keep[id(row)])
            rows_of[id(item)] = row
        known.append(item)
    chosen = pareto_front(known, second)
    front = [dict(rows_of[id(t)]) if id(t) in rows_of else make(t[3], t[0], t[2], t[1]) for t in chosen]
    for row in front:
        row["pareto_optimal"] = True
    return front, {t[3] for t in chosen}


def _distinct_rows(make: _RowMaker, costed: list[tuple],
                   count: int) -> tuple[list[dict], list[int], dict[int, int]]:
    """The first ``count`` rows of ``costed`` (best first), each row's index in ``costed``, and the twins left
    out on the way — alike in every column but ``recompute`` (and the Megatron arguments it sets) to a row
    listed before them —, index → that row's index. A twin ties with its row in ``costed``'s order, so the
    scan reads past ``count`` while the items tie with the last row: its twins there are its twins too. Under
    FlashAttention selective recompute has nothing to rerun, so it prices exactly as ``none``; the first in the
    recompute order given is kept, and ``--top N`` lists N distinct configurations."""
    rows: list[dict] = []
    picked: list[int] = []
    seen: dict[tuple, int] = {}  # a row's columns but recompute → its index in costed
    twins: dict[int, int] = {}
    for index, (s, timing, mem, k) in enumerate(costed):
        full = len(rows) == count
        if full and (make.value(costed[index]), s) != (make.value(costed[picked[-1]]), costed[picked[-1]][0]):
            break  # past the last row's ties (costed's sort key): no twin of a row follows
        row = make(k, s, mem, timing)
        key = tuple((name, repr(value)) for name, value in row.items() if name not in ("recompute", "megatron_args"))
        if key in seen:
            twins[index] = seen[key]
        elif not full:
            seen[key] = index
            rows.append(row)
            picked.append(index)
    return rows, picked, twins


def check_search_size(cluster, counts, micro_batches, recomputes, schedules, chunks, sequence_parallel,
                      placement: str = "file") -> None:
    """Refuse, before any candidate is built, a grid above :data:`MAX_CANDIDATES` (× the server orders a
    planned placement tries), naming the flags that size it."""
    size = candidate_count(counts, micro_batches, recomputes, schedules, chunks, sequence_parallel)
    if placement == "planned":
        size *= min(order_count(cluster), MAX_ORDERS + 1)
    if size > MAX_CANDIDATES:
        sizes = {"max-micro-batch": len(micro_batches), "gpus": len(counts), "chunks": len(chunks),
                 "schedule": len(schedules)}
        field = max(sizes, key=sizes.__getitem__)  # the flag that grows it most
        raise InputError(f"this search would enumerate {size:,} configurations (GPU counts × TP·PP·DP × micro-batches "
                         f"× recompute × schedules and chunks × sequence parallelism"
                         f"{' × server orders' if placement == 'planned' else ''}), above the limit of "
                         f"{MAX_CANDIDATES:,}; lower --max-micro-batch, or give fewer --gpus, --schedule or --chunks",
                         field=field)
    check_distinct(gpus=counts, recompute=recomputes, schedule=schedules, chunks=chunks)


def empty_search_note(c: TransformerConfig, cluster, global_batch: int, counts, rejected: dict[str, int],
                      balance: str = "even") -> str:
    """Why a search costed no configuration, and what to give instead, in one line (``archsim search`` prints
    it on stderr). Either no TP × PP × DP of the GPU ``counts`` passes :func:`rejection`'s rules for any
    micro-batch, schedule or recompute — then the most GPUs of the cluster one does pass on (memory aside)
    is named for ``--gpus`` —, or every configuration that passes the rules is out of memory, or every one
    broke a rule the other flags leave (``rejected``'s counts, most first)."""
    uneven = balance == "planned"

    def passes(tp: int, pp: int, dp: int) -> bool:  # the grid's most permissive candidate of this split
        k = Candidate(tp, pp, dp, 1, "none", "1f1b", 1, False)
        return rejection(c, k, global_batch, cluster.gpus_per_server, uneven) is None

    named = ", ".join(f"{n:,}" for n in counts) + (" GPU" if list(counts) == [1] else " GPUs")
    if not any(passes(*split) for n in counts for split in factorizations(n)):
        dps = divisors(global_batch)

        def most_with(tp: int, pp: int) -> int:  # the most GPUs, within the cluster's, of a passing TP × PP × DP
            fitting = dps[:bisect_right(dps, cluster.gpus // (tp * pp))]
            return next((tp * pp * dp for dp in reversed(fitting) if passes(tp, pp, dp)), 0)

        most = max(most_with(tp, pp) for tp in range(1, c.heads + 1) if not tp_split_problem(c, tp)
                   for pp in range(1, c.layers + 1) if passes(1, pp, 1))  # 1 × 1 × 1 always passes
        return (f"no configuration on {named}: no split of them into TP × PP × DP has DP dividing the global "
                f"batch ({global_batch:,}) with TP dividing the heads ({c.heads}) and PP the layers ({c.layers}); "
                f"give --gpus N with such a split, e.g. --gpus {most}, the most of this cluster's GPUs that have one")
    if rejected.get("out-of-memory"):  # memory is checked last: every configuration the rules left
        return (f"no configuration on {named} fits: the {rejected['out-of-memory']:,} that pass the rules are "
                f"all out of memory; give more GPUs (--gpus N up to the cluster's {cluster.gpus:,}, or a "
                "larger cluster) or GPUs with more memory")
    reasons = ", ".join(f"{r}: {n:,}" for r, n in sorted(rejected.items(), key=lambda t: -t[1]))
    return (f"no configuration on {named}: every one broke a rule its flags leave ({reasons}); give more "
            "--schedule, --recompute, --sequence-parallel or --max-micro-batch values")


# The planner's work a search may do under --balance planned, in table cells (PP × (layers + 3)² per split
# planned), a cell of a table beyond the CPU's cache counted 12 times: measured 3.4 ns a cell for the 1T GPT
# (131² cells a row; its documented search plans 10,854 splits, 4.8·10⁹ cells, in 16 s) and 17 to 43 ns for
# 512 and 4,096 layers (1.1·10⁹ cells of 516² a row in 19 s). About 20 s at the limit.
MAX_PLANNING_CELLS = 6_000_000_000
CACHED_ROW_CELLS = 20_000


def check_planning_work(c: TransformerConfig, cluster, global_batch: int, grid: list[Candidate],
                        placement: str = "file",
                        hint: str = "a smaller grid (--gpus, --max-micro-batch, --schedule, --chunks)") -> None:
    """Refuse, before any split is planned, a ``--balance planned`` search whose splits (one per candidate
    that passes the rules and has several stages, × the server orders a planned placement tries) fill more
    than :data:`MAX_PLANNING_CELLS` weighted cells."""
    row = (c.layers + 3) ** 2
    weight = 1 if row <= CACHED_ROW_CELLS else 12
    stages = sum(k.pp for k in grid if k.plannable and rejection(c, k, global_batch, cluster.gpus_per_server, True) is None)
    cells = stages * row * weight * (min(order_count(cluster), MAX_ORDERS + 1) if placement == "planned" else 1)
    if cells > MAX_PLANNING_CELLS:
        raise InputError(f"--balance planned would plan splits filling about {cells:,} table cells ({c.layers:,} layers), "
                         f"above {MAX_PLANNING_CELLS:,} (about 20 s); use --balance even, or {hint}", field="balance")


def _objective_value(coster: _Coster, objective: str, c: TransformerConfig, global_batch: int):
    """(seconds, timing, bytes, candidate) → the objective's value (seconds, USD or joules)."""
    if objective == "time":
        return lambda t: t[0]
    column = OBJECTIVE_COLUMN[objective]
    return lambda t: objectives(c, t[3], coster.placed(t[3]), global_batch, t[0], column)[column]


class _RowMaker:
    """Output rows: the configuration, its time, memory, MFU, cost, energy, stage split, server order
    and what the planned split and order gain (timed by the same coster)."""

    def __init__(self, c, cluster, global_batch: int, coster: _Coster, balance: str = "even", orders=None,
                 value=lambda t: t[0]) -> None:
        self.c, self.cluster, self.global_batch, self.coster, self.balance = c, cluster, global_batch, coster, balance
        self.orders, self.value = orders, value  # the server orders a planned placement tries; the objective
        self.keep: dict[int, Candidate] = {}

    def __call__(self, k: Candidate, seconds: float, memory: float, timing: str, event: bool = False) -> dict:
        """``event``: ``seconds`` are the event simulator's, so the gain is timed there too."""
        c, cluster, global_batch = self.c, self.coster.placed(k), self.global_batch
        flops = model_flops(c, global_batch)
        gpus = k.tp * k.pp * k.dp
        # the GPUs' summed peak: as gpus × peak on one GPU type (the same rounding as before mixed clusters)
        peak = sum(cluster.gpu_at(i).peak("fp16") for i in range(gpus)) / gpus if cluster.heterogeneous \
            else cluster.gpu.peak("fp16")
        row = {"tp": k.tp, "pp": k.pp, "dp": k.dp, "micro_batch": k.micro_batch, "recompute": k.recompute,
               "schedule": k.schedule, "interleave": k.interleave, "sequence_parallel": k.sequence_parallel,
               "attention": k.attention, "dp_overlap": k.dp_overlap,
               "grad_accumulation": k.grad_accumulation, "tp_spans_servers": cluster.tp_servers(k.parallelism(global_batch)) > 1,
               "stage_layers": ",".join(map(str, k.stage_layers)) if k.stage_layers else "",
               "iteration_seconds": seconds, "peak_memory_gib": memory / 2**30,
               "mfu": flops / (seconds * gpus * peak), **objectives(c, k, cluster, global_batch, seconds),
               "uneven_gain": self.gain(k, seconds if event else None), "timing": timing,
               "megatron_args": megatron_args(k, global_batch, c.layers)}
        if k.placement is not None:
            row.update(placement=order_text(k.placement), placement_gain=self.placement_gain(k))
        self.keep[id(row)] = k
        return row

    def gain(self, k: Candidate, event_seconds: float | None = None) -> float:
        """1 − planned / even seconds, both by the coster, or both by the event simulator when
        ``event_seconds`` (``k``'s own there) are given; NaN where the planner does not split (one
        stage) or one of the splits cannot run (the even one: PP × chunks must divide the layers)."""
        if not k.plannable:
            return float("nan")
        cluster = self.coster.placed(k)
        pieces = self.coster.pieces_of
        planned = k if k.stage_layers else plan_candidate(self.c, cluster, self.global_batch, k, pieces)
        even = replace(k, stage_layers=None)
        par = even.parallelism(self.global_batch)
        if planned is None or self.c.layers % (k.pp * par.chunks):
            return float("nan")
        capacities = rank_capacities(cluster, par)
        if capacities is None or not memory_fits(self.c, cluster, par, capacities)[1]:
            return float("nan")
        if planned.stage_layers == layers_per_stage(self.c.layers, k.pp * par.chunks):
            return 0.0
        if event_seconds is None:
            return 1.0 - self.coster.seconds(planned)[0] / self.coster.seconds(even)[0]
        mine = event_seconds if k.stage_layers else self._event_seconds(planned)
        theirs = self._event_seconds(even) if k.stage_layers else event_seconds
        return 1.0 - mine / theirs

    def placement_gain(self, k: Candidate) -> float:
        """1 − seconds / the same configuration's in the file's server order (its split planned anew
        when the search plans splits), both by the coster; NaN where the file's order cannot run it."""
        file = replace(k, placement=None, stage_layers=None)
        fit = fit_candidate(self.c, self.cluster, self.global_batch, file, self.balance, self.coster.pieces_of)
        if isinstance(fit, str):
            return float("nan")
        return 1.0 - self.coster.seconds(k)[0] / self.coster.seconds(fit[0])[0]

    def _event_seconds(self, k: Candidate) -> float:
        from archsim.training.run import train

        par = k.parallelism(self.global_batch)
        cluster = self.coster.placed(k)
        return train(self.c, par, cluster.machine(par), cluster.rank_wise(par)).iteration_seconds

    def event_actions(self, row: dict) -> int:
        """An upper bound on the schedule actions :meth:`event_row` simulates for ``row``: its schedule's
        (:attr:`~archsim.training.parallel.Parallelism.schedule_actions`) once per server order it tries,
        and once more for the other split its ``uneven_gain`` compares with (more than one stage); 0
        where the schedule is too long to re-time."""
        k = self.keep[id(row)]
        par = k.parallelism(self.global_batch)
        if k.pp * par.microbatches * par.chunks > EVENT_ACTION_LIMIT:
            return 0
        orders = 1 if k.placement is None or self.orders is None else len(self.orders)
        return par.schedule_actions * (orders + (1 if k.plannable else 0))

    def event_row(self, row: dict) -> dict:
        """The row re-timed in the event simulator; under a planned placement every server order is
        re-timed and the best by the objective kept (its gain then over the file's order, both timed so)."""
        k = self.keep[id(row)]
        par = k.parallelism(self.global_batch)
        if k.pp * par.microbatches * par.chunks > EVENT_ACTION_LIMIT:
            return row
        if k.placement is None or self.orders is None:  # its time; the memory is the search's (V chunks placed right)
            return self(k, self._event_seconds(k), row["peak_memory_gib"] * 2**30, "event", event=True)
        timed = []
        for order, on in layouts(self.cluster, par, self.orders)[0]:
            fit = fit_candidate(self.c, on, self.global_batch, replace(k, placement=order, stage_layers=None),
                                self.balance, self.coster.pieces_of)
            if not isinstance(fit, str):
                timed.append((self._event_seconds(fit[0]), "event", fit[1], fit[0]))
        if not timed:  # not expected: the row's own order fitted in the search
            return row
        best = min(timed, key=self.value)  # the first of equals: the file's order when it is one
        out = self(best[3], best[0], best[2], "event", event=True)
        file = [t for t in timed if t[3].placement == tuple(sorted(t[3].placement or ()))]
        out["placement_gain"] = 1.0 - best[0] / file[0][0] if file else float("nan")
        return out


__all__ = ["EVENT_ACTION_LIMIT", "MAX_PLANNING_CELLS", "SearchResult", "check_planning_work", "check_search_size",
           "empty_search_note", "pipeline_seconds", "search"]
