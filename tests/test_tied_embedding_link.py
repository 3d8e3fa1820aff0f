"""The tied embedding's gradient all-reduce priced on the link between the GPUs that run it: Megatron's
embedding group is GPU g of the first pipeline rank and GPU g of the last, all g at once
(archsim.training.machine.Links.embedding, built by archsim.training.group_links._pair_link), not the pipeline's
link over its ranks' first GPUs. The expected seconds are derived here from the cluster files' stated bandwidths,
the catalog and the fitted link constants (archsim.training.fitted: NVLink η 0.998, α 3.15 µs, launch
52.7 µs, γ 1.8 ps/B; a NIC η 0.96, α 6.3 µs, launch 52.7 µs; V100 DGX-1 η 0.903, α 0, launch 37.9 µs,
γ 0.357 ps/B) and the collectives' formulas (archsim.collectives), not read off the code's output.

Two GPUs on two servers, one GPU of each (per_server 1, m = 2 servers): the ring's two steps both cross
the network, 2·α_NIC, and its bytes (n − 1)/n · 2 = 1 × the buffer go through one GPU's NIC share
(γ·s is smaller), so the all-reduce is launch + 2·α_NIC + s / (η_NIC · NIC bytes/s); the tree pays
2·s/NIC and loses."""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim.collectives import LinkClass, Spanning
from archsim.training.cluster_file import load_gpu_cluster, single_node
from archsim.training.iteration import after_backward
from archsim.training.parallel import Parallelism
from archsim.training.run import train
from archsim.workload.transformer import TransformerConfig

ROOT = Path(__file__).resolve().parents[1]
CLUSTERS = ROOT / "configs" / "clusters"
C = TransformerConfig("m", "gpt", layers=8, hidden=2048, heads=16, vocab=50304, seq=2048, ffn=8192, kv_heads=16,
                      tied_embeddings=True, positions=2048)
# The fp16 token table each GPU holds: vocabulary padded to a multiple of 128·TP, its 1/TP rows × hidden × 2 B.
TABLE_TP2 = 50432 // 2 * 2048 * 2  # 50,304 → 50,432 (197 × 256): 103,284,736 B
TABLE_TP4 = 50688 // 4 * 2048 * 2  # 50,304 → 50,688 (99 × 512): 51,904,512 B
TABLE_TP1 = 50304 * 2048 * 2  # 393 × 128: 206,045,184 B


def _network_pair(nbytes: float, nic_gbps: float) -> float:
    """All-reduce of ``nbytes`` between two GPUs on two servers, each on its own NIC of ``nic_gbps``."""
    return 52.7e-6 + 2 * 6.3e-6 + nbytes / (0.96 * nic_gbps * 1e9 / 8)


def _nvlink_pair(nbytes: float, per_direction: float) -> float:
    """All-reduce of ``nbytes`` between two GPUs of one NVSwitch server (the ring: 2 steps of α, the
    buffer once over the link, plus its copy), ``per_direction`` bytes/s per GPU."""
    return 52.7e-6 + 1.8e-12 * nbytes + 2 * 3.15e-6 + nbytes / (0.998 * per_direction)


def _tied_terms(cluster, par: Parallelism) -> list[float]:
    machines = cluster.laid_out(par)
    return [post["embedding_allreduce"] for post in train(C, par, machines[0], machines).post]


def test_ends_on_two_servers_all_reduce_over_the_network():
    # 2 servers × 8 H100, 400 Gb/s NIC per GPU (h100_2_servers.toml). TP 2 · DP 2 · PP 4: ranks 0, 1 on
    # server 0 (GPUs 0–7), ranks 2, 3 on server 1; GPU g of rank 0 all-reduces with GPU 12 + g over the
    # network. 52.7 + 12.6 µs + 103,284,736 / 48e9 = 2,217.07 µs on ranks 0 and 3 (NVLink would be ≈ 474 µs).
    # Before, the pipeline's link over GPUs 0, 4, 8, 12 (two of them per server) took the ring's two steps
    # as NVLink ones: 2 × 3.15 µs instead of 2 × 6.3 µs, 6.3 µs short.
    cluster = load_gpu_cluster(CLUSTERS / "h100_2_servers.toml")
    tied = _tied_terms(cluster, Parallelism(tp=2, pp=4, dp=2, global_batch=8, micro_batch=1))
    network = _network_pair(TABLE_TP2, 400)
    assert tied == pytest.approx([network, 0.0, 0.0, network], rel=1e-9)
    assert network > 4 * _nvlink_pair(TABLE_TP2, 7200e9 / 8 / 2)


def test_ends_sharing_a_server_first_gpu_still_cross_for_the_others():
    # TP 2 · DP 3 · PP 2 on 2 × 8 H100: rank 0 holds GPUs 0–5, rank 1 GPUs 6–11. GPUs 0, 1 pair with
    # 6, 7 inside server 0, but 2…5 with 8…11 on server 1: the all-reduce waits for those, over the
    # network. Before, the two ranks' first GPUs (0 and 6) share server 0 and it was priced on NVLink,
    # 4.7× too cheap.
    cluster = load_gpu_cluster(CLUSTERS / "h100_2_servers.toml")
    par = Parallelism(tp=2, pp=2, dp=3, global_batch=6, micro_batch=1)
    machine = cluster.laid_out(par)[0]
    network = _network_pair(TABLE_TP2, 400)
    assert after_backward(C, par, machine, 0, 1e6)["embedding_allreduce"] == pytest.approx(network, rel=1e-9)
    assert isinstance(machine.links.embedding, Spanning) and machine.links.embedding.per_server == 1


def test_one_nvswitch_server_is_unchanged():
    # TP 2 · PP 4 on one 8-GPU A100 server (300 GB/s per direction): GPU g of rank 0 and GPU 6 + g of
    # rank 3 on the NVSwitch, the same link as the pipeline's: 52.7 + 6.3 µs + 0.186 ms + 103,284,736 /
    # 299.4e9 = 589.89 µs.
    node = single_node("a100-80gb", 8)
    par = Parallelism(tp=2, pp=4, dp=1, global_batch=8, micro_batch=1)
    nvlink = _nvlink_pair(TABLE_TP2, 300e9)
    assert _tied_terms(node, par) == pytest.approx([nvlink, 0.0, 0.0, nvlink], rel=1e-9)
    machine = node.machine(par)
    assert machine.links.embedding == machine.links.pp


def test_dgx1_ends_without_an_nvlink_between_them_use_pcie():
    # DP 2 · PP 4 on one DGX-1 of V100s: rank 0 holds GPUs 0, 1, rank 3 GPUs 6, 7. In its hybrid
    # cube-mesh (0–3 and 4–7 fully linked, i to i + 4) neither 0–6 nor 1–7 share an NVLink, so their
    # all-reduce has no NVLink ring and runs over PCIe (16 GB/s, η 0.903; α 0): 37.9 µs + 0.357 ps × s +
    # s / 14.448e9 = 14.373 ms. Before, it was priced on the rings of GPUs 0, 2, 4, 6 (45.15 GB/s), 3× too cheap.
    node = single_node("v100", 8)
    par = Parallelism(tp=1, pp=4, dp=2, global_batch=8, micro_batch=1)
    machine = node.machine(par)
    pcie = 37.9e-6 + 0.357e-12 * TABLE_TP1 + TABLE_TP1 / (0.903 * 16e9)
    assert after_backward(C, par, machine, 3, 1e6)["embedding_allreduce"] == pytest.approx(pcie, rel=1e-9)
    assert isinstance(machine.links.embedding, LinkClass) and machine.links.embedding.name == "pcie"


def test_reordered_mixed_cluster_prices_the_ends_on_their_own_servers():
    # mixed_h100_a100_v100.toml with the V100 server first (a placement order), then the H100 one:
    # TP 4 · PP 4 puts ranks 0, 1 on the V100 server and ranks 2, 3 on the H100 one. GPU g (V100) and
    # GPU 12 + g (H100) all-reduce over one 200 Gb/s NIC each: 52.7 + 12.6 µs + 51,904,512 / 24e9 =
    # 2,227.99 µs, the same on both ends, whichever GPU type asks.
    cluster = load_gpu_cluster(CLUSTERS / "mixed_h100_a100_v100.toml").reordered((3, 0, 1, 2))
    par = Parallelism(tp=4, pp=4, dp=1, global_batch=8, micro_batch=1)
    machines = cluster.laid_out(par)
    assert [m.gpu.name for m in machines] == ["NVIDIA V100 SXM2 32GB"] * 2 + ["NVIDIA H100 SXM5 80GB"] * 2
    network = _network_pair(TABLE_TP4, 200)
    assert _tied_terms(cluster, par) == pytest.approx([network, 0.0, 0.0, network], rel=1e-9)


def test_untied_embeddings_or_one_stage_pay_nothing():
    cluster = load_gpu_cluster(CLUSTERS / "h100_2_servers.toml")
    par = Parallelism(tp=2, pp=4, dp=2, global_batch=8, micro_batch=1)
    untied = TransformerConfig("u", "gpt", layers=8, hidden=2048, heads=16, vocab=50304, seq=2048, ffn=8192,
                               kv_heads=16, tied_embeddings=False, positions=2048)
    assert all(after_backward(untied, par, m, r, 1e6)["embedding_allreduce"] == 0.0
               for r, m in enumerate(cluster.laid_out(par)))
    one = Parallelism(tp=2, pp=1, dp=2, global_batch=8, micro_batch=1)
    assert cluster.machine(one).links.embedding is None
    assert after_backward(C, one, cluster.machine(one), 0, 1e6)["embedding_allreduce"] == 0.0
