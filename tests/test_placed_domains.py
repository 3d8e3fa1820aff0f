"""A user trial: 4 servers of 8 A100s (``intra_server_gbps = 4800``: 300 GB/s a direction), 8 NICs of 200 Gbit/s
(25 GB/s, one GPU each) and an NVLink domain of 16 GPUs: file servers 0–1 form domain 0, 2–3 domain 1 (an
NVL-switch system's racks). GPT-3 1.3B at TP 16 · DP 2 puts TP group 0 on the first two servers of the order and TP
group 1 on the last two; DP group t holds GPU t of each. In the file's order each TP group fills a domain (NVLink) and
each DP pair crosses domains (NICs). ``--placement 0,2,1,3`` puts TP group 0 on file servers 0 and 2 (domains 0 and
1: the NICs) and pairs file servers 0 with 1 and 2 with 3 in the DP groups (one domain each: NVLink). Train priced it
as the file order: a domain followed a GPU's index in the laid-out order, not its server (its index in the file)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import archsim
from archsim.collectives import Spanning
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.group_links import group_link
from archsim.training.parallel import Parallelism

ROOT = Path(__file__).resolve().parents[1]
GPT = str(ROOT / "configs" / "transformers" / "gpt3_1.3b.toml")  # 24 layers, hidden 2048, 16 heads
DOMAINS = ('[cluster]\nname = "domains"\n[network]\nnics_per_server = 8\nnic_gbps = 200\nnvlink_domain = 16\n'
           '[[servers]]\ncount = 4\ngpus = 8\nintra_server_gbps = 4800\ngpu = "a100-80gb"\n')
SPLIT = (0, 2, 1, 3)  # each domain's two servers placed apart
NVLINK, NIC = 4800e9 / 8 / 2, 200e9 / 8  # bytes/s one direction: the file's fabric, one GPU's NIC


@pytest.fixture
def cluster(tmp_path) -> str:
    path = tmp_path / "domains.toml"
    path.write_text(DOMAINS)
    return str(path)


def _meta(cluster: str, placement: str, tp: int = 16, pp: int = 1, dp: int = 2) -> dict:
    result, _ = archsim.train(GPT, cluster=cluster, tp=tp, pp=pp, dp=dp, global_batch=64, placement=placement)
    return result.to_dict()["meta"]


def test_a_placement_that_splits_each_domain_puts_tp_on_the_nics_and_dp_on_nvlink(cluster):
    """0,2,1,3: every TP group spans two servers of two domains, so its all-reduces cross the NICs (train warns, and
    ``crossed_by`` names tp, no longer dp), and the iteration is slower than the file order's; the DP pairs now share
    a domain, so their all-reduce gets faster."""
    file = _meta(cluster, "file")
    with pytest.warns(UserWarning, match="a TP group spans 2 servers"):
        split = _meta(cluster, ",".join(map(str, SPLIT)))
    assert file["inter_server"]["crossed_by"] == ["dp"] and split["inter_server"]["crossed_by"] == ["tp"]
    assert split["iteration_seconds"] > file["iteration_seconds"]
    assert split["breakdown_seconds"]["tp_communication"] > file["breakdown_seconds"]["tp_communication"]
    assert split["breakdown_seconds"]["dp_communication"] < file["breakdown_seconds"]["dp_communication"]


def test_the_split_groups_links_by_hand(cluster):
    """TP group 0 on file servers 0 and 2: over the NICs, each server's 8 GPUs on their own NIC, 8 × 25 GB/s; the DP
    pair of GPU 0 (file server 0) and GPU 16 (file server 1): one domain, the fabric's 300 GB/s. The file order's
    are the other way round: TP on NVLink, the DP pair one GPU's NIC."""
    par = Parallelism(tp=16, pp=1, dp=2, global_batch=64)
    loaded = load_gpu_cluster(cluster)
    file, split = (c.rank_machines(par)[0].links for c in (loaded, loaded.reordered(SPLIT)))
    assert not isinstance(file.tp, Spanning) and file.tp.bandwidth == NVLINK
    assert isinstance(file.dp, Spanning) and file.dp.inter.bandwidth == NIC
    assert isinstance(split.tp, Spanning) and split.tp.inter.bandwidth == 8 * NIC
    assert not isinstance(split.dp, Spanning) and split.dp.bandwidth == NVLINK
    placed = loaded.reordered(SPLIT)
    # a group's every server counts, not its ends: GPUs 0 and 16 (file servers 0, 1) share a domain though the
    # server between them (file server 2) does not
    assert placed.one_domain(0, 16, 16) and placed.one_domain(8, 24, 16)
    assert not placed.one_domain(0, 15) and not placed.one_domain(0, 16)
    assert loaded.one_domain(0, 15) and not loaded.one_domain(0, 16, 16)


@pytest.mark.parametrize("placement", ["1,0,3,2", "2,3,0,1", "3,2,1,0"])
@pytest.mark.parametrize("layout", [(16, 1, 2), (16, 2, 1), (8, 4, 1)])
def test_a_placement_that_keeps_each_domain_together_prices_as_the_file_order(cluster, placement, layout):
    """Servers permuted within their domain, or the two domains swapped: every group holds the servers of the domains
    the file order's does, so the iteration is the file order's to the bit."""
    file, placed = _meta(cluster, "file", *layout), _meta(cluster, placement, *layout)
    assert placed["iteration_seconds"] == file["iteration_seconds"]
    assert placed["breakdown_seconds"] == file["breakdown_seconds"]
    assert placed["inter_server"]["crossed_by"] == file["inter_server"]["crossed_by"]


def test_a_placed_topology_keeps_each_server_in_its_domain(cluster):
    """Plan's matrix of the placed cluster, every pair against the rule by hand: GPU g sits at place g // 8, on file
    server SPLIT[g // 8], in domain SPLIT[g // 8] // 2; a pair in one server or one domain runs at the fabric's
    300 GB/s (capacity the same), any other at one GPU's NIC. Train's hop between the two GPUs agrees."""
    placed = load_gpu_cluster(cluster).reordered(SPLIT)
    topology = placed.topology
    domain = np.array([SPLIT[g // 8] // 2 for g in range(32)])
    expected = np.where(domain[:, None] == domain[None, :], NVLINK, NIC)
    np.fill_diagonal(expected, 0.0)
    assert np.array_equal(topology.bandwidth, expected)
    assert np.array_equal(topology.capacity, expected)
    for a, b in ((0, 8), (0, 16), (8, 24), (16, 24)):
        link = group_link(placed, placed.gpu, range(a, b + 1, b - a), hop=True)
        assert (link.inter if isinstance(link, Spanning) else link).bandwidth == topology.bandwidth[a, b]


def test_a_reordered_cluster_of_identical_servers_is_not_the_file_order(cluster):
    """Its servers are the file's kind in another order, and the order sets their domains (the split prices apart
    above): the records differ, so nothing keyed on a cluster can hand one the other's figures; the same order
    twice is the same cluster."""
    loaded = load_gpu_cluster(cluster)
    assert loaded.reordered(SPLIT) != loaded and loaded.reordered(SPLIT) == loaded.reordered(SPLIT)
    assert loaded.reordered((1, 0, 3, 2)) != loaded.reordered(SPLIT)
    assert hash(loaded.reordered(SPLIT)) == hash(loaded.reordered(SPLIT))
