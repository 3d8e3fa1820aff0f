"""``archsim.collective``'s ``nccl_algorithm``: which of NCCL's algorithms the time is priced on (before, a
``CollectiveCost`` said nothing of it, so the ring/tree switch by size could not be checked). The switch points are
worked by hand from the link class's own α, η·B, per the formulas of archsim/collectives.py's docstring."""

from __future__ import annotations

from pathlib import Path

import pytest

import archsim
from archsim.training.cluster_file import load_gpu_cluster
from archsim.training.parallel import Parallelism

CLUSTERS = Path(__file__).resolve().parents[1] / "configs" / "clusters"
NODE = CLUSTERS / "a100_node.toml"


def test_one_server_tree_below_the_hand_crossover_ring_above():
    """8 GPUs on one link: tree α₀ + 2·3·α + γS + 2S/(ηB) against ring α₀ + 14α + γS + 1.75·S/(ηB): the tree is
    faster below S* = 8α / (0.25 / (ηB)) = 32·α·ηB."""
    link = load_gpu_cluster(NODE).machine(Parallelism(tp=8)).links.tp
    crossover = 32 * link.alpha_s * link.efficiency * link.bandwidth
    below = archsim.collective("all-reduce", 0.95 * crossover, cluster=NODE, gpus=8)
    above = archsim.collective("all-reduce", 1.05 * crossover, cluster=NODE, gpus=8)
    assert (below.nccl_algorithm, above.nccl_algorithm) == ("tree", "ring")
    size = 2**30  # the ring's own formula gives its seconds
    ring = (link.launch_s + link.copy_s_per_byte * size + 14 * link.alpha_s
            + 1.75 * size / (link.efficiency * link.bandwidth))
    assert archsim.collective("all-reduce", size, cluster=NODE, gpus=8).seconds == pytest.approx(ring, rel=1e-12)


def test_nvls_where_the_switch_reduces():
    """An H100 server with nvls = true moves (n + 1)/n of the buffer against the ring's 2(n − 1)/n: NVLS at 1 GiB; the
    same GPUs without it (h100_2_servers.toml) ring."""
    assert archsim.collective("all-reduce", 2**30, cluster=CLUSTERS / "dgx_h100_superpod.toml", gpus=8).nccl_algorithm == "nvls"
    assert archsim.collective("all-reduce", 2**30, cluster=CLUSTERS / "h100_2_servers.toml", gpus=8).nccl_algorithm == "ring"


@pytest.mark.parametrize("kind, name", [("all-gather", "ring"), ("reduce-scatter", "ring"), ("all-to-all", "pairwise")])
def test_the_other_kinds(kind, name):
    assert archsim.collective(kind, 2**20, cluster=NODE, gpus=8).nccl_algorithm == name


def test_one_gpu_per_server_hand_crossover(tmp_path):
    """8 servers, one GPU each on its own 400 Gb/s NIC: the network bounds both (η·B_net ≪ NVLink), ring 14·α_net +
    1.75·S/(ηB) against the tree's 2·⌈log₂ 8⌉·α_net + 2·S/(ηB): the tree below S* = 32·α_net·ηB, the ring above."""
    path = tmp_path / "c.toml"
    path.write_text('[cluster]\n[network]\nnics_per_server = 8\nnic_gbps = 400\n'
                    '[[servers]]\ncount = 8\ngpus = 8\ngpu = "h100"\n', encoding="utf-8")
    net = load_gpu_cluster(path).machine(Parallelism(tp=8, dp=8, global_batch=8)).links.dp.inter
    crossover = 32 * net.alpha_s * net.efficiency * net.bandwidth
    names = [archsim.collective("all-reduce", f * crossover, cluster=path, gpus=8, per_server=1).nccl_algorithm
             for f in (0.95, 1.05)]
    assert names == ["tree", "ring"]
    assert archsim.collective("all-reduce", 2**30, cluster=path, gpus=8, per_server=1).to_dict()["nccl_algorithm"] == "ring"
