"""A search's output rows (:class:`RowMaker`): a costed candidate's columns — time, memory, MFU, cost,
energy, stage split, server order — and what its planned split and server order gain, and its re-timing
in the event simulator; the rows :mod:`archsim.training.search` ranks and lists."""

from __future__ import annotations

from dataclasses import replace

from archsim.choices.training import DEFAULT_P2P
from archsim.training.objectives import objectives
from archsim.training.parallel import chunks_run
from archsim.training.placement import layouts, order_text
from archsim.training.search_cost import EVENT_ACTION_LIMIT, Coster
from archsim.training.search_fit import (
    even_candidate,
    faster_split,
    fit_candidate,
    memory_fits,
    plan_candidate,
    rank_capacities,
)
from archsim.training.search_rows import megatron_args
from archsim.training.search_space import Candidate
from archsim.training.throughput import mean_peak, throughput
from archsim.units import GIB


class RowMaker:
    """Output rows: the GPUs, the configuration, its time (s), peak memory (GiB), MFU, model and hardware
    (recompute counted) TFLOP/s per GPU and tokens/s (:func:`~archsim.training.throughput.throughput`, as ``train`` gives them), cost, energy, stage
    split, server order and what the planned split and order gain (fractions, timed by the same coster); one maker serves
    the ranked rows and the Pareto front (:mod:`~archsim.training.search_front`), so both read alike; ``etp_column``:
    a mixture's rows carry their ETP (``etp``, TP's where they run at TP), as a search told ETPs to try gives them."""

    def __init__(self, c, cluster, global_batch: int, coster: Coster, balance: str = "even", orders=None,
                 value=lambda t: t[0], etp_column: bool = False) -> None:
        self.c, self.cluster, self.global_batch, self.coster, self.balance = c, cluster, global_batch, coster, balance
        self.orders, self.value = orders, value  # the server orders a planned placement tries; the objective
        self.etp_column = etp_column and c.moe
        self.keep: dict[int, Candidate] = {}
        self._event: dict[Candidate, tuple[float, float, dict[str, float]]] = {}  # candidate → the event
        # simulator's seconds, host_bound_seconds and compute_split_seconds (train's, of one run)

    def __call__(self, k: Candidate, seconds: float, memory: float, timing: str, event: bool = False) -> dict:
        """``event``: ``seconds`` are the event simulator's, so the gain is timed there too."""
        c, cluster, global_batch = self.c, self.coster.placed(k), self.global_batch
        gpus = k.gpus
        peak = mean_peak(cluster.laid_out(k.parallelism(global_batch)))  # at the run's dtype, as train's
        rates = throughput(c, global_batch, k.recompute, seconds, gpus, peak, k.attention)  # train's figures
        row = {"gpus": gpus, "tp": k.tp, "cp": k.cp, **({"ep": k.ep} if c.moe else {}),
               **({"etp": k.tp if k.etp is None else k.etp} if self.etp_column else {}),
               "cp_comm": k.cp_comm if k.cp > 1 else "",
               **({"cp_hierarchy": f"{k.cp_hierarchy[0]} {k.cp_hierarchy[1]}"} if k.cp_hierarchy else {}), "pp": k.pp, "dp": k.dp, "micro_batch": k.micro_batch, "recompute": k.recompute,
               "schedule": k.schedule, "interleave": chunks_run(k.schedule, k.interleave), "sequence_parallel": k.sequence_parallel,
               "attention": k.attention, "dp_overlap": k.dp_overlap, **({"fp8": k.fp8} if k.fp8 else {}),
               **({"fp8_param_gather": True} if k.fp8_param_gather else {}),
               **({"p2p": k.p2p} if k.p2p != DEFAULT_P2P else {}),  # only when set: as before
               **({"distributed_optimizer": True} if k.distributed_optimizer else {}),  # only when set: as before
               **({"fsdp": True} if k.fsdp else {}),
               **({"fsdp_reshard": k.fsdp_reshard} if k.fsdp_reshard != "after-forward" else {}),
               **({"fsdp_grad_sync": k.fsdp_grad_sync} if k.fsdp_grad_sync != "micro-batch" else {}),
               "grad_accumulation": k.grad_accumulation, "tp_spans_servers": cluster.tp_servers(k.parallelism(global_batch)) > 1,
               "stage_layers": ",".join(map(str, k.stage_layers)) if k.stage_layers else "",
               "iteration_seconds": seconds,
               "host_bound_seconds": self._event[k][1] if event else self.coster.host_seconds(k),  # as train's
               "compute_split_seconds": dict(self._event[k][2]) if event else self.coster.compute_split(k),
               "peak_memory_gib": memory / GIB,
               "mfu": rates.mfu, "tflops_per_gpu": rates.tflops_per_gpu,
               "hardware_tflops_per_gpu": rates.hardware_tflops_per_gpu,
               "tokens_per_second": rates.tokens_per_second, **objectives(c, k, cluster, global_batch, seconds),
               "uneven_gain": self.gain(k, seconds if event else None), "timing": timing,
               "megatron_args": megatron_args(k, global_batch, c, cluster.dtype)}
        if k.placement is not None:
            row.update(placement=order_text(k.placement), placement_gain=self.placement_gain(k))
        self.keep[id(row)] = k
        return row

    def gain(self, k: Candidate, event_seconds: float | None = None) -> float:
        """1 − planned / even seconds, both by the coster, or both by the event simulator when
        ``event_seconds`` (``k``'s own there) are given; NaN where the planner does not split (one
        stage) or one of the splits cannot run (the even one: PP × chunks must divide the layers). Under
        ``--balance planned`` a row keeps the faster split (:func:`~archsim.training.search_fit.faster_split`),
        so its gain is never negative."""
        if not k.plannable:
            return float("nan")
        cluster = self.coster.placed(k)
        planned = k if k.stage_layers else plan_candidate(self.c, cluster, self.global_batch, k, self.coster.pieces_of)
        even = even_candidate(self.c, cluster, self.global_batch, k)
        if planned is None or even is None:
            return float("nan")
        if planned.stage_layers == even.stage_layers:
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
        fit = fit_candidate(self.c, self.cluster, self.global_batch, file, self.balance, self.coster)
        if isinstance(fit, str):
            return float("nan")
        return 1.0 - self.coster.seconds(k)[0] / self.coster.seconds(fit[0])[0]

    def _event_seconds(self, k: Candidate) -> float:
        if k not in self._event:
            from archsim.training.run import train

            par = k.parallelism(self.global_batch)
            cluster = self.coster.placed(k)
            result = train(self.c, par, cluster.machine(par), cluster.rank_wise(par))
            self._event[k] = result.iteration_seconds, result.host_bound_seconds, result.compute_split_seconds
        return self._event[k][0]

    def _memory(self, k: Candidate) -> float:
        """``k``'s largest GPU's bytes, as the search's memory check counts them."""
        cluster = self.coster.placed(k)
        par = k.parallelism(self.global_batch)
        capacities = rank_capacities(cluster, par)
        assert capacities is not None  # the search laid it out
        return memory_fits(self.c, cluster, par, capacities)[0]

    def _event_split(self, k: Candidate) -> Candidate:
        """``k`` with the faster of the planner's split and the even one as the event simulator times them,
        under ``--balance planned`` (a re-timed row's own model; the coster may have kept the other)."""
        if self.balance != "planned" or not k.plannable or not k.stage_layers:
            return k
        cluster = self.coster.placed(k)
        even = even_candidate(self.c, cluster, self.global_batch, k)
        planned = k
        if even is not None and k.stage_layers == even.stage_layers:  # the coster kept the even split
            planned = plan_candidate(self.c, cluster, self.global_batch, replace(k, stage_layers=None),
                                     self.coster.pieces_of) or k
        return faster_split(self.c, cluster, self.global_batch, planned, self._event_seconds)

    def event_actions(self, row: dict) -> int:
        """An upper bound on the schedule actions :meth:`event_row` simulates for ``row``: its schedule's
        (:attr:`~archsim.training.parallel.Parallelism.schedule_actions`) once per server order it tries,
        and once more for the other split its ``uneven_gain`` compares with (more than one stage), or under
        ``--balance planned`` twice per order (both splits, to keep the faster); 0 where the schedule is too
        long to re-time."""
        k = self.keep[id(row)]
        par = k.parallelism(self.global_batch)
        if k.pp * par.microbatches * par.chunks > EVENT_ACTION_LIMIT:
            return 0
        orders = 1 if k.placement is None or self.orders is None else len(self.orders)
        if not k.plannable:
            return par.schedule_actions * orders
        return par.schedule_actions * (2 * orders if self.balance == "planned" else orders + 1)

    def event_row(self, row: dict) -> dict:
        """The row re-timed in the event simulator; under a planned placement every server order is
        re-timed and the best by the objective kept (its gain then over the file's order, both timed so)."""
        k = self.keep[id(row)]
        par = k.parallelism(self.global_batch)
        if k.pp * par.microbatches * par.chunks > EVENT_ACTION_LIMIT:
            return row
        if k.placement is None or self.orders is None:  # its time; the memory is the search's (V chunks placed right)
            kept = self._event_split(k)
            memory = row["peak_memory_gib"] * GIB if kept is k else self._memory(kept)
            return self(kept, self._event_seconds(kept), memory, "event", event=True)
        timed = []
        for order, on in layouts(self.cluster, par, self.orders)[0]:
            fit = fit_candidate(self.c, on, self.global_batch, replace(k, placement=order, stage_layers=None),
                                self.balance, self.coster)
            if not isinstance(fit, str):
                kept = self._event_split(fit[0])
                memory = fit[1] if kept is fit[0] else self._memory(kept)
                timed.append((self._event_seconds(kept), "event", memory, kept))
        if not timed:  # not expected: the row's own order fitted in the search
            return row
        best = min(timed, key=self.value)  # the first of equals: the file's order when it is one
        out = self(best[3], best[0], best[2], "event", event=True)
        file = [t for t in timed if t[3].placement == tuple(sorted(t[3].placement or ()))]
        out["placement_gain"] = 1.0 - best[0] / file[0][0] if file else float("nan")
        return out


__all__ = ["RowMaker"]
