"""SPP's ``exact`` objective (``plan --objective exact``): PRM's search as the paper runs it, then, for each stage
count, PE schedules every plan the tables hold that could beat PRM's pick, not only the best by 𝒲 (§IV-B ranks a
stage count's partitions by 𝒲 and schedules only the best, which PE may run slower than another).

A stage count ξ's candidates: every last stage (layers l′..L−1 on the last r devices) after every previous block of
r′ devices, the first l′ layers in ξ − 1 stages being the tables' best for them, W[ξ−1][l′, r′, V − r] — at most
L·V² plans, PRM's own first, each 𝒲 = max(head, channel, tail) read off the tables as the kernel computes it. PE's
makespan is never below 𝒲 (a stage runs its M forwards and backwards one at a time, then its all-reduce; a channel
carries its M forward and backward sends one at a time), so the candidates are scheduled in rising 𝒲 and the first
whose 𝒲 reaches the best makespan found ends the stage count: the plan PE runs fastest among them, exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

from archsim.spp.pe_order import StagePlan
from archsim.spp.prm import PRMPlan, plan_at


def candidate_values(tables: Sequence[np.ndarray], inputs: tuple, xi: int, microbatches: int,
                     most: int) -> np.ndarray:
    """values[r, l′, r′]: 𝒲 of ξ ≥ 2 stages whose last holds layers l′..L−1 on the last r devices after a block of
    r′, its first ξ − 1 stages the tables' best; inf where no such plan is (the kernel's arithmetic, term by term)."""
    _, compute, seg_work, seg_par, allreduce, size, between, sends, lag, group, exact = inputs
    L, V = tables[0].shape[0] - 1, tables[0].shape[1] - 1
    r = np.arange(V + 1)[:, None, None]
    lp = np.arange(L + 1)[None, :, None]
    rp = np.arange(V + 1)[None, None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        tail = (compute[:, None] * seg_work[None, :, L] + allreduce[:, V, None] * seg_par[None, :, L]
                + exact[group[:, V], :, L])[:, :, None]  # [r, l′]
        head = np.transpose(tables[xi - 2][:, :, V - np.arange(V + 1)], (2, 0, 1))  # [r, l′, r′]
        at = np.maximum(lp - 1, 0)
        comm = microbatches * size[at] / (rp * r * np.transpose(between[:, :, V])[:, None, :]) \
            + microbatches * sends[at] * np.transpose(lag[:, :, V])[:, None, :]
        values = np.maximum(np.maximum(head, comm), tail)
    valid = (r >= 1) & (r <= most) & (lp >= 1) & (lp < L) & (rp >= 1) & (rp <= np.minimum(V - r, most))
    return np.where(valid & ~np.isnan(values), values, np.inf)


def candidates(tables: Sequence[np.ndarray], choice: Sequence[np.ndarray], inputs: tuple, order: Sequence[int],
               xi: int, microbatches: int, most: int) -> Iterator[PRMPlan]:
    """ξ stages' candidates in rising 𝒲, ties in PRM's own order (r, then l′, then r′: its pick comes first),
    each read back only when asked for."""
    L, V = tables[0].shape[0] - 1, len(order)
    if xi == 1:
        final = tables[0][L, :, V]
        if np.isfinite(final[V]):
            yield plan_at(choice, order, 1, L, V, V, float(final[V]))
        return
    values = candidate_values(tables, inputs, xi, microbatches, most)
    flat = values.ravel()
    for at in np.argsort(flat, kind="stable"):
        if not np.isfinite(flat[at]):
            return
        r, lp, rp = (int(x) for x in np.unravel_index(at, values.shape))
        head = plan_at(choice, order, xi - 1, lp, rp, V - r, float(tables[xi - 2][lp, rp, V - r]))
        yield PRMPlan(float(flat[at]), (*head.stages, (lp, L)), (*head.replicas, r),
                      (*head.devices, tuple(order[V - r:])))


def pipeline_bound(stages: Sequence[StagePlan], microbatches: int) -> float:
    """A makespan PE never undercuts (seconds, or the plan's unit): stage n cannot start before the first micro-batch's
    forwards and sends before it, runs its M forwards and backwards one at a time, and after its last backward that
    micro-batch still goes back through the stages before it while n's all-reduce runs."""
    bound, before, after = 0.0, 0.0, 0.0
    for stage in stages:
        bound = max(bound, before + microbatches * (stage.forward + stage.backward) + max(stage.allreduce, after))
        before += stage.forward + stage.comm_forward
        after += stage.backward + stage.comm_backward
    return bound


def fastest(plans: Iterator[PRMPlan], schedule: Callable[[PRMPlan], float],
            bound: Callable[[PRMPlan], float] | None = None) -> tuple[PRMPlan, float] | None:
    """The plan of ``plans`` (in rising 𝒲) ``schedule`` (PE's makespan, never below 𝒲 nor ``bound``) runs fastest,
    the first of equals; the plans whose 𝒲 reaches the best makespan are never scheduled, nor those whose ``bound``
    is above it. None if there is no plan."""
    best: tuple[PRMPlan, float] | None = None
    for plan in plans:
        if best is not None and plan.value >= best[1]:
            break
        if best is not None and bound is not None and bound(plan) > best[1] * (1 + 1e-9):
            continue
        makespan = schedule(plan)
        if best is None or makespan < best[1]:
            best = (plan, makespan)
    return best
