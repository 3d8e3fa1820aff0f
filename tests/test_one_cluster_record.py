"""Issue 38, Build 1 (one cluster model): train's :class:`~archsim.training.cluster.GpuCluster` holds the
:class:`~archsim.spp.topology.Topology` its file was read into, and takes its GPU count, each server's fabric and the
network between servers from it, so plan's pair bandwidths and train's group links are priced on one statement of
devices and links. Every expected figure is worked out here by hand from the TOML (tomllib), not from archsim.

Each test failed before this change: ``GpuCluster`` had no ``topology`` (AttributeError), and ``Topology`` no
``fabrics`` or ``network``.
"""

import tomllib
from pathlib import Path

import numpy as np
import pytest

from archsim.plan_cluster import read_plan_cluster
from archsim.spp.topology import MAX_DEVICES
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.group_links import group_link

CLUSTERS = Path(__file__).resolve().parents[1] / "configs" / "clusters"
# the shipped clusters train reads (every server names its chip; spp_sim's drawn ranges and the testbeds that name no
# GPU are plan's alone), with GPUs 0 and 1 of a DGX-1 of V100s joined by 1 of a GPU's 6 NVLinks (hybrid cube-mesh)
TRAINED = sorted(p.name for p in CLUSTERS.glob("*.toml")
                 if all("gpu" in s or "device" in s for s in tomllib.loads(p.read_text())["servers"])
                 and not isinstance(tomllib.loads(p.read_text())["cluster"].get("inter_server_gbps"), list))
RING_SHARE = {"v100-32gb": 1 / 6}
PAIRS_PRICED = 4096  # GPUs whose pair matrices the test below builds: 16,384² pairs are 2 GiB an array (11 GB, 30 s)


def _gpus(name: str) -> int:
    """GPUs the file's [[servers]] tables hold."""
    return sum(s.get("count", 1) * s["gpus"] for s in tomllib.loads((CLUSTERS / name).read_text())["servers"])


def _by_hand(name: str):
    """Each server's GPUs, its in-server link (bytes/s one direction: intra_server_gbps is both directions), the link
    a pair of its GPUs sends on (that, or on a torus one of the chip's [links] links of it), the NIC one GPU sends on
    between servers (bytes/s) and the GPUs sharing it, as the file states them."""
    doc = tomllib.loads((CLUSTERS / name).read_text())
    sizes, fabrics, pairs, boards = [], [], [], []
    for table in doc["servers"]:
        for _ in range(table.get("count", 1)):
            sizes.append(table["gpus"])
            fabrics.append(table["intra_server_gbps"] * 1e9 / 8 / 2)
            links = tomllib.loads((CLUSTERS / table["device"]).read_text())["links"]["links"] if "torus" in table else 1
            pairs.append(fabrics[-1] / links)
            boards.append(table.get("gpu"))
    network = doc.get("network")
    if network is not None:
        nic_gbps, per_nic = network["nic_gbps"], network.get("gpus_per_nic", max(sizes) // network["nics_per_server"])
    else:
        nic_gbps = doc["cluster"].get("inter_server_gbps", 0)
        per_nic = 1 if doc["cluster"].get("inter_server_link") == "per_gpu_pair" else max(sizes)
    return sizes, fabrics, pairs, boards, nic_gbps * 1e9 / 8, per_nic


def test_the_shipped_clusters_train_reads_are_found():
    """The parametrization below is not empty: 18 of the 21 shipped clusters name a chip on every server and one
    inter-server figure; all but Llama 3's 16,384 GPUs have their pairs priced."""
    assert len(TRAINED) == 18 and "tpu_v4_like_torus.toml" in TRAINED and "dgx_h100_superpod.toml" in TRAINED and "spp_sim.toml" not in TRAINED
    assert [n for n in TRAINED if _gpus(n) > PAIRS_PRICED] == ["llama3_h100_2048_servers.toml"]


@pytest.mark.parametrize("name", [n for n in TRAINED if _gpus(n) <= PAIRS_PRICED])

def test_plans_pair_bandwidth_is_the_link_train_prices_a_two_gpu_group_on(name):
    """For every shipped cluster train reads: GPUs 0 and 1 of each server get its fabric (intra_server_gbps / 16
    bytes/s; a DGX-1's pair its one NVLink ring, 1/6 of it; a torus's pair one of its chip's links) in plan's matrix, in the matrix train holds and in train's
    two-GPU group; GPU 0 of server 0 and of server 1 get one whole NIC in plan's matrix (a send alone) and the
    network's per-GPU share (NIC / GPUs on it) in train's group — equal on rails of one GPU each. Train's network,
    fabrics and GPU count are its topology's, and plan reads the same matrix (clusters of at most 1,024 GPUs)."""
    sizes, fabrics, pairs, boards, nic, per_nic = _by_hand(name)
    cluster = load_gpu_cluster(CLUSTERS / name)
    held = cluster.topology
    assert held is cluster.file_topology and cluster.network is held.network and cluster.fabrics == held.fabrics
    assert cluster.gpus == held.devices == sum(sizes) and held.fabrics == tuple(fabrics)
    if sum(sizes) <= MAX_DEVICES:
        planned = read_plan_cluster(str(CLUSTERS / name), None)[0]
        assert np.array_equal(planned.bandwidth, held.bandwidth) and np.array_equal(planned.capacity, held.capacity)
    starts = np.cumsum([0, *sizes])
    for server, (first, gpus) in enumerate(zip(starts, sizes)):
        if gpus < 2:
            continue
        expected = pairs[server] * RING_SHARE.get(boards[server], 1.0)
        trained = group_link(cluster, cluster.servers[server], range(first, first + 2), hop=True)
        assert held.bandwidth[first, first + 1] == trained.bandwidth == pytest.approx(expected, rel=1e-12)
    if len(sizes) > 1:
        b = int(starts[1])
        trained = group_link(cluster, cluster.gpu, range(0, b + 1, b), hop=True)
        assert held.bandwidth[0, b] == nic and trained.inter.bandwidth == nic / per_nic


@pytest.mark.parametrize("name, order", [("mixed_h100_a100_v100.toml", (3, 2, 1, 0)),
                                         ("mixed_counts_h100_a100.toml", (1, 2, 0))])
def test_a_reordered_cluster_holds_the_topology_of_its_file_written_in_that_order(tmp_path, name, order):
    """GpuCluster.reordered (placement's server order) renumbers its topology's GPUs with its servers: the matrix
    equals the one read from the same file with its [[servers]] tables written in that order (each table count 1)."""
    doc = (CLUSTERS / name).read_text()
    head, *tables = doc.split("[[servers]]")
    servers = [t for t in tables for _ in range(tomllib.loads("[[servers]]" + t)["servers"][0].get("count", 1))]
    written = tmp_path / name
    written.write_text(head + "".join("[[servers]]" + servers[i].replace("count = 2", "count = 1") for i in order))
    fresh = load_gpu_cluster(written)
    placed = load_gpu_cluster(CLUSTERS / name).reordered(order)
    assert placed.servers == fresh.servers and placed.fabrics == fresh.fabrics
    assert placed.topology.servers == fresh.topology.servers
    assert np.array_equal(placed.topology.bandwidth, fresh.topology.bandwidth)
    assert np.array_equal(placed.topology.capacity, fresh.topology.capacity)


def test_a_reordered_cluster_under_oversubscribed_leaves_keeps_each_server_under_its_own_leaf(tmp_path):
    """4 servers of 4 A100s (intra 4800 Gbit/s: 300 GB/s), one 200 Gbit/s NIC per GPU (25 GB/s), 2 servers per leaf,
    2:1 oversubscribed: placed 0, 2, 1, 3, file servers 0 and 2 (now first and second) still sit under leaves 0 and 1,
    their pair at half the NIC (12.5 GB/s), file servers 0 and 1 (now first and third) under leaf 0, at the whole NIC
    (25 GB/s); train's two-GPU groups on the placed cluster get the same shares. A placement reorders the servers, it
    does not rewire them (these pairs were priced at their new indices' leaves before)."""
    path = tmp_path / "leaves.toml"
    path.write_text('[cluster]\nname = "leaves"\n[network]\nnics_per_server = 4\nnic_gbps = 200\n'
                    'servers_per_leaf = 2\noversubscription = 2.0\n'
                    '[[servers]]\ncount = 4\ngpus = 4\nintra_server_gbps = 4800\ngpu = "a100-80gb"\n')
    cluster = load_gpu_cluster(path)
    assert cluster.topology.bandwidth[0, 4] == 25e9 and cluster.topology.bandwidth[0, 8] == 12.5e9
    placed = cluster.reordered((0, 2, 1, 3)).topology
    assert placed.servers == (0,) * 4 + (1,) * 4 + (2,) * 4 + (3,) * 4
    assert placed.bandwidth[0, 4] == 12.5e9 and placed.bandwidth[0, 8] == 25e9 and placed.bandwidth[0, 1] == 300e9
    trained = cluster.reordered((0, 2, 1, 3))
    assert [group_link(trained, trained.gpu, range(0, b + 1, b), hop=True).network("pair").bandwidth
            for b in (4, 8)] == [12.5e9, 25e9]


def test_a_pair_across_servers_of_one_nvlink_domain_plans_at_trains_nvlink(tmp_path):
    """2 servers of 8 A100s in one NVLink domain of 16 (an NVLink switch system; intra 4800 Gbit/s: 300 GB/s a
    direction), 8 NICs of 200 Gbit/s (25 GB/s). Train runs GPU 0 and GPU 8 over NVLink (one domain), and so does
    plan's matrix (a strict xfail before: plan priced the pair at a NIC, 25 GB/s)."""
    path = tmp_path / "domain.toml"
    path.write_text('[cluster]\nname = "domain"\n[network]\nnics_per_server = 8\nnic_gbps = 200\nnvlink_domain = 16\n'
                    '[[servers]]\ncount = 2\ngpus = 8\nintra_server_gbps = 4800\ngpu = "a100-80gb"\n')
    cluster = load_gpu_cluster(path)
    trained = group_link(cluster, cluster.gpu, range(0, 9, 8), hop=True)
    assert trained.name == "nvlink" and trained.bandwidth == 300e9
    assert cluster.topology.bandwidth[0, 8] == trained.bandwidth


def test_train_reads_a_3072_gpu_file_without_pricing_its_pairs():
    """Train and search read a cluster's servers, fabrics and network, never a GPU pair: the 3,072² pairs (≈ 0.4 CPU s,
    0.4 GB) are priced when first asked for, and then are the file's (a send between servers gets one whole NIC)."""
    sizes, fabrics, _, _, nic, _ = _by_hand("a100_384_servers.toml")
    cluster = load_gpu_cluster(CLUSTERS / "a100_384_servers.toml")
    assert cluster.sizes == tuple(sizes) and cluster.gpus == sum(sizes) == 3072 and cluster.fabrics == tuple(fabrics)
    assert "file_topology" not in vars(cluster)  # not priced by reading the file
    held = cluster.topology
    assert held.bandwidth.shape == (3072, 3072) and held.network is cluster.network
    assert held.bandwidth[0, 1] == fabrics[0] and held.bandwidth[0, sizes[0]] == nic and held.bandwidth[0, 0] == 0.0
