"""The one builder: a per-rank action order (:mod:`archsim.policies.actions`) plus per-stage costs
and link costs become the simulator's problem, built as columns (10⁶ actions in well under a second).

Each rank runs its actions in the given order (a chain of dependencies), each action waits for its
data — F on stage s for F on s − 1, I/B on s for I/B on s + 1 (the last stage's for its own F), W
for its I — and data between ranks crosses a link: ``comm`` per hop (latency, the zero-bubble
paper's T_comm) plus bytes / bandwidth. Activation data and gradients use separate links per
direction and stage pair, each serial (FIFO); a transfer queues only when a stage emits two within
one transfer time, which needs an action shorter than T_comm.

Memory as the zero-bubble paper counts it (§3, Table 2): F holds M_B until its backward; I gives
back M_B − M_W, W the remaining M_W; a full backward B gives back all of M_B.

Times are in the caller's unit (the paper's profiled times are milliseconds); bytes are bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from archsim.errors import InputError
from archsim.policies.actions import KINDS, StageOrder
from archsim.policies.stage_profile import StageProfile
from archsim.sim import Link, Problem, Processor, Timeline, simulate
from archsim.sim.bubble import bubble, rank_spans
from archsim.sim.builder import build
from archsim.sim.columns import DepColumns, FormattedIds, OpColumns


@dataclass(frozen=True)
class StageRun:
    order: StageOrder
    problem: Problem
    timeline: Timeline

    def spans(self) -> list[float]:
        """Per rank: end of its last action − start of its first (the zero-bubble paper's stage time)."""
        return rank_spans(self.timeline)

    def bubble_rate(self) -> float:
        """The zero-bubble paper's bubble rate (§5.3): :func:`archsim.sim.bubble.bubble`'s ``zero-bubble``."""
        return bubble(self.timeline, "zero-bubble")

    def metrics(self) -> dict[str, object]:
        peaks = self.timeline.peak_memory()
        return {"makespan": self.timeline.makespan, "cost": max(self.spans(), default=0.0),
                "bubble_rate": self.bubble_rate(),
                "peak_memory": ";".join(f"{peaks[p.name]:g}" for p in self.problem.processors)}


def order_problem(order: StageOrder, profile: StageProfile) -> Problem:
    """The op DAG of ``order`` with ``profile``'s costs (one profile entry per virtual stage).

    Op ids are torch's action strings ("0F0", "3I2", …). Built as columns (no per-op objects):
    op i is the i-th action, ranks one after another; each rank runs its actions in sequence (the
    builder's chains, after every action's data dependencies in action order)."""
    if profile.stages != order.stages:
        raise InputError(f"schedule {order.name!r} has {order.stages} stages but the profile has {profile.stages}",
                         field="stages")
    rank_of = order.rank_of_stage()
    c = order.columns
    stage, code, microbatch, rank = c.stage, c.kind, c.microbatch, c.rank
    kinds = np.array(KINDS)[code]
    n, stages = len(stage), max(order.stages, int(stage.max()) + 1 if len(stage) else 0)
    cell = stage * 4 + code  # (stage, kind) → its profile entry
    top = int(microbatch.max()) + 1 if n else 1
    ids = FormattedIds("{}{}{}", (stage, kinds, microbatch), cell * top + microbatch)
    duration, alloc, free = _costs(profile, stages, cell)
    columns = OpColumns(ids, rank, duration, alloc=alloc, free=free,
                        tags=(("stage", stage), ("kind", kinds), ("microbatch", microbatch), ("rank", rank)))
    where = np.full((stages + 1, 4, int(microbatch.max()) + 1 if n else 1), -1, dtype=np.int64)
    where[stage, code, microbatch] = np.arange(n)
    # per action, up to two data dependencies: (source op, source stage, 0 act / 1 grad / -1 same rank)
    last = order.stages - 1
    first = np.where(code == 0, where[np.maximum(stage - 1, 0), 0, microbatch],
                     where[stage, np.where(code == 2, 1, 0), microbatch])
    first_stage = np.where(code == 0, stage - 1, stage)
    has_first = (code != 0) | (stage > 0)
    upstream = np.minimum(stage + 1, stages)
    full = where[upstream, 3, microbatch]
    second = np.where(full >= 0, full, where[upstream, 1, microbatch])
    has_second = ((code == 1) | (code == 3)) & (stage != last)
    missing = (has_first & (first < 0)) | (has_second & (second < 0))
    if missing.any():
        _raise_missing(order, profile, columns, stage, kinds, microbatch, code, has_first & (first < 0), missing)
    rank_array = np.array([rank_of.get(s, -1) for s in range(stages + 1)], dtype=np.int64)
    cross_first = (code == 0) & (stage > 0) & (rank_array[first_stage] != rank_array[stage])
    cross_second = has_second & (rank_array[upstream] != rank_array[stage])
    linked = np.flatnonzero(np.column_stack((has_first, has_second)).ravel())  # data dependencies, in action order
    src = np.column_stack((first, second)).ravel()[linked]
    src_stage = np.column_stack((first_stage, upstream)).ravel()[linked]
    cross = np.column_stack((cross_first, cross_second)).ravel()[linked]
    dst, kind_bit = linked >> 1, linked & 1  # the second dependency of an action carries its gradient
    links, link, size = _links(profile, rank_array, src_stage, stage[dst], kind_bit, cross)
    processors = tuple(Processor(f"r{r}") for r in range(len(c.lengths)))
    sequences = [np.arange(x, y, dtype=np.int64) for x, y in pairwise(c.bounds.tolist())]
    return build(processors, columns, DepColumns(src, dst, size, link), links, sequences=sequences)


def _costs(profile: StageProfile, stages: int, cell: np.ndarray):
    """Per op: duration, bytes allocated, bytes freed, from one table entry per (stage, kind) —
    int64 bytes when every entry the ops use is an integer, float64 otherwise (as Problem stores them)."""
    duration: list[float] = [0.0] * (4 * stages)
    alloc: list[float] = [0] * (4 * stages)  # ints stay ints: the bytes columns are int64 when they can be
    free: list[float] = [0] * (4 * stages)
    for s in range(min(stages, profile.stages)):
        held = profile.activation[s] if profile.activation else 0
        kept = min(profile.weight_memory[s], held) if profile.weight_memory else 0
        f, i, w = profile.forward[s], profile.backward_input[s], profile.backward_weight[s]
        duration[4 * s:4 * s + 4] = [f, i, w, i + w]
        alloc[4 * s] = held
        free[4 * s + 1:4 * s + 4] = [held - kept, kept, held]
    used = np.unique(cell)
    columns = []
    for table in (alloc, free):
        values = np.array([table[u] for u in used.tolist()]) if used.size else np.zeros(0, dtype=np.int64)
        lookup = np.zeros(len(table), dtype=np.int64 if values.dtype.kind in "iu" else np.float64)
        lookup[used] = values
        columns.append(lookup[cell])
    return np.array(duration, dtype=np.float64)[cell], columns[0], columns[1]


def _links(profile: StageProfile, rank_of: np.ndarray, src_stage: np.ndarray, dst_stage: np.ndarray,
           kind_bit: np.ndarray, cross: np.ndarray):
    """The links the crossing dependencies use — one per (source stage, destination stage, act or
    grad), in order of first use — and each dependency's link (-1: none) and bytes."""
    bandwidth = profile.bandwidth if profile.bandwidth is not None else 1.0
    stages = len(rank_of)
    crossing = np.flatnonzero(cross)
    key = (src_stage[crossing] * stages + dst_stage[crossing]) * 2 + kind_bit[crossing]
    first = np.full(2 * stages * stages, len(key), dtype=np.int64)  # per key, its first use (a few hundred keys)
    np.minimum.at(first, key, np.arange(len(key), dtype=np.int64))
    found = np.flatnonzero(first < len(key))
    by_use = np.argsort(first[found], kind="stable")
    position = np.empty(len(first), dtype=np.int64)
    position[found[by_use]] = np.arange(len(found))
    link = np.full(len(cross), -1, dtype=np.int64)
    link[crossing] = position[key]
    links = []
    for k in found[by_use].tolist():
        src, dst, kind = k // 2 // stages, k // 2 % stages, ("act", "grad")[k % 2]
        links.append(Link(f"{src}->{dst}:{kind}", f"r{rank_of[src]}", f"r{rank_of[dst]}", bandwidth,
                          profile.hop(src)))
    sends = profile.send_bytes and profile.bandwidth is not None
    per_boundary = np.array([int(x) for x in profile.send_bytes] if sends else [0] * profile.stages, dtype=np.int64)
    boundary = np.minimum(src_stage[crossing], dst_stage[crossing])  # activations and their gradients cross one boundary
    size = np.zeros(len(cross), dtype=np.int64)
    size[crossing] = per_boundary[np.clip(boundary, 0, len(per_boundary) - 1)]
    return tuple(links), link, size


def _raise_missing(order, profile, columns, stage, kinds, microbatch, code, first_missing, missing) -> None:
    """A dependency on an action the order lacks: the ops' own mistakes first (a repeated action),
    then the first such dependency, as Problem words it."""
    processors = tuple(Processor(f"r{r}") for r in range(len(order.columns.lengths)))
    empty = np.zeros(0, dtype=np.int64)
    build(processors, columns, DepColumns(empty, empty))
    j = int(np.flatnonzero(missing)[0])
    s, i = int(stage[j]), int(microbatch[j])
    if first_missing[j]:
        source = f"{s - 1}F{i}" if code[j] == 0 else f"{s}{'I' if code[j] == 2 else 'F'}{i}"
    else:
        source = f"{s + 1}I{i}"
    target = f"{s}{kinds[j]}{i}"
    raise InputError(f"dependency {source!r} -> {target!r} names unknown op {source!r}", field="deps")


def run_order(order: StageOrder, profile: StageProfile) -> StageRun:
    problem = order_problem(order, profile)
    return StageRun(order, problem, simulate(problem))


__all__ = ["StageRun", "order_problem", "run_order"]
