"""The exact optimum makespan of a small problem with integer durations (no links, one stream).

A time-indexed MILP solved by HiGHS (scipy.optimize.milp): x[j, t] = 1 when op j starts at t;
each op starts once, each processor runs at most one op per unit of time, and every dependency
u → v has start(v) ≥ start(u) + duration(u). Used by tests to decide whether a greedy schedule
is optimal; the horizon (an upper bound, e.g. the greedy makespan) bounds the model's size.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import lil_matrix

from archsim.errors import InputError
from archsim.sim.problem import Problem


def optimal_makespan(problem: Problem, horizon: int, *, time_limit: float = 60.0) -> int | None:
    """Least makespan ≤ ``horizon`` (None when the solver proves none exists or times out)."""
    if problem.links or any(p.streams != 1 for p in problem.processors):
        raise InputError("the exact solver handles one stream per processor and no links", field="problem")
    ops = problem.ops
    durations = [int(round(op.duration)) for op in ops]
    if any(abs(d - op.duration) > 1e-9 for d, op in zip(durations, ops)):
        raise InputError("the exact solver needs integer durations", field="duration")
    index = {op.id: j for j, op in enumerate(ops)}
    starts = [range(horizon - d + 1) for d in durations]
    column: dict[tuple[int, int], int] = {}  # (op, start time) → its variable
    for j, times in enumerate(starts):
        for t in times:
            column[(j, t)] = len(column)
    cmax = len(column)  # the makespan variable
    n = cmax + 1
    rows: list[tuple[dict[int, float], float, float]] = []
    for j, times in enumerate(starts):  # start exactly once
        rows.append(({column[(j, t)]: 1.0 for t in times}, 1.0, 1.0))
    by_processor: dict[str, list[int]] = {}
    for j, op in enumerate(ops):
        by_processor.setdefault(op.processor, []).append(j)
    for members in by_processor.values():  # one op at a time per processor
        for time in range(horizon):
            busy = {column[(j, t)]: 1.0 for j in members if durations[j] > 0
                    for t in range(max(0, time - durations[j] + 1), time + 1) if (j, t) in column}
            if len(busy) > 1:
                rows.append((busy, -np.inf, 1.0))
    for dep in problem.deps:  # start(v) - start(u) >= duration(u)
        u, v = index[dep.src], index[dep.dst]
        row: dict[int, float] = {}
        for t in starts[v]:
            row[column[(v, t)]] = row.get(column[(v, t)], 0.0) + t
        for t in starts[u]:
            row[column[(u, t)]] = row.get(column[(u, t)], 0.0) - t
        rows.append((row, float(durations[u]), np.inf))
    for j, times in enumerate(starts):  # makespan >= end of every op
        row = {column[(j, t)]: float(t + durations[j]) for t in times}
        row[cmax] = -1.0
        rows.append((row, -np.inf, 0.0))
    matrix = lil_matrix((len(rows), n))
    lower, upper = np.empty(len(rows)), np.empty(len(rows))
    for r, (row, lo, hi) in enumerate(rows):
        for c, value in row.items():
            matrix[r, c] = value
        lower[r], upper[r] = lo, hi
    cost = np.zeros(n)
    cost[cmax] = 1.0
    integrality = np.ones(n)
    integrality[cmax] = 0
    result = milp(cost, constraints=LinearConstraint(matrix.tocsr(), lower, upper), integrality=integrality,
                  bounds=Bounds(np.zeros(n), np.r_[np.ones(cmax), horizon]), options={"time_limit": time_limit})
    if result.status != 0 or result.x is None:
        return None
    return int(round(result.x[cmax]))
