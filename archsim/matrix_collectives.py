"""Collectives over a cluster's (V, V) bandwidth and latency matrices, as SPP's planners price them: a ring at the
slowest link among its devices (the paper's model), or, under ``plan --links exact``, on the link class
:class:`~archsim.collectives.PairLinks` names (train's :func:`~archsim.collectives.collective_seconds`). Bandwidths
in bytes per the matrix's time unit."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from archsim.collectives import PairLinks, collective_seconds
from archsim.ring_allreduce import ring_allreduce_time


def slowest_link(bandwidth: np.ndarray, devices: Sequence[int], others: Sequence[int] | None = None) -> float:
    """The least bandwidth between two distinct devices of ``devices`` (or between ``devices`` and
    ``others``): what a ring or a split channel over them runs at."""
    if others is None:
        return min(bandwidth[u, v] for u in devices for v in devices if u != v)
    return min(bandwidth[u, v] for u in devices for v in others)


def pair_latency(latency, devices: Sequence[int], others: Sequence[int]) -> float:
    """The largest latency between a device of ``devices`` and one of ``others`` (``latency``: a (V, V) matrix, or
    one figure for every pair; 0: none modelled): what a split channel's sends, all at once, wait for."""
    if np.ndim(latency) == 0:
        return float(latency)
    return max(float(latency[u, v]) for u in devices for v in others)


def channel_link(bandwidth: np.ndarray, devices: Sequence[int], others: Sequence[int],
                 links: PairLinks | None = None) -> float:
    """The bandwidth b (bytes per time unit) at which a channel's bytes d, split evenly over every pair of a device of
    ``devices`` and one of ``others`` all sending at once, take d / (r′·r·b): SPP's least bandwidth between the two
    (:func:`slowest_link`, each pair its own link, the paper's model) or, with ``links`` (``plan --links exact``),
    what the pairs that share one GPU's link or one NIC leave each other (:meth:`PairLinks.channel_bandwidth`)."""
    if links is None or links.sends_on is None:
        return slowest_link(bandwidth, devices, others)
    return links.channel_bandwidth(devices, others, bandwidth)


def ring_allreduce_on(size, devices: Sequence[int], bandwidth: np.ndarray, links: PairLinks | None = None):
    """:func:`ring_allreduce_time` over ``devices`` of a cluster at its slowest link among them (SPP's model).
    ``links`` (``plan --links exact``, :attr:`archsim.spp.topology.Topology.links`): the group's all-reduce then
    costs what train's :func:`collective_seconds` gives on the link :meth:`PairLinks.allreduce_link` names
    (launch, per-step latency, ring or tree), seconds. ``size`` may be an array (PRM's tables: every
    stage's parameter bytes at once)."""
    if len(devices) <= 1:
        return 0.0
    if links is None:
        return ring_allreduce_time(size, len(devices), slowest_link(bandwidth, devices))
    return collective_seconds("all-reduce", size, len(devices), links.allreduce_link(devices, bandwidth))


__all__ = ["channel_link", "pair_latency", "ring_allreduce_on", "slowest_link"]
