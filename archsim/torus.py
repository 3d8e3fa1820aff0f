"""Collectives on a torus of chips (a cluster file's ``[[servers]] torus``): which rings a group runs on and what its
collectives cost there, the switched fabric's :func:`archsim.collectives.collective_seconds` handing a torus link here.
Times in seconds, sizes in bytes, bandwidths bytes/s."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from archsim.collective_wire import wire_bytes
from archsim.errors import InputError

if TYPE_CHECKING:
    from archsim.collectives import LinkClass


def torus_rings(dims: Sequence[int], members: Iterable[int]) -> tuple[int, ...]:
    """The bidirectional rings a group of chips runs its collectives on in a torus of ``dims`` (chips per dimension;
    chip g at (g mod d₀, ⌊g / d₀⌋ mod d₁, …), the first dimension fastest, so consecutive chips fill it first):
    where the group is a whole set of dimensions — every chip whose coordinates outside the dimensions it spans are
    one fixed point, each spanned dimension whole — one ring per spanned dimension, its size, in the dimensions'
    order (the dimension-ordered algorithm); any other group of n > 1 chips (6 of a 4 × 4 × 4, 2 of a 4-chip
    dimension) one ring of n embedded in the torus, ``(n,)``; a lone chip ``()``. Each ring runs over two of a
    chip's links, one each way: a whole dimension's wrap-around ring (a dimension of 2: both links join the pair),
    an embedded ring's edges routed through other chips where its chips are not neighbours, assumed uncontended."""
    group = sorted(set(members))
    dims = tuple(int(d) for d in dims)
    volume = math.prod(dims)
    if any(not 0 <= g < volume for g in group):
        raise InputError(f"chips {group} are not all in a torus of {' x '.join(map(str, dims))}", field="torus")
    if len(group) < 2:
        return ()
    coords = [tuple(g // math.prod(dims[:i]) % d for i, d in enumerate(dims)) for g in group]
    spanned = tuple(i for i in range(len(dims)) if len({c[i] for c in coords}) > 1)
    whole = math.prod(dims[i] for i in spanned) == len(group) and all(
        len({c[i] for c in coords}) == dims[i] for i in spanned)
    return tuple(dims[i] for i in spanned) if whole else (len(group),)


def group_rings(n: int, link: LinkClass) -> tuple[int, ...]:
    """The rings a collective over ``n`` chips of ``link``'s torus runs on, one after another: the torus's own where
    the group is all of it, else one embedded ring of ``n`` (a caller's sub-group)."""
    return link.torus if math.prod(link.torus) == n else (n,)


def torus_seconds(kind: str, s: np.ndarray, n: int, link: LinkClass):
    """A collective over ``n`` chips on bidirectional rings of a torus (``link.torus``, :func:`torus_rings`), each ring
    at B = 2 · ``link.bus_bandwidth`` (two links of a chip, one each way: half its bytes on each), bytes/s. The
    dimension-ordered algorithm (Ying et al. 2018's 2-D torus all-reduce on a TPU pod, one dimension's rings after
    another's, on any number of dimensions: TPU v4's 3D torus, Jouppi et al., ISCA 2023; each ring Patarasuk &
    Yuan 2009's): an all-reduce is a reduce-scatter along each ring in turn, the buffer shrinking by each ring's size,
    then the all-gathers in reverse: ring i of size kᵢ on Sᵢ = S / (k₀ ⋯ kᵢ₋₁) bytes costs 2(kᵢ − 1)·α +
    2(kᵢ − 1)/kᵢ · Sᵢ / B, summing to 2(n − 1)/n · S / B on the wire whatever the rings (one ring of B's bandwidth),
    in Σ 2(kᵢ − 1) steps, not 2(n − 1); an all-gather or reduce-scatter half of that. An all-to-all reshuffles the
    whole buffer along each ring in turn, each chip's S/kᵢ for each peer on shortest paths: a link carries
    S/kᵢ · ⌊kᵢ²/4⌋/2 each way, so ring i costs (kᵢ − 1)·α + S·⌊kᵢ²/4⌋ / (kᵢ·B). A point-to-point send runs on one
    link, :meth:`~archsim.collectives.LinkClass.send_seconds`. The launch α₀ and copy cost γ as the switched ring's; no tree and no switch reduction (the torus has no
    switch). A group whose ``n`` is not the rings' (a caller's sub-group) runs one embedded ring of ``n``."""
    bw = 2 * link.bus_bandwidth
    if kind == "p2p":
        return link.send_seconds(s)
    if n <= 1:
        return np.zeros_like(s)
    rings = group_rings(n, link)
    alpha, total = link.alpha_s, np.zeros_like(s)
    if kind == "all-to-all":
        for k in rings:
            total = total + (k - 1) * alpha + wire_bytes(kind, "torus-ring", s, k) / bw
        return link.launch_s + total
    held = 1  # the chips the buffer has been split over so far
    for k in rings:
        total = total + (k - 1) * alpha + wire_bytes("reduce-scatter", "torus-ring", s, k) / held / bw
        held *= k
    if kind == "all-reduce":
        return link.launch_s + link.copy_s_per_byte * s + 2 * total
    return link.launch_s + link.copy_s_per_byte * s / 2 + total


__all__ = ["group_rings", "torus_rings", "torus_seconds"]
