"""Micro-batches forward and not yet backward on each pipeline rank under a published schedule, in closed form
where one is written — the one count behind the search's memory (:mod:`archsim.training.search_space`) and train's
memory of plain 1F1B without an order (:func:`archsim.training.pipeline_memory.memories`). Apart from both so that
each imports it: the search's module imports the pipeline memory's. The closed forms equal
:func:`archsim.training.held_memory.in_flight` of the published orders (checked by brute force in the tests)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from archsim.policies.stage_orders import megatron_group, published_order
from archsim.training.held_memory import SPLIT_SCHEDULES, in_flight, published_held_peaks
from archsim.training.parallel import V_SCHEDULES


def in_flight_peaks(schedule: str, p: int, m: int, v: int = 1, held: float | Sequence[float] = 0.0) -> list[float]:
    """Per rank r: the most micro-batch chunks forward and not yet backward at once — the published
    orders' warm-ups (1F1B: p − r; GPipe: all m; ZB-H1/H2: k(p − 1 − r) + 1; interleaved 1F1B
    (Megatron-LM's, groups of N micro-batches: :func:`~archsim.policies.stage_orders.megatron_group`, p where p
    divides m): (v − 1)N + 2(p − 1 − r) + 1; interleaved ZB: vp − r; looped BFS: all m·v),
    capped by the chunks there are. ``held``: M_W / M_B (:func:`~archsim.training.pipeline_memory.held_fraction`; one per
    rank: :func:`~archsim.training.pipeline_memory.rank_held_fractions`);
    above 0 a split schedule's peak is its order's walk in units of M_B, W's inputs held from I to W
    (:func:`~archsim.training.held_memory.published_held_peaks`), the closed forms being I-to-I counts."""
    if any(held if isinstance(held, Sequence) else [held]) and schedule in SPLIT_SCHEDULES:
        return published_held_peaks(schedule, p, m, v, held)
    if schedule == "gpipe":
        return [m] * p
    if schedule == "1f1b":
        return [min(p - r, m) for r in range(p)]
    if schedule in ("zb-h1", "zb-h2"):
        k = int(schedule[-1])
        return [min(k * (p - 1 - r), m) + 1 if k * (p - 1 - r) < m else m for r in range(p)]
    if schedule == "interleaved-1f1b":
        n = megatron_group(p, m)
        return [min((v - 1) * n + 2 * (p - 1 - r) + 1, m * v) for r in range(p)]
    if schedule == "interleaved-zb":  # one warm-up step per hop instead of two
        return [min(v * p - r, m * v) for r in range(p)]
    if schedule == "looped-bfs":  # every chunk's forwards before any backward
        return [m * v] * p
    if schedule in V_SCHEDULES:  # no closed form written: the order's own count, which stops growing by m = 2p
        return list(_v_in_flight(schedule, p, min(m, 3 * p)))
    raise ValueError(schedule)


@lru_cache(maxsize=256)
def _v_in_flight(schedule: str, p: int, m: int) -> tuple[int, ...]:
    return tuple(in_flight(published_order(schedule, p, m)))


__all__ = ["in_flight_peaks"]
