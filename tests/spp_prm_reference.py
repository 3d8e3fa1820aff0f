"""The reference for SPP's vectorized PRM: ``prm_tables`` as first written (numpy inside a Python
loop over every table cell), kept unchanged so the numba version can be tested equal to it plan for
plan. Only the levels ξ ≥ 2 (the numba kernel's part) are its own: the inputs every level reads,
the first level and the reading back of plans come from ``archsim.spp.prm`` (``prm_inputs``,
``prm_plans``) and are not what this reference checks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from archsim.partition.profile import LayerProfile
from archsim.spp.prm import PRMPlan, prm_inputs, prm_plans


def prm_tables(profile: LayerProfile, order: Sequence[int], bandwidth: np.ndarray, microbatches: int,
               max_stages: int, latency=0.0) -> list[PRMPlan]:
    """PRM for every stage count 1..max_stages at once, vectorized with numpy (the same recurrence
    as :func:`prm`, tested equal). Tables W[ξ][l, r, i] over l ≤ L, r ≤ V, i ≤ V."""
    L, V = len(profile), len(order)
    inf = np.inf
    # the paper's price only: the exact links' group and all-reduce tables (the last two) are not read here
    W, compute, seg_work, seg_par, allreduce, size, between, sends, lag, _group, _exact = prm_inputs(
        profile, order, bandwidth, microbatches, latency)
    tables, choice = [W], []
    for _xi in range(2, max_stages + 1):
        prev = tables[-1]
        new = np.full_like(prev, inf)
        pick = np.zeros((L + 1, V + 1, V + 1, 2), dtype=np.int64)
        for l in range(1, L + 1):
            for r in range(1, V + 1):
                for i in range(r + 1, V + 1):
                    lp = np.arange(1, l)  # l' in 1..l−1
                    if lp.size == 0:
                        continue
                    tail = compute[r] * seg_work[lp, l] + allreduce[r, i] * seg_par[lp, l]
                    rp = np.arange(1, i - r + 1)
                    head = prev[lp[:, None], rp[None, :], i - r]
                    with np.errstate(divide="ignore", invalid="ignore"):
                        comm = microbatches * size[lp - 1][:, None] / (rp[None, :] * r * between[rp, r, i][None, :]) \
                            + microbatches * sends[lp - 1][:, None] * lag[rp, r, i][None, :]
                    value = np.maximum(np.maximum(head, comm), tail[:, None])
                    k = np.unravel_index(np.argmin(value), value.shape)
                    new[l, r, i] = value[k]
                    pick[l, r, i] = (lp[k[0]], rp[k[1]])
        tables.append(new)
        choice.append(pick)
    return prm_plans(tables, choice, order)
