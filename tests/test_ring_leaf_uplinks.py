"""What a group over an oversubscribed leaf–spine fabric crosses (archsim.network.ServerNetwork.uplinks): a ring over
servers laid out leaf by leaf sends one server's worth out of each leaf, an all-to-all the share of its bytes bound
for other leaves. 4 servers of 8 H100s on 8 × 400 Gb/s rails (one GPU per NIC: 50 GB/s), 2 servers a leaf. Until
2026-12-05 every group spanning leaves ran at its share over the whole oversubscription (a DP ring at 2:1 twice as
slow)."""

from __future__ import annotations

from pathlib import Path

import pytest

import archsim
from archsim.collectives import LinkClass, Spanning, Uplinks, collective_seconds
from archsim.network import ServerNetwork, double_tree_edges

RAILS = ('[cluster]\n[network]\nnics_per_server = 8\nnic_gbps = 400\n{network}\n'
         '[[servers]]\ncount = {servers}\ngpus = 8\ngpu = "h100"\n')
BIG = 8 * 2**30  # bytes: latencies are below 10⁻⁴ of the wire time on these NICs


def _file(tmp_path: Path, network: str = "", servers: int = 4) -> Path:
    path = tmp_path / f"c{abs(hash((network, servers)))}.toml"
    path.write_text(RAILS.format(network=network, servers=servers))
    return path


def _leaves(tmp_path: Path, over: float, per_leaf: int = 2, servers: int = 4) -> Path:
    return _file(tmp_path, f"servers_per_leaf = {per_leaf}\noversubscription = {over}", servers)


def test_a_dp_ring_of_one_gpu_per_server_is_not_slowed_at_2_to_1_and_halved_at_4_to_1(tmp_path):
    """By hand: the ring 0 → 1 → 2 → 3 → 0 leaves leaf {0, 1} by one edge (1 → 2) and leaf {2, 3} by one (3 → 0).
    The 8 rails' rings run at once, each edge at one GPU's 50 GB/s: 8 × 50 = 400 GB/s out of a leaf, one server's
    NICs, against 2 servers × 400 GB/s / o of uplink: 400 at 2:1 (not slowed), 200 at 4:1 (twice as slow)."""
    flat = _file(tmp_path)
    for kind in ("all-reduce", "all-gather", "reduce-scatter"):
        alone = archsim.collective(kind, BIG, cluster=flat, gpus=4, per_server=1).seconds
        two = archsim.collective(kind, BIG, cluster=_leaves(tmp_path, 2), gpus=4, per_server=1)
        four = archsim.collective(kind, BIG, cluster=_leaves(tmp_path, 4), gpus=4, per_server=1)
        assert two.crosses_leaves and two.seconds == alone
        assert four.crosses_leaves and four.seconds == pytest.approx(2 * alone, rel=1e-3)


def test_an_all_to_all_is_slowed_by_the_share_of_its_bytes_that_leave_the_leaf(tmp_path):
    """By hand: each GPU sends 1/4 of its buffer to each of the 3 other servers, 2 of them under the other leaf:
    2/3 of a server's 400 GB/s of NIC traffic leaves its leaf, 2 × 2/3 × 400 GB/s out of a leaf of 2 servers
    against 2 × 400 / 2: the network part (3/4 · S over one GPU's 50 GB/s) 4/3 slower. At 4:1, 8/3."""
    alone = archsim.collective("all-to-all", BIG, cluster=_file(tmp_path), gpus=4, per_server=1).seconds
    for over, factor in ((2, 4 / 3), (4, 8 / 3)):
        slowed = archsim.collective("all-to-all", BIG, cluster=_leaves(tmp_path, over), gpus=4, per_server=1)
        assert slowed.seconds == pytest.approx(factor * alone, rel=1e-3)
    # one server a leaf: every byte through the NICs leaves its leaf, the whole oversubscription
    one = archsim.collective("all-to-all", BIG, cluster=_leaves(tmp_path, 2, per_leaf=1), gpus=4, per_server=1)
    assert one.seconds == pytest.approx(2 * alone, rel=1e-3)


def test_a_group_inside_one_leaf_is_never_slowed(tmp_path):
    """TP 16 on servers 0 and 1 (leaf 0), and a DP pair of one GPU per server inside it: no uplink, at any
    oversubscription."""
    flat = _file(tmp_path)
    for kind in ("all-reduce", "all-gather", "all-to-all"):
        for over in (2, 7):
            steep = _leaves(tmp_path, over)
            assert archsim.collective(kind, BIG, cluster=steep, gpus=16).seconds == \
                archsim.collective(kind, BIG, cluster=flat, gpus=16).seconds
            assert archsim.collective(kind, BIG, cluster=steep, gpus=2, per_server=1).seconds == \
                archsim.collective(kind, BIG, cluster=flat, gpus=2, per_server=1).seconds


def test_more_oversubscription_never_speeds_anything_up_and_one_leaf_changes_nothing(tmp_path):
    """Properties on 8 servers: for every kind and group shape, the time never falls as the oversubscription
    rises (1 → 7), and servers_per_leaf ≥ the servers (every server under one leaf) prices as no leaves at all."""
    flat = _file(tmp_path, servers=8)
    shapes = ((8, 1), (32, 4), (16, None))
    for kind in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all"):
        for gpus, per_server in shapes:
            for size in (2**20, BIG):
                for per_leaf in (1, 2):
                    times = [archsim.collective(kind, size, cluster=_leaves(tmp_path, over, per_leaf, 8), gpus=gpus,
                                                per_server=per_server).seconds for over in (1, 2, 4, 7)]
                    assert times == sorted(times), (kind, gpus, per_server, size, per_leaf)
                base = archsim.collective(kind, size, cluster=flat, gpus=gpus, per_server=per_server).seconds
                for per_leaf in (8,):
                    one = _leaves(tmp_path, 7, per_leaf, 8)
                    with pytest.warns(UserWarning, match="changes nothing"):
                        assert archsim.collective(kind, size, cluster=one, gpus=gpus,
                                                  per_server=per_server).seconds == base


def test_the_uplink_factors_by_hand():
    """ServerNetwork.uplinks on 4 servers, 2 a leaf: the ring laid out leaf by leaf leaves each leaf once (f = 1/2);
    laid out alternating (file servers 0, 2, 1, 3: NCCL joins them in rank order, NVIDIA/nccl#1340) every edge leaves
    (f = 1). NCCL's trees over 4 servers, by hand: the first 0–2, 2–1, 2–3, the second its mirror 3–1, 1–2, 1–0;
    4 edge ends leave each leaf of the contiguous layout, each carrying S/2 a way while the tree's pace moves 2S
    through a server: f = 4 · (1/2) / (2 servers · 2) = 1/2. All-to-all: (4 − 2)/(4 − 1). A hop: o."""
    net = ServerNetwork(8, 400.0, 1, 8, servers_per_leaf=2, oversubscription=4.0)
    contiguous = net.uplinks((0, 1, 2, 3))
    assert (contiguous.ring, contiguous.tree, contiguous.pair) == (2.0, 2.0, 4.0)
    assert contiguous.every_pair == pytest.approx(4 * 2 / 3, rel=1e-12)
    assert net.uplinks((0, 2, 1, 3)).ring == 4.0
    assert net.uplinks((0, 1)) == Uplinks()  # one leaf
    assert net.uplinks((1, 2), hop=True) == Uplinks(4.0, 4.0, 4.0, 4.0)
    assert sorted(tuple(sorted(e)) for e in double_tree_edges(4)) == sorted(
        [(0, 2), (1, 2), (2, 3), (1, 3), (1, 2), (0, 1)])
    gentle = ServerNetwork(8, 400.0, 1, 8, servers_per_leaf=2, oversubscription=2.0)
    mild = gentle.uplinks((0, 1, 2, 3))
    assert (mild.ring, mild.tree, mild.pair) == (1.0, 1.0, 2.0) and mild.every_pair == pytest.approx(4 / 3, rel=1e-12)


@pytest.mark.parametrize("m", [2, 3, 4, 5, 8, 13, 16])
def test_each_of_nccls_two_trees_spans_the_servers(m):
    """Each tree of double_tree_edges has m − 1 edges joining all m servers (so it is a spanning tree), and each
    server has at most 3 edges in it (a parent and two children)."""
    edges = double_tree_edges(m)
    for tree in (edges[:m - 1], edges[m - 1:]):
        assert len(tree) == m - 1
        reached, grew = {0}, True
        while grew:
            grew = False
            for a, b in tree:
                if (a in reached) != (b in reached):
                    reached |= {a, b}
                    grew = True
        assert reached == set(range(m))
        assert all(sum(s in e for e in tree) <= 3 for s in range(m))


def test_nccl_picks_ring_or_tree_blind_to_the_uplinks():
    """A ring slowed 2× by the uplinks and a tree not slowed: NCCL's tuner, which knows no switches
    (NVIDIA/nccl#1545), still runs the ring where the ring is faster at the NICs' share, so the time is the slowed
    ring's (2 · 3/4 · S over 25 GB/s on 4 servers, latencies 0), not the tree's 2S over 50."""
    nic = LinkClass("nic", 50e9, 1.0, 0.0, 0.0)
    nvlink = LinkClass("nvlink", 1e12, 1.0, 0.0, 0.0)
    link = Spanning(nvlink, nic, 1, Uplinks(ring=2.0))
    assert float(collective_seconds("all-reduce", BIG, 4, link)) == pytest.approx(2 * 3 / 4 * BIG / 25e9, rel=1e-12)
    assert float(collective_seconds("all-reduce", BIG, 4, Spanning(nvlink, nic, 1))) == \
        pytest.approx(2 * 3 / 4 * BIG / 50e9, rel=1e-12)
