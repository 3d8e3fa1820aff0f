"""Collectives on the cluster model, written once: every planner and schedule that synchronizes
gradients prices it here.

Times are in the unit the bandwidth's "per" names (bytes per second → seconds, bytes per cycle →
cycles); sizes in bytes.

Calibrated link classes (GPU training)
--------------------------------------

Collectives on a link class: α–β ring and tree models (Thakur et al. 2005; NCCL's algorithms).

A link class is what a GPU reaches its group peers over: NVLink inside a server (an NVSwitch
makes every pair a full-bandwidth path, so a ring over any n GPUs of a server runs at one GPU's
NVLink bandwidth), or the inter-server network (each GPU's own InfiniBand NIC with
``inter_server_link = "per_gpu_pair"``). Bandwidths are per direction, bytes/s.

For a buffer of S bytes over n GPUs, with per-step latency α, fixed launch latency α₀, link
bandwidth B and the fraction η of it NCCL's ring reaches (protocol, copy engine and SM limits):

* ring all-reduce (reduce-scatter + all-gather): α₀ + 2(n − 1)·α + γ·S + 2(n − 1)/n · S / (η·B)
* ring all-gather or reduce-scatter (S the gathered buffer): α₀ + (n − 1)·α + γ·S/2 + (n − 1)/n · S / (η·B)
* tree all-reduce (double binary tree, pipelined): α₀ + 2⌈log₂ n⌉·α + γ·S + 2·S / (η·B);
  NCCL picks whichever is faster, so :func:`collective_seconds` takes the minimum
* point-to-point send (a pipeline hop): α₀ + S / (η·B)

γ (seconds per byte, whatever n) is the cost the GPUs' own copy-and-reduce kernels add beside the
wire: on an NVSwitch node the large-message all-reduce time of n GPUs is γ·S + 2(n − 1)/n · S/B with
B within a few percent of NVLink's datasheet rate, which a plain α–β ring (bus bandwidth constant
in n) cannot fit — nccl-tests' bus bandwidth rises from 197 GB/s on 2 A100s to 229 GB/s on 8.
η, α, α₀ and γ are calibrated on nccl-tests tables (:mod:`archsim.training.nccl_fit`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np

from archsim.errors import InputError


@overload
def ring_allreduce_time(size: float, workers: int, bandwidth: float, latency: float = 0.0) -> float: ...
@overload
def ring_allreduce_time(size: np.ndarray, workers: int, bandwidth: float, latency: float = 0.0) -> np.ndarray: ...
def ring_allreduce_time(size, workers, bandwidth, latency=0.0):
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


KINDS = ("all-reduce", "all-gather", "reduce-scatter", "p2p")


@dataclass(frozen=True)
class LinkClass:
    """name; bandwidth: bytes/s per direction per GPU; efficiency η; alpha_s: latency per ring step;
    launch_s: fixed latency α₀ of one collective (seconds); copy_s_per_byte: γ (see the module docstring)."""

    name: str
    bandwidth: float
    efficiency: float
    alpha_s: float
    launch_s: float
    copy_s_per_byte: float = 0.0

    def __post_init__(self) -> None:
        if not (self.bandwidth > 0 and 0 < self.efficiency <= 1 and self.alpha_s >= 0 and self.launch_s >= 0
                and self.copy_s_per_byte >= 0):
            raise InputError(f"bad link class {self}", field="link")

    @property
    def bus_bandwidth(self) -> float:
        """η·B: the large-message bus bandwidth nccl-tests would report (bytes/s)."""
        return self.efficiency * self.bandwidth


def collective_seconds(kind: str, nbytes, n: int, link: LinkClass):
    """Seconds of one collective of ``nbytes`` (array or scalar) over ``n`` GPUs on ``link``; 0 when n = 1
    (except p2p, which always moves its bytes)."""
    if kind not in KINDS:
        raise InputError(f"unknown collective {kind!r}; choose {', '.join(KINDS)}", field="collective")
    s = np.asarray(nbytes, dtype=np.float64)
    bw = link.bus_bandwidth
    if kind == "p2p":
        return link.launch_s + s / bw
    if n <= 1:
        return np.zeros_like(s)
    share = (n - 1) / n * s / bw
    copy = link.copy_s_per_byte * s
    if kind == "all-reduce":
        ring = link.launch_s + copy + ring_allreduce_time(s, n, bw, link.alpha_s)
        tree = link.launch_s + 2 * math.ceil(math.log2(n)) * link.alpha_s + copy + 2 * s / bw
        return np.minimum(ring, tree)
    return link.launch_s + (n - 1) * link.alpha_s + copy / 2 + share


__all__ = ["KINDS", "LinkClass", "collective_seconds", "ring_allreduce_on", "ring_allreduce_time", "slowest_link"]
