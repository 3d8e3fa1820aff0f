"""The textbook ring all-reduce (Patarasuk & Yuan 2009) the planners price gradient synchronization with: SPP's PRM
tables (:mod:`archsim.spp.prm`), the data-parallel policy and the per-pair matrix collectives. Seconds when the
bandwidth is bytes/s (cycles when bytes/cycle); sizes in bytes. GPU training's calibrated NCCL models are
:mod:`archsim.collectives`'."""

from __future__ import annotations

from typing import overload

import numpy as np

from archsim.collective_wire import ring_allreduce_bytes


@overload
def ring_allreduce_time(size: float, workers: int, bandwidth: float, latency: float = 0.0) -> float: ...
@overload
def ring_allreduce_time(size: np.ndarray, workers: int, bandwidth: float, latency: float = 0.0) -> np.ndarray: ...
@overload
def ring_allreduce_time(size: float, workers: np.ndarray, bandwidth: np.ndarray, latency: float = 0.0) -> np.ndarray: ...
def ring_allreduce_time(size, workers, bandwidth, latency=0.0):
    """A ring all-reduce of ``size`` bytes over ``workers`` devices: 2(k − 1) steps, each moving
    size/k bytes over one link of ``bandwidth`` and paying ``latency`` (reduce-scatter, then
    all-gather; Patarasuk & Yuan 2009): the bytes each device sends are the wire rule's
    (:func:`archsim.collective_wire.ring_allreduce_bytes`). One worker: nothing to reduce. ``workers`` and
    ``bandwidth`` may be arrays (SPP's PRM tables: every block size at once; entries of fewer than one worker
    are the caller's to mask)."""
    if np.ndim(workers) == 0 and workers <= 1:
        return 0.0
    return ring_allreduce_bytes(size, workers) / bandwidth + 2 * (workers - 1) * latency


__all__ = ["ring_allreduce_time"]
