"""Collectives on the cluster model, written once: every planner and schedule that synchronizes
gradients prices it here.

Times are in the unit the bandwidth's "per" names (bytes per second → seconds, bytes per cycle →
cycles); sizes in bytes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def ring_allreduce_time(size: float, workers: int, bandwidth: float, latency: float = 0.0) -> float:
    """A ring all-reduce of ``size`` bytes over ``workers`` devices: 2(k − 1) steps, each moving
    size/k bytes over one link of ``bandwidth`` and paying ``latency`` (reduce-scatter, then
    all-gather; Patarasuk & Yuan 2009). One worker: nothing to reduce."""
    if workers <= 1:
        return 0.0
    return 2 * (workers - 1) * size / (workers * bandwidth) + 2 * (workers - 1) * latency


def slowest_link(bandwidth: np.ndarray, devices: Sequence[int], others: Sequence[int] | None = None) -> float:
    """The least bandwidth between two distinct devices of ``devices`` (or between ``devices`` and
    ``others``): what a ring or a split channel over them runs at."""
    if others is None:
        return min(bandwidth[u, v] for u in devices for v in devices if u != v)
    return min(bandwidth[u, v] for u in devices for v in others)


def ring_allreduce_on(size: float, devices: Sequence[int], bandwidth: np.ndarray) -> float:
    """:func:`ring_allreduce_time` over ``devices`` of a cluster at its slowest link among them."""
    if len(devices) <= 1:
        return 0.0
    return ring_allreduce_time(size, len(devices), slowest_link(bandwidth, devices))


__all__ = ["ring_allreduce_on", "ring_allreduce_time", "slowest_link"]
