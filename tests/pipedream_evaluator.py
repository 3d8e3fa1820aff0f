"""The time PipeDream's optimizer gives one fixed plan: its recurrence walked along the plan's own
splits, scalar and written from the released ``optimizer_graph_hierarchical.py`` independently of
archsim's vectorized solver. Validated by giving PipeDream's own recorded plans PipeDream's own
recorded times (tests/test_pipedream.py), then used to check that archsim's plans are optima.
"""

from __future__ import annotations

import math


def plan_time(states, levels, machines, bandwidths, ratio, memory_bytes=None):
    """levels: top level first, each a list of groups of (start, end, replicas) blocks, one group
    per block of the level above; machines/bandwidths: innermost level first. Returns the time per
    stage, or None when a stage breaks the memory constraint (memory_bytes not None)."""
    depth = len(machines)
    n = len(states.compute)

    def raw(a, b, values):
        return values[b - 1] - (values[a - 1] if a > 0 else 0.0)

    times = {}  # (level number from 1, start, end) → the level's pipeline time of that range
    for number in range(1, depth + 1):
        groups = levels[depth - number]
        within = machines[number - 2] if number > 1 else 1
        B, M = bandwidths[number - 1], machines[number - 1]
        for group in groups:
            def compute(a, b, number=number):
                if number == 1:
                    return raw(a, b, states.compute)
                return times[(number - 1, a, b)]

            (a, b, r), rest = group[0], group[1:]
            params, acts = raw(a, b, states.parameters), raw(a, b, states.activation)
            if memory_bytes is not None and math.ceil((M - r) / r) * (acts + params) > memory_bytes:
                return None
            time = (compute(a, b) + 4 * (r - 1) * params / (B * r) / within) / r
            used = r
            for a, b, r in rest:
                used += r
                params, acts = raw(a, b, states.parameters), raw(a, b, states.activation)
                if memory_bytes is not None and (acts + params) * math.ceil((M - used) / r) > memory_bytes:
                    return None
                stage = (compute(a, b) + 4 * (r - 1) * params / (B * r)) / r
                time = max(time, stage)
                if ratio is not None:
                    time = max(time, 2.0 * states.crossing[a - 1] / (B * r) / ratio)
                    if b - 1 < n - 1:
                        time = max(time, 2.0 * states.crossing[b - 1] / (B * r) / ratio)
            assert used == M, (number, group, M)
            times[(number, group[0][0], group[-1][1])] = time
    return times[(depth, 0, n)]
