"""TP and DP groups inside DGX-1s of V100s each priced on their own GPUs' NVLinks, the rank waiting for its
slowest group (archsim.training.group_links.rank_machine, _wired_within), not on its first group's.
The DGX-1's hybrid cube-mesh (archsim.nvlink_rings.DGX1_V100_LINKS): 0–3, 0–4, 1–2, 1–5, 2–3, 4–7, 5–6, 6–7
share two NVLinks; 0–1, 0–2, 1–3, 2–6, 3–7, 4–5, 4–6, 5–7 one; the other pairs none. So TP 2's groups
0–1 and 4–5 run on one link, 2–3 and 6–7 on two; TP 4 · DP 2's DP pairs 0–4 and 1–5 on two, 2–6 and 3–7
on one.

The expected seconds are derived here from the catalog's V100 board (150 GB/s NVLink per direction over 6
links: 25 GB/s each) and the fitted DGX-1 link constants (archsim.links.V100_NVLINK: η 0.903, α 0, launch
37.9 µs, γ 0.357 ps/B) with the ring all-reduce of archsim.collectives over n = 2 GPUs:
launch + 2(n − 1)·α + γ·S + 2(n − 1)/n · S / (η·B) = 37.9 µs + γ·S + S / (η·B); NCCL's tree for n = 2,
launch + 2⌈log₂ 2⌉·α + γ·S + 2·S / (η·B), is slower, so the ring is what is taken. Not read off the
code's output."""

from __future__ import annotations

from pathlib import Path

import pytest

from archsim.collectives import Spanning
from archsim.training import group_links
from archsim.training.cluster import GpuCluster
from archsim.training.cluster_file import gpu_cluster, load_gpu_cluster, single_node
from archsim.training.iteration import after_backward, model_pieces
from archsim.training.parallel import Parallelism
from archsim.workload.transformer import TransformerConfig

C = TransformerConfig("m", "gpt", layers=8, hidden=2048, heads=16, vocab=50304, seq=2048, ffn=8192, kv_heads=16,
                      tied_embeddings=True, positions=2048)
ONE_LINK = 150e9 / 6  # bytes/s per direction of one V100 NVLink
ACTIVATION = 2048 * 1 * 2048 * 2  # a layer's TP all-reduce: s·b·h fp16 bytes, 8 MiB
MIXED = Path(__file__).resolve().parents[1] / "configs" / "clusters" / "mixed_h100_a100_v100.toml"


def _pair_allreduce(nbytes: float, links: int) -> float:
    """A ring all-reduce of ``nbytes`` over two V100s joined by ``links`` NVLinks (module docstring), on the faster of
    NCCL's Simple and LL128 (α₀ 0.08 µs, 2 steps of 7.69 µs, 0.92 of the bandwidth: archsim.links.V100_PROTOCOLS)."""
    simple = 37.9e-6 + 0.357e-12 * nbytes + nbytes / (0.903 * links * ONE_LINK)
    return min(simple, 0.08e-6 + 2 * 7.69e-6 + 0.357e-12 * nbytes + nbytes / (0.92 * 0.903 * links * ONE_LINK))


def _two_dgx1() -> GpuCluster:
    """Two DGX-1s (8 V100s each, 2400 Gbit/s: the catalog's 150 GB/s per direction) at 100 Gb/s per GPU
    between them."""
    spec = {"cluster": {"name": "dgx1", "inter_server_gbps": 100, "inter_server_link": "per_gpu_pair"},
            "servers": [{"count": 2, "gpus": 8, "intra_server_gbps": 2400, "gpu": "v100-32gb"}]}
    return gpu_cluster(spec, Path("."), "dgx1.toml")


def test_every_rank_waits_for_its_one_link_tp_group():
    # TP 2 · DP 3 · PP 2 on two DGX-1s: rank 0 holds GPUs 0–5 (TP groups 0–1, 2–3, 4–5), rank 1 GPUs 6–11:
    # 6–7 of the first server (two NVLinks), 8–9 and 10–11, the second's 0–1 (one) and 2–3 (two). Each
    # layer's forward all-reduces twice (attention, MLP), 8 MiB each: 2 × (37.9 µs + γ·S + S / 22.575e9)
    # = 2 × 412.48 µs on a one-link pair. Before, rank 1 was priced on its first group 6–7's two links:
    # 2 × 226.69 µs, its TP collectives 1.8× too fast.
    par = Parallelism(tp=2, pp=2, dp=3, global_batch=12, micro_batch=1)
    cluster = _two_dgx1()
    one = 2 * _pair_allreduce(ACTIVATION, 1)
    for machines in (cluster.laid_out(par), cluster.rank_wise(par)):  # what train and search run
        assert machines is not None and len(machines) == 2
        for machine in machines:
            layer = model_pieces(C, par, machine)["layer"]
            assert layer.tp_forward == pytest.approx(one, rel=1e-9)
            assert layer.tp_backward == pytest.approx(one, rel=1e-9)
            assert machine.links.tp.bus_bandwidth == pytest.approx(0.903 * ONE_LINK, rel=1e-12)


def test_a_dp_pair_on_one_nvlink_prices_the_rank():
    # TP 4 · DP 2 on one DGX-1: DP groups 0–4 and 1–5 (two NVLinks), 2–6 and 3–7 (one): all four all-reduce
    # at once and the rank waits for a one-link pair. 10⁶ parameters' fp16 gradients, 2 MB, on LL128: 0.08 + 2 × 7.69
    # µs + γ·S + S / (0.92 × 22.575e9) = 112.47 µs (Simple's 37.9 µs + γ·S + S / 22.575e9 = 127.21 µs). Before, the
    # first pair 0–4’s two links.
    par = Parallelism(tp=4, pp=1, dp=2, global_batch=8, micro_batch=1)
    machine = single_node("v100", 8).machine(par)
    assert after_backward(C, par, machine, 0, 1e6)["dp_allreduce"] == pytest.approx(
        _pair_allreduce(2e6, 1), rel=1e-9)


def test_a_dp_group_over_two_dgx1s_runs_its_slowest_pairs_nvlink():
    # TP 4 · DP 4 on two DGX-1s: DP group t holds GPUs t, t + 4 of each server; t = 2's pair 2–6 has one
    # NVLink, t = 0's 0–4 two. Inside each server the group's ring crosses the one-link pair: 22.575 GB/s,
    # below the two GPUs' share of the NICs (2 × 12.5 GB/s at η 0.96 = 24 GB/s), which bound it before.
    par = Parallelism(tp=4, pp=1, dp=4, global_batch=8, micro_batch=1)
    link = _two_dgx1().machine(par).links.dp
    assert isinstance(link, Spanning)
    assert link.intra.bus_bandwidth == pytest.approx(0.903 * ONE_LINK, rel=1e-12)
    assert link.bus_bandwidth == pytest.approx(0.903 * ONE_LINK, rel=1e-12)


def test_the_shipped_mixed_clusters_v100_rank_waits_for_its_one_link_dp_pairs():
    # configs/clusters/mixed_h100_a100_v100.toml, TP 4 · DP 2 · PP 4: rank 3 fills the V100 server
    # (intra_server_gbps 2400: 25 GB/s a link), DP pairs 0–4 and 1–5 of two NVLinks, 2–6 and 3–7 of one.
    par = Parallelism(tp=4, pp=4, dp=2, global_batch=8, micro_batch=1)
    v100 = load_gpu_cluster(MIXED).laid_out(par)[3]
    assert v100.gpu.name.startswith("NVIDIA V100")
    assert after_backward(C, par, v100, 3, 1e6)["dp_allreduce"] == pytest.approx(_pair_allreduce(2e6, 1), rel=1e-9)


def test_search_prices_each_dgx1_rank_on_its_own_tp_group():
    # TP 2 · PP 4 on one DGX-1: rank r's one TP group is GPUs 2r, 2r + 1, one NVLink for ranks 0 and 2, two
    # for 1 and 3. Before, search priced every rank on rank 0's machine (rank_wise said the ranks were alike).
    par = Parallelism(tp=2, pp=4, dp=1, global_batch=8, micro_batch=1)
    machines = single_node("v100", 8).rank_wise(par)
    assert machines is not None
    assert [m.links.tp.bus_bandwidth for m in machines] == pytest.approx(
        [0.903 * k * ONE_LINK for k in (1, 2, 1, 2)], rel=1e-12)


def test_an_nvswitch_server_prices_one_group_of_each_kind():
    # Every pair of an NVSwitch server has the GPU's whole NVLink: one group of each kind stands for all,
    # and the ranks are alike (300 GB/s per direction on an A100 80 GB, η 0.998).
    par = Parallelism(tp=2, pp=2, dp=2, global_batch=8, micro_batch=1)
    cluster = single_node("a100-80gb", 8)
    priced = []
    original = group_links.group_link

    def counted(on, device, members, hop=False):
        priced.append(tuple(members))
        return original(on, device, members, hop)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(group_links, "group_link", counted)
        machine = cluster.machine(par)
    # rank 0's first TP group, its first DP group, and the pipeline's pair 0–4 (its link, the tied embedding's)
    assert sorted(set(priced)) == [(0, 1), (0, 2), (0, 4)]
    assert machine.links.tp.bus_bandwidth == machine.links.dp.bus_bandwidth == pytest.approx(0.998 * 300e9)
    assert cluster.rank_wise(par) is None
