"""Difference constraints with extra delay variables — the solver behind :func:`archsim.dfg.pipeline`.

Each constraint belongs to an edge u → v of a graph on nodes 0..n−1 and reads

    w(e) + scale·k[var(e)] + r(v) − r(u) ≥ req(e),      r integer, k ≥ 0 integer,

where r is a retiming and k are delays that may be *inserted* on some edges (DLMS delayed
gradients). Without k this is a textbook system of difference constraints (feasible iff the
constraint graph has no negative cycle). The k couple it only through Σ k, so:

1. :func:`min_inserted` minimizes Σ k as a small integer program (HiGHS via ``scipy.optimize.milp``);
2. :func:`asap_retiming` then fixes k and finds the pointwise-smallest r with r(source) = 0 by
   Bellman–Ford shortest paths: r(v) = −dist(source, v) with edge weights w + scale·k − req
   (every node as early as possible: the fewest delays between the source and any node).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Constraint:
    src: int
    dst: int
    delays: int  # w(e)
    required: int  # req(e)
    var: int | None = None  # index into k of the delays that may be inserted here


class Infeasible(Exception):
    """No (r, k) satisfies the constraints: a loop needs delays and has no edge to insert them on."""


def min_inserted(n: int, constraints: Sequence[Constraint], variables: int, scale: int, source: int) -> list[int]:
    """The k of least Σ k for which some integer r satisfies every constraint."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import lil_matrix

    if variables == 0:
        asap_retiming(n, constraints, [], scale, source)  # raises Infeasible if needed
        return []
    matrix = lil_matrix((len(constraints), n + variables))
    lower = np.empty(len(constraints))
    for row, c in enumerate(constraints):
        matrix[row, c.dst] += 1
        matrix[row, c.src] -= 1
        if c.var is not None:
            matrix[row, n + c.var] += scale
        lower[row] = c.required - c.delays
    cost = np.concatenate([np.zeros(n), np.ones(variables)])
    low = np.concatenate([np.full(n, -np.inf), np.zeros(variables)])
    high = np.full(n + variables, np.inf)
    low[source] = high[source] = 0.0  # r is defined up to a constant
    result = milp(cost, constraints=LinearConstraint(matrix.tocsr(), lower, np.inf), integrality=np.ones(n + variables),
                  bounds=Bounds(low, high))
    if result.status == 2:
        raise Infeasible("no retiming satisfies the constraints, whatever delays are inserted")
    if not result.success:  # pragma: no cover - HiGHS failing on a tiny integer program is a bug
        raise RuntimeError(f"MILP solver failed: {result.message}")
    return [round(float(x)) for x in result.x[n:]]


def asap_retiming(n: int, constraints: Sequence[Constraint], k: Sequence[int], scale: int, source: int) -> list[int]:
    """The pointwise-smallest integer r with r(source) = 0 satisfying every constraint for these k."""
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(range(n))
    for c in constraints:
        slack = c.delays + (scale * k[c.var] if c.var is not None else 0) - c.required
        if c.src == c.dst:
            if slack < 0:
                raise Infeasible(f"the self-loop on node {c.src} lacks {-slack} delays")
            continue
        if not graph.has_edge(c.src, c.dst) or slack < graph[c.src][c.dst]["weight"]:
            graph.add_edge(c.src, c.dst, weight=slack)
    try:
        dist = nx.single_source_bellman_ford_path_length(graph, source, weight="weight")
    except nx.NetworkXUnbounded as error:
        raise Infeasible("a loop lacks delays (negative cycle in the constraint graph)") from error
    missing = [v for v in range(n) if v not in dist]
    if missing:
        raise Infeasible(f"nodes {missing[:3]} are not reachable from the source; their lag is undetermined")
    return [-int(dist[v]) for v in range(n)]
