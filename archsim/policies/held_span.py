"""A published order's pipeline span with blocking sends (``--p2p blocking``, :attr:`~archsim.sim.problem.Link.blocking`)
by a recurrence over its actions, equal to the event simulator's makespan without building its problem.

Why it is exact: a blocking send holds its rank until the transfer ends, so each link carries one transfer at a
time by construction (its one sending rank waits for each) and never queues; a transfer therefore starts as its
action ends and lasts its hop. The receiver's data arrive when the sender is free again: every action ends at
``max(its rank free, each input's end + hop) + its duration``, and its rank is free ``hop`` later when it sent
across ranks. One pass over the actions in an order that respects both the ranks' sequences and the data
dependencies (:func:`~archsim.sim.builder.stage_flow`'s) gives every end: O(actions), no event queue.

1F1B's overlapped closed form with each pass lengthened by the send it holds (F + h, B + h, the steady step
F + B + 2h) is not exact: on equal stages and one hop it overshoots by a hop in many cases (p ≥ 3), and with
per-boundary hops or unequal stages it errs either way (the brute-force tests found such cases); the recurrence is
exact on every profile, at O(actions) Python steps, so the search uses it.

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


__all__ = ["held_span"]
