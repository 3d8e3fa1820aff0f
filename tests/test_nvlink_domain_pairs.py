"""Issue 38, Build 1: a pair of GPUs in two servers of one NVLink domain (``nvlink_domain`` above a server's GPUs, an
NVLink switch system such as a GB200 NVL72 or a DGX H100 NVLink-switch pod) is priced by plan on the domain's NVLink,
as train's group of the two runs on it (:meth:`archsim.training.cluster.GpuCluster.one_domain`). Expected figures
are worked out by hand from the file: ``intra_server_gbps = 4800`` is 300 GB/s a direction, ``nic_gbps = 200`` is
25 GB/s, 8 NICs of one GPU each.

Before the change plan priced every such pair at one NIC: the 2 × 8 matrix held 25e9 at [0, 8] (its capacity 25e9
too), ``--links exact`` gave the pair the InfiniBand class and a group of GPUs 0 and 8 a Spanning all-reduce; each
test of a domain pair here failed then. The mixed-server and no-domain cases passed before and pin what stays.
"""

from pathlib import Path

import numpy as np
import pytest

from archsim.collectives import Spanning, collective_seconds
from archsim.matrix_collectives import ring_allreduce_on
from archsim.plan_cluster import read_plan_cluster
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.group_links import group_link

CLUSTERS = Path(__file__).resolve().parents[1] / "configs" / "clusters"
NVLINK, NIC = 4800e9 / 8 / 2, 200e9 / 8  # bytes/s one direction: the file's fabric, one NIC


def _file(tmp_path, servers: int, domain: int | None, gpus: str = 'gpu = "a100-80gb"\n', mixed: str = "") -> str:
    """``servers`` servers of 8 A100s (intra 4800 Gbit/s), 8 NICs of 200 Gbit/s, one NVLink domain of ``domain``
    GPUs (None: the key left out, each server its own); ``mixed``: a further [[servers]] table."""
    path = tmp_path / "domain.toml"
    path.write_text('[cluster]\nname = "domain"\n[network]\nnics_per_server = 8\nnic_gbps = 200\n'
                    + ("" if domain is None else f"nvlink_domain = {domain}\n")
                    + f"[[servers]]\ncount = {servers}\ngpus = 8\nintra_server_gbps = 4800\n{gpus}{mixed}")
    return str(path)


def test_two_servers_of_one_domain_plan_every_pair_at_nvlink(tmp_path):
    """2 × 8 A100s in one domain of 16: every one of the 16·15 pairs at 300 GB/s (the NICs carry none), each pair's
    min-cut capacity the link itself (no NIC shared by it); train's group of GPUs 0 and 8 runs at the same 300 GB/s."""
    path = _file(tmp_path, 2, 16)
    topology = read_plan_cluster(path, None)[0]
    off = ~np.eye(16, dtype=bool)
    assert np.all(topology.bandwidth[off] == NVLINK) and np.all(topology.capacity[off] == NVLINK)
    cluster = load_gpu_cluster(path)
    assert np.array_equal(cluster.topology.bandwidth, topology.bandwidth)
    assert group_link(cluster, cluster.gpu, range(0, 9, 8), hop=True).bandwidth == topology.bandwidth[0, 8]


def test_four_servers_in_two_domains_cross_the_nics_between_domains(tmp_path):
    """4 × 8 in domains of 16: GPUs 0 and 8 (domain 0) at NVLink, 0 and 16 (domains 0 and 1) at one NIC, 25 GB/s,
    capacity 25e9 / (1 · 1) (one GPU per NIC); GPUs 16 and 31 (domain 1) at NVLink. A reordered cluster (servers 2,
    0, 1, 3) keeps each server in its domain, as train's groups do: its first two places (file servers 2 and 0) sit in
    domains 1 and 0, its middle two (0 and 1) in domain 0, its outer two (2 and 3) in domain 1."""
    path = _file(tmp_path, 4, 16)
    planned = read_plan_cluster(path, None)[0]
    assert planned.bandwidth[0, 8] == planned.bandwidth[16, 31] == NVLINK
    assert planned.bandwidth[0, 16] == planned.bandwidth[15, 16] == planned.capacity[0, 16] == NIC
    placed = load_gpu_cluster(path).reordered((2, 0, 1, 3))
    assert placed.topology.bandwidth[0, 8] == NIC and placed.topology.bandwidth[8, 16] == NVLINK
    assert placed.topology.bandwidth[0, 24] == NVLINK
    assert group_link(placed, placed.gpu, range(0, 9, 8), hop=True).inter.bandwidth == NIC


def test_a_domain_over_servers_of_two_chips_stays_on_the_nics(tmp_path):
    """One A100 and one H100 server (both 8 GPUs at 4800 Gbit/s) in a domain of 16: train prices a mixed cluster's
    groups over servers on the NICs (GpuCluster.one_domain needs one kind of server), and plan does too: 25 GB/s."""
    path = _file(tmp_path, 1, 16, mixed='[[servers]]\ngpus = 8\nintra_server_gbps = 4800\ngpu = "h100-80gb-sxm"\n')
    planned = read_plan_cluster(path, None)[0]
    cluster = load_gpu_cluster(path)
    assert planned.bandwidth[0, 8] == NIC and not cluster.one_domain(0, 8)


def test_without_a_domain_over_servers_the_pair_is_a_nic(tmp_path):
    """The same 2 × 8 file with nvlink_domain left out (one server's, 8): GPUs 0 and 8 at one NIC, 25 GB/s."""
    assert read_plan_cluster(_file(tmp_path, 2, None), None)[0].bandwidth[0, 8] == NIC


def test_exact_links_give_a_domain_pair_trains_nvlink_class(tmp_path):
    """``plan --links exact`` on 2 × 8 in one domain: the pair 0–8 has the NVLink class train's group of the two
    runs on (same name, bandwidth, η, latencies), its send latency an in-server pair's (both NVLink), and the
    all-reduce of GPUs 0 and 8 is priced on that class alone (no Spanning), as train's collective on it;
    on 4 × 8 in two domains the group 0, 16 still spans the NICs."""
    path = _file(tmp_path, 2, 16)
    topology = read_plan_cluster(path, None, "exact")[0]
    cluster = load_gpu_cluster(path)
    planned = topology.links.pair_class(0, 8, topology.bandwidth)
    trained = group_link(cluster, cluster.gpu, range(0, 9, 8), hop=True)
    assert planned == trained and planned.name == "nvlink" and planned.bandwidth == pytest.approx(NVLINK)
    assert topology.latency[0, 8] == topology.latency[0, 1]
    size = np.array([1e3, 1e8])
    on = topology.links.allreduce_link([0, 8], topology.bandwidth)
    assert not isinstance(on, Spanning)
    assert np.allclose(ring_allreduce_on(size, [0, 8], topology.bandwidth, topology.links),
                       collective_seconds("all-reduce", size, 2, group_link(cluster, cluster.gpu, range(0, 9, 8))))
    four = read_plan_cluster(_file(tmp_path, 4, 16), None, "exact")[0]
    assert isinstance(four.links.allreduce_link([0, 16], four.bandwidth), Spanning)
    assert four.links.pair_class(0, 16, four.bandwidth).name == "infiniband"


@pytest.mark.parametrize("name", ["a100_node.toml", "h100_2_servers.toml", "testbed_v100_gpu.toml",
                                  "mixed_h100_a100_v100.toml", "tpu_v4_like_slice.toml"])
def test_plans_exact_classes_are_trains_group_links(name):
    """One pricing of a link class for both views (archsim.links.server_link): on shipped clusters, ``--links
    exact``'s class of GPUs 0 and 1 of each server is train's two-GPU group's (NVLS too: tests/test_plan_nvls.py),
    and each GPU's diagonal class is train's lone GPU in a group over servers (group_links.intra_server_link)."""
    from archsim.training.group_links import intra_server_link

    path = CLUSTERS / name
    topology, cluster = read_plan_cluster(str(path), None, "exact")[0], load_gpu_cluster(path)
    for server, first in enumerate(cluster.starts[:-1]):
        device = cluster.servers[server]
        if cluster.starts[server + 1] - first > 1:
            trained = group_link(cluster, device, range(first, first + 2), hop=True)
            assert topology.links.pair_class(first, first + 1, topology.bandwidth) == trained
        assert topology.links.classes[topology.links.index[first, first]] == intra_server_link(cluster, device, (0,), server)
