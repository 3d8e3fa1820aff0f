"""The network as built (a cluster's [network] table) and collectives across servers, NCCL's way."""

import math
from pathlib import Path

import pytest

from archsim.collectives import LinkClass, Spanning, collective_seconds
from archsim.errors import InputError
from archsim.training.cluster import load_gpu_cluster
from archsim.training.nccl_cited import predicted_bus_gbytes_per_s, read_cited
from archsim.training.parallel import Parallelism

ROOT = Path(__file__).resolve().parents[1]
CITED = ROOT / "tests" / "data" / "nccl_multinode.csv"
SERVERS = '[[servers]]\ncount = {count}\ngpus = 8\nintra_server_gbps = 4800\ngpu = "a100-80gb"\n'


def _cluster(tmp_path, cluster: str, network: str = "", count: int = 4):
    path = tmp_path / "c.toml"
    path.write_text(f"[cluster]\n{cluster}\n{network}\n" + SERVERS.format(count=count))
    return load_gpu_cluster(path)


def test_older_keys_mean_what_they_meant_and_equal_their_network_table(tmp_path):
    legacy = _cluster(tmp_path, 'inter_server_gbps = 200\ninter_server_link = "per_gpu_pair"')
    table = _cluster(tmp_path, 'inter_server_gbps = 200\ninter_server_link = "per_gpu_pair"',
                     "[network]\nnics_per_server = 8\nnic_gbps = 200\ngpus_per_nic = 1")
    par = Parallelism(tp=8, pp=2, dp=2, global_batch=8)
    assert legacy.machine(par) == table.machine(par)
    assert legacy.inter_server_bytes_per_s == 200e9 / 8  # each GPU its own 200 Gb/s NIC
    shared = _cluster(tmp_path, "inter_server_gbps = 200")
    assert shared.inter_server_bytes_per_s == 200e9 / 8 / 8  # one NIC, shared by the server's 8 GPUs
    # a DP group of one GPU per server: that GPU's share, as before
    assert shared.machine(Parallelism(tp=8, dp=2, global_batch=2)).links.dp.inter.bandwidth == 200e9 / 64


def test_a_group_that_fills_its_servers_moves_over_every_rail(tmp_path):
    cluster = load_gpu_cluster(ROOT / "configs" / "clusters" / "vtrain_a100.toml")
    links = cluster.machine(Parallelism(tp=16, global_batch=1)).links
    assert isinstance(links.tp, Spanning) and links.tp.per_server == 8
    assert links.tp.inter.bandwidth == 8 * 100e9 / 8  # 8 NICs of 100 Gb/s, not one GPU's
    dp = cluster.machine(Parallelism(tp=2, dp=8, global_batch=8)).links.dp  # 4 GPUs per server, 2 groups at once
    assert dp.inter.bandwidth == 4 * 100e9 / 8
    hop = cluster.machine(Parallelism(tp=8, pp=2, global_batch=2)).links.pp  # each GPU sends its own slice
    assert hop.inter.bandwidth == 100e9 / 8


def test_shared_nics_and_oversubscription_cut_the_share(tmp_path):
    network = "[network]\nnics_per_server = 4\nnic_gbps = 200\nservers_per_leaf = 2\noversubscription = 2.0"
    cluster = _cluster(tmp_path, "inter_server_gbps = 200", network)
    tp16 = cluster.machine(Parallelism(tp=16, global_batch=1)).links.tp  # servers 0 and 1: one leaf
    assert tp16.inter.bandwidth == 4 * 200e9 / 8
    dp = cluster.machine(Parallelism(tp=8, dp=4, global_batch=4)).links.dp  # servers 0…3: two leaves
    assert dp.inter.bandwidth == 200e9 / 8 / 2 / 2  # a GPU's half NIC, halved above the leaf


def test_an_nvlink_domain_of_two_servers_keeps_tp16_on_nvlink(tmp_path):
    cluster = _cluster(tmp_path, "inter_server_gbps = 200", "[network]\nnics_per_server = 8\nnic_gbps = 200\n"
                                                              "nvlink_domain = 16")
    assert cluster.machine(Parallelism(tp=16, global_batch=1)).links.tp.name == "nvlink"


def test_spanning_collectives_by_hand():
    intra = LinkClass("nvlink", 300e9, 1.0, 2e-6, 10e-6)
    inter = LinkClass("ib", 100e9, 1.0, 5e-6, 10e-6)
    link = Spanning(intra, inter, 8)
    s = 1e9
    # ring over 16 GPUs on 2 servers: 2·14 NVLink steps, 2 network steps; the network's 100 GB/s is slower
    # than 7/8 of the NVLink ring's traffic at 300 GB/s: 10 µs + 56 µs + 10 µs + 2·15/16·1e9/100e9
    ring = 10e-6 + 28 * 2e-6 + 2 * 5e-6 + 2 * 15 / 16 * s / 100e9
    tree = 10e-6 + 2 * (7 * 2e-6 + 1 * 5e-6) + 2 * s / 100e9
    assert collective_seconds("all-reduce", s, 16, link) == pytest.approx(min(ring, tree))
    assert collective_seconds("all-reduce", 1e3, 16, link) == pytest.approx(10e-6 + 2 * (7 * 2e-6 + 5e-6)
                                                                           + 2e3 / 100e9)  # small: the tree
    assert collective_seconds("all-gather", s, 16, link) == pytest.approx(10e-6 + 14 * 2e-6 + 5e-6
                                                                         + 15 / 16 * s / 100e9)
    # all-to-all: 8/16 of each GPU's buffer leaves through its own eighth of the NICs (12.5 GB/s)
    assert collective_seconds("all-to-all", s, 16, link) == pytest.approx(10e-6 + 7 * 2e-6 + 5e-6
                                                                         + 8 / 16 * s / 12.5e9)
    assert collective_seconds("p2p", s, 2, link) == pytest.approx(10e-6 + s / 100e9)


def test_nvls_all_reduce_moves_n_plus_one_over_n_buffers():
    link = LinkClass("nvlink", 450e9, 1.0, 0.0, 0.0, nvls=True)
    assert collective_seconds("all-reduce", 8e9, 8, link) == pytest.approx(9 / 8 * 8e9 / 450e9)


@pytest.mark.parametrize("network, field", [
    ("nics_per_server = 8\nnic_gbps = 200\nspeed = 1", "speed"),
    ("nic_gbps = 200", "nics_per_server"),
    ("nics_per_server = 8\nnic_gbps = 200\nnvlink_domain = 12", "nvlink_domain"),
    ("nics_per_server = 8\nnic_gbps = 200\noversubscription = 0.5", "oversubscription"),
    ("nics_per_server = 8\nnic_gbps = 200\nswitch_tiers = 4", "switch_tiers"),
    ("nics_per_server = 8\nnic_gbps = -1", "nic_gbps"),
    ("nics_per_server = 8\nnic_gbps = 200\nnvls = 1", "nvls"),
])
def test_bad_network_tables_name_their_field(tmp_path, network, field):
    with pytest.raises(InputError) as error:
        _cluster(tmp_path, "inter_server_gbps = 200", f"[network]\n{network}")
    assert error.value.where.field == field


@pytest.mark.parametrize("name", ["dgx_a100_superpod", "dgx_h100_superpod", "vtrain_a100"])
def test_shipped_clusters_load_with_one_nic_per_gpu(name):
    cluster = load_gpu_cluster(ROOT / "configs" / "clusters" / f"{name}.toml")
    assert cluster.network is not None and cluster.network.nics_per_server == 8 == cluster.gpus_per_server
    assert cluster.network.nvls == (name == "dgx_h100_superpod")


def test_cited_multi_server_all_reduces():
    """nccl-tests figures from public threads (tests/data/nccl_multinode.csv), none fitted: the two
    sound InfiniBand systems within 12% (−7% and +11% today); the RoCE system the maintainers called
    low is slower than the model."""
    runs = read_cited(CITED)
    for run in runs:
        error = predicted_bus_gbytes_per_s(run) / run.bus_gbytes_per_s - 1
        if run.expected == "match":
            assert abs(error) <= 0.12, run
        elif run.expected == "below-model":
            assert error > 0.1, run
    nvls, ring = (next(r for r in runs if r.algorithm == a and r.gpu.startswith("h100")) for a in ("nvls", "ring"))
    # NVLS's gain over the ring on 8 H100s (the maintainer: ~480 vs ~370 GB/s) within 5%; each alone is
    # 15–17% slow, the A100-fitted copy cost γ charged on a GPU with faster memory (docs/training.md)
    gain = predicted_bus_gbytes_per_s(nvls) / predicted_bus_gbytes_per_s(ring)
    assert gain == pytest.approx(nvls.bus_gbytes_per_s / ring.bus_gbytes_per_s, rel=0.05)
    assert math.isclose(predicted_bus_gbytes_per_s(ring) / ring.bus_gbytes_per_s, 0.83, abs_tol=0.05)
