"""Bytes one GPU sends on its links for one collective, for link energy (:mod:`archsim.training.link_energy`): the
wire bytes (:func:`archsim.collective_wire.wire_bytes`, the rule the time formulas read too) of the algorithm
:func:`~archsim.collectives.collective_algorithm` picks — a ring, tree or NVLS all-reduce, a ring all-gather or
reduce-scatter, a pairwise all-to-all, a send.

On a torus (:func:`~archsim.torus.torus_seconds`) the dimension-ordered rings send, summed, what one ring of the
group's n chips would (an all-reduce's 2(n − 1)/n · S), and an all-to-all each ring's S · ⌊k²/4⌋/k (the bytes a
chip forwards for others on the shortest paths included: its links carry them).

A group over servers (:class:`~archsim.collectives.Spanning`) sends the same bytes, on NVLink and the NICs together.
"""

from __future__ import annotations

from archsim.collective_wire import wire_bytes
from archsim.collectives import KINDS, LinkClass, Spanning, collective_algorithm
from archsim.errors import InputError
from archsim.torus import group_rings


def sent_bytes(kind: str, nbytes: float, n: int, link: LinkClass | Spanning) -> float:
    """Bytes each of ``n`` GPUs sends on its links for one ``kind`` collective of ``nbytes`` on ``link`` (module
    docstring); 0 when n = 1 (except p2p, which always sends its bytes)."""
    if kind not in KINDS:
        raise InputError(f"unknown collective {kind!r}; choose {', '.join(KINDS)}", field="collective")
    s = float(nbytes)
    algorithm = collective_algorithm(kind, s, n, link)
    if algorithm == "torus-ring" and kind == "all-to-all":
        assert isinstance(link, LinkClass)  # only a LinkClass is ever a torus
        return sum(wire_bytes(kind, algorithm, s, k) for k in group_rings(n, link))
    return wire_bytes(kind, algorithm, s, n)


__all__ = ["sent_bytes"]
