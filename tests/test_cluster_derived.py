"""Issue 38, Build 1: :class:`~archsim.training.cluster.GpuCluster` states no figure its topology states —
``sizes``, ``gpus_per_server`` and ``inter_server_bytes_per_s`` are read off the topology (and its network) it holds,
not carried beside it. Expected figures by hand from the TOML (tomllib), as tests/test_one_cluster_record.py reads
them. The first test failed before (the three were dataclass fields); the others pin that the derived figures are
the ones the file states (their values did not change: shipped outputs compared byte for byte)."""

import dataclasses

import pytest

from archsim.training.cluster import GpuCluster
from archsim.training.cluster_file import load_gpu_cluster, single_node
from tests.test_one_cluster_record import CLUSTERS, TRAINED, _by_hand


def test_the_record_carries_no_figure_its_topology_states():
    """No dataclass field repeats the topology: a server's GPUs, the largest server's, one GPU's NIC share."""
    names = {f.name for f in dataclasses.fields(GpuCluster)}
    assert not names & {"sizes", "gpus_per_server", "inter_server_bytes_per_s"}


@pytest.mark.parametrize("name", TRAINED)
def test_derived_figures_are_the_files(name):
    """Each server's GPUs as the [[servers]] tables state them, the largest as gpus_per_server, and between
    servers one GPU's share of its NIC: nic_gbps / 8 / (GPUs on that NIC) bytes/s (every shipped file's rails
    carry equal GPU counts; a file stating no figure between servers: 1, never used)."""
    sizes, _, _, _, nic, per_nic = _by_hand(name)
    cluster = load_gpu_cluster(CLUSTERS / name)
    assert cluster.sizes == tuple(sizes) and cluster.gpus_per_server == max(sizes)
    assert cluster.inter_server_bytes_per_s == (pytest.approx(nic / per_nic) if nic else 1.0)


def test_a_reordered_cluster_and_a_single_node_derive_theirs():
    """Servers placed 2, 0, 1 of mixed_counts_h100_a100.toml (8 H100s, then 4 and 4 A100s) hold 4, 8, 4 GPUs;
    single_node's one server of 4 GPUs has no network (1 byte/s stand-in) and starts 0, 4."""
    placed = load_gpu_cluster(CLUSTERS / "mixed_counts_h100_a100.toml").reordered((2, 0, 1))
    assert placed.sizes == (4, 8, 4) and placed.gpus_per_server == 8 and placed.starts == (0, 4, 12, 16)
    node = single_node("a100-80gb", 4)
    assert node.gpus_per_server == 4 and node.sizes == () and node.starts == (0, 4)
    assert node.inter_server_bytes_per_s == 1.0
