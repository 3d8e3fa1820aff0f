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
from archsim.policies.actions import Action, StageOrder

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


def count_stage_orders(m: int, mb: float, mw: float, limit: float, cap: int | None = None) -> int:
    """How many orders :func:`stage_orders` would list, counted without listing them (``cap`` + 1 as
    soon as the count is known to pass ``cap``: every partial order extends to a whole one, so the
    partial orders of a step never outnumber the whole ones, nor the lattice states the partial ones).

    A dynamic program over the (F done, I done, W done) lattice, O(m³) time and memory: the exact
    search's size is known (and refused) before one order is built. 2·(3m)!/(m!(m+1)!(m+2)!) with no
    memory limit (the standard Young tableaux of a 3 × m grid: 5, 42, 462 … for m = 2, 3, 4).
    """
    delta = (mb, -(mb - mw), -mw)
    paths = {(0, 0, 0): 1}
    for _ in range(3 * m):  # every step adds one action: a wavefront over the lattice
        following: dict[tuple[int, int, int], int] = {}
        for (f, i, w), count in paths.items():
            held = f * delta[0] + i * delta[1] + w * delta[2]
            for kind, done in enumerate((f, i, w)):
                if done < m and (kind == 0 or (f, i, w)[kind - 1] > done) and held + delta[kind] <= limit + 1e-9:
                    state = (f + (kind == 0), i + (kind == 1), w + (kind == 2))
                    following[state] = following.get(state, 0) + count
        paths = following
        if cap is not None and sum(paths.values()) > cap:
            return cap + 1
    return paths.get((m, m, m), 0)


def search_size(activation, weight_memory, microbatches: int, memory_factor: float, cap: int | None = None) -> int:
    """Combinations of per-stage orders the exact search would try (the product of each stage's count;
    ``cap`` + 1 once it is known to pass ``cap``)."""
    p = len(activation)
    size = 1
    for j in range(p):
        count = count_stage_orders(microbatches, activation[j], weight_memory[j], memory_factor * p * activation[j],
                                   cap)
        size *= count
        if count == 0:
            return 0
        if cap is not None and size > cap:
            size = cap + 1
    return size


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
    size = search_size(activation, weight_memory, m, memory_factor, limit)  # counted before any order is built
    if size > limit:
        raise InputError(f"more than {limit:,} combinations of stage orders (the exact search's limit); use "
                         "zb-1p/zb-2p's heuristic", field="microbatches")
    if size == 0:
        raise InputError(f"no order fits a memory limit of {memory_factor:g}·p·M_B", field="memory")
    choices = [stage_orders(m, activation[j], weight_memory[j], memory_factor * p * activation[j]) for j in range(p)]
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


__all__ = ["count_stage_orders", "search_size", "stage_orders", "zb_optimal_order"]
