"""Search the whole machine: the fastest TP × PP × DP × micro-batch × recompute × schedule × sequence
parallelism for a transformer, a global batch and a GPU cluster.

1. Enumerate every candidate (:mod:`archsim.training.search_space`) and drop those that break a rule
   or do not fit a GPU's memory, counting each reason.
2. Time the rest by closed forms of the pipeline span over the end-to-end model's per-stage
   F/I/W times (:func:`pipeline_seconds`; the pieces' op costs are computed once per TP ×
   micro-batch × recompute × sequence parallelism × TP link, so a candidate costs microseconds).
   1F1B's is :func:`archsim.training.iteration.one_f_one_b_seconds`, the one the kernel fit uses.
   Schedules other than 1F1B and GPipe are timed in the event simulator while short of a steady
   state (fewer than 2p micro-batches), where their closed forms are poor.
3. Re-time the best ``refine`` estimated by a closed form with the event simulator
   (:func:`archsim.training.run.train`) when their schedule is small enough, and rank again:
   ``timing`` says which model timed each row.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

import numpy as np

from archsim.training.iteration import after_backward, model_pieces, one_f_one_b_seconds, stage_times
from archsim.training.layer_ops import layer_parameters
from archsim.training.objectives import OBJECTIVE_COLUMN, objective_columns
from archsim.training.parallel import layers_per_stage
from archsim.training.search_space import (
    REASONS,
    V_SHAPED,
    Candidate,
    candidates,
    peak_memory_bytes,
    rank_chunks,
    rank_memories,
    rejection,
)
from archsim.training.stage_split import planned_split, rank_stage_times
from archsim.workload.transformer import TransformerConfig

CLOSED_FORM_EXACT = ("1f1b", "gpipe")  # their closed form equals the event simulator (tests)
EVENT_ACTION_LIMIT = 100_000  # stages × micro-batches × chunks above which re-timing is skipped (~1 s each)


@dataclass(frozen=True)
class SearchResult:
    rows: list[dict]          # best first
    rejected: dict[str, int]  # reason → candidates
    enumerated: int
    costed: int
    pareto: list[dict]        # time vs memory per GPU (or vs the objective): none other is faster and smaller


def model_flops(c: TransformerConfig, global_batch: int) -> float:
    """FLOPs of one iteration without recomputation (PaLM's MFU count, Chowdhery et al. 2022 App. B):
    6 per parameter per token (the layers' and the LM head's) plus 12·layers·hidden·seq per token for
    attention's scores and context. For a GPT this is Narayanan et al.'s 72·B·s·l·h²(1 + s/6h + V/12lh)."""
    tokens = global_batch * c.seq
    params = c.layers * layer_parameters(c) + c.vocab * c.hidden
    return tokens * (6 * params + 12 * c.layers * c.hidden * c.seq)


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
        return min(m * step + bubble + 2 * (p - 1) * times.hop, one_f_one_b_seconds(times, m))
    if schedule in V_SHAPED:  # zero bubble, as ZB-V and DualPipe aim for
        per_rank = np.array([(f + i + w)[rank_chunks(schedule, p, v, r)].sum() for r in range(p)])
        return float(m * per_rank.max() + 2 * (p - 1) * times.hop)
    per_rank = (f + i + w).reshape(v, p).sum(axis=0)
    step = (f + i - w).max() if schedule == "interleaved-zb" else (f + i + w).max()
    return float(m * per_rank.max() + (p - 1) * max(step, 0.0) + 2 * (p - 1) * times.hop)


class _Coster:
    """Iteration seconds of a candidate and which model gave them: 1F1B's and GPipe's closed form
    (equal to the event simulator); for the other schedules the event simulator itself
    (:func:`archsim.training.run.train`) while the pipeline is short of a steady state (m < 2p
    micro-batches), where their closed forms are poor, else their closed forms. Layer pieces are
    cached per what they depend on. On a cluster of mixed GPUs each rank is costed on its own GPU."""

    def __init__(self, c: TransformerConfig, cluster, global_batch: int) -> None:
        self.c, self.cluster, self.global_batch = c, cluster, global_batch
        self.pieces: dict = {}

    def pieces_of(self, par, machine):
        key = (machine.gpu.name, par.tp, par.micro_batch, par.recompute, par.sequence_parallel, machine.links.tp)
        if key not in self.pieces:
            self.pieces[key] = model_pieces(self.c, par, machine)
        return self.pieces[key]

    def seconds(self, k: Candidate) -> tuple[float, str]:
        par = k.parallelism(self.global_batch)
        machines = self.cluster.rank_machines(par) if self.cluster.heterogeneous else None
        machine = machines[0] if machines else self.cluster.machine(par)
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
        post = max(sum(after_backward(self.c, par, machines[r] if machines else machine, r, mem.parameters,
                                      tied).values())
                   for r, mem in zip(ranks, rank_memories(self.c, par, ranks)))
        return span + post, "closed-form"


def _capacities(cluster, par) -> list[float] | None:
    """Each pipeline rank's GPU memory (bytes), or None when a rank's GPUs mix types."""
    if not cluster.heterogeneous:
        return [cluster.gpu.memory_bytes] * par.pp
    kinds = cluster.rank_gpus(par)
    return None if kinds is None else [g.memory_bytes for g in kinds]


def _planned(c, cluster, global_batch: int, k: Candidate, coster: _Coster) -> Candidate | None:
    """``k`` with the planner's stage split (:func:`~archsim.training.stage_split.planned_split`, on the
    coster's cached pieces), or None when no split fits each rank's memory."""
    par = k.parallelism(global_batch)
    machines = cluster.rank_machines(par) if cluster.heterogeneous else (cluster.machine(par),) * k.pp
    capacities = _capacities(cluster, par)
    split = None if capacities is None else planned_split(c, par, machines, capacities,
                                                          [coster.pieces_of(par, m) for m in machines])
    return None if split is None else replace(k, stage_layers=split)


def _memory(c, cluster, par, capacities: list[float]) -> tuple[float, bool]:
    """The largest GPU's bytes and whether every rank fits its own GPU."""
    if not cluster.heterogeneous:
        peak = peak_memory_bytes(c, par)
        return peak, peak <= capacities[0]
    sizes = [m.total for m in rank_memories(c, par)]
    return max(sizes), all(size <= cap for size, cap in zip(sizes, capacities))


def search(c: TransformerConfig, cluster, global_batch: int, gpus=None, *,
           micro_batches=range(1, 9), recomputes=("none", "selective", "full"),
           schedules=("1f1b", "interleaved-1f1b"), chunks=(2,), sequence_parallel=(False, True),
           top: int = 10, refine: int = 0, only=None, progress_desc: str | None = None,
           balance: str = "even", objective: str = "time") -> SearchResult:
    """Rank every candidate on ``gpus`` GPUs (an int or several; default all the cluster's) by
    ``objective`` (:mod:`archsim.training.objectives`); ``balance``: ``even`` (Megatron's split) or
    ``planned`` (:mod:`archsim.training.stage_split`, per model chunk for interleaved and V-shaped
    schedules; then PP × chunks need not divide the layers); ``only(candidate)``: an extra filter (e.g. the configurations a measurement
    covered), its rejections counted as ``filtered``. Each row's ``uneven_gain`` is how much faster
    the planned split is than the even one, as a fraction of the even one's time."""
    from archsim.progress import progress

    counts = (gpus,) if isinstance(gpus, int) else tuple(gpus or (cluster.topology.devices,))
    grid = [k for n in counts for k in candidates(n, micro_batches, recomputes, schedules, chunks, sequence_parallel)]
    rejected: Counter = Counter()
    coster = _Coster(c, cluster, global_batch)
    costed: list[tuple[float, str, float, Candidate]] = []  # seconds, timing, memory, candidate
    with progress(len(grid), progress_desc or f"search {c.name}", "config", delay=1.0) as bar:
        for k in grid:
            bar.update(1)
            reason = rejection(c, k, global_batch, cluster.gpus_per_server, balance == "planned")
            if reason is None and only is not None and not only(k):
                reason = "filtered"
            if reason is None:
                par = k.parallelism(global_batch)
                capacities = _capacities(cluster, par)
                reason = "stage-mixes-gpu-types" if capacities is None else None
            if reason is None and balance == "planned" and k.plannable:
                planned = _planned(c, cluster, global_batch, k, coster)
                reason = "out-of-memory" if planned is None else None
                if planned is not None:
                    k, par = planned, planned.parallelism(global_batch)
            if reason is None:
                assert capacities is not None  # refused above as stage-mixes-gpu-types
                memory, fits = _memory(c, cluster, par, capacities)
                reason = None if fits else "out-of-memory"
            if reason:
                rejected[reason] += 1
                continue
            costed.append((*coster.seconds(k), memory, k))
    value = _objective_value(cluster, objective)
    costed.sort(key=value)
    make = _RowMaker(c, cluster, global_batch, coster)
    rows = [make(k, s, mem, timing) for s, timing, mem, k in costed[:max(top, refine)]]
    if refine:
        with progress(min(refine, len(rows)), "re-time in the event simulator", "config", delay=1.0) as bar:
            timed = []
            for row in rows[:refine]:
                estimate = row["timing"] == "closed-form" and row["schedule"] not in CLOSED_FORM_EXACT
                timed.append(make.event_row(row) if estimate else row)
                bar.update(1)
        rows[:refine] = sorted(timed, key=lambda r: r[OBJECTIVE_COLUMN[objective]])
    order = [r for r in REASONS if rejected[r]] + (["filtered"] if rejected["filtered"] else [])
    second = (lambda t: t[2]) if objective == "time" else value
    front = [make(k, s, mem, timing) for s, timing, mem, k in pareto_front(costed, second)]
    return SearchResult(rows[:top], {r: rejected[r] for r in order}, len(grid), len(costed), front)


def _objective_value(cluster, objective: str):
    """(seconds, timing, bytes, candidate) → the objective's value (seconds, USD or joules)."""
    if objective == "time":
        return lambda t: t[0]
    column = OBJECTIVE_COLUMN[objective]
    return lambda t: objective_columns(cluster, t[3].tp * t[3].pp * t[3].dp, t[0])[column]


def pareto_front(costed: list[tuple], second=lambda t: t[2]) -> list[tuple]:
    """(seconds, timing, bytes, candidate) none of the others beats on both seconds and ``second``
    (default the bytes; ties: the first kept), fastest first: sorted by time, each kept if smaller
    than everything faster."""
    front: list[tuple] = []
    for item in sorted(costed, key=lambda t: (t[0], second(t))):
        if not front or second(item) < second(front[-1]):
            front.append(item)
    return front


class _RowMaker:
    """Output rows: the configuration, its time, memory, MFU, cost, energy, stage split and the
    planned split's gain over the even one (timed by the same coster)."""

    def __init__(self, c, cluster, global_batch: int, coster: _Coster) -> None:
        self.c, self.cluster, self.global_batch, self.coster = c, cluster, global_batch, coster
        self.keep: dict[int, Candidate] = {}

    def __call__(self, k: Candidate, seconds: float, memory: float, timing: str, event: bool = False) -> dict:
        """``event``: ``seconds`` are the event simulator's, so the gain is timed there too."""
        c, cluster, global_batch = self.c, self.cluster, self.global_batch
        flops = model_flops(c, global_batch)
        gpus = k.tp * k.pp * k.dp
        # the GPUs' summed peak: as gpus × peak on one GPU type (the same rounding as before mixed clusters)
        peak = sum(cluster.gpu_at(i).peak("fp16") for i in range(gpus)) / gpus if cluster.heterogeneous \
            else cluster.gpu.peak("fp16")
        row = {"tp": k.tp, "pp": k.pp, "dp": k.dp, "micro_batch": k.micro_batch, "recompute": k.recompute,
               "schedule": k.schedule, "interleave": k.interleave, "sequence_parallel": k.sequence_parallel,
               "stage_layers": ",".join(map(str, k.stage_layers)) if k.stage_layers else "",
               "iteration_seconds": seconds, "peak_memory_gib": memory / 2**30,
               "mfu": flops / (seconds * gpus * peak), **objective_columns(cluster, gpus, seconds),
               "uneven_gain": self.gain(k, seconds if event else None), "timing": timing,
               "megatron_args": megatron_args(k, global_batch, c.layers)}
        self.keep[id(row)] = k
        return row

    def gain(self, k: Candidate, event_seconds: float | None = None) -> float:
        """1 − planned / even seconds, both by the coster, or both by the event simulator when
        ``event_seconds`` (``k``'s own there) are given; NaN where the planner does not split (one
        stage) or one of the splits cannot run (the even one: PP × chunks must divide the layers)."""
        if not k.plannable:
            return float("nan")
        planned = k if k.stage_layers else _planned(self.c, self.cluster, self.global_batch, k, self.coster)
        even = replace(k, stage_layers=None)
        par = even.parallelism(self.global_batch)
        if planned is None or self.c.layers % (k.pp * par.chunks):
            return float("nan")
        capacities = _capacities(self.cluster, par)
        if capacities is None or not _memory(self.c, self.cluster, par, capacities)[1]:
            return float("nan")
        if planned.stage_layers == layers_per_stage(self.c.layers, k.pp * par.chunks):
            return 0.0
        if event_seconds is None:
            return 1.0 - self.coster.seconds(planned)[0] / self.coster.seconds(even)[0]
        mine = event_seconds if k.stage_layers else self._event_seconds(planned)
        theirs = self._event_seconds(even) if k.stage_layers else event_seconds
        return 1.0 - mine / theirs

    def _event_seconds(self, k: Candidate) -> float:
        from archsim.training.run import train

        par = k.parallelism(self.global_batch)
        machines = self.cluster.rank_machines(par) if self.cluster.heterogeneous else None
        return train(self.c, par, self.cluster.machine(par), machines).iteration_seconds

    def event_row(self, row: dict) -> dict:
        from archsim.training.run import train

        k = self.keep[id(row)]
        par = k.parallelism(self.global_batch)
        if k.pp * par.microbatches * par.chunks > EVENT_ACTION_LIMIT:
            return row
        machines = self.cluster.rank_machines(par) if self.cluster.heterogeneous else None
        result = train(self.c, par, self.cluster.machine(par), machines)
        # its time; the memory is the search's (V chunks placed right)
        return self(k, result.iteration_seconds, row["peak_memory_gib"] * 2**30, "event", event=True)


def megatron_args(k: Candidate, global_batch: int, layers: int) -> str:
    """Megatron-LM's arguments for the configuration (``pretrain_gpt.py``); empty for a schedule
    Megatron-LM does not run (it has 1F1B and interleaved 1F1B) and for an uneven split it cannot
    express (any uneven one with interleaving): Megatron takes the first and the last stage's layer counts
    (``--decoder-first-pipeline-num-layers``, ``--decoder-last-pipeline-num-layers``) and splits the
    rest evenly."""
    split = k.stage_layers
    if k.schedule not in ("1f1b", "interleaved-1f1b") or (split and len(set(split[1:-1])) > 1) \
            or (split and k.interleave > 1 and len(set(split)) > 1):
        return ""
    args = [f"--tensor-model-parallel-size {k.tp}", f"--pipeline-model-parallel-size {k.pp}",
            f"--micro-batch-size {k.micro_batch}", f"--global-batch-size {global_batch}"]
    if k.recompute != "none":
        args.append(f"--recompute-granularity {k.recompute}")
        if k.recompute == "full":
            args.append("--recompute-method uniform --recompute-num-layers 1")
    if k.sequence_parallel:
        args.append("--sequence-parallel")
    if k.interleave > 1:
        args.append(f"--num-layers-per-virtual-pipeline-stage {layers // (k.pp * k.interleave)}")
    if split and len(set(split)) > 1:
        args.append(f"--decoder-first-pipeline-num-layers {split[0]} --decoder-last-pipeline-num-layers {split[-1]}")
    return " ".join(args)


def train_command(model: str, cluster: str, global_batch: int, row: dict) -> str:
    """The ``archsim train`` line that reproduces a row."""
    line = (f"archsim train {model} --cluster {cluster} --tp {row['tp']} --pp {row['pp']} --dp {row['dp']} "
            f"--global-batch {global_batch} --micro-batch {row['micro_batch']} --recompute {row['recompute']} "
            f"--schedule {row['schedule']}")
    if row["interleave"] > 1:
        line += f" --interleave {row['interleave']}"
    if row.get("stage_layers"):
        line += f" --stage-layers {row['stage_layers']}"
    return line + (" --sequence-parallel" if row["sequence_parallel"] else "")


__all__ = ["EVENT_ACTION_LIMIT", "SearchResult", "megatron_args", "model_flops", "pareto_front", "pipeline_seconds", "search",
           "train_command"]
