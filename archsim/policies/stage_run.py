"""A per-rank action order (:mod:`archsim.policies.actions`) plus per-stage costs and link costs
become the simulator's problem: columns handed to the one builder, :mod:`archsim.sim.builder`
(10⁶ actions in well under a second).

Each rank runs its actions in the given order (a chain of dependencies), each action waits for its
data — F on stage s for F on s − 1, I/B on s for I/B on s + 1 (the last stage's for its own F), W
for its I: the builder's :func:`~archsim.sim.builder.stage_flow` — and data between ranks crosses a link: ``comm`` per hop (latency, the zero-bubble
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
from archsim.policies.actions import StageOrder
from archsim.policies.stage_profile import StageProfile
from archsim.sim import Link, Problem, Processor, Timeline, simulate
from archsim.sim.bubble import bubble, rank_spans
from archsim.sim.builder import KINDS, build, stage_flow
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


def order_problem(order: StageOrder, profile: StageProfile, shortened: np.ndarray | None = None,
                  blocking: bool = False) -> Problem:
    """The op DAG of ``order`` with ``profile``'s costs (one profile entry per virtual stage), each action's
    duration less ``shortened``'s entry for it where given (one per action of the order, in the order's columns:
    what a merged step hides, :func:`archsim.training.moe_overlap.paired_seconds`). ``blocking``: every link
    between ranks is :attr:`~archsim.sim.problem.Link.blocking` — a rank's next action waits until the
    transfers its action sends have ended (Megatron-LM's non-interleaved 1F1B waits on its sends' requests,
    ``_communicate(..., wait_on_reqs=True)``; a combined send and receive then waits for both, the receive being
    the next action's own dependency); the links stay serial (FIFO) as without it.

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
    if shortened is not None:
        duration = np.maximum(duration - np.asarray(shortened, dtype=np.float64), 0.0)  # 0: a sum's round-off
    columns = OpColumns(ids, rank, duration, alloc=alloc, free=free,
                        tags=(("stage", stage), ("kind", kinds), ("microbatch", microbatch), ("rank", rank)))
    rank_array = np.array([rank_of.get(s, -1) for s in range(stages + 1)], dtype=np.int64)
    flow = stage_flow(stage, code, microbatch, rank_array, order.stages - 1)
    if flow.missing.any():
        _raise_missing(order, profile, columns, stage, kinds, microbatch, code, flow.missing_first, flow.missing)
    src, dst, kind_bit, cross = flow.src, flow.dst, flow.grad, flow.cross  # the gradient's dependency: kind_bit 1
    crossing = np.flatnonzero(cross)
    to_stage = stage[dst[crossing]]
    grad = kind_bit[crossing]
    pair = (np.where(grad == 1, to_stage + 1, to_stage - 1) * (stages + 1) + to_stage) * 2 + grad  # (from, to, grad)
    links, link, size = _links(profile, rank_array, len(src), crossing, pair, blocking)
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


def _links(profile: StageProfile, rank_of: np.ndarray, deps: int, crossing: np.ndarray, pair: np.ndarray,
           blocking: bool = False):
    """The links the crossing dependencies (positions ``crossing`` among ``deps``) use — one per
    (source stage, destination stage, act or grad), ``pair`` = (source · stages + destination) · 2 +
    grad, in order of first use, each ``blocking`` as given — and each dependency's link (-1: none) and bytes."""
    bandwidth = profile.bandwidth if profile.bandwidth is not None else 1.0
    stages = len(rank_of)
    keys = 2 * stages * stages  # a few hundred: tables over every key, then one look-up per dependency
    first = np.full(keys, len(pair), dtype=np.int64)
    np.minimum.at(first, pair, np.arange(len(pair), dtype=np.int64))
    found = np.flatnonzero(first < len(pair))
    by_use = found[np.argsort(first[found], kind="stable")]
    position = np.full(keys, -1, dtype=np.int64)
    position[by_use] = np.arange(len(by_use))
    link = np.full(deps, -1, dtype=np.int64)
    link[crossing] = position[pair]
    links = []
    for k in by_use.tolist():
        src, dst, kind = k // 2 // stages, k // 2 % stages, ("act", "grad")[k % 2]
        links.append(Link(f"{src}->{dst}:{kind}", f"r{rank_of[src]}", f"r{rank_of[dst]}", bandwidth,
                          profile.latency(src, dst), blocking))
    sends = profile.send_bytes and profile.bandwidth is not None
    per_boundary = np.array([int(x) for x in profile.send_bytes] if sends else [0] * profile.stages, dtype=np.int64)
    size = np.zeros(deps, dtype=np.int64)
    if len(per_boundary):
        every = np.arange(keys) // 2
        boundary = np.minimum(every // stages, every % stages)  # activations and their gradients cross one boundary
        size[crossing] = per_boundary[np.clip(boundary, 0, len(per_boundary) - 1)][pair]
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


def run_order(order: StageOrder, profile: StageProfile, shortened: np.ndarray | None = None,
              blocking: bool = False) -> StageRun:
    """``order`` simulated on ``profile``'s costs, each action less ``shortened``'s seconds, its sends ``blocking``
    or not (:func:`order_problem`)."""
    problem = order_problem(order, profile, shortened, blocking)
    return StageRun(order, problem, simulate(problem))


__all__ = ["StageRun", "order_problem", "run_order"]
