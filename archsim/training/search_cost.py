"""A search candidate's iteration seconds (:class:`Coster`) and the pipeline span's closed forms
(:func:`pipeline_seconds`) it uses, and the objective's value of a costed candidate: the costing step
of :mod:`archsim.training.search`, kept apart from its enumeration and ranking."""

from __future__ import annotations

import numpy as np

from archsim.training.iteration import after_backward, model_pieces
from archsim.training.moe_overlap import paired_hidden
from archsim.training.objectives import OBJECTIVE_COLUMN, objectives
from archsim.training.parallel import V_SCHEDULES, rank_stages
from archsim.training.search_space import Candidate, rank_memories
from archsim.training.stages import (
    host_bound_seconds,
    one_f_one_b_seconds,
    rank_compute_seconds,
    rank_stage_times,
    stage_times,
)
from archsim.workload.transformer import TransformerConfig

# the schedules a candidate is costed by closed form even short of 2p micro-batches (the others are event-timed
# there): 1F1B's and GPipe's spans hold at any m on equal stages; elsewhere an estimate, as every closed form
SKIP_EVENT_TIMING_SHORT_OF_2P = ("1f1b", "gpipe")
EVENT_ACTION_LIMIT = 100_000  # stages × micro-batches × chunks above which re-timing is skipped (~1 s each)


def pipeline_seconds(schedule: str, times, p: int, m: int, v: int, hidden: tuple[float, ...] = ()) -> float:
    """Pipeline span by closed form. 1F1B and GPipe: the first micro-batch's way down and the last's
    way back plus m − 1 steps of the slowest stage. ZB-H1 / ZB-H2 (Qi et al. 2024 §3): 1F1B's bubble
    (p − 1)(F + I + W) shrinks to (p − 1)(F + I − W), (p − 1)(F + I − 2W) (not below 0, nor above 1F1B). Interleaved
    1F1B (Narayanan et al. 2021 §2.2) and looped BFS: m × the busiest rank's chunks plus (p − 1) × a
    chunk's F + B; interleaved ZB: (p − 1) × a chunk's F + I − W; ZB-V and DualPipeV: no bubble. Screening estimates, not exact (the
    tests bound them against the event simulator in steady state, m ≥ 2p). ``hidden``: per rank, the all-to-all
    seconds the 1F1B overlap's merged steps hide (:func:`overlap_hidden`; empty: none), off each rank's steady state
    in the interleaved forms (the busiest rank after them paces the pipeline), off the span as the least-hiding rank's
    elsewhere (PP 1, the only other place Megatron runs it: exact there)."""
    f = np.asarray(times.forward)
    i = np.asarray(times.backward_input)
    w = np.asarray(times.backward_weight)
    least = min(hidden, default=0.0)
    if schedule in ("1f1b", "gpipe"):
        return one_f_one_b_seconds(times, m) - least
    if schedule in ("zb-h1", "zb-h2"):
        k = int(schedule[-1])
        step = float((f + i + w).max())
        bubble = (p - 1) * max(float((f + i).max()) - (k - 1) * float(w.min()) - float(w.min()), 0.0)
        # never above 1F1B's (the formula assumes a steady state, which m < p micro-batches lack)
        return min(m * step + bubble + 2 * times.path(p), one_f_one_b_seconds(times, m)) - least
    if schedule in V_SCHEDULES:  # zero bubble, as ZB-V and DualPipe aim for
        per_rank = np.array([(f + i + w)[rank_stages(schedule, p, v, r)].sum() for r in range(p)])
        return float(m * per_rank.max() + 2 * times.path(p)) - least
    per_rank = m * (f + i + w).reshape(v, p).sum(axis=0) - np.asarray(hidden or (0.0,) * p)
    step = (f + i - w).max() if schedule == "interleaved-zb" else (f + i + w).max()
    return float(per_rank.max() + (p - 1) * max(step, 0.0) + 2 * times.path(p))


def held_seconds(schedule: str, times, p: int, m: int, v: int, hidden: tuple[float, ...] = ()) -> float:
    """Pipeline span with blocking sends (``--p2p blocking``, or ``megatron`` on 1F1B): the published order's
    recurrence (1F1B's :func:`~archsim.policies.held_span.one_f_one_b_held`, the others'
    :func:`~archsim.policies.held_span.held_span`), exact where the closed forms of
    :func:`pipeline_seconds` ignore the wait (seconds: ``times``' unit); ``hidden`` taken off as they take it
    (the least-hiding rank's, an estimate)."""
    from archsim.policies.held_span import held_span, one_f_one_b_held
    from archsim.policies.stage_orders import training_order

    span = one_f_one_b_held(times, m) if schedule == "1f1b" else held_span(training_order(schedule, p, m, v), times)
    return span - min(hidden, default=0.0)


class Coster:
    """Iteration seconds of a candidate and which model gave them: 1F1B's and GPipe's closed form at any m
    (:data:`SKIP_EVENT_TIMING_SHORT_OF_2P`; equal to the event simulator on equal stages, an estimate elsewhere: the
    search re-times its listed rows); for the other schedules the event simulator itself
    (:func:`archsim.training.run.train`) while the pipeline is short of a steady state (m < 2p
    micro-batches), where their closed forms are poor, else their closed forms; with blocking pipeline sends
    (:attr:`~archsim.training.parallel.Parallelism.p2p_blocking`) the span is :func:`held_seconds`' recurrence
    instead (exact; up to :data:`EVENT_ACTION_LIMIT` actions, the closed forms beyond). A closed form takes the 1F1B
    all-to-all overlap's hidden seconds off as an estimate (:func:`overlap_hidden`). Layer pieces are
    cached per what they depend on. On a cluster of mixed GPUs each rank is costed on its own GPU. One coster
    serves the search and its rows (:class:`~archsim.training.search_row_maker.RowMaker`), so a row's gains
    are timed as its candidate was."""

    def __init__(self, c: TransformerConfig, cluster, global_batch: int) -> None:
        self.c, self.cluster, self.global_batch = c, cluster, global_batch
        self.pieces: dict = {}
        self._placed: dict = {}
        self._seconds: dict = {}  # candidate → (seconds, timing): a planned split and its even one are timed
        # to keep the faster (search_fit.faster_split), then again for the row and its gain
        self._event: dict = {}  # an event-timed candidate → train's (host_bound_seconds, compute_split_seconds),
        # from the run that timed it

    def placed(self, k: Candidate):
        """The cluster with its servers in ``k``'s order."""
        if k.placement is None:
            return self.cluster
        if k.placement not in self._placed:
            self._placed[k.placement] = self.cluster.reordered(k.placement)
        return self._placed[k.placement]

    def pieces_of(self, par, machine):
        key = (machine.gpu.name, par.tp, par.micro_batch, par.recompute, par.sequence_parallel, machine.links.tp,
               par.attention, par.cp, par.cp_comm, par.cp_hierarchy, machine.links.cp, machine.links.cp_hop, par.ep,
               machine.links.ep, par.etp, machine.links.etp)
        if key not in self.pieces:
            self.pieces[key] = model_pieces(self.c, par, machine)
        return self.pieces[key]

    def seconds(self, k: Candidate) -> tuple[float, str]:
        if k not in self._seconds:
            self._seconds[k] = self._time(k)
        return self._seconds[k]

    def _time(self, k: Candidate) -> tuple[float, str]:
        par = k.parallelism(self.global_batch)
        cluster = self.placed(k)
        machines = cluster.rank_wise(par)
        machine = machines[0] if machines else cluster.machine(par)
        m = par.microbatches
        if (k.schedule not in SKIP_EVENT_TIMING_SHORT_OF_2P and m < 2 * k.pp
                and k.pp * m * par.chunks <= EVENT_ACTION_LIMIT):
            from archsim.training.run import train

            result = train(self.c, par, machine, machines)
            self._event[k] = result.host_bound_seconds, result.compute_split_seconds
            return result.iteration_seconds, "event"
        if machines:
            times = rank_stage_times(self.c, par, machines, [self.pieces_of(par, mc) for mc in machines])
        else:
            times = stage_times(self.c, par, machine, self.pieces_of(par, machine))
        hidden = overlap_hidden(self.c, par, self, machines, machine)
        if par.p2p_blocking and k.pp > 1 and k.pp * m * par.chunks <= EVENT_ACTION_LIMIT:
            span = held_seconds(k.schedule, times, k.pp, m, par.chunks, hidden)
        else:
            span = pipeline_seconds(k.schedule, times, k.pp, m, par.chunks, hidden)
        # even split, one GPU type: the largest parameters are on the first or the last rank
        ranks = sorted({0, k.pp - 1}) if machines is None and k.stage_layers is None else list(range(k.pp))
        tied = (0, 0) if k.schedule in V_SCHEDULES else (0, k.pp - 1)  # ranks of the embedding and the LM head
        backward = [sum(times.backward_input[j] + times.backward_weight[j]
                        for j in rank_stages(k.schedule, k.pp, par.chunks, r)) for r in ranks]
        forward = [sum(times.forward[j] for j in rank_stages(k.schedule, k.pp, par.chunks, r)) for r in ranks]
        post = max(sum(after_backward(self.c, par, machines[r] if machines else machine, r, mem.parameters,
                                      tied, window, ahead).values())
                   for r, mem, window, ahead in zip(ranks, rank_memories(self.c, par, ranks), backward, forward))
        return span + post, "closed-form"

    def host_seconds(self, k: Candidate) -> float:
        """The seconds of ``k``'s iteration that are the host issuing ops beyond the GPU's work: an event-timed
        candidate's are train's (the rank that ends its run); a closed form's, rank 0's, the rank whose last backward
        ends its span (:func:`pipeline_seconds`), by the same sum (:func:`~archsim.training.stages.host_bound_seconds`),
        an estimate as the closed form is. Read for a row only (microseconds), not while the search costs."""
        self.seconds(k)  # event-timed or not, as its time
        if k in self._event:
            return self._event[k][0]
        par, pieces, stages = self._first_rank(k)
        return host_bound_seconds(self.c, par, pieces, stages)

    def compute_split(self, k: Candidate) -> dict[str, float]:
        """``k``'s compute and recompute seconds by what they are (``compute_split_seconds``): an event-timed
        candidate's are train's; a closed form's, rank 0's (:meth:`host_seconds`' rank), by train's sums
        (:func:`~archsim.training.stages.rank_compute_seconds`, :func:`~archsim.training.run.compute_split`), an estimate
        as the closed form is. Read for a row only, not while the search costs."""
        from archsim.training.run import compute_split

        self.seconds(k)  # event-timed or not, as its time
        if k in self._event:
            return dict(self._event[k][1])
        par, pieces, stages = self._first_rank(k)
        compute, recompute = rank_compute_seconds(self.c, par, pieces, stages)
        return compute_split(self.c, par, pieces, stages, compute + recompute,
                             host_bound_seconds(self.c, par, pieces, stages))

    def _first_rank(self, k: Candidate):
        """(par, pieces, stages) of ``k``'s pipeline rank 0 as its closed form costs it: its layout, its GPU's pieces
        (its own on a cluster of mixed GPUs) and its (virtual) stages — the one reading of :meth:`host_seconds` and
        :meth:`compute_split`."""
        par = k.parallelism(self.global_batch)
        cluster = self.placed(k)
        machines = cluster.rank_wise(par)
        pieces = self.pieces_of(par, machines[0] if machines else cluster.machine(par))
        return par, pieces, rank_stages(k.schedule, k.pp, par.chunks, 0)


def overlap_hidden(c: TransformerConfig, par, coster: Coster, machines, machine) -> tuple[float, ...]:
    """Per pipeline rank, the all-to-all seconds the 1F1B overlap's merged steps hide
    (:func:`~archsim.training.moe_overlap.paired_hidden` over the published order; empty with it off): what a closed
    form takes off (:func:`pipeline_seconds`), an estimate, each rank's steady steps shortened in place without the
    pipeline re-simulated. An event-timed candidate and every re-timed row are train's run, where each merged step's
    forward is shortened before the pipeline is simulated (:func:`~archsim.training.moe_overlap.paired_seconds`)."""
    if not c.overlap_moe_expert_parallel_comm:
        return ()
    from archsim.policies.stage_orders import training_order

    order = training_order(par.schedule_name, par.pp, par.microbatches, par.chunks)
    pieces = [coster.pieces_of(par, mc) for mc in machines] if machines else [coster.pieces_of(par, machine)] * par.pp
    return paired_hidden(c, par, order, pieces)


def objective_value(coster: Coster, objective: str, c: TransformerConfig, global_batch: int):
    """(seconds, timing, bytes, candidate) → the objective's value (seconds, USD or joules): the one key the
    search ranks, places and picks its rows by (:func:`archsim.training.search.search`)."""
    if objective == "time":
        return lambda t: t[0]
    column = OBJECTIVE_COLUMN[objective]
    return lambda t: objectives(c, t[3], coster.placed(t[3]), global_batch, t[0], column)[column]


__all__ = ["EVENT_ACTION_LIMIT", "SKIP_EVENT_TIMING_SHORT_OF_2P", "Coster", "held_seconds", "objective_value",
           "overlap_hidden", "pipeline_seconds"]
