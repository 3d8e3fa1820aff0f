"""The exact optimum of the zero-bubble scheduling problem on tiny instances (Qi et al., §3.2).

The paper's ILP orders, on every stage, the F, B (torch's I) and W of m micro-batches — each kind
in micro-batch order, B after its F, W after its B — under a memory limit, and minimises the longest
stage span (first F start to last W end) with T_comm per hop. On tiny instances archsim finds the
same optimum by enumeration: every memory-feasible order of each stage (linear extensions of the
stage's F/B/W grid: 5 for m = 2, 42 for m = 3, 462 for m = 4), every combination of them across
stages, each timed with its dependencies (deadlocking combinations are skipped). Used to judge the
heuristic (:mod:`archsim.policies.zb_auto`); ``limit`` bounds the combinations tried.
"""

from __future__ import annotations

import itertools

from archsim.errors import InputError
from archsim.policies.stage_orders import Action, StageOrder

_KINDS = "FIW"


def stage_orders(m: int, mb: float, mw: float, limit: float) -> list[tuple[tuple[int, int], ...]]:
    """Every order of one stage's (kind, micro-batch) pairs (kind 0 F, 1 I, 2 W) within ``limit``."""
    found: list[tuple[tuple[int, int], ...]] = []
    delta = (mb, -(mb - mw), -mw)

    def extend(prefix: list[tuple[int, int]], done: list[int], held: float) -> None:
        if len(prefix) == 3 * m:
            found.append(tuple(prefix))
            return
        for kind in range(3):
            i = done[kind]
            if i < m and (kind == 0 or done[kind - 1] > i) and held + delta[kind] <= limit + 1e-9:
                done[kind] += 1
                prefix.append((kind, i))
                extend(prefix, done, held + delta[kind])
                prefix.pop()
                done[kind] -= 1

    extend([], [0, 0, 0], 0.0)
    return found


def _span(orders, cost, comm: float, p: int, m: int) -> float | None:
    """Longest stage span of per-stage orders, or None if they deadlock."""
    end: dict[tuple[int, int, int], float] = {}
    position, clock, first = [0] * p, [0.0] * p, [0.0] * p
    remaining = 3 * m * p
    while remaining:
        progressed = False
        for j in range(p):
            while position[j] < 3 * m:
                kind, i = orders[j][position[j]]
                start = clock[j]
                source = (0, j - 1, i) if kind == 0 and j > 0 else (1, j + 1, i) if kind == 1 and j < p - 1 else None
                if source is not None:
                    if source not in end:
                        break
                    start = max(start, end[source] + comm)
                if position[j] == 0:
                    first[j] = start
                clock[j] = end[(kind, j, i)] = start + cost[kind][j]
                position[j] += 1
                remaining -= 1
                progressed = True
        if not progressed:
            return None
    return max(clock[j] - first[j] for j in range(p))


def zb_optimal_order(forward, backward_input, backward_weight, comm: float, microbatches: int,
                     memory_factor: float, activation=None, weight_memory=None, limit: int = 300_000) -> StageOrder:
    """The least longest-stage-span order under memory_factor·p·M_B (see the module docstring)."""
    p, m = len(forward), microbatches
    activation = list(activation) if activation else [1.0] * p
    weight_memory = list(weight_memory) if weight_memory else [0.0] * p
    choices = [stage_orders(m, activation[j], weight_memory[j], memory_factor * p * activation[j]) for j in range(p)]
    size = 1
    for options in choices:
        size *= len(options)
    if size > limit:
        raise InputError(f"{size} combinations of stage orders exceed the exact search's limit of {limit}; use "
                         "zb-1p/zb-2p's heuristic", field="microbatches")
    if size == 0:
        raise InputError(f"no order fits a memory limit of {memory_factor:g}·p·M_B", field="memory")
    cost = [list(forward), list(backward_input), list(backward_weight)]
    best, best_orders = None, None
    for combination in itertools.product(*choices):
        span = _span(combination, cost, comm, p, m)
        if span is not None and (best is None or span < best - 1e-12):
            best, best_orders = span, combination
    if best_orders is None:
        raise InputError("every combination of stage orders deadlocks", field="schedule")
    ranks = tuple(tuple(Action(j, _KINDS[k], i) for k, i in best_orders[j]) for j in range(p))
    return StageOrder(f"zb-{memory_factor:g}p-optimal", ranks, p, m)


__all__ = ["stage_orders", "zb_optimal_order"]
