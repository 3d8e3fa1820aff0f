"""Of a rank's groups of one kind, the one slowed most by an oversubscribed fabric's uplinks prices the rank,
not the first that crosses leaves: each group's slowdown max(1, o·f) follows how its servers sit under leaves
(docs/training.md, "Oversubscription"). 8 servers of 8 H100s on 8 × 400 Gb/s rails (one GPU per NIC: 50 GB/s),
4 servers a leaf, 4:1 above the leaves; TP 16 · DP 4 puts TP group j on placed servers 2j, 2j + 1 and DP group t
on placed servers 0, 2, 4, 6 (t < 8) or 1, 3, 5, 7 (t ≥ 8), one GPU a server."""

from __future__ import annotations

import pytest

from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.parallel import Parallelism

LEAVES = ('[cluster]\n[network]\nnics_per_server = 8\nnic_gbps = 400\nservers_per_leaf = 4\n'
          'oversubscription = 4\n[[servers]]\ncount = 8\ngpus = 8\ngpu = "h100"\n')
NIC = 400e9 / 8  # bytes/s: one GPU's share of the NICs
PAR = Parallelism(tp=16, pp=1, dp=4, global_batch=32)


@pytest.fixture
def cluster(tmp_path):
    path = tmp_path / "leaves.toml"
    path.write_text(LEAVES)
    return load_gpu_cluster(str(path))


def test_the_dp_group_whose_ring_leaves_its_leaves_most_prices_the_rank(cluster):
    """Placed servers 0…7 on file servers 0, 2, 1, 6, 4, 3, 5, 7: DP group 0 on file servers 0, 1, 4, 5 (leaves
    0, 0, 1, 1: one ring edge leaves each leaf of 2 servers, f = 1/2, 4 · 1/2 = 2× slower), DP group 8 on 2, 6,
    3, 7 (leaves 0, 1, 0, 1: every edge leaves, 2 a leaf of 2, f = 1, 4×). Both cross leaves; the first was
    taken, so the rank's DP ring ran at NIC / 2 instead of NIC / 4."""
    links = cluster.reordered((0, 2, 1, 6, 4, 3, 5, 7)).machine(PAR).links
    assert links.dp.network("ring").bandwidth == pytest.approx(NIC / 4)


def test_in_the_file_order_every_dp_group_holds_two_servers_a_leaf(cluster):
    """File order: DP groups on servers 0, 2, 4, 6 and 1, 3, 5, 7, leaves 0, 0, 1, 1 each: f = 1/2, 2× slower."""
    assert cluster.machine(PAR).links.dp.network("ring").bandwidth == pytest.approx(NIC / 2)
