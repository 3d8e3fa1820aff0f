"""NVLink rings over DGX-1 groups that no direct NVLink cycle closes (archsim.nvlink_rings.ring_count), each
hop NCCL's path: the direct NVLink, else two NVLinks through a GPU of the group (PATH_NVB; NCCL's topology
holds only the communicator's GPUs, so never through one outside it).

The references here are written apart from the code: the DGX-1V link matrix as `nvidia-smi topo -m` prints
it (NV1 / NV2: one or two NVLinks; DGX-1 With Tesla V100 System Architecture whitepaper, 2017), the rings of
GPUs 0–4 counted by hand, and a brute force that lists every directed cycle over hop paths and packs them by
depth-first search under the links' capacities."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from archsim import links
from archsim.devices.gpu_lookup import gpu
from archsim.nvlink_rings import ring_count
from archsim.training.nccl_fit import read_nccl_tables, relative_errors

# `nvidia-smi topo -m` on a DGX-1V, GPU0 … GPU7 (0: no NVLink between them, PCIe/SYS)
MATRIX = [[0, 1, 1, 2, 2, 0, 0, 0],
          [1, 0, 2, 1, 0, 2, 0, 0],
          [1, 2, 0, 2, 0, 0, 1, 0],
          [2, 1, 2, 0, 0, 0, 0, 1],
          [2, 0, 0, 0, 0, 1, 1, 2],
          [0, 2, 0, 0, 1, 0, 2, 1],
          [0, 0, 1, 0, 1, 2, 0, 2],
          [0, 0, 0, 1, 2, 1, 2, 0]]
DATA = Path(__file__).parent / "data" / "e2e" / "nccl_allreduce"


def _path(a: int, b: int, group: tuple[int, ...]) -> list[tuple[int, int]] | None:
    """Directed links of the hop a → b: direct, else via the group's GPU whose narrower side has most links."""
    if MATRIX[a][b]:
        return [(a, b)]
    best = max(((min(MATRIX[a][k], MATRIX[k][b]), -k) for k in group if k not in (a, b)), default=(0, 0))
    return [(a, -best[1]), (-best[1], b)] if best[0] else None


def _brute_rings(group: tuple[int, ...], through: bool) -> int:
    """Most directed cycles over ``group`` packed at once (each directed link at most its NVLink count)."""
    cycles = []
    for order in itertools.permutations(group[1:]):
        ring = (group[0], *order)
        hops = [_path(ring[i], ring[(i + 1) % len(ring)], group) for i in range(len(ring))]
        if all(h is not None for h in hops) and (through or all(len(h) == 1 for h in hops)):
            cycles.append([link for h in hops for link in h])
    free = {(a, b): MATRIX[a][b] for a in range(8) for b in range(8) if MATRIX[a][b]}

    def best(i: int) -> int:
        if i == len(cycles):
            return 0
        top = best(i + 1)
        if all(free[link] >= cycles[i].count(link) for link in cycles[i]):
            for link in cycles[i]:
                free[link] -= 1
            top = max(top, 1 + best(i))
            for link in cycles[i]:
                free[link] += 1
        return top

    return best(0)


def test_gpus_0_to_4_by_hand():
    # GPU 4's NVLinks among 0–4 are its two to GPU 0: every ring enters and leaves 4 over them (directly from
    # or to GPU 0, or through GPU 0), so at most 2 rings. Two fit: 0→4→(0)→1→2→3→0 and 0→4→(0)→2→1→3→0 use
    # 0→4 and 4→0 twice (two links each), 3→0 twice (two links), 0→1, 0→2, 1→2, 2→1, 2→3, 1→3 once.
    group = (0, 1, 2, 3, 4)
    assert _brute_rings(group, through=False) == 0  # no cycle of direct NVLinks: before, PCIe
    assert ring_count(group) == _brute_rings(group, through=True) == 2


@pytest.mark.parametrize("size", [3, 4, 5])
def test_every_dgx1_group_without_a_direct_ring_against_brute_force(size):
    # NCCL takes NVB hops only where no direct ring exists (ncclTopoCompute searches PATH_NVL first)
    groups = [g for g in itertools.combinations(range(8), size) if _brute_rings(g, through=False) == 0]
    assert groups  # e.g. (0, 1, 2, 3, 4) for 5 GPUs
    assert [ring_count(g) for g in groups] == [_brute_rings(g, through=True) for g in groups]


def test_groups_with_a_direct_ring_take_no_hop_through_a_gpu():
    # GPUs 0–5: direct rings pack 2 (nccl-tests measures 45.7 GB/s, two links' worth); with NVB hops 3 would
    # fit, which NCCL does not search once a direct ring is found
    group = tuple(range(6))
    assert _brute_rings(group, through=True) == 3
    assert ring_count(group) == _brute_rings(group, through=False) == 2


def test_five_v100s_against_the_measured_table():
    # 2 rings × 25 GB/s per direction; the measured bus bandwidth (37 GB/s at 1 GiB) sits 18% below the two
    # rings' fitted 45 GB/s: the NVB hop's slower read is not modelled, so the model runs short, by less
    # than a quarter (before: PCIe, 2.6× the measured time)
    link = links.nvlink_group(gpu("v100-32gb"), (0, 1, 2, 3, 4))
    assert link.name == "nvlink"
    assert link.bandwidth == pytest.approx(2 * 150e9 / 6)
    errors = relative_errors(read_nccl_tables(DATA, "v100")[5], link)
    assert len(errors) > 900
    assert np.all(errors < 0)
    assert np.max(np.abs(errors)) < 0.25
