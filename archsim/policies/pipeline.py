"""Micro-batch schedules of a partition in the event simulator: GPipe, 1F1B, LayerPipe δ-first.

A :class:`~archsim.partition.result.Partition` fixes *where* each op runs; this module builds the
op DAG of M micro-batches (dependencies from the training data flow, transfers on links between
processors) and what decides *when*:

* ``gpipe`` and ``1f1b``: the one GPipe and the one 1F1B (:mod:`archsim.policies.stage_orders`,
  torch's ``ScheduleGPipe`` / ``Schedule1F1B`` orders) — each processor runs its stage's actions
  strictly in that order: an action (all of the stage's forward ops of one micro-batch, or all its
  backward ops: δ, δ′, δ″ and G) starts only after the previous one ended. Within an action the
  ops run as their data flow and priority allow. A δ part a stage lends (run on another processor)
  is part of its backward action too: the F the order puts after B(b) waits for B(b)'s lent parts
  (1F1B's F(b + W) after B(b): the window's admission below), so a slower borrower stays bounded.
* ``gpipe-newest-first`` (archsim's GPipe before it followed torch's order): a list schedule, every
  forward first, then the backward ops of the newest micro-batch first (GPipe's reverse order); no
  in-flight limit.
* ``1f1b-window`` (archsim's earlier 1F1B, PipeDream's admission rule as a list schedule): stage s
  of S admits F(b) only after B(b − W) and runs B(b) only after F(b + W − 1), W = S − s + 1; between
  those limits, backward ops rank before forwards. Admission's B(b − W) is the backward ops of the
  stage's layers wherever they run: a δ part it lends (LayerPipe's δ′ or δ″ on another processor) is
  part of its lender's backward (004_2cd4e01df0d40184.txt, Fig. 5: nB_p is nB_pG, nB_pδ′ and nB_pδ″),
  so a processor of borrowed parts alone, which has no window, is held by its lenders' windows.
  Alternation orders one processor: its B(b) is the backward ops it runs (a part it borrows too).
* ``1f1b-delta-before-g``: ``1f1b``'s action order with each layer's δ pieces (δ, δ′, δ″) before
  its G inside a backward action. 1F1B leaves that order open; ``1f1b`` takes the plan's listing
  (G first), this variant lists G after the layer's δ pieces, so the previous stage's gradient leaves
  one G earlier (docs/concepts.md: 294,657,321 cycles on the sample network's LayerPipe plan, 3
  processors, 8 micro-batches, against ``1f1b``'s 300,573,488).
* ``layerpipe``: 1F1B's admission rule with LayerPipe's critical-loop priority — δ (D, D1, D2)
  before G before F (004_2cd4e01df0d40184.txt §III-C: δ is on the critical loop, G is not), so
  the next stage's δ starts as early as possible; δ′ and δ″ of one layer run on two processors in
  parallel.

Transfers (``bandwidth`` given): an op's output crosses to another processor once per micro-batch
— one transfer per (source op, receiving stage, micro-batch), however many ops there read it (a
layer's δ op and its G both read the consumer's δ; two layers of a stage may read one producer's
activation). The transfer lands in a receive op of no time on the receiving processor (``RECV_F``
for an activation, ``RECV_B`` for a gradient, torch's names) that ranks before every other op there
and belongs to the action it feeds; every op that needs the data depends on it. When two or more
layers of one stage read a layer's output on another stage, their δ contributions to the gradient
of that output are summed on their stage (autograd accumulates them) by a ``SEND_B`` op of no time
after them, and the sum crosses once per micro-batch, the size of the layer's output.

Stash memory: a layer's F allocates its input activation (needed by G) and, for the weight-
stashing schedules (1f1b and its δ-before-G variant, 1f1b-window, layerpipe: PipeDream's and
LayerPipe's asynchronous training keep one weight version per micro-batch in flight), one weight
version; its G releases both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import numpy as np

from archsim.choices.partitions import FLUSHED_SCHEDULES, METHOD_SCHEDULES, WINDOWED_SCHEDULES
from archsim.choices.schedules import PARTITION_SCHEDULES
from archsim.errors import InputError
from archsim.partition.profile import LayerProfile
from archsim.partition.result import Partition
from archsim.policies.stage_orders import gpipe, one_f_one_b
from archsim.sim import Link, Problem, Processor, Timeline, simulate
from archsim.sim.builder import build, repeat_flow, then_order
from archsim.sim.columns import DepColumns, OpColumns

SCHEDULES = PARTITION_SCHEDULES
DELTA_BEFORE_G = "1f1b-delta-before-g"  # 1f1b with each layer's δ pieces before its G in a backward action
ORDERED = ("gpipe", "1f1b", DELTA_BEFORE_G)  # run in the action order of stage_orders' gpipe or one_f_one_b
BACKWARD = ("D", "D1", "D2", "G")


@dataclass(frozen=True)
class PipelineRun:
    problem: Problem
    timeline: Timeline
    schedule: str
    microbatches: int


def default_schedule(method: str) -> str:
    return METHOD_SCHEDULES.get(method, "1f1b")


def pipeline_layout(plan: Partition, profile: LayerProfile, microbatches: int, schedule: str | None = None):
    """What the op DAG is built from, checked: (the schedule, each stage's processor name, layer
    name → index, each layer's producers and consumers by name, (layer, kind) → stage index, and
    (layer, kind) → its op's duration: the op's cost over the stage's replicas; a layer with
    producers whose δ costs nothing, and so was not placed, gets a δ of duration 0)."""
    schedule = schedule or default_schedule(plan.method)
    if schedule not in SCHEDULES:
        raise InputError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}", field="schedule")
    if microbatches <= 0:
        raise InputError(f"microbatches must be positive, got {microbatches}", field="microbatches")
    proc_of_stage = [f"p{s.index + 1}" for s in plan.stages]
    index = {name: k for k, name in enumerate(profile.names)}
    # The data flow is the profile's graph, whatever made the profile (lowered layers, graph.txt,
    # given costs with edges): one accessor, so no kind of profile is taken for a chain.
    producers = {name: [profile.names[p] for p in profile.producers(k)] for k, name in enumerate(profile.names)}
    consumers = {name: [profile.names[c] for c in profile.consumers(k)] for k, name in enumerate(profile.names)}
    where: dict[tuple[str, str], int] = {}  # (layer, kind) → stage
    cycles: dict[tuple[str, str], float] = {}
    for stage in plan.stages:
        for op in stage.ops:
            where[(op.layer, op.kind)] = stage.index
            cycles[(op.layer, op.kind)] = op.cost / stage.replicas
    # A layer whose δ costs nothing (partitions place no such op: a reshape, a dropout in a measured
    # profile) still hands its consumers' gradient to its producers: a δ of no time on its G's stage,
    # after the template's placed ops, so the producers' backward waits for the one after it.
    for name in profile.names:
        if producers[name] and not any((name, kind) in where for kind in ("D", "D1", "D2")):
            where[(name, "D")], cycles[(name, "D")] = where[(name, "G")], 0.0
    return schedule, proc_of_stage, index, producers, consumers, where, cycles


def pipeline_problem(plan: Partition, profile: LayerProfile, microbatches: int, schedule: str | None = None,
                     bandwidth: float | None = None, latency: float = 0.0) -> Problem:
    """The op DAG of ``microbatches`` micro-batches through ``plan``.

    bandwidth: bytes per time unit of a link between any two processors (None: free transfers, no
    receive ops); over a link each op's output goes once per receiving stage and micro-batch.

    Built as columns: one micro-batch's ops and dependencies form a template that every
    micro-batch repeats (op i of micro-batch b is op b·K + i); the admission and alternation
    dependencies between micro-batches are in the template too, kept only for the micro-batches
    they exist for. Problem order: micro-batch by micro-batch, each in template order.
    """
    layout = pipeline_layout(plan, profile, microbatches, schedule)
    schedule, proc_of_stage, index, producers, consumers, where, cycles = layout
    stages = len(plan.stages)
    # the template's listing, the last tie-break within a processor: the plan's (a layer's G before its
    # δ pieces), or for DELTA_BEFORE_G every G after the δ pieces (a stable sort: nothing else moves)
    listing = sorted(where, key=lambda key: key[1] == "G") if schedule == DELTA_BEFORE_G else list(where)
    slot = {key: t for t, key in enumerate(listing)}  # (layer, kind) → its op in the template

    def kinds_of(layer: str, family: str) -> list[str]:
        if family == "D":
            return [k for k in ("D", "D1", "D2") if (layer, k) in where]
        return [family] if (layer, family) in where else []

    links: dict[tuple[int, int], int] = {}

    def link(src: int, dst: int) -> int:
        if bandwidth is None or src == dst:
            return -1
        return links.setdefault((src, dst), len(links))

    fill_drain = {"F": 0, "D": 1, "D1": 1, "D2": 1, "G": 1}
    backward_first = {"D": 0, "D1": 0, "D2": 0, "G": 0, "F": 1}
    rank = {"gpipe": fill_drain, "gpipe-newest-first": fill_drain, "1f1b": backward_first, DELTA_BEFORE_G: backward_first,
            "1f1b-window": backward_first, "layerpipe": {"D": 0, "D1": 0, "D2": 0, "G": 1, "F": 2}}[schedule]
    stash_weights = schedule not in FLUSHED_SCHEDULES  # one weight version, no in-flight limit
    newest_first = schedule == "gpipe-newest-first"
    # per op: processor, cycles, rank, sign of b, last key, alloc, free, layer, kind, stage, name in its id
    template = []
    for layer, kind in listing:
        s = where[(layer, kind)]  # the stage index (int), not a Stage
        k = index[layer]
        forward = kind == "F"
        stash = int(profile.stash_bytes[k]) + (int(profile.weight_bytes[k]) if stash_weights else 0)
        template.append((s, cycles[(layer, kind)], rank[kind], -1 if newest_first and not forward else 1,
                         k if forward else -k, stash if forward else 0, stash if kind == "G" else 0, layer, kind,
                         s + 1, layer))
    # dependencies of micro-batch b: (source op, its micro-batch − b, target op, bytes, link); one
    # exists only where its source micro-batch does (admission: b ≥ w; alternation: b + w − 1 < M)
    deps: list[tuple[int, int, int, int, int]] = []

    def dep(src: tuple[str, str], dst: tuple[str, str], size: int = 0, channel: int = -1, offset: int = 0) -> None:
        deps.append((slot.get(src, -1), offset, slot.get(dst, -1), size, channel))
        named.append((src, dst))

    named: list[tuple[tuple[str, str], tuple[str, str]]] = []  # for the message on a dependency on a missing op

    def received(src: tuple[str, str], at: int, size: int, gradient: bool) -> tuple[str, str]:
        """What an op on stage ``at`` reads ``src``'s output from: ``src`` itself on its own processor
        or over free links, else the one receive op of it on that stage (made, with its transfer, on
        first use)."""
        on, layer = sums[src] if src in sums else (where[src], src[0])
        channel = link(on, at)
        if channel < 0:
            return src
        kind = "RECV_B" if gradient else "RECV_F"
        key = (f"{src[1]}.{src[0]}>{proc_of_stage[at]}", kind)
        if key not in slot:
            k = index[layer]
            slot[key] = len(template)
            template.append((at, 0.0, -1, -1 if newest_first and gradient else 1, -k if gradient else k, 0, 0,
                             layer, kind, at + 1, key[0]))
            dep(src, key, size, channel)
        return key

    sums: dict[tuple[str, str], tuple[int, str]] = {}  # a SEND_B op → its stage and the layer it sends for

    def summed(layer: str, parts: list[tuple[str, str]], on: int) -> tuple[str, str]:
        """The op of no time on stage ``on`` that sums ``parts``, the δ contributions of ``layer``'s
        consumers there to the gradient of its output (autograd accumulates them), and sends the sum
        (torch's ``SEND_B``); made, with its dependencies, on first use."""
        key = (f"{layer}@{proc_of_stage[on]}", "SEND_B")
        if key not in slot:
            slot[key], sums[key] = len(template), (on, layer)
            template.append((on, 0.0, -1, -1 if newest_first else 1, -index[layer], 0, 0, layer, "SEND_B", on + 1,
                             key[0]))
            for part in parts:
                dep(part, key)
        return key

    def gradient_of(layer: str, sources: list[tuple[str, str]], at: int) -> Iterator[tuple[str, str]]:
        """What ``layer``'s backward ops on stage ``at`` read the gradient of its output from: each
        source on that processor (or over free links) itself; from another stage, its one source
        there over the link, or the sum of its two or more sources there, sent once (the size of
        ``layer``'s output, not each consumer's δ). A generator: each is made as it is read."""
        on = {src: where[src] for src in sources}
        for src in sources:
            group = [x for x in sources if on[x] == on[src]]
            if len(group) > 1 and link(on[src], at) >= 0:
                if src == group[0]:
                    yield received(summed(layer, group, on[src]), at, int(profile.activation_bytes[index[layer]]), True)
                continue
            yield received(src, at, int(profile.delta_bytes[index[src[0]]]) if src[1] != "F" else 0, True)

    for layer in profile.names:
        f_stage = where[(layer, "F")]
        for parent in producers[layer]:  # activations forward
            dep(received((parent, "F"), f_stage, int(profile.activation_bytes[index[parent]]), False), (layer, "F"))
        # δ of this layer's output comes from its consumers' δ ops (or from the loss after F).
        sources = [(c, kd) for c in consumers[layer] for kd in kinds_of(c, "D")] or [(layer, "F")]
        for kind in kinds_of(layer, "D") + kinds_of(layer, "G"):
            for src in gradient_of(layer, sources, where[(layer, kind)]):
                dep(src, (layer, kind))
        dep((layer, "F"), (layer, "G"))
    if schedule in WINDOWED_SCHEDULES:
        for stage in plan.stages:
            window = stages - stage.index  # stage s of S keeps at most S − s + 1 micro-batches in flight
            forwards = [op.layer for op in stage.ops if op.kind == "F"]
            # admission bounds the micro-batches in flight (the versions the stage stashes): its layers'
            # backward ops wherever they run, a δ part it lends too; alternation is the processor's own
            # order: the backward ops it runs. A processor of borrowed parts alone is held by its lenders.
            owned = owned_backward(where, stage.index)
            run = [key for key, on in where.items() if on == stage.index and key[1] in BACKWARD]
            if not forwards:  # an idle stage, or one of borrowed parts only: nothing to admit or alternate
                continue
            begins, ends = window_ends(forwards, producers, consumers)
            for layer, kind in owned:  # admission: F(b) after the backward of b − window
                for first in begins:
                    dep((layer, kind), (first, "F"), offset=-window)
            for layer, kind in run:  # alternation: B(b) after F(b + window − 1)
                for last in ends:
                    dep((last, "F"), (layer, kind), offset=window - 1)
    # under an action order a lender's B(b) takes its lent parts along: they end before the F that follows it
    lent = [[slot[key] for key in owned_backward(where, s) if where[key] != s] for s in range(stages)]
    ordered = _in_order(schedule, template, deps, stages, microbatches, lent) if schedule in ORDERED else None
    return _problem(proc_of_stage, links, template, deps, named, microbatches, bandwidth, latency, ordered)


def owned_backward(where: dict[tuple[str, str], int], stage: int) -> list[tuple[str, str]]:
    """The backward ops (δ, δ′, δ″, G) of ``stage``'s layers wherever they run: a δ part it lends is part of
    its backward action (004_2cd4e01df0d40184.txt, Fig. 5: nB_p is nB_pG, nB_pδ′ and nB_pδ″)."""
    return [key for key in where if key[1] in BACKWARD and where[(key[0], "F")] == stage]


def window_ends(forwards: list[str], producers: dict[str, list[str]], consumers: dict[str, list[str]]
                ) -> tuple[list[str], list[str]]:
    """The layers of a stage's forward action (``forwards``) that begin it (no producer on the stage)
    and that end it (no consumer on the stage): the window's admission holds back each that begins
    it and its alternation waits for each that ends it (a chain's first and last layer; a branching
    graph's every branch, which may run in either order)."""
    mine = set(forwards)
    return ([x for x in forwards if not any(p in mine for p in producers[x])],
            [x for x in forwards if not any(c in mine for c in consumers[x])])


def _in_order(schedule: str, template, deps, stages: int, microbatches: int,
              lent: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Dependencies that make each processor run its stage's actions in the order of ``schedule``'s
    generator: every op of an action that ends it (no successor in the action) before every op of
    the next action that begins it (no predecessor in the action). An action is a stage's forward
    ops (F) or backward ops (B) of one micro-batch, each with the receive ops feeding it (RECV_F,
    RECV_B: they begin it); a stage without backward ops runs F only. ``lent[r]``: the template ops
    of stage r's backward run on other processors (its lent δ parts); they end B(b) too where an F
    follows it (1F1B's F(b + W) after B(b), W = S − s + 1: the window's admission), so a slower
    borrower holds at most W micro-batches of its lender; nothing else waits for them."""
    size = len(template)
    family = np.array([0 if t[8] in ("F", "RECV_F") else 3 for t in template], dtype=np.int64)
    stage_of = np.array([t[0] for t in template], dtype=np.int64)
    inner = [(a, b) for a, offset, b, _, _ in deps
             if offset == 0 and a >= 0 and b >= 0 and stage_of[a] == stage_of[b] and family[a] == family[b]]
    has_pred, has_succ = np.zeros(size, dtype=bool), np.zeros(size, dtype=bool)
    for a, b in inner:
        has_succ[a], has_pred[b] = True, True
    order = (gpipe if schedule == "gpipe" else one_f_one_b)(stages, microbatches).columns
    bounds = order.bounds.tolist()
    src, dst, key = [], [], []
    for r in range(stages):
        mine = stage_of == r
        ends = {f: np.flatnonzero(mine & (family == f) & ~has_succ) for f in (0, 3)}
        begins = {f: np.flatnonzero(mine & (family == f) & ~has_pred) for f in (0, 3)}
        kind, mb = order.kind[bounds[r]:bounds[r + 1]], order.microbatch[bounds[r]:bounds[r + 1]]
        present = np.array([len(begins.get(f, ())) > 0 for f in (0, 1, 2, 3)])[kind]
        kind, mb = kind[present], mb[present]
        for fa in (0, 3):
            for fb in (0, 3):
                tails = np.concatenate([ends[fa], np.array(lent[r], dtype=np.int64)]) if (fa, fb) == (3, 0) \
                    else ends[fa]
                at = np.flatnonzero((kind[:-1] == fa) & (kind[1:] == fb))
                a = (mb[at][:, None, None] * size + tails[None, :, None])
                b = (mb[at + 1][:, None, None] * size + begins[fb][None, None, :])
                a, b = (x.reshape(len(at), len(tails) * len(begins[fb])) for x in np.broadcast_arrays(a, b))
                src.append(a)
                dst.append(b)
                key.append(np.broadcast_to((r * 2 * microbatches + at)[:, None], a.shape))
    key_all = np.concatenate([k.ravel() for k in key]) if key else np.zeros(0, np.int64)
    by = np.argsort(key_all, kind="stable")
    return (np.concatenate([x.ravel() for x in src])[by].astype(np.int64),
            np.concatenate([x.ravel() for x in dst])[by].astype(np.int64))


def _problem(proc_of_stage, links, template, deps, named, microbatches: int, bandwidth, latency,
             ordered=None) -> Problem:
    """The template repeated over the micro-batches, as a Problem built from columns."""
    m, size = microbatches, len(template)
    proc, cycles, rank, sign, last, alloc, free, layer, kind, stage, label = (list(c) for c in zip(*template)) \
        if template else ([],) * 11
    b = np.repeat(np.arange(m, dtype=np.int64), size)
    tile = np.tile
    priority = np.column_stack([tile(np.array(rank, dtype=np.int64), m), b * tile(np.array(sign, dtype=np.int64), m),
                                tile(np.array(last, dtype=np.int64), m)])
    ids = [f"{k}:{name}:{i}" for i in range(m) for name, k in zip(label, kind)]
    ops = OpColumns(ids, tile(np.array(proc, dtype=np.int64), m), tile(np.array(cycles, dtype=np.float64), m),
                    alloc=tile(np.array(alloc, dtype=np.int64), m), free=tile(np.array(free, dtype=np.int64), m),
                    priority=priority,
                    tags=(("layer", layer * m), ("kind", kind * m), ("microbatch", b), ("stage", stage * m)))
    src_t, offset, dst_t, nbytes, channel = (np.array(c, dtype=np.int64).reshape(-1)
                                             for c in (zip(*deps) if deps else ([],) * 5))
    batch = np.arange(m, dtype=np.int64)[:, None]
    missing = (batch + offset >= 0) & (batch + offset < m) & ((src_t < 0) | (dst_t < 0))
    if missing.any():  # as Problem words a dependency on an op that does not exist
        at, d = (int(x[0]) for x in np.nonzero(missing))  # the micro-batch and template dependency
        (a_layer, a_kind), (z_layer, z_kind) = named[d]
        a, z = f"{a_kind}:{a_layer}:{at + int(offset[d])}", f"{z_kind}:{z_layer}:{at}"
        raise InputError(f"dependency {a!r} -> {z!r} names unknown op {a if src_t[d] < 0 else z!r}", field="deps")
    columns = repeat_flow(DepColumns(src_t, dst_t, nbytes, channel), offset, size, m)
    if ordered is not None:  # the action order's dependencies, after the data flow's
        columns = then_order(columns, *ordered)
    processors = tuple(Processor(name) for name in proc_of_stage)
    names = {(s, d): Link(f"{proc_of_stage[s]}->{proc_of_stage[d]}", proc_of_stage[s], proc_of_stage[d], bandwidth,
                          latency) for (s, d) in links}
    return build(processors, ops, columns, tuple(names[key] for key in links))


def simulate_partition(plan: Partition, profile: LayerProfile, microbatches: int, schedule: str | None = None,
                       bandwidth: float | None = None, latency: float = 0.0, *,
                       phase: Callable[[str], None] | None = None) -> PipelineRun:
    """``phase(name)``, if given, is called as building and simulating start (progress)."""
    if phase is not None:
        phase("build")
    problem = pipeline_problem(plan, profile, microbatches, schedule, bandwidth, latency)
    if phase is not None:
        phase("simulate")
    timeline = replace(simulate(problem), unit=profile.unit)  # the profile's unit, for to_frame's attrs
    return PipelineRun(problem, timeline, schedule or default_schedule(plan.method), microbatches)


def schedule_variant(schedule: str, plan) -> str:
    """Meta ``schedule_variant`` of ``archsim pipeline``: the stage-wise schedule that ran and the plan's split
    (layers per stage, stage 1 first), so its ``gpipe`` is not mistaken for ``schedule --policy gpipe``'s
    layer-wise one (another allocation and op order, another makespan)."""
    split = ",".join(str(len(stage.layers)) for stage in plan.stages)
    what = ("stage-wise fill-drain, every micro-batch's forward action before the backward ones (torch's "
            "ScheduleGPipe order)" if schedule == "gpipe" else "stage-wise micro-batch schedule")
    return f"{schedule}: {what}, on the {plan.method} plan's stages of {split} layers"
