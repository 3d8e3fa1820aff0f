"""How many NVLink rings NCCL can lay over a set of GPUs: the bus bandwidth of a server without an
NVSwitch.

On a server whose GPUs are wired directly (DGX-1's hybrid cube-mesh of V100s), an all-reduce ring
over n GPUs is a directed cycle through them; each NVLink carries one ring per direction, so the
GPUs' ring bandwidth is the number of rings that can be packed on the links at once (each directed
link used by at most as many rings as there are links) × one link's bandwidth. :func:`ring_count`
finds that number exactly (an integer programme over every directed cycle; n ≤ 8 gives at most 5,040
cycles). With an NVSwitch every GPU reaches every other over all its links, so the count is its link
count.

Where no cycle of direct NVLinks exists (GPUs 0–4 of a DGX-1: GPU 4's only NVLinks among them go to
GPU 0), NCCL still rings them over NVLink, one hop through an intermediate GPU (NVIDIA/nccl):

- its topology holds only the communicator's GPUs: ``ncclTopoAddPci`` (src/graph/topo.cc) skips a GPU
  without a rank and ``ncclTopoAddNvLinks`` connects only to GPUs it holds, so an NVLink to a GPU outside
  the group (GPU 7 for 0–4) is not there to route through;
- ``ncclTopoSetPaths`` (src/graph/paths.cc) gives two GPUs without a direct NVLink a path of two NVLinks
  through a GPU of the group, type ``PATH_NVB``, the widest such path (the larger bottleneck);
- ``ncclTopoCompute`` (src/graph/search.cc) searches each speed of its ladder with ``typeIntra`` at
  ``PATH_NVL`` first and relaxes it to ``PATH_NVB`` (then PCIe, ``PATH_PIX`` … ``PATH_SYS``) only while no
  ring has been found, so NVB hops are taken exactly where no direct cycle exists;
- ``ncclTopoFollowPath``/``followPath`` (search.cc) charge a channel's bandwidth to every link of a hop's
  path: a hop through GPU 0 uses GPU 0's links and shares them with the rings through GPU 0;
- ``p2pRecvSetup`` (src/transport/p2p.cc, ``P2P_INTERMEDIATE``) puts the hop's receive buffer in the
  intermediate GPU's memory: the sender writes it over one NVLink, the receiver reads it over the other.

So :func:`ring_count` packs, when no direct cycle exists, cycles whose hops are either direct NVLinks or
NVB paths, each hop using the links of its path (GPUs 0–4: 2 rings, each entering and leaving GPU 4
through its two NVLinks to GPU 0). A hop over PCIe is not taken where an NVB ring exists (NVB is searched
first), and a chain is NCCL's tree, not its ring. Each ring is priced at one link's bandwidth, as a direct
one: nccl-tests on GPUs 0–4 of a DGX-1 (tests/data/e2e/nccl_allreduce) measures 37 GB/s bus bandwidth at
1 GiB, 18% below the two rings' 45 GB/s (the fitted η of direct rings), so the NVB hop runs slower than a
direct one (its receiver reads over NVLink); that cost is not modelled, nothing here is fitted to it.

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

Hop = tuple[tuple[int, int], ...]  # the directed links (GPU, GPU) one ring hop runs over


def _links(pairs: dict, a: int, b: int) -> int:
    return pairs.get((min(a, b), max(a, b)), 0)


def hop_path(a: int, b: int, gpus: tuple[int, ...], topology: str = "dgx1-v100") -> Hop:
    """The NVLinks NCCL's ring hop from GPU ``a`` to ``b`` of the group ``gpus`` runs over: the direct link
    (``PATH_NVL``); else two through a GPU of the group (``PATH_NVB``), the one of more links on its
    narrower side (ties: the lowest GPU); else none (``()``: only PCIe joins them)."""
    pairs = DGX1_V100_LINKS if topology == "dgx1-v100" else {}
    if _links(pairs, a, b):
        return ((a, b),)
    via = [(min(_links(pairs, a, k), _links(pairs, k, b)), -k) for k in gpus if k not in (a, b)]
    width, negative = max(via, default=(0, 0))
    return ((a, -negative), (-negative, b)) if width else ()


def _cycles(gpus: tuple[int, ...], topology: str, through: bool) -> list[list[tuple[int, int]]]:
    """Every directed cycle through all of ``gpus`` (first GPU fixed) as the links its hops use: direct
    NVLinks only, or (``through``) NVB hops too; a link used twice by one cycle appears twice."""
    n = len(gpus)
    cycles = []
    for order in itertools.permutations(gpus[1:]):
        ring = (gpus[0], *order)
        hops = [hop_path(ring[i], ring[(i + 1) % n], gpus, topology) for i in range(n)]
        if all(hops) and (through or all(len(h) == 1 for h in hops)):
            cycles.append([link for hop in hops for link in hop])
    return cycles


def _pack(cycles: list[list[tuple[int, int]]], pairs: dict) -> int:
    """Most cycles (with repeats) at once, each directed link used at most its NVLink count."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    edges = sorted({link for links in cycles for link in links})
    index = {e: i for i, e in enumerate(edges)}
    use = np.zeros((len(edges), len(cycles)))
    for j, links in enumerate(cycles):
        for link in links:
            use[index[link], j] += 1
    capacity = np.array([_links(pairs, a, b) for a, b in edges], dtype=float)
    result = milp(-np.ones(len(cycles)), constraints=LinearConstraint(use, 0, capacity),
                  integrality=np.ones(len(cycles)), bounds=Bounds(0, np.inf))
    return int(round(-result.fun))


@lru_cache(maxsize=64)
def ring_count(gpus: tuple[int, ...], topology: str = "dgx1-v100") -> int:
    """Most directed NVLink rings through all of ``gpus`` at once, each of one link's bandwidth: over direct
    NVLinks, or where no such ring exists with hops through a GPU of the group (module docstring; 0: no
    NVLink ring, the group falls back to PCIe)."""
    pairs = DGX1_V100_LINKS if topology == "dgx1-v100" else {}
    n = len(gpus)
    if n < 2:
        return 0
    if n == 2:
        return _links(pairs, *gpus)  # one ring per link, using both its directions
    cycles = _cycles(gpus, topology, through=False) or _cycles(gpus, topology, through=True)
    return _pack(cycles, pairs) if cycles else 0


__all__ = ["DGX1_V100_LINKS", "Hop", "hop_path", "ring_count"]
