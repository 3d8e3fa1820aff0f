"""How many NVLink rings NCCL can lay over a set of GPUs: the bus bandwidth of a server without an
NVSwitch.

On a server whose GPUs are wired directly (DGX-1's hybrid cube-mesh of V100s), an all-reduce ring
over n GPUs is a directed Hamiltonian cycle through them; each NVLink carries one ring per direction,
so the GPUs' ring bandwidth is the number of rings that can be packed on the links at once (each a
cycle, each directed link used by at most as many rings as there are links) × one link's bandwidth.
:func:`ring_count` finds that number exactly (an integer programme over every directed cycle; n ≤ 8
gives at most 5,040 cycles). With an NVSwitch every GPU reaches every other over all its links, so
the count is its link count.

DGX-1 with V100 (NVIDIA, *DGX-1 With Tesla V100 System Architecture* whitepaper, 2017, the hybrid
cube-mesh figure): 6 NVLinks per GPU; GPUs 0–3 and 4–7 form two fully connected quads, each GPU
also linked to its counterpart in the other quad; some pairs are joined by two links.
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np

# (GPU, GPU): NVLinks between them, DGX-1V (the `nvidia-smi topo -m` matrix of the hybrid cube-mesh)
DGX1_V100_LINKS = {(0, 1): 1, (0, 2): 1, (0, 3): 2, (0, 4): 2, (1, 2): 2, (1, 3): 1, (1, 5): 2, (2, 3): 2,
                   (2, 6): 1, (3, 7): 1, (4, 5): 1, (4, 6): 1, (4, 7): 2, (5, 6): 2, (5, 7): 1, (6, 7): 2}


def _links(pairs: dict, a: int, b: int) -> int:
    return pairs.get((min(a, b), max(a, b)), 0)


@lru_cache(maxsize=64)
def ring_count(gpus: tuple[int, ...], topology: str = "dgx1-v100") -> int:
    """Most directed NVLink rings through all of ``gpus`` at once (0: no ring, the group falls back to PCIe)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    pairs = DGX1_V100_LINKS if topology == "dgx1-v100" else {}
    n = len(gpus)
    if n < 2:
        return 0
    if n == 2:
        return _links(pairs, *gpus)  # one ring per link, using both its directions
    first, rest = gpus[0], gpus[1:]
    cycles = []
    for order in itertools.permutations(rest):
        ring = (first, *order)
        hops = [(ring[i], ring[(i + 1) % n]) for i in range(n)]
        if all(_links(pairs, a, b) for a, b in hops):
            cycles.append(hops)
    if not cycles:
        return 0
    edges = sorted({hop for hops in cycles for hop in hops})
    index = {e: i for i, e in enumerate(edges)}
    use = np.zeros((len(edges), len(cycles)))
    for j, hops in enumerate(cycles):
        for hop in hops:
            use[index[hop], j] = 1
    capacity = np.array([_links(pairs, a, b) for a, b in edges], dtype=float)
    result = milp(-np.ones(len(cycles)), constraints=LinearConstraint(use, 0, capacity),
                  integrality=np.ones(len(cycles)), bounds=Bounds(0, np.inf))
    return int(round(-result.fun))


__all__ = ["DGX1_V100_LINKS", "ring_count"]
