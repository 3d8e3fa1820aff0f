"""The bytes each GPU puts on its links for one collective, by the algorithm that runs it: written once, read by the
time formulas (:func:`archsim.collectives.collective_seconds`, :func:`archsim.torus.torus_seconds`: latency terms
plus these bytes over the bandwidth) and by link energy (:func:`archsim.collective_bytes.sent_bytes`).

For a buffer of S bytes over n GPUs (sizes in bytes; n a count):

* ``ring`` all-reduce (reduce-scatter, then all-gather) 2(n − 1)/n · S; ``ring`` all-gather or reduce-scatter (S the
  gathered buffer) (n − 1)/n · S: n − 1 steps of S/n each way round;
* ``tree`` all-reduce 2 · S (NCCL's pipelined double binary tree: each GPU sends its buffer up and down);
* ``nvls`` all-reduce (n + 1)/n · S (the switch reduces: each GPU's buffer to the switch, its reduced shard back);
* ``pairwise`` all-to-all (n − 1)/n · S: S/n to each of its n − 1 peers (:func:`to_peers`);
* ``p2p`` send S; ``none`` (n = 1) 0;
* ``torus-ring``, one bidirectional ring of n chips of a torus (:mod:`archsim.torus`): an all-reduce, all-gather or
  reduce-scatter as ``ring`` (half the bytes each way round), an all-to-all S · ⌊n²/4⌋/n — each chip's S/n for each
  peer on shortest paths, the bytes it forwards for others included: its links carry them. The dimension-ordered
  rings of a torus send, summed, what one ring of all their chips would: 2(n − 1)/n · S for an all-reduce.
"""

from __future__ import annotations

from archsim.errors import InputError

# algorithm → the collectives it runs (collective_algorithm's names, and a torus's rings)
RUNS = {
    "ring": ("all-reduce", "all-gather", "reduce-scatter"),
    "tree": ("all-reduce",),
    "nvls": ("all-reduce",),
    "pairwise": ("all-to-all",),
    "p2p": ("p2p",),
    "torus-ring": ("all-reduce", "all-gather", "reduce-scatter", "all-to-all"),
    "none": ("all-reduce", "all-gather", "reduce-scatter", "all-to-all"),
}


def to_peers(nbytes, n: int, peers: int):
    """Bytes an all-to-all of ``nbytes`` over ``n`` GPUs sends to ``peers`` of its peers: S/n to each (array or
    scalar). A group over servers splits the n − 1 peers between NVLink and the network."""
    return peers / n * nbytes


def ring_allreduce_bytes(nbytes, n):
    """Bytes each of ``n`` GPUs sends in a ring all-reduce of ``nbytes``: 2(n − 1)/n · S (module docstring), ``nbytes``
    and ``n`` arrays or scalars (SPP's tables: every group size at once); n ≤ 1 is the caller's to mask."""
    return 2 * (n - 1) / n * nbytes


def wire_bytes(kind: str, algorithm: str, nbytes, n: int):
    """Bytes each of ``n`` GPUs sends on its links for one ``kind`` collective of ``nbytes`` (array or scalar) run by
    ``algorithm`` (module docstring); 0.0 for ``none`` or n = 1 but a send's (``p2p``), which always moves its bytes."""
    if kind not in RUNS["none"] + ("p2p",):
        raise InputError(f"unknown collective {kind!r}", field="collective")
    if kind not in RUNS.get(algorithm, ()):
        raise InputError(f"algorithm {algorithm!r} does not run {kind}; choose one of "
                         f"{', '.join(a for a, kinds in RUNS.items() if kind in kinds)}", field="algorithm")
    if kind == "p2p":
        return nbytes
    if algorithm == "none" or n <= 1:
        return 0.0
    if algorithm == "tree":
        return 2 * nbytes
    if algorithm == "nvls":
        return (n + 1) / n * nbytes
    if algorithm == "pairwise":
        return to_peers(nbytes, n, n - 1)
    if kind == "all-to-all":  # one bidirectional torus ring
        return nbytes * (n * n // 4) / n
    if kind == "all-reduce":
        return ring_allreduce_bytes(nbytes, n)
    return (n - 1) / n * nbytes


__all__ = ["RUNS", "ring_allreduce_bytes", "to_peers", "wire_bytes"]
