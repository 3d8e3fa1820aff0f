"""``plan --links exact`` prices an in-server all-reduce with NVLS (NVLink SHARP, the NVSwitch reducing) exactly where
train does: the cluster file's ``[network] nvls = true`` on a board whose switch can reduce (one rule,
:func:`archsim.links.switch_reduces`, read by :func:`archsim.links.server_link`).

Before the change plan's exact classes never carried NVLS: on ``dgx_h100_superpod.toml`` (``nvls = true``) an 8-GPU
all-reduce in one server was priced on the ring, 5.793 ms for 1 GB against train's 4.364 ms (77.9 µs against 63.3 µs
for 1 MB), and both superpod cases here failed; ``h100_2_servers.toml`` (no ``nvls``) passed and pins what stays.
"""

from pathlib import Path

import numpy as np
import pytest

from archsim.collectives import collective_seconds
from archsim.matrix_collectives import ring_allreduce_on
from archsim.plan_cluster import read_plan_cluster
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.group_links import group_link

CLUSTERS = Path(__file__).resolve().parents[1] / "configs" / "clusters"
SIZES = np.array([1e6, 1e9])  # bytes: 1 MB and 1 GB


def _plan_and_train(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Seconds of an all-reduce of :data:`SIZES` over GPUs 0…7 (server 0): plan's exact links, train's group."""
    topology = read_plan_cluster(str(CLUSTERS / name), None, "exact")[0]
    cluster = load_gpu_cluster(CLUSTERS / name)
    planned = ring_allreduce_on(SIZES, list(range(8)), topology.bandwidth, topology.links)
    trained = collective_seconds("all-reduce", SIZES, 8, group_link(cluster, cluster.gpu, range(8)))
    return np.asarray(planned), np.asarray(trained)


@pytest.mark.parametrize("name", ["dgx_h100_superpod.toml", "h100_2_servers.toml"])
def test_plans_in_server_allreduce_is_trains(name):
    """One cluster, one collectives model: the same 8-GPU group costs plan what it costs train, NVLS or not."""
    planned, trained = _plan_and_train(name)
    assert np.allclose(planned, trained, rtol=1e-12, atol=0.0)


def test_superpod_allreduce_is_the_nvls_formula_by_hand():
    """docs/training.md's NVLS all-reduce, α₀ + 2α + γ·S + (n + 1)/n · S / (η·B), by hand for 8 H100 SXM at
    ``intra_server_gbps = 7200`` (B = 7200e9 / 8 / 2 = 450e9 bytes/s a direction) on the NVLink fit (η 0.998,
    α 3.15 µs, α₀ 52.7 µs, γ 1.80e-12 s/byte; the H100 states no latency of its own): 1 MB 63.3 µs, 1 GB
    4.364 ms, below NCCL's best without NVLS (the tree's 77.9 µs, α₀ + 2⌈log₂ n⌉α + γ·S + 2S/(η·B); the ring's
    5.793 ms, α₀ + 2(n − 1)α + γ·S + 2(n − 1)/n · S/(η·B)), which plan gave before."""
    eta, alpha, launch, copy, fabric, n = 0.998, 3.15e-6, 52.7e-6, 1.80e-12, 450e9, 8
    nvls = launch + 2 * alpha + copy * SIZES + (n + 1) / n * SIZES / (eta * fabric)
    ring = launch + 2 * (n - 1) * alpha + copy * SIZES + 2 * (n - 1) / n * SIZES / (eta * fabric)
    tree = launch + 2 * 3 * alpha + copy * SIZES + 2 * SIZES / (eta * fabric)
    assert np.round(nvls * 1e6, 1).tolist() == [63.3, 4364.0]
    assert np.round(np.minimum(ring, tree) * 1e6, 1).tolist() == [77.9, 5793.5]
    planned, trained = _plan_and_train("dgx_h100_superpod.toml")
    assert planned == pytest.approx(nvls, rel=1e-12) and trained == pytest.approx(nvls, rel=1e-12)


def test_a_domain_pair_reduces_in_the_switch_as_trains_group_does(tmp_path):
    """2 × 8 H100 SXM in one NVLink domain of 16 with ``nvls = true``: train's group of GPUs 0 and 8 runs on NVLink
    with NVLS (GpuCluster.one_domain), so plan's class of the pair carries it too and the two all-reduces agree;
    a GPU's own (diagonal) class, train's lone GPU of a group over servers, does not. Failed before the change
    (the pair's class had no NVLS)."""
    path = tmp_path / "domain.toml"
    path.write_text('[cluster]\nname = "domain"\n[network]\nnics_per_server = 8\nnic_gbps = 400\nnvlink_domain = 16\n'
                    'nvls = true\n[[servers]]\ncount = 2\ngpus = 8\nintra_server_gbps = 7200\ngpu = "h100-80gb-sxm"\n')
    topology = read_plan_cluster(str(path), None, "exact")[0]
    cluster = load_gpu_cluster(path)
    trained = group_link(cluster, cluster.gpu, range(0, 9, 8))
    assert trained.nvls and topology.links.pair_class(0, 8, topology.bandwidth) == trained
    assert not topology.links.classes[topology.links.index[0, 0]].nvls
    assert np.allclose(ring_allreduce_on(SIZES, [0, 8], topology.bandwidth, topology.links),
                       collective_seconds("all-reduce", SIZES, 2, trained), rtol=1e-12, atol=0.0)
