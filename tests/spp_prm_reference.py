"""The reference for SPP's vectorized PRM: ``prm_tables`` as first written (numpy inside a Python
loop over every table cell), kept unchanged so the numba version can be tested equal to it plan for
plan. Imports the shared pieces from ``archsim.spp.prm``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from archsim.partition.profile import LayerProfile
from archsim.spp.prm import PRMPlan, boundary_bytes


def prm_tables(profile: LayerProfile, order: Sequence[int], bandwidth: np.ndarray, microbatches: int,
               max_stages: int) -> list[PRMPlan]:
    """PRM for every stage count 1..max_stages at once, vectorized with numpy (the same recurrence
    as :func:`prm`, tested equal). Tables W[ξ][l, r, i] over l ≤ L, r ≤ V, i ≤ V."""
    L, V = len(profile), len(order)
    b = bandwidth[np.ix_(order, order)]
    inf = np.inf
    work = np.concatenate([[0.0], np.cumsum(np.add(profile.forward, profile.backward))])
    params = np.concatenate([[0.0], np.cumsum(np.asarray(profile.weight_bytes, dtype=float))])
    size = boundary_bytes(profile)
    # slowest link inside the block of r devices ending at position i (1-based i), and between the
    # block of r' ending at i − r and the block of r ending at i.
    inside = np.full((V + 1, V + 1), inf)
    for i in range(1, V + 1):
        for r in range(1, i + 1):
            block = b[i - r:i, i - r:i]
            inside[r, i] = inf if r == 1 else block[~np.eye(r, dtype=bool)].min()
    between = np.full((V + 1, V + 1, V + 1), inf)  # [r', r, i]
    for i in range(1, V + 1):
        for r in range(1, i):
            for rp in range(1, i - r + 1):
                between[rp, r, i] = b[i - r - rp:i - r, i - r:i].min()
    r_idx = np.arange(V + 1)
    # tail[l', l, r, i]: M Σ p / r + A for layers l'..l−1 on the r devices ending at i.
    seg_work = work[None, :] - work[:, None]  # [l', l]
    seg_par = params[None, :] - params[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        allreduce = np.where(r_idx[:, None] > 1, 2 * (r_idx[:, None] - 1) / np.maximum(r_idx[:, None], 1)
                             / inside, 0.0)  # [r, i] per parameter byte
        compute = microbatches / np.maximum(r_idx, 1)  # [r]
    plans: list[PRMPlan] = []
    W = np.full((L + 1, V + 1, V + 1), inf)  # ξ = 1
    choice: list[np.ndarray] = []
    for l in range(1, L + 1):
        for r in range(1, V + 1):
            W[l, r, r] = compute[r] * work[l] + allreduce[r, r] * params[l]
    tables = [W]
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
                        comm = microbatches * size[lp - 1][:, None] / (rp[None, :] * r * between[rp, r, i][None, :])
                    value = np.maximum(np.maximum(head, comm), tail[:, None])
                    k = np.unravel_index(np.argmin(value), value.shape)
                    new[l, r, i] = value[k]
                    pick[l, r, i] = (lp[k[0]], rp[k[1]])
        tables.append(new)
        choice.append(pick)
    for xi in range(1, max_stages + 1):
        final = tables[xi - 1][L, :, V]
        r = int(np.argmin(final))
        value = float(final[r])
        if not np.isfinite(value):
            continue
        stages, reps, l, i = [], [], L, V
        for level in range(xi, 1, -1):
            lp, rp = (int(x) for x in choice[level - 2][l, r, i])
            stages.append((lp, l))
            reps.append(r)
            l, i, r = lp, i - r, rp
        stages.append((0, l))
        reps.append(r)
        stages.reverse()
        reps.reverse()
        devices, position = [], 0
        for rr in reps:
            devices.append(tuple(order[position:position + rr]))
            position += rr
        plans.append(PRMPlan(value, tuple(stages), tuple(reps), tuple(devices)))
    return plans
