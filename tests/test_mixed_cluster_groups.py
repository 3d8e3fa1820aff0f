"""Mixed clusters: every group priced on the GPUs and in-server links of the servers it sits in
(archsim.training.group_links.group_link), not on the asking rank's GPU or its first group's server.
The expected seconds are derived here from the catalog boards and the fitted link constants
(archsim.links: A100_NVLINK η 0.998, α 3.15 µs, launch 52.7 µs, γ 1.8 ps/B; V100_NVLINK η 0.903,
α 0, launch 37.9 µs) and the collectives' formulas (archsim.collectives), not read off the code's output."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from archsim.collectives import LinkClass, Spanning, collective_seconds
from archsim.training.cluster_file import gpu_cluster
from archsim.training.iteration import model_pieces
from archsim.training.parallel import Parallelism
from archsim.training.stages import rank_stage_times
from archsim.workload.transformer import TransformerConfig

C = TransformerConfig("m", "gpt", layers=8, hidden=2048, heads=16, vocab=50304, seq=2048, ffn=8192, kv_heads=16,
                      tied_embeddings=True, positions=2048)


def _cluster(second_gpu: str, second_gbps: int):
    """One 8-GPU A100 80 GB server at 4800 Gbit/s (300 GB/s per direction) and one 8-GPU server of
    ``second_gpu`` at ``second_gbps``, 200 Gb/s per GPU between them."""
    spec = {"cluster": {"name": "mixed", "inter_server_gbps": 200, "inter_server_link": "per_gpu_pair"},
            "servers": [{"count": 1, "gpus": 8, "intra_server_gbps": 4800, "gpu": "a100-80gb"},
                        {"count": 1, "gpus": 8, "intra_server_gbps": second_gbps, "gpu": second_gpu}]}
    return gpu_cluster(spec, Path("."), "mixed.toml")


def test_a_hop_inside_the_v100_server_runs_on_its_dgx1_rings():
    # TP 4 · PP 4 on 8 A100 + 8 V100: ranks 0, 1 on the A100 server, ranks 2, 3 on the V100 one. Hop 2→3
    # sends GPU 8 + g to GPU 12 + g: the V100 server's pairs 0–4 and 1–5 (two NVLinks each on a DGX-1's
    # hybrid cube-mesh), 2–6 and 3–7 (one each), every g at once, so the hop waits for a one-link pair:
    # 2400 Gbit/s / 8 / 2 / 6 links = 25 GB/s per direction at η 0.903 = 22.575 GB/s. A hop moves
    # s·b·h·2 / TP = 2048 · 1 · 2048 · 2 / 4 = 2,097,152 bytes: p2p = 37.9 µs + 2,097,152 / 22.575e9
    # = 130.797 µs. (Before, the first pair 0–4's two links: 84.349 µs; before that, rank 0's A100 priced
    # it as an NVSwitch at 150 GB/s: 52.7 µs + 2,097,152 / (0.998 · 150e9) = 66.71 µs.)
    # Hop 0→1 inside the A100 server: 52.7 µs + 2,097,152 / (0.998 · 300e9) = 59.704 µs.
    cluster = _cluster("v100-32gb", 2400)
    par = Parallelism(tp=4, pp=4, dp=1, global_batch=8, micro_batch=1)
    machines = cluster.laid_out(par)
    assert [m.gpu.name for m in machines] == ["NVIDIA A100 SXM4 80GB"] * 2 + ["NVIDIA V100 SXM2 32GB"] * 2
    times = rank_stage_times(C, par, machines, [model_pieces(C, par, m) for m in machines])
    nbytes = 2048 * 1 * 2048 * 2 / 4
    assert times.boundary_comm[2] == pytest.approx(37.9e-6 + nbytes / (0.903 * 25e9), rel=1e-9)
    assert times.boundary_comm[0] == pytest.approx(52.7e-6 + nbytes / (0.998 * 300e9), rel=1e-9)
    # every rank sees the same hops: a hop's link is its servers', whoever asks
    assert len({m.links.pp_hops for m in machines}) == 1 and len({m.links.pp for m in machines}) == 1


def test_the_pipeline_link_over_both_servers_runs_at_the_slower_servers_nvlink():
    # The pipeline's pp link (ranks' first GPUs 0, 4, 8, 12) spans both servers: its NVLink part is the
    # slower server's, the V100's GPUs 0 and 4 (the V100 server stating 4800 Gbit/s: 50 GB/s a link, two
    # rings × 50 = 100 GB/s at η 0.903 = 90.3 GB/s; the A100 server's 0 and 4 run at 0.998 · 300 = 299.4
    # GB/s), whichever rank asks; its network part one GPU's NIC: 200 Gb/s / 8 = 25 GB/s at η 0.96, the
    # pipeline's slowest (the V100 server's own hop 2→3 waits for its one-link pairs 2–6, 3–7: 45.15 GB/s;
    # at 2400 Gbit/s that hop, 22.575 GB/s, would be the slowest, test_a_hop_inside_the_v100_server_…).
    cluster = _cluster("v100-32gb", 4800)
    par = Parallelism(tp=4, pp=4, dp=1, global_batch=8, micro_batch=1)
    for machine in cluster.laid_out(par):
        link = machine.links.pp
        assert isinstance(link, Spanning)
        assert link.intra.bus_bandwidth == pytest.approx(0.903 * 100e9, rel=1e-12)
        assert link.inter.bus_bandwidth == pytest.approx(0.96 * 25e9, rel=1e-12)


def test_a_ranks_tp_groups_wait_for_the_slower_servers_nvlink():
    # TP 8 · DP 2 on two A100 80 GB servers, the second stating 2400 Gbit/s (150 GB/s per direction):
    # the rank's two TP groups all-reduce at once and the iteration waits for the slower, on 150 GB/s
    # at η 0.998 = 149.7 GB/s. An all-reduce of S = 64 MiB over n = 8 on NVSwitch: the ring,
    # launch + γS + 2(n − 1)/n · S / B + 2(n − 1)α = 52.7 µs + 120.80 µs + 784.51 µs + 44.1 µs
    # = 1002.10 µs, beats the tree (launch + 2⌈log₂ n⌉α + γS + 2S/B = 1088.97 µs). (Before, the first
    # group's server priced it at 299.4 GB/s: 609.85 µs.)
    cluster = _cluster("a100-80gb", 2400)
    par = Parallelism(tp=8, pp=1, dp=2, global_batch=16, micro_batch=1)
    (machine,) = cluster.laid_out(par)
    assert isinstance(machine.links.tp, LinkClass)
    s, n, bw = 64 * 2**20, 8, 0.998 * 150e9
    ring = 52.7e-6 + 1.8e-12 * s + 2 * (n - 1) / n * s / bw + 2 * (n - 1) * 3.15e-6
    tree = 52.7e-6 + 2 * math.ceil(math.log2(n)) * 3.15e-6 + 1.8e-12 * s + 2 * s / bw
    assert ring < tree
    assert float(collective_seconds("all-reduce", s, n, machine.links.tp)) == pytest.approx(ring, rel=1e-9)


def test_a_uniform_clusters_links_are_its_first_groups():
    # Two A100 servers of one link: both TP groups alike, priced as before (300 GB/s per direction).
    cluster = _cluster("a100-80gb", 4800)
    assert not cluster.heterogeneous
    par = Parallelism(tp=8, pp=1, dp=2, global_batch=16, micro_batch=1)
    assert cluster.laid_out(par)[0].links.tp.bandwidth == 300e9
