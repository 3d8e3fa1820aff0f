"""Out-of-order backprop across devices (000_0084ae54373056ee.txt §5, Figs. 5–6).

Layer-wise ops F_l, D_l (δ, absent for the first layer) and G_l of M micro-batches on P devices:

* ``mp``: cross-layer model parallelism — contiguous layer blocks per device, one micro-batch at a
  time, the conventional backward order (a layer's weight gradient, then its δ, before the
  previous layer's — the order that gives Fig. 5's 23 units).
* ``gpipe``: the same allocation and order over micro-batches, forwards first.
* ``ooo-pipe1``: gradient fast-forwarding — every device runs its δ ops before its weight-gradient
  ops, so the previous device receives δ sooner; weight gradients fill the idle slots.
* ``ooo-pipe2``: fast-forwarding plus modulo layer allocation — layer l (0-based) on device
  ⌊l / group⌋ mod P — so consecutive δ ops alternate devices and the weight gradients of one
  device overlap the δ chain on the others.

``flush``: with it, no backward op starts before every forward of the mini-batch has finished
(GPipe's synchronous flush); without it, backward ops interleave with later micro-batches'
forwards, and δ is ranked above the next micro-batch's F (``ooo-pipe1`` and ``ooo-pipe2`` alike; ``ooo-pipe1``
ranked F first whatever the flag until 2026-12-05, so ``--no-flush`` changed nothing). ``mp`` runs one micro-batch's forward
and backward before the next micro-batch starts, which a flush over two or more micro-batches
contradicts: that combination is refused (with one micro-batch the flush changes nothing). ``gpipe`` is the
flush (the paper's GPipe, Fig. 12a: every forward, then every backward), so ``gpipe`` without one over two or more
micro-batches is refused likewise (until 2026-12-05 it ran, ranked F first, and gave the flushed makespan).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from archsim.choices.schedules import OOO_POLICIES as POLICIES
from archsim.errors import InputError
from archsim.partition.ooo_allocation import device_of
from archsim.partition.profile import LayerProfile, profile_from_costs
from archsim.sim import Problem, Processor, simulate
from archsim.sim.bubble import bubble
from archsim.sim.builder import build, repeat_flow, sub_problem
from archsim.sim.columns import DepColumns, OpColumns
from archsim.sim.timeline import SlotTable

if TYPE_CHECKING:
    from archsim.workload.layer import Network

# each policy's layer allocation (archsim.partition.ooo_allocation; the registry's planner "ooo" is the contiguous one)
ALLOCATION = {"mp": "contiguous", "gpipe": "contiguous", "ooo-pipe1": "contiguous", "ooo-pipe2": "modulo"}


def layer_chain(forward, delta, weight_grad, stash_bytes=None) -> LayerProfile:
    """Layers l1 … lL of one micro-batch from given F, δ and G (in the paper's order) as a profile;
    ``stash_bytes``: a^{l-1} a layer keeps from F_l until G_l (None: 0, unknown)."""
    names = [f"l{l + 1}" for l in range(len(forward))]
    return profile_from_costs(names, forward, weight_grad, delta, stash_bytes=stash_bytes)


def unit_costs(layers: int, network: Network | None = None) -> LayerProfile:
    """F = D = G = 1 (the paper's illustrations), no stash; ``network``: whose layers these are, its
    names and graph kept so that a branching network is refused as its costed profile is (None: a chain)."""
    ones = [1.0] * layers
    chain = layer_chain(ones, ones, ones)
    if network is None:
        return chain
    return replace(chain, names=tuple(layer.name for layer in network.layers), edges=network.edges)


def require_chain(costs: LayerProfile, instead: str | None = None) -> None:
    """The paper defines its pipelines on a chain (§3: each layer reads the prior layer's output, its
    δ goes to that layer; §5.2: modulo allocation deals layers out by index), and this builder reads
    a profile as one; a branching graph (residuals, concatenations) would wait for the wrong δ, so it
    is refused rather than timed wrong. ``instead``: a chain network of the same model (its blocks as
    layers) to name in the refusal."""
    names, pairs = costs.names, set(costs.edge_pairs)
    chain = {(k - 1, k) for k in range(1, len(names))}
    if pairs == chain:
        return
    from archsim.console import route  # a Python caller is named the Python route

    extra = sorted(pairs - chain, key=lambda e: e[1])
    what = (f"layer {names[extra[0][1]]!r} reads {names[extra[0][0]]!r}" if extra else
            f"layer {names[min(chain - pairs)[1]]!r} does not read {names[min(chain - pairs)[0]]!r}")
    raise InputError(f"out-of-order backprop's pipelines (mp, gpipe, ooo-pipe1, ooo-pipe2) run on a chain of "
                     f"layers, each reading the one before, but {what}: the network branches; schedule it as a "
                     f"partition pipeline ({route('archsim pipeline', 'archsim.pipeline, then archsim.simulate')})"
                     + (f", or schedule {instead}, its chain of blocks" if instead else ""), field="network")


def default_flush(policy: str) -> bool:
    """Flush unless the policy interleaves micro-batches by design (ooo-pipe2) or runs them one by one (mp)."""
    return policy not in ("ooo-pipe2", "mp")


def op_count(layers: int, microbatches: int, *, first_layer_delta: bool = False, flush: bool = True) -> int:
    """The ops :func:`ooo_problem` builds: per micro-batch F and G of every layer and δ of every layer
    that has one, and the flush barrier when it flushes two or more micro-batches."""
    deltas = layers - 1 + first_layer_delta if layers else 0
    return microbatches * (2 * layers + deltas) + (flush and microbatches > 1)


def ooo_layout(n: int, devices: int, microbatches: int, policy: str, *, flush: bool = True,
               group: int = 1) -> tuple[list[int], Callable[[str, int, int], tuple]]:
    """The checked arguments' placement and order for ``n`` layers: each layer's device index, and
    the rank of op ``kind`` ("F", "G" or "D") of micro-batch ``mb`` at ``layer`` (lower runs first)."""
    if policy not in POLICIES:
        raise InputError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}", field="policy")
    if devices <= 0 or microbatches <= 0 or group <= 0:
        raise InputError("devices, microbatches and group must be positive", field="devices")
    if policy == "mp" and flush and microbatches > 1:
        raise InputError("mp runs one micro-batch at a time, so it cannot flush (all forwards before any "
                         "backward) over several micro-batches; use it without a flush", field="flush")
    if policy == "gpipe" and not flush and microbatches > 1:
        raise InputError("gpipe is GPipe's flush (every forward, then every backward: Oh et al., Fig. 12a), so it "
                         "cannot run without one over several micro-batches; for backward ops interleaved with later "
                         "forwards use ooo-pipe1 without a flush, or 1f1b", field="flush")
    where = [device_of(l, n, devices, ALLOCATION[policy], group) for l in range(n)]

    def rank(kind: str, mb: int, layer: int) -> tuple:
        backward_layer = n - 1 - layer  # deeper layers first in the backward pass
        if policy in ("mp", "gpipe"):  # conventional: a layer's G then D, then the previous layer's
            return (0, mb, layer) if kind == "F" else (1, mb, backward_layer, kind == "D")
        if flush:
            return (0, mb, layer) if kind == "F" else ((1, mb, backward_layer) if kind == "D" else (2, mb, backward_layer))
        return {"D": (0, mb, backward_layer), "F": (1, mb, layer), "G": (2, mb, backward_layer)}[kind]

    return where, rank


def ooo_problem(costs: LayerProfile, devices: int, microbatches: int, policy: str, *, flush: bool = True,
                group: int = 1, first_layer_delta: bool = False) -> Problem:
    """The policy's problem over ``costs``' chain of layers (layer l feeds l + 1, the paper's setting;
    a profile whose graph branches is refused, :func:`require_chain`): per micro-batch F, G and δ of
    every layer in the profile's unit, a layer's stash (``stash_bytes``, its input a^{l-1}) held from
    F_l until G_l.
    ``first_layer_delta``: the first layer computes δ too (lowering mode ``paper`` counts it; the
    paper's figures do not), else ``delta[0]`` is ignored — the caller's choice, as in :func:`op_count`."""
    require_chain(costs)
    n = len(costs)
    where, rank = ooo_layout(n, devices, microbatches, policy, flush=flush, group=group)

    # one micro-batch's ops — per layer F, G and (where it has one) D — repeated for every micro-batch
    has_delta = [l > 0 or first_layer_delta for l in range(n)]
    template = [(kind, l) for l in range(n) for kind in ("F", "G", "D") if kind != "D" or has_delta[l]]
    slot = {op: t for t, op in enumerate(template)}
    size, m = len(template), microbatches
    cost = {"F": costs.forward, "G": costs.weight_grad, "D": costs.delta}
    stash = [costs.stash_bytes[l] for _, l in template]
    ids = [f"{kind}{l + 1}:{mb}" for mb in range(m) for kind, l in template]
    priority = [rank(kind, mb, l) for mb in range(m) for kind, l in template]
    columns = [np.tile(np.array(values), m) for values in (
        [where[l] for _, l in template], [cost[kind][l] for kind, l in template],
        [x if kind == "F" else 0 for (kind, _), x in zip(template, stash)],
        [x if kind == "G" else 0 for (kind, _), x in zip(template, stash)])]
    tags = [("layer", [costs.names[l] for _, l in template] * m),  # the profile's layer names (unit costs: l1 …)
            ("microbatch", np.repeat(np.arange(m), size).tolist()), ("kind", [kind for kind, _ in template] * m)]
    # one micro-batch's dependencies, in order; (source op, its micro-batch − this one, target op)
    deps: list[tuple[int, int, int]] = []
    for l in range(n):
        if l:
            deps.append((slot[("F", l - 1)], 0, slot[("F", l)]))
        source = slot[("F", n - 1)] if l == n - 1 else slot[("D", l + 1)]
        deps.append((source, 0, slot[("G", l)]))
        if has_delta[l]:
            deps.append((source, 0, slot[("D", l)]))
    src_t, offset, dst_t = (np.array(c, dtype=np.int64) for c in zip(*deps)) if deps else (np.zeros(0, np.int64),) * 3
    flow = repeat_flow(DepColumns(src_t, dst_t), offset, size, m)
    src, dst = flow.src, flow.dst
    batch = np.arange(m, dtype=np.int64)[:, None]
    if policy == "mp" and m > 1:  # one micro-batch at a time: no pipelining across devices
        chained = np.arange(1, m, dtype=np.int64)
        src, dst = _after_each(src, dst, len(deps), (chained - 1) * size + slot[("G", 0)],
                               chained * size + slot[("F", 0)])
    if flush and m > 1:
        barrier = m * size  # the flush op, after every micro-batch's ops
        backward = np.array([t for t, (kind, _) in enumerate(template) if kind != "F"], dtype=np.int64)
        block = np.concatenate([np.full(1, barrier), np.full(len(backward), barrier)])
        per_mb_src = np.tile(block, m)
        per_mb_dst = (batch * size + np.concatenate([[0], backward])[None, :]).ravel()
        first = np.arange(m) * (len(backward) + 1)
        per_mb_src[first] = np.arange(m) * size + slot[("F", n - 1)]
        per_mb_dst[first] = barrier
        src, dst = np.concatenate([src, per_mb_src]), np.concatenate([dst, per_mb_dst])
        ids.append("flush")
        priority.append((-1,))
        columns = [np.append(columns[0], 0), np.append(columns[1], 0.0), np.append(columns[2], 0),
                   np.append(columns[3], 0)]
        tags = [(key, values + [None]) for key, values in tags]
    processors = tuple(Processor(f"d{i + 1}") for i in range(devices))
    ops = OpColumns(ids, columns[0], columns[1].astype(np.float64), alloc=columns[2], free=columns[3],
                    priority=priority, tags=tuple(tags))
    return build(processors, ops, DepColumns(src, dst))


def _after_each(src, dst, per: int, extra_src, extra_dst):
    """The dependencies with one more after each micro-batch's ``per`` from the second micro-batch on."""
    count = len(extra_src)
    at = np.arange(1, count + 1) * per + per  # after micro-batch b's block (b = 1 … count), shifted by those before
    keep = np.ones(len(src) + count, dtype=bool)
    keep[at + np.arange(count)] = False
    merged_src, merged_dst = np.empty(len(keep), dtype=np.int64), np.empty(len(keep), dtype=np.int64)
    merged_src[keep], merged_dst[keep] = src, dst
    merged_src[~keep], merged_dst[~keep] = extra_src, extra_dst
    return merged_src, merged_dst


def flush_phases(problem: Problem) -> tuple[Problem, Problem]:
    """Split a flushed problem into its forward and backward phases: with a flush nothing of one
    phase waits for the other except through the barrier, so the optimum is the sum of theirs."""
    real = np.array([op_id != "flush" for op_id in problem.arrays.ids], dtype=bool)
    forward = np.array([kind == "F" for kind in problem.tag_values("kind")], dtype=bool)
    return sub_problem(problem, real & forward), sub_problem(problem, real & ~forward)


def ooo_schedule(costs: LayerProfile, devices: int, microbatches: int, policy: str, *, flush: bool = True,
                 group: int = 1, first_layer_delta: bool = False):
    problem = ooo_problem(costs, devices, microbatches, policy, flush=flush, group=group,
                          first_layer_delta=first_layer_delta)
    return problem, simulate(problem)


def devices_used(layers: int, devices: int, policy: str, group: int = 1) -> int:
    """How many of ``devices`` the policy's allocation gives at least one of ``layers`` layers: ⌈L/P⌉
    contiguous layers a device, or ooo-pipe2's groups dealt round robin, can leave devices with none."""
    return len({device_of(l, layers, devices, ALLOCATION[policy], group) for l in range(layers)})


def used_devices_bubble(timeline, used: int) -> float:
    """The idle share over the ``used`` devices the allocation gives layers (:func:`devices_used`): 1 − Σ op
    durations / (used × makespan), a fraction. ``bubble_fraction`` divides by every device, so an allocation that
    leaves devices without layers counts their whole span as bubble; this one leaves them out (0 for an empty or
    zero-length timeline)."""
    span = timeline.makespan
    if not span or used <= 0:
        return 0.0
    return 1.0 - float(timeline.problem.arrays.duration.sum()) / (used * span)


def lower_bound(costs: LayerProfile, devices: int, microbatches: int, policy: str, group: int = 1, *,
                first_layer_delta: bool = False) -> float:
    """max(critical path of one micro-batch, busiest device's work): no schedule beats it."""
    require_chain(costs)
    n = len(costs)
    delta = [costs.delta[l] if (l > 0 or first_layer_delta) else 0.0 for l in range(n)]
    chain = sum(costs.forward) + sum(delta[1:]) + max(costs.weight_grad[0], delta[0])
    work = [0.0] * devices
    for l in range(n):
        work[device_of(l, n, devices, ALLOCATION[policy], group)] += microbatches * (costs.forward[l] + delta[l]
                                                                          + costs.weight_grad[l])
    return max(chain, max(work))


def output_gradients(costs: LayerProfile) -> dict[str, int]:
    """Each layer's output gradient in bytes (the size of its output activation, ``activation_bytes``), by
    the layer name its ops' ``layer`` tags carry: what a weight gradient deferred past its δ keeps."""
    return {name: int(size) for name, size in zip(costs.names, costs.activation_bytes)}


def held_peaks(problem: Problem, timeline, output_bytes: Mapping[str, int]) -> dict[str, int]:
    """Peak bytes per device of the stash (each op's alloc at its start, free at its end, as
    :meth:`~archsim.sim.timeline.Timeline.peak_memory` counts it) plus the output gradients that wait between
    their two readers: a layer's δ_l and G_l of one micro-batch both read its output gradient, and the first to
    run cannot free it, so it is held from the end of the first until the start of the second, in the order
    the schedule ran (gradient fast-forwarding: δ_l, then G_l later; the conventional G_l then δ_l back to back
    hold nothing more). While an op runs its gradient is a working buffer, not counted (archsim.footprint's
    rule). The input G_l reads is the stash, counted already. Events at one instant: frees, then allocs."""
    arrays, names = problem.arrays, [p.name for p in problem.processors]
    slots = timeline.slots
    if isinstance(slots, SlotTable) and slots.problem is problem:
        op, proc, start, end = slots.op, slots.processor, slots.start, slots.end
    else:  # a timeline of Slot records
        where = {name: i for i, name in enumerate(names)}
        op = np.array([arrays.index[s.op] for s in slots], dtype=np.int64)
        proc = np.array([where[s.processor] for s in slots], dtype=np.int64)
        start, end = (np.array([getattr(s, key) for s in slots], dtype=np.float64) for key in ("start", "end"))
    alloc, free = arrays.alloc[op], arrays.free[op]
    a, f = alloc != 0, free != 0
    parts = [(proc[a], start[a], np.ones(int(a.sum()), dtype=np.int64), alloc[a]),
             (proc[f], end[f], np.where(end[f] == start[f], 2, 0), -free[f])]
    kind = np.array(problem.tag_values("kind", ""), dtype=object)[op]
    layer = [str(v) for v in np.array(problem.tag_values("layer", ""), dtype=object)[op].tolist()]
    batch = np.array(problem.tag_values("microbatch", -1), dtype=np.int64)[op]
    size = np.array([output_bytes.get(name, 0) for name in layer], dtype=np.int64)
    _, layer_code = np.unique(np.array(layer, dtype=object).astype(str), return_inverse=True)
    key = layer_code.astype(np.int64) * (int(batch.max(initial=0)) + 2) + batch + 1
    d, g = np.flatnonzero((kind == "D") & (size > 0)), np.flatnonzero((kind == "G") & (size > 0))
    by_key = np.argsort(key[g], kind="stable")
    at = np.searchsorted(key[g][by_key], key[d])
    found = at < len(g)
    d, at = d[found], at[found]
    matched = key[g][by_key][at] == key[d]
    d, g = d[matched], g[by_key][at[matched]]
    delta_first = start[d] <= start[g]
    first_end = np.where(delta_first, end[d], end[g])
    second_start = np.where(delta_first, start[g], start[d])
    waits = second_start > first_end
    d, first_end, second_start = d[waits], first_end[waits], second_start[waits]
    parts += [(proc[d], first_end, np.ones(len(d), dtype=np.int64), size[d]),
              (proc[d], second_start, np.zeros(len(d), dtype=np.int64), -size[d])]
    who, time, code, change = (np.concatenate([part[i] for part in parts]) for i in range(4))
    order = np.lexsort((change, code, time, who))
    who, change = who[order], change[order]
    bounds = np.searchsorted(who, np.arange(len(names) + 1))
    peaks = {}
    for p, name in enumerate(names):
        level = np.cumsum(change[bounds[p]:bounds[p + 1]])
        peaks[name] = max(int(level.max(initial=0)), 0)
    return peaks


def schedule_metrics(problem: Problem, timeline, output_bytes: Mapping[str, int] | None = None) -> dict[str, float]:
    """makespan, bubble fraction (:func:`archsim.sim.bubble.bubble`'s ``idle-share``: network resources,
    whose ops are tagged ``comm``, do not count) and peak held bytes on a device; ``problem`` is the timeline's.
    ``output_bytes`` (:func:`output_gradients`): each layer's output gradient, counted while it waits between δ_l
    and G_l (:func:`held_peaks`); None or all zero: the stash alone."""
    if output_bytes and any(output_bytes.values()):
        peaks = held_peaks(problem, timeline, output_bytes)
    else:
        peaks = timeline.peak_memory()
    return {"makespan": timeline.makespan, "bubble_fraction": bubble(timeline, "idle-share"),
            "peak_activation_bytes": max(peaks.values(), default=0)}


__all__ = ["ALLOCATION", "default_flush", "devices_used", "flush_phases", "held_peaks", "layer_chain", "lower_bound",
           "ooo_problem", "ooo_schedule", "op_count", "output_gradients", "require_chain", "schedule_metrics",
           "unit_costs", "used_devices_bubble"]
