"""Issue 38, measured: what archsim plan (:func:`archsim.spp.topology.build_topology`'s bandwidth matrix) and
archsim train (:class:`archsim.training.cluster.GpuCluster`'s link classes, the pipeline hop's price) give one pair
of GPUs of the same shipped cluster file, each expected figure derived here from the file's own statements.

Both read ``intra_server_gbps`` as docs/formats.md states it (Gbit/s per GPU, both directions together), so a
transfer in a server gets one direction, half of it, in plan's matrix and in train's hop alike; between servers on
NICs of one GPU each they agree too. They still differ on a shared NIC (plan gives one transfer the whole NIC;
train's hop gets one GPU's share, every GPU of a stage sending at once) and in what a transfer pays beyond the
bandwidth (train's η and launch latency; plan none).
"""

import tomllib
from pathlib import Path

import numpy as np
import pytest

from archsim.links import nic_share
from archsim.spp.topology import build_topology, load_topology_file
from archsim.training.cluster_file import load_gpu_cluster, named_devices
from archsim.training.group_links import group_link
from archsim.training.parallel import Parallelism

CLUSTERS = Path(__file__).resolve().parents[1] / "configs" / "clusters"


def _stated(name: str) -> dict:
    return tomllib.loads((CLUSTERS / name).read_text())


def _hop(name: str, pair_apart: int):
    """train's pipeline-hop link between GPU g and GPU g + ``pair_apart`` (PP 2, DP ``pair_apart``: GPU g of
    rank 0 sends to GPU g of rank 1)."""
    cluster = load_gpu_cluster(CLUSTERS / name)
    machine = cluster.machine(Parallelism(1, 2, pair_apart, 2 * pair_apart, 1))
    return machine.links.pp


def test_an_nvswitch_servers_pair_plans_at_trains_hop():
    """a100_node: 8 A100s on NVSwitch at intra_server_gbps = 4800 (Gbit/s, both directions). plan's GPUs 0–1 and
    train's hop both run one direction, 300 GB/s (the A100's NVLink per direction)."""
    gbps = _stated("a100_node.toml")["servers"][0]["intra_server_gbps"]
    plan = load_topology_file(CLUSTERS / "a100_node.toml").bandwidth[0, 1]
    hop = _hop("a100_node.toml", 1)
    assert hop.name == "nvlink"
    assert plan == hop.bandwidth == gbps * 1e9 / 8 / 2 == 300e9


@pytest.mark.parametrize("name", ["h100_2_servers.toml", "dgx_h100_superpod.toml"])
def test_gpus_on_their_own_nic_rails_agree_between_servers(name):
    """One NIC per GPU (per_gpu_pair; [network] gpus_per_nic = 1): GPU g of server 0 to GPU g of server 1 runs at
    one NIC, 400 Gbit/s = 50 GB/s, in plan and in train's hop alike (train's bus bandwidth is η of it). In-server
    (7200 Gbit/s) one direction in both, 450 GB/s."""
    stated = _stated(name)
    nic = stated.get("network", {}).get("nic_gbps", stated["cluster"]["inter_server_gbps"]) * 1e9 / 8
    gpus = stated["servers"][0]["gpus"]
    plan = load_topology_file(CLUSTERS / name).bandwidth
    hop = _hop(name, gpus)
    assert hop.name == "infiniband"
    assert plan[0, gpus] == plan[1, gpus + 1] == hop.inter.bandwidth == nic == 50e9
    inside = _hop(name, 1)
    assert plan[0, 1] == inside.bandwidth == 7200e9 / 8 / 2


def test_a_shared_nic_plans_one_transfer_at_the_whole_nic_and_trains_a_hop_at_one_gpus_share():
    """testbed_1080ti_gpu: 4 servers of 2 GTX 1080 Ti, one shared NIC of 50 Gbit/s each, PCIe 3.0 ×16 in-server at
    256 Gbit/s both directions (the paper's 128 Gbps a direction). Between servers plan gives one transfer the NIC
    (6.25 GB/s), train's hop one GPU's share (3.125 GB/s: both GPUs of a stage send at once); in-server plan and
    train's PCIe hop both 16 GB/s, one direction."""
    stated = _stated("testbed_1080ti_gpu.toml")
    nic = stated["cluster"]["inter_server_gbps"] * 1e9 / 8
    gpus = stated["servers"][0]["gpus"]
    plan = load_topology_file(CLUSTERS / "testbed_1080ti_gpu.toml").bandwidth
    across, inside = _hop("testbed_1080ti_gpu.toml", gpus), _hop("testbed_1080ti_gpu.toml", 1)
    assert plan[0, gpus] == nic == 6.25e9 and across.inter.bandwidth == nic / gpus
    # one share function, its meaning a parameter: a send alone gets the NIC, every GPU at once its share
    assert plan[0, gpus] == nic_share(nic, gpus, alone=True) and across.inter.bandwidth == nic_share(nic, gpus,
                                                                                                      alone=False)
    assert inside.name == "pcie" and plan[0, 1] == inside.bandwidth == 16e9


def test_plan_prices_transfer_latency_only_with_exact_links():
    """plan's pairs carry no latency by default (the SPP paper's model, Topology.latency 0); train's hop pays its
    link class's launch latency, and plan --links exact the same one, at the same η·B."""
    assert load_topology_file(CLUSTERS / "h100_2_servers.toml").latency == 0.0
    hop = _hop("h100_2_servers.toml", 8).inter
    assert hop.launch_s > 0
    spec = tomllib.loads((CLUSTERS / "h100_2_servers.toml").read_text())
    exact = build_topology(spec, links="exact", devices=named_devices(spec, CLUSTERS, "h100_2_servers.toml"))
    assert exact.latency[0, 8] == hop.launch_s
    assert exact.bandwidth[0, 8] == pytest.approx(load_topology_file(CLUSTERS / "h100_2_servers.toml").bandwidth[0, 8]
                                                  * hop.efficiency, rel=1e-12)


def test_a_nic_shared_by_gpus_is_whole_for_a_send_alone_and_split_when_all_send():
    """nic_share: 2 GPUs on a 100 Gb/s NIC (12.5 GB/s). A send alone (plan) gets 12.5 GB/s, each of the 2 GPUs
    sending at once (train) 6.25; arrays alike (plan's matrix). Plan's matrix for 2 NICs × 2 GPUs per server: a
    transfer between servers at one whole NIC, one in a server at one direction of the A100's NVLink."""
    assert nic_share(12.5e9, 2, alone=True) == 12.5e9 and nic_share(12.5e9, 2, alone=False) == 6.25e9
    shares = nic_share(np.array([12.5e9, 25e9]), np.array([2, 4]), alone=False)
    assert shares.tolist() == [6.25e9, 6.25e9]
    spec = {"cluster": {"name": "two"}, "network": {"nics_per_server": 2, "nic_gbps": 100},
            "servers": [{"count": 2, "gpus": 4, "intra_server_gbps": 4800, "gpu": "a100-80gb"}]}
    plan = build_topology(spec).bandwidth
    assert plan[0, 4] == plan[1, 5] == 12.5e9 and plan[0, 1] == 300e9


@pytest.mark.parametrize("apart, links", [(1, 1), (2, 1), (4, 2)])
def test_a_dgx1_pair_plans_at_trains_hop(tmp_path, apart, links):
    """A DGX-1 of V100s wires its GPUs directly (no NVSwitch): a pair runs on the NVLinks joining it, 25 GB/s each
    (its 2400 Gbit/s both directions over 6 links), in plan's matrix as in train's hop (GPU 0 to GPU ``apart``:
    one link to GPUs 1 and 2, two to GPU 4; the hybrid cube-mesh figure); a pair no NVLink joins (0 and 5) runs on
    PCIe, 16 GB/s."""
    path = tmp_path / "dgx1.toml"
    path.write_text('[cluster]\nname = "dgx1"\n[[servers]]\ngpus = 8\nintra_server_gbps = 2400\ngpu = "v100-32gb"\n')
    plan = load_topology_file(path).bandwidth
    cluster = load_gpu_cluster(path)
    # the pair's own hop (a stage's slowest pair sets its pp link: GPUs 1 and 5 share no NVLink)
    hop = group_link(cluster, cluster.gpu, range(0, apart + 1, apart), hop=True)
    assert plan[0, apart] == plan[apart, 0] == hop.bandwidth == links * 2400e9 / 8 / 2 / 6
    assert plan[0, 5] == cluster.gpu.pcie_bytes_per_s == 16e9
