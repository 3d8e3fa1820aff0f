"""Bytes one GPU sends on its links for one collective: the wire terms of the algorithms
:mod:`archsim.collectives` prices (its module docstring), for link energy (:mod:`archsim.training.link_energy`).

For a buffer of S bytes over n GPUs, by the algorithm :func:`~archsim.collectives.collective_algorithm` picks:

* ring all-reduce 2(n − 1)/n · S; tree all-reduce 2 · S (the model's pipelined double binary tree, whose wire term
  is 2S/B); NVLS all-reduce (n + 1)/n · S (its buffer to the switch and its reduced shard back out);
* all-gather, reduce-scatter (S the gathered buffer) and all-to-all (n − 1)/n · S; a point-to-point send S;
* on a torus (:func:`~archsim.torus.torus_seconds`): the dimension-ordered rings' 2(n − 1)/n · S for an all-reduce,
  (n − 1)/n · S for an all-gather or a reduce-scatter, and for an all-to-all each ring's S · ⌊k²/4⌋/k (the
  bytes a chip forwards for others on the shortest paths included: its links carry them).

A group over servers (:class:`~archsim.collectives.Spanning`) sends the same bytes, on NVLink and the NICs together.
"""

from __future__ import annotations

from archsim.collectives import KINDS, LinkClass, Spanning, collective_algorithm
from archsim.errors import InputError
from archsim.torus import group_rings


def sent_bytes(kind: str, nbytes: float, n: int, link: LinkClass | Spanning) -> float:
    """Bytes each of ``n`` GPUs sends on its links for one ``kind`` collective of ``nbytes`` on ``link`` (module
    docstring); 0 when n = 1 (except p2p, which always sends its bytes)."""
    if kind not in KINDS:
        raise InputError(f"unknown collective {kind!r}; choose {', '.join(KINDS)}", field="collective")
    s = float(nbytes)
    if kind == "p2p":
        return s
    if n <= 1:
        return 0.0
    share = (n - 1) / n * s
    if isinstance(link, LinkClass) and link.torus:
        if kind == "all-to-all":
            return sum(s * (k * k // 4) / k for k in group_rings(n, link))
        return 2 * share if kind == "all-reduce" else share
    if kind != "all-reduce":
        return share
    algorithm = collective_algorithm(kind, s, n, link)
    return {"ring": 2 * share, "tree": 2 * s, "nvls": (n + 1) / n * s}[algorithm]


__all__ = ["sent_bytes"]
