"""Pipeline hops inside a DGX-1 of V100s priced on each hop's own GPU pairs (GPU g of rank r sends to GPU g
of rank r + 1, every g at once; the slowest pair sets the hop), not on the rings of the ranks' first GPUs
(archsim.training.group_links.pipeline_hops, _pair_link). The DGX-1's hybrid cube-mesh
(archsim.training.nvlink_rings.DGX1_V100_LINKS): GPUs 0–3 and 4–7 fully linked, GPU i to i + 4; 0–3, 0–4,
1–2, 1–5, 2–3, 4–7, 5–6, 6–7 by two NVLinks, the others by one; 2–4, 3–5, 0–6, 1–7 by none (PCIe).

The expected seconds are derived here from the catalog's V100 board (150 GB/s NVLink per direction over 6
links, 25 GB/s each; PCIe 16 GB/s) and the fitted DGX-1 link constants (archsim.training.fitted.V100_NVLINK:
η 0.903, launch 37.9 µs, α 0) with the p2p formula (archsim.collectives: launch + bytes / (η · bandwidth)),
not read off the code's output. A hop sends the s·b·h fp16 activation over TP: 2048 · 1 · 2048 · 2 / TP
bytes per micro-batch."""

from __future__ import annotations

import pytest

from archsim.collectives import LinkClass
from archsim.training.cluster_file import single_node
from archsim.training.iteration import after_backward, model_pieces
from archsim.training.parallel import Parallelism
from archsim.training.stages import stage_times
from archsim.workload.transformer import TransformerConfig

C = TransformerConfig("m", "gpt", layers=8, hidden=2048, heads=16, vocab=50304, seq=2048, ffn=8192, kv_heads=16,
                      tied_embeddings=True, positions=2048)
ONE_LINK = 150e9 / 6  # bytes/s per direction of one V100 NVLink
PCIE = 16e9


def _p2p(tp: int, bandwidth: float) -> float:
    """One hop's slice on a DGX-1 link of ``bandwidth`` bytes/s per direction."""
    return 37.9e-6 + 2048 * 2048 * 2 / tp / (0.903 * bandwidth)


def _times(par: Parallelism, gpus: int = 8):
    machine = single_node("v100", gpus).machine(par)
    return machine, stage_times(C, par, machine, model_pieces(C, par, machine))


def test_a_hop_between_gpus_without_an_nvlink_runs_over_pcie():
    # DP 2 · PP 4: rank r holds GPUs 2r, 2r + 1. Hop 0→1 pairs 0–2 and 1–3 (one NVLink each), hop 1→2
    # pairs 2–4 and 3–5 (no NVLink: PCIe), hop 2→3 pairs 4–6 and 5–7 (one each): 8,388,608 B a hop,
    # 409.49 µs, 618.51 µs, 409.49 µs. Before, every hop was priced on the rings of GPUs 0, 2, 4, 6 (two
    # rings, 50 GB/s: 223.69 µs), the PCIe hop 2.8× too cheap.
    par = Parallelism(tp=1, pp=4, dp=2, global_batch=8, micro_batch=1)
    machine, times = _times(par)
    nvlink, pcie = _p2p(1, ONE_LINK), _p2p(1, PCIE)
    assert times.boundary_comm == pytest.approx((nvlink, pcie, nvlink), rel=1e-9)
    assert times.hop(0) == pytest.approx(pcie, rel=1e-9)  # the pipeline's slowest hop
    assert machine.links.pp.name == "pcie"


def test_a_hop_waits_for_its_slowest_pair_not_its_first():
    # DP 4 · PP 2: rank 0 holds GPUs 0–3, rank 1 GPUs 4–7. Pairs 0–4 and 1–5 share two NVLinks, 2–6 and
    # 3–7 one: the hop waits for those, 25 GB/s: 37.9 µs + 8,388,608 B / 22.575e9 = 409.49 µs. Before,
    # the first pair 0–4 priced it at 50 GB/s: 223.69 µs.
    par = Parallelism(tp=1, pp=2, dp=4, global_batch=8, micro_batch=1)
    machine, times = _times(par)
    assert times.hop(0) == pytest.approx(_p2p(1, ONE_LINK), rel=1e-9)
    assert times.boundary_comm == pytest.approx((_p2p(1, ONE_LINK),), rel=1e-9)
    # the tied embedding's all-reduce, the same pairs (two GPUs: launch + γ·s + s / (η · 25 GB/s)):
    # 9.239 ms; before, pair 0–4's two links, 4.675 ms
    table = 50304 * 2048 * 2
    tied = 37.9e-6 + 0.357e-12 * table + table / (0.903 * ONE_LINK)
    assert after_backward(C, par, machine, 0, 1e6)["embedding_allreduce"] == pytest.approx(tied, rel=1e-9)


def test_every_hop_with_nvlinks_keeps_its_own_on_a_four_gpu_v100_server():
    # PP 4 on GPUs 0–3, TP 1: hops 0–1 (one NVLink), 1–2, 2–3 and the wrap 3–0 (two each). The slowest
    # hop is 0–1's, 25 GB/s (409.49 µs); before, every hop was priced on the rings of GPUs 0–3
    # (100 GB/s: 130.80 µs).
    par = Parallelism(tp=1, pp=4, dp=1, global_batch=8, micro_batch=1)
    machine, times = _times(par, gpus=4)
    two = _p2p(1, 2 * ONE_LINK)
    assert times.boundary_comm == pytest.approx((_p2p(1, ONE_LINK), two, two), rel=1e-9)
    assert [link.bus_bandwidth for link in machine.links.pp_hops] == pytest.approx(
        [0.903 * ONE_LINK] + [0.903 * 2 * ONE_LINK] * 3, rel=1e-12)


def test_an_nvswitch_server_keeps_one_pipeline_link():
    # On an NVSwitch server every pair of GPUs has the GPU's full NVLink: no per-hop links, the pipeline's
    # one link (300 GB/s per direction on an A100 80 GB, η 0.998).
    par = Parallelism(tp=1, pp=4, dp=2, global_batch=8, micro_batch=1)
    machine = single_node("a100-80gb", 8).machine(par)
    assert machine.links.pp_hops == ()
    assert isinstance(machine.links.pp, LinkClass)
    assert machine.links.pp.bus_bandwidth == pytest.approx(0.998 * 300e9, rel=1e-12)
