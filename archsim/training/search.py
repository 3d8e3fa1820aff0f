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
from dataclasses import dataclass

import numpy as np

from archsim.training.iteration import after_backward, model_pieces, one_f_one_b_seconds, stage_times
from archsim.training.layer_ops import layer_parameters
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
from archsim.workload.transformer import TransformerConfig

CLOSED_FORM_EXACT = ("1f1b", "gpipe")  # their closed form equals the event simulator (tests)
EVENT_ACTION_LIMIT = 100_000  # stages × micro-batches × chunks above which re-timing is skipped (~1 s each)


@dataclass(frozen=True)
class SearchResult:
    rows: list[dict]          # best first
    rejected: dict[str, int]  # reason → candidates
    enumerated: int
    costed: int
    pareto: list[dict]        # time vs memory per GPU: no other configuration is faster and smaller


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
    cached per what they depend on."""

    def __init__(self, c: TransformerConfig, cluster, global_batch: int) -> None:
        self.c, self.cluster, self.global_batch = c, cluster, global_batch
        self.pieces: dict = {}

    def seconds(self, k: Candidate) -> tuple[float, str]:
        par = k.parallelism(self.global_batch)
        machine = self.cluster.machine(par)
        m = par.microbatches
        if (k.schedule not in CLOSED_FORM_EXACT and m < 2 * k.pp
                and k.pp * m * par.chunks <= EVENT_ACTION_LIMIT):
            from archsim.training.run import train

            return train(self.c, par, machine).iteration_seconds, "event"
        key = (k.tp, k.micro_batch, k.recompute, k.sequence_parallel, machine.links.tp)
        if key not in self.pieces:
            self.pieces[key] = model_pieces(self.c, par, machine)
        times = stage_times(self.c, par, machine, self.pieces[key])
        span = pipeline_seconds(k.schedule, times, k.pp, m, par.chunks)
        ranks = sorted({0, k.pp - 1})
        tied = (0, 0) if k.schedule in V_SHAPED else (0, k.pp - 1)  # ranks of the embedding and the LM head
        post = max(sum(after_backward(self.c, par, machine, r, mem.parameters, tied).values())
                   for r, mem in zip(ranks, rank_memories(self.c, par, ranks)))
        return span + post, "closed-form"


def search(c: TransformerConfig, cluster, global_batch: int, gpus: int | None = None, *,
           micro_batches=range(1, 9), recomputes=("none", "selective", "full"),
           schedules=("1f1b", "interleaved-1f1b"), chunks=(2,), sequence_parallel=(False, True),
           top: int = 10, refine: int = 0, only=None, progress_desc: str | None = None) -> SearchResult:
    """Rank every candidate on ``gpus`` GPUs (default all the cluster's); ``only(candidate)``: an extra
    filter (e.g. the configurations a measurement covered), its rejections counted as ``filtered``."""
    from archsim.progress import progress

    gpus = gpus or cluster.topology.devices
    capacity = cluster.gpu.memory_bytes
    grid = list(candidates(gpus, micro_batches, recomputes, schedules, chunks, sequence_parallel))
    rejected: Counter = Counter()
    coster = _Coster(c, cluster, global_batch)
    costed: list[tuple[float, str, float, Candidate]] = []  # seconds, timing, memory, candidate
    with progress(len(grid), progress_desc or f"search {c.name}", "config", delay=1.0) as bar:
        for k in grid:
            bar.update(1)
            reason = rejection(c, k, global_batch, cluster.gpus_per_server)
            if reason is None and only is not None and not only(k):
                reason = "filtered"
            if reason is None:
                memory = peak_memory_bytes(c, k.parallelism(global_batch))
                reason = "out-of-memory" if memory > capacity else None
            if reason:
                rejected[reason] += 1
                continue
            costed.append((*coster.seconds(k), memory, k))
    costed.sort(key=lambda t: t[0])
    rows = [_row(c, cluster, global_batch, k, s, mem, timing) for s, timing, mem, k in costed[:max(top, refine)]]
    if refine:
        with progress(min(refine, len(rows)), "re-time in the event simulator", "config", delay=1.0) as bar:
            timed = []
            for row in rows[:refine]:
                estimate = row["timing"] == "closed-form" and row["schedule"] not in CLOSED_FORM_EXACT
                timed.append(_event_row(c, cluster, global_batch, row) if estimate else row)
                bar.update(1)
        rows[:refine] = sorted(timed, key=lambda r: r["iteration_seconds"])
    order = [r for r in REASONS if rejected[r]] + (["filtered"] if rejected["filtered"] else [])
    front = [_row(c, cluster, global_batch, k, s, mem, timing) for s, timing, mem, k in pareto_front(costed)]
    return SearchResult(rows[:top], {r: rejected[r] for r in order}, len(grid), len(costed), front)


def pareto_front(costed: list[tuple]) -> list[tuple]:
    """(seconds, timing, bytes, candidate) none of the others beats on both seconds and bytes (ties:
    the first kept), fastest first: sorted by time, each kept if smaller than everything faster."""
    front: list[tuple] = []
    for item in sorted(costed, key=lambda t: (t[0], t[2])):
        if not front or item[2] < front[-1][2]:
            front.append(item)
    return front


def _row(c, cluster, global_batch, k: Candidate, seconds: float, memory: float, timing: str) -> dict:
    flops = model_flops(c, global_batch)
    gpus = k.tp * k.pp * k.dp
    return {"tp": k.tp, "pp": k.pp, "dp": k.dp, "micro_batch": k.micro_batch, "recompute": k.recompute,
            "schedule": k.schedule, "interleave": k.interleave, "sequence_parallel": k.sequence_parallel,
            "iteration_seconds": seconds, "peak_memory_gib": memory / 2**30,
            "mfu": flops / (seconds * gpus * cluster.gpu.peak("fp16")), "timing": timing,
            "megatron_args": megatron_args(k, global_batch, c.layers)}


def _event_row(c, cluster, global_batch, row: dict) -> dict:
    from archsim.training.run import train

    k = Candidate(*(row[f] for f in ("tp", "pp", "dp", "micro_batch", "recompute", "schedule", "interleave",
                                     "sequence_parallel")))
    par = k.parallelism(global_batch)
    if k.pp * par.microbatches * par.chunks > EVENT_ACTION_LIMIT:
        return row
    result = train(c, par, cluster.machine(par))  # its time; the memory is the search's (V chunks placed right)
    return _row(c, cluster, global_batch, k, result.iteration_seconds, row["peak_memory_gib"] * 2**30, "event")


def megatron_args(k: Candidate, global_batch: int, layers: int) -> str:
    """Megatron-LM's arguments for the configuration (``pretrain_gpt.py``); empty for a schedule
    Megatron-LM does not run (it has 1F1B and interleaved 1F1B)."""
    if k.schedule not in ("1f1b", "interleaved-1f1b"):
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
    return " ".join(args)


def train_command(model: str, cluster: str, global_batch: int, row: dict) -> str:
    """The ``archsim train`` line that reproduces a row."""
    line = (f"archsim train {model} --cluster {cluster} --tp {row['tp']} --pp {row['pp']} --dp {row['dp']} "
            f"--global-batch {global_batch} --micro-batch {row['micro_batch']} --recompute {row['recompute']} "
            f"--schedule {row['schedule']}")
    if row["interleave"] > 1:
        line += f" --interleave {row['interleave']}"
    return line + (" --sequence-parallel" if row["sequence_parallel"] else "")


__all__ = ["EVENT_ACTION_LIMIT", "SearchResult", "megatron_args", "model_flops", "pareto_front", "pipeline_seconds", "search",
           "train_command"]
