"""A published order's pipeline span with blocking sends (``--p2p blocking``, :attr:`~archsim.sim.problem.Link.blocking`)
by a recurrence over its actions, equal to the event simulator's makespan without building its problem.

Why it is exact: a blocking send holds its rank until the transfer ends, so each link carries one transfer at a
time by construction (its one sending rank waits for each) and never queues; a transfer therefore starts as its
action ends and lasts its hop. The receiver's data arrive when the sender is free again: every action ends at
``max(its rank free, each input's end + hop) + its duration``, and its rank is free ``hop`` later when it sent
across ranks. One pass over the actions in an order that respects both the ranks' sequences and the data
dependencies (:func:`~archsim.sim.builder.stage_flow`'s) gives every end: O(actions), no event queue.

1F1B on equal stages (F, B = I + W) with one hop h everywhere appears to have a closed form,
m(F + B) + (p − 1)(F + B) + 2(p − 1)h + (m − 1)·min(2, p − 1)·h, less one h when p ≥ 3 and m ≥ 2 — 1F1B's
overlapped form with every interior pass lengthened by its held send, the fill and drain overlapping one hop (found
and checked by brute force against the event simulator, not proven; no code path uses it, so it lives as a
conjecture in ``tests/test_p2p_search.py``, checked there against the simulator). With
per-boundary hops or unequal stages (the embedding and the head make train's stages unequal) it does not hold,
nor does lengthening each pass by its hop in 1F1B's overlapped form (it errs either way), and no closed form was
found there, so the search uses :func:`one_f_one_b_held`, 1F1B's exact
O(p·m) recurrence, and :func:`held_span` for the other schedules.

Times are in the profile's unit.
"""

from __future__ import annotations

import numpy as np

from archsim.policies.actions import StageOrder
from archsim.policies.stage_profile import StageProfile
from archsim.sim.builder import stage_flow


def held_span(order: StageOrder, profile: StageProfile) -> float:
    """Makespan of ``order`` on ``profile``'s costs when every send between ranks blocks its sender until the
    transfer ends (``run_order(order, profile, blocking=True)``'s, exactly; the 1F1B all-to-all overlap's shortened
    steps are not applied). Latency-only hops: a profile with a finite ``bandwidth`` is refused."""
    if profile.bandwidth is not None and np.isfinite(profile.bandwidth):
        raise ValueError("held_span prices hops by latency alone; this profile gives a finite bandwidth")
    c = order.columns
    stage, code, microbatch = c.stage, c.kind, c.microbatch
    n = len(stage)
    if not n:
        return 0.0
    rank_of = order.rank_of_stage()
    stages = max(order.stages, int(stage.max()) + 1)
    rank_array = np.array([rank_of.get(s, -1) for s in range(stages + 1)], dtype=np.int64)
    flow = stage_flow(stage, code, microbatch, rank_array, order.stages - 1)
    f, i, w = profile.forward, profile.backward_input, profile.backward_weight
    table = [(f[s], i[s], w[s], i[s] + w[s]) for s in range(profile.stages)]
    st, kd = stage.tolist(), code.tolist()
    duration = [table[s][k] for s, k in zip(st, kd, strict=True)]
    inputs: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    held = [0.0] * n  # seconds an action's send holds its rank after it ends
    for src, dst, cross in zip(flow.src.tolist(), flow.dst.tolist(), flow.cross.tolist(), strict=True):
        hop = profile.latency(st[src], st[dst]) if cross else 0.0
        inputs[dst].append((src, hop))
        if cross:
            held[src] = max(held[src], hop)
    end = [-1.0] * n
    bounds = np.concatenate(([0], np.cumsum(c.lengths))).tolist()
    at, last = bounds[:-1], bounds[1:]
    free = [0.0] * len(at)
    left = n
    while left:
        moved = False
        for r in range(len(at)):
            a = at[r]
            while a < last[r]:
                start = free[r]
                for src, hop in inputs[a]:
                    if end[src] < 0.0:
                        break
                    start = max(start, end[src] + hop)
                else:
                    end[a] = start + duration[a]
                    free[r] = end[a] + held[a]
                    a += 1
                    left -= 1
                    moved = True
                    continue
                break
            at[r] = a
        if not moved:
            raise ValueError(f"order {order.name!r} deadlocks: no rank can run its next action")
    return float(max(end))


def one_f_one_b_held(profile: StageProfile, microbatches: int) -> float:
    """:func:`held_span` of the published 1F1B order (one stage a rank), without building the order: each pass
    lengthened by the send it holds (F of stage s by its hop to s + 1 below the last stage, B by its hop to s − 1
    above the first) runs a pipeline with no hops, and rank s's k-th action (warm-up forwards w = min(p − 1 − s, m),
    then F and B alternating, then the last w backwards) waits only for its rank's (k − 1)-th and for a neighbour's
    k-th or (k − 1)-th: at each k the forwards in stage order, then the backwards in reverse, see every input ended.
    O(p·m) float steps, a few times faster than the general recurrence (seconds: the profile's unit)."""
    p, m = profile.stages, microbatches
    if m <= 0:
        return 0.0
    f = [profile.forward[s] + (profile.latency(s, s + 1) if s < p - 1 else 0.0) for s in range(p)]
    b = [profile.backward_input[s] + profile.backward_weight[s] + (profile.latency(s, s - 1) if s else 0.0)
         for s in range(p)]
    warm = [min(p - 1 - s, m) for s in range(p)]
    ends_f = [[0.0] * m for _ in range(p)]  # each (stage, micro-batch)'s end, its held send included
    ends_b = [[0.0] * m for _ in range(p)]
    free = [0.0] * p
    for k in range(2 * m):
        for s in range(p):  # the forwards at k, upstream first
            w = warm[s]
            if k < w:
                i = k
            elif k < 2 * m - w and (k - w) % 2 == 0:
                i = w + (k - w) // 2
            else:
                continue
            start = free[s] if s == 0 else max(free[s], ends_f[s - 1][i])
            free[s] = ends_f[s][i] = start + f[s]
        for s in range(p - 1, -1, -1):  # the backwards at k, downstream first
            w = warm[s]
            if k >= 2 * m - w:
                j = k - m
            elif k >= w and (k - w) % 2 == 1:
                j = (k - w - 1) // 2
            else:
                continue
            start = max(free[s], ends_f[s][j] if s == p - 1 else ends_b[s + 1][j])
            free[s] = ends_b[s][j] = start + b[s]
    return ends_b[0][m - 1]


__all__ = ["held_span", "one_f_one_b_held"]
